"""The enhance experiment: verdicts by the honesty rules, multipliers from joint draws, and
configs/enhance.py:smoke end to end (forest plot, table) plus the ablate config's validity."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxcap import enhance
from jaxcap.config import validate
from jaxcap.meta_fit import Posterior, summarize

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize(
    "lo,hi,expected",
    [
        (0.8, 1.3, "no evidence of change"),
        (1.1, 1.9, "above 1x, below 1.5x"),
        (1.6, 3.0, "reached 1.5x"),
        (5.5, 20.0, "reached 5x"),
        (12.0, 30.0, "reached 10x"),
        (0.2, 0.9, "lower than the baseline"),
    ],
)
def test_verdict_follows_the_interval(lo, hi, expected):
    assert enhance.verdict({"median": (lo + hi) / 2, "lo90": lo, "hi90": hi}) == expected


def test_multipliers_are_ratios_of_joint_draws_and_per_parameter():
    rng = np.random.default_rng(0)
    base = rng.normal(8.0, 0.3, 4000)
    log_c = np.stack([base, base + np.log(2.0) + rng.normal(0, 0.01, 4000)], axis=1)
    meta = {"arch_labels": ["a0", "a1"], "budgets": [{"body_params": 1000}, {"body_params": 4000}]}
    rows = enhance.multipliers(Posterior({"log_C": log_c}, meta))
    # the capacities are uncertain (sd 0.3 in log), their ratio is not: draws are joint
    assert rows[1]["multiplier"]["lo90"] > 1.9 and rows[1]["multiplier"]["hi90"] < 2.1
    assert rows[1]["verdict"] == "reached 1.5x"
    assert abs(rows[1]["per_param"]["median"] - 0.5) < 0.01 and rows[1]["verdict_per_param"] == (
        "lower than the baseline"
    )
    assert rows[0]["verdict"] == "baseline" and rows[1]["flops_per_token"] == 24000
    assert summarize(np.exp(log_c[:, 0]))["median"] == pytest.approx(rows[0]["C"]["median"])


@pytest.mark.parametrize("name", ["enhance", "ablate"])
@pytest.mark.parametrize("variant", [None, "smoke", "full"])
def test_configs_validate(name, variant):

    from ml_collections import config_flags  # noqa: F401  (the loader launch uses)

    from jaxcap.calibrate import family_configs

    spec = importlib.util.spec_from_file_location(name, ROOT / "configs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.get_config(variant)
    validate(config)
    assert family_configs(config)  # every family x variant builds a valid population config


@pytest.mark.slow
def test_enhance_smoke_end_to_end(tmp_path):
    cmd = [sys.executable, "-m", "jaxcap.launch", "--config", "configs/enhance.py:smoke"]
    cmd += ["--workdir", str(tmp_path)]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| variant | body params |" in out.stdout and "C / C_base" in out.stdout
    for name in ("posterior.nc", "report/enhance.md", "report/multipliers.png", "report/report.md"):
        assert (tmp_path / name).exists(), name
    text = (tmp_path / "report" / "enhance.md").read_text()
    assert "norm_type=rms" in text and "baseline" in text

"""configs/calibrate.py:smoke through the real entry point: families trained as population runs,
the table built from their members.jsonl, fit, validation, report, predict on the result;
a rerun reuses everything; family config errors are one line naming the field."""

import json
import re
import subprocess
import sys

import pytest
from helpers import ENV, ROOT

from jaxcap.meta import data as meta_data
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.validation import Validation
from jaxcap.results.store import clean

pytestmark = pytest.mark.slow  # end-to-end launches and multi-process runs: the full tier

SMOKE = ["--config", "configs/calibrate.py:smoke"]


def launch(*args, check=True, config=SMOKE):
    cmd = [sys.executable, "-m", "jaxcap.launch", *config, *args]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    if check and out.returncode != 0:
        raise AssertionError(f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


@pytest.mark.slow
def test_smoke_end_to_end_then_resumed(tmp_path):
    out = launch("--workdir", str(tmp_path))
    assert "effective capacity C (bits of random_labels" in out.stdout
    assert "2 x cpu" in out.stdout  # one CPU device per NUTS chain, set before JAX started
    # 5 programs per family (init, data, chunk, evaluate, baselines), the NUTS program and one
    # eager conversion inside NumPyro: keys are made on the host, so nothing else compiles
    [programs] = re.findall(r"^compiled (\d+) programs", out.stdout, re.M)
    assert int(programs) <= 12, programs
    for name in (
        "table.json",
        "posterior.nc",
        "validation.json",
        "report/report.md",
        "report/calibration.png",
        "report/success_vs_complexity.png",
        "report/monotone.png",
        "report/capacity.png",
        "report/heldout.png",
        "families/modulo/grid/members.jsonl",
        "families/random_labels/grid/members.jsonl",
    ):
        assert (tmp_path / name).exists(), name
    table = meta_data.read_table(tmp_path / "table.json")
    assert table.families == ["modulo", "random_labels"] and len(table.archs) == 1
    grid = [lv for lv in table.levels if lv.design == "grid"]
    assert len(grid) == 6  # 3 spanning levels per family; bisection adds levels only where success flips
    # the boundary round (information gain, the config's rule) trains levels only where they inform
    bounded = "information round 1 adds" in out.stdout
    assert bounded == any(lv.design == "boundary" for lv in table.levels)
    assert len(table.rows) == 2 * len(table.levels)  # real members.jsonl rows, 2 seeds a level
    posterior = meta_posterior.load_posterior(tmp_path)
    assert posterior.meta.families[posterior.meta.reference] == "random_labels"
    text = (tmp_path / "validation.json").read_text()
    valid = Validation.from_json(json.loads(text))
    assert json.dumps(clean(valid.to_json())) + "\n" == text  # it writes back byte for byte
    assert {"levels", "top"} <= set(valid.scores) and valid.settings.seeds == (1,)
    # 2 families, 1 architecture: leave-one-out of either is refused, with the reason
    assert set(valid.refused) == {"families modulo", "families random_labels", "archs all"}
    report = (tmp_path / "report" / "report.md").read_text()
    assert "memorization-equivalent bits" in report and "| levels" in report
    assert "Where the meta-model loses to a baseline" in report and "is success monotone" in report

    fitted = [(tmp_path / name).stat().st_mtime_ns for name in ("posterior.nc", "validation.json")]
    again = launch("--workdir", str(tmp_path))
    passes = out.stdout.count("== family pass")  # a grid pass per family, then bisection passes
    assert passes >= 2 and again.stdout.count("already holds this run's results") == passes
    refitted = [(tmp_path / name).stat().st_mtime_ns for name in ("posterior.nc", "validation.json")]
    assert refitted == fitted  # neither the fit nor the validation is redone

    def predict(*args):
        cmd = [sys.executable, "-m", "jaxcap.predict", "--posterior", str(tmp_path), *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)

    pred = predict("--task", "modulo", "--level", "5", "7", "--json")
    assert pred.returncode == 0, pred.stderr
    points = json.loads(pred.stdout)[0]["points"]
    assert [p["seen_level"] for p in points] == [True, False] and 0 <= points[1]["p"] <= 1
    refused = predict("--task", "parity", "--complexity", "3", "--new_family")  # 2 fitted families: too few
    assert refused.returncode == 2 and "needs >= 4 fitted families" in refused.stderr


@pytest.mark.slow
def test_optuna_search_feeds_best_trials_to_the_fit(tmp_path):
    """search='optuna': one study per level per family, best_trials.jsonl is the fit's input."""
    config = ["--config", "configs/calibrate.py:hpo_smoke"]
    out = launch("--workdir", str(tmp_path), "--config.calibrate.validation.folds=0", config=config)
    assert "effective capacity C" in out.stdout
    for family, levels in (("modulo", 4), ("random_labels", 3)):
        root = tmp_path / "families" / family
        assert (root / "study.db").exists() and (root / "report" / "hpo.md").exists()
        best = [json.loads(line) for line in (root / "best_trials.jsonl").read_text().splitlines()]
        assert len(best) == levels * 2 and all("trial" in r for r in best)  # best trial x 2 seeds
    table = meta_data.read_table(tmp_path / "table.json")
    assert len(table.rows) == 14 and {r.source for r in table.rows} == {
        str(tmp_path / "families" / f) for f in ("modulo", "random_labels")
    }


@pytest.mark.parametrize(
    "override,message",
    [
        (
            "--config.calibrate.families.modulo.task.digits=12",
            "config.calibrate.families.modulo: config.task.digits: base^digits",
        ),
        ("--config.calibrate.nuts.chains=0", "config.calibrate.nuts.chains: got 0"),
        ("--config.calibrate.search=optuna", "config.study: missing; config.calibrate.search='optuna'"),
        ("--config.calibrate.search=bayes", "config.calibrate.search: got 'bayes'; allowed: grid, optuna"),
        (
            "--config.calibrate.validation.seeds=(0,1)",
            "config.calibrate.validation.seeds[0]: got 0; allowed: >= 1",
        ),
    ],
)
def test_bad_calibrate_config_is_one_line(tmp_path, fork_server, override, message):
    out = fork_server.launch(*SMOKE, override, "--workdir", str(tmp_path / "w"), check=False)
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert out.returncode != 0 and len(lines) == 1 and message in lines[0], out.stderr
    assert not (tmp_path / "w" / "families").exists()

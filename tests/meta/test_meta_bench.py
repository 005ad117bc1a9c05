"""jaxcap.main.meta_bench: prints one JSON object with the fit's seconds and diagnostics (a benchmark
command, not a timed test), and benchmarks the NUTS settings calibrate uses by default."""

import dataclasses
import json

import pytest
from helpers import ROOT, meta_nuts

from jaxcap.config.base import load_config
from jaxcap.main import meta_bench
from jaxcap.meta import fit as meta_fit


def test_default_nuts_settings_are_calibrates():
    config = load_config(str(ROOT / "configs" / "calibrate.py"))
    assert dataclasses.asdict(meta_fit.NutsSettings()) == config.calibrate.nuts.to_dict()


@pytest.mark.slow  # a NUTS fit timed end to end
def test_bench_prints_json(capsys):
    """The table and settings of the meta-model tests' fit (conftest.py's `meta_fitted`: 2 archs x
    4 families x 6 levels x 3 seeds, helpers.meta_nuts): the sampler program those tests compile,
    so after them this is a persistent-cache hit (a sampler compile costs more than this fit)."""
    nuts = meta_nuts()
    args = ["--rows", "144", "--families", "4", "--seeds", "3", "--warmup", str(nuts.warmup)]
    args += ["--samples", str(nuts.samples), "--chains", str(nuts.chains)]
    code = meta_bench.main([*args, "--repeats", "1"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"] == 144 and out["families"] == 4 and out["archs"] == 2
    (run,) = out["runs"]
    assert run["seconds"] > 0 and run["divergences"] >= 0 and run["mean_leapfrog_steps"] > 0
    assert out["target"] == {"seconds": 60, "max_rhat": 1.01, "divergences": 0}


def test_bench_refuses_too_few_rows(capsys):
    with pytest.raises(SystemExit) as e:
        meta_bench.main(["--rows", "10"])
    assert e.value.code == 2
    assert "--rows: got 10; allowed: >= 2 x families x seeds = 40" in capsys.readouterr().err

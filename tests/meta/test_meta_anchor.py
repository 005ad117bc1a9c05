"""The meta-model's scale from a capacity run (jaxcap/meta/anchor.py, experiments/calibrate/
anchor.py): anchoring is a gauge change (every prediction and boundary unchanged), it recovers
the generating C and θ when the anchor is the true C_mem, the capacity seeds' spread widens C,
and the calibrate side matches architectures and refuses a run that measured none of them.

One small NUTS fit on simulated data (helpers.meta_nuts; conftest.py's `meta_fitted`, the fit
test_metamodel reads too).
"""

import math
import types

import numpy as np
import pytest

from jaxcap.experiments.calibrate import capacity_scale as calibrate_anchor
from jaxcap.fields import ConfigError
from jaxcap.meta import anchor as meta_anchor
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel

SATURATION = 2.0  # the truth: calibrate's reference boundary is half of what saturation stores


@pytest.fixture(scope="module")
def fitted(meta_simulated, meta_fitted):
    """The simulated table and its fit, shared with test_metamodel (conftest.py)."""
    truth, table, _ = meta_simulated
    posterior, by_chain = meta_fitted
    return truth, table, posterior, by_chain


def _capacity(bits, saturated=True):
    return {"bits": float(np.median(bits)), "seeds": list(bits), "saturated": saturated, "workdir": "w"}


@pytest.mark.slow  # a NUTS fit
def test_anchoring_moves_units_not_predictions(fitted):
    _, _, posterior, by_chain = fitted
    moved, record = meta_anchor.anchor_draws(by_chain["draws"], 0, _capacity([40.0, 50.0, 60.0]))
    flat = meta_fit.flatten(moved)
    for arch, family in ((0, 1), (1, None), (None, 2)):
        before = metamodel.success_probability(
            posterior.draws, np.log([4.0, 9.0]), np.random.default_rng(1), arch, family
        )
        after = metamodel.success_probability(
            flat, np.log([4.0, 9.0]), np.random.default_rng(1), arch, family
        )
        np.testing.assert_allclose(after, before, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        metamodel.boundary_bits(flat), metamodel.boundary_bits(posterior.draws), rtol=1e-9
    )
    assert record["arch"] == 0 and record["c_mem"] == 50.0
    assert not np.allclose(flat["log_C"], posterior.draws["log_C"])  # the units did move


@pytest.mark.slow  # a NUTS fit
def test_anchor_on_the_true_capacity_recovers_c_and_theta(fitted):
    truth, _, posterior, by_chain = fitted
    c_mem = math.exp(truth.log_c[0]) * SATURATION  # what a saturated capacity run would measure
    moved, record = meta_anchor.anchor_draws(by_chain["draws"], 0, _capacity([c_mem] * 3))
    flat = meta_fit.flatten(moved)
    np.testing.assert_allclose(np.exp(flat["log_C"][:, 0]), c_mem)  # no seed spread: exact
    lo, hi = np.quantile(flat["log_C"][:, 1], [0.05, 0.95])
    assert lo <= truth.log_c[1] + np.log(SATURATION) <= hi
    theta_ref = np.exp(flat["log_theta"][:, 0])
    lo, hi = np.quantile(theta_ref, [0.05, 0.95])
    assert lo <= SATURATION <= hi
    # the record's median is e^(median of log θ): with an even number of draws np.median(θ) averages
    # the two middle θ, which differs from it by their gap (1.5e-6 relative in one fit)
    assert record["reference_theta_median"] == pytest.approx(np.exp(np.median(flat["log_theta"][:, 0])))
    for f in (1, 2, 3):
        lo, hi = np.quantile(flat["log_theta"][:, f], [0.05, 0.95])
        assert lo <= truth.log_theta[f] + np.log(SATURATION) <= hi, f


@pytest.mark.slow  # a NUTS fit
def test_capacity_seed_spread_widens_the_anchor_arch(fitted):
    _, _, _, by_chain = fitted
    narrow = meta_fit.flatten(meta_anchor.anchor_draws(by_chain["draws"], 0, _capacity([50.0] * 3))[0])
    wide = meta_fit.flatten(meta_anchor.anchor_draws(by_chain["draws"], 0, _capacity([35.0, 50.0, 70.0]))[0])
    assert np.ptp(narrow["log_C"][:, 0]) < 1e-9
    sd = np.log([35.0, 50.0, 70.0]).std(ddof=1)
    assert np.std(wide["log_C"][:, 0]) == pytest.approx(sd, rel=0.15)


def test_lines_say_the_unit_and_a_lower_bound():
    record = {
        "arch": 0,
        "c_mem": 1234.0,
        "saturated": False,
        "workdir": "runs/cap",
        "reference_theta_median": 2.5,
    }
    line = meta_anchor.anchor_line(record)
    assert "1,234 bits" in line and "LOWER BOUND" in line and "θ = 2.50" in line
    assert "θ_ref = 1" in meta_anchor.anchor_line(None)


def test_find_matches_on_architecture_fields_and_refuses_none(monkeypatch):
    measured = {
        "n_layers": 1,
        "d_model": 16,
        "n_heads": 2,
        "d_head": 8,
        "d_ff": 32,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "qat_bits": 0,
    }

    def saturated_capacity(workdir, arch):
        if arch != measured:
            raise ValueError("arch: matches 0 architectures")
        return {"bits": 10.0, "seeds": [10.0], "saturated": True, "workdir": workdir}

    monkeypatch.setattr(calibrate_anchor, "saturated_capacity", saturated_capacity)
    other = {**measured, "d_model": 32, "vocab_size": 99}
    table = types.SimpleNamespace(archs=[other, {**measured, "pos_encoding": "sinusoidal", "vocab_size": 7}])
    arch, cap = calibrate_anchor.find(table, "runs/cap")
    assert arch == 1 and cap["bits"] == 10.0
    with pytest.raises(ConfigError, match=r"^config.calibrate.capacity_workdir: runs/cap measured none"):
        calibrate_anchor.find(types.SimpleNamespace(archs=[other]), "runs/cap")

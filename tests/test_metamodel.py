"""The meta-model on simulated data: the model is the simulator, parameters are recovered, the
scale is fixed, held-out predictions beat both baselines, the posterior round-trips through
netCDF (and ArviZ reads it), and the predict command moves the right way with complexity.

NUTS is kept small (2 chains x 300 + 300); on a 2-core CPU each run takes 10-30 s.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from numpyro import handlers
from scipy.stats import binom

from jaxcap import predict
from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta import validate as meta_validate

ROOT = Path(__file__).resolve().parents[1]
NUTS = meta_fit.NutsSettings(warmup=300, samples=300, chains=2, target_accept=0.99, seed=0)


@pytest.fixture(scope="module")
def simulated():
    truth = meta_simulate.default_truth(n_levels=6)  # 2 archs x 4 families x 6 levels x 3 seeds
    rows, effects = meta_simulate.simulate_rows(truth, seeds=3, rng=np.random.default_rng(0))
    return truth, meta_data.build_table(rows), effects


@pytest.fixture(scope="module")
def fitted(simulated, tmp_path_factory):
    _, table, _ = simulated
    posterior, by_chain = meta_fit.fit(table, NUTS)
    path = meta_fit.save_posterior(tmp_path_factory.mktemp("post") / "posterior.nc", posterior, by_chain)
    return posterior, path


def test_model_likelihood_is_the_simulators(simulated):
    """The NumPyro model, conditioned on the truth, gives each cell the simulator's probability."""
    truth, table, effects = simulated
    data, obs = meta_data.cell_data(table, reference=0)
    n_f = len(truth.log_theta)
    values = {
        "mu_log_C": np.zeros((1, 1)),
        "sigma_log_C": np.ones((1, 1)),
        "z_C": np.array([truth.log_c]),
        "log_theta_free": np.array([truth.log_theta]),
        "mu_log_kappa": np.zeros((1, 1)),
        "sigma_log_kappa": np.ones((1, 1)),
        "z_kappa": np.log(np.array([truth.kappa])),
        "sigma_level": np.ones((1, 1)),
        "z_level": effects[None, :],
    }
    model = handlers.substitute(handlers.seed(metamodel.model, 0), data=values)
    with jax.enable_x64(True):
        trace = handlers.trace(model).get_trace(data, obs=obs)
        got = np.asarray(trace["successes"]["fn"].log_prob(obs))
    assert got.shape == (1, len(data["trials"][0])) and n_f == 4
    want = []
    for a, f, lv in zip(data["cell_arch"], data["cell_family"], data["cell_level"]):
        bits = table.levels[lv]["complexity_bits"]
        logit = truth.kappa[f] * (truth.log_c[a] - truth.log_theta[f] - effects[lv] - math.log(bits))
        want.append(1 / (1 + math.exp(-logit)))
    np.testing.assert_allclose(got[0], binom.logpmf(obs[0], data["trials"][0], want), rtol=1e-6, atol=1e-9)


def test_parameters_are_recovered(simulated, fitted):
    truth, _, _ = simulated
    posterior, _ = fitted
    d = posterior.draws
    checks = [(d["log_C"][:, a], v) for a, v in enumerate(truth.log_c)]
    checks += [(d["log_theta"][:, f], v) for f, v in enumerate(truth.log_theta) if f]
    checks += [(d["kappa"][:, f], v) for f, v in enumerate(truth.kappa)]
    checks += [(d["sigma_level"], truth.sigma_level)]
    inside = [lo <= v <= hi for x, v in checks for lo, hi in [np.quantile(x, [0.05, 0.95])]]
    assert sum(inside) >= 0.75 * len(inside), inside
    # not trivially wide: the capacities are located within a factor ~1.6 (90% interval)
    for a in range(2):
        lo, hi = np.quantile(d["log_C"][:, a], [0.05, 0.95])
        assert hi - lo < 1.0, (lo, hi)
    assert posterior.meta["diagnostics"]["max_rhat"] < 1.05


def test_scale_is_fixed_and_reference_changes_only_units(simulated):
    """Three fits in one run: two with reference sim0 (different draws), one with sim1.

    θ_ref = 1 in every draw; the two sim0 fits agree on C (no drift along the unidentified
    direction); with sim1 as reference C shrinks by exactly θ_sim1 and b* = C/θ does not move.
    """
    _, table, _ = simulated
    data, obs = meta_data.stack_folds(
        [meta_data.cell_data(table, 0), meta_data.cell_data(table, 0), meta_data.cell_data(table, 1)]
    )
    draws, _, _ = meta_fit.run_nuts(data, obs, NUTS)
    fits = [meta_fit.flatten(meta_fit.fold_draws(draws, k)) for k in range(3)]
    assert np.all(fits[0]["log_theta"][:, 0] == 0.0) and np.all(fits[2]["log_theta"][:, 1] == 0.0)
    med = [np.median(f["log_C"], axis=0) for f in fits]
    np.testing.assert_allclose(med[0], med[1], atol=0.08)
    shift = np.median(fits[0]["log_theta"][:, 1])
    np.testing.assert_allclose(med[2], med[0] - shift, atol=0.12)
    bstar = [np.median(metamodel.boundary_bits(f), axis=0) for f in fits]
    np.testing.assert_allclose(np.log(bstar[2]), np.log(bstar[0]), atol=0.12)


def test_heldout_levels_beat_both_baselines(simulated):
    _, table, _ = simulated
    result = meta_validate.validate(table, NUTS, meta_validate.ValidationSettings(folds=3, families=True))
    levels = result["scores"]["levels"]
    brier = {m: levels[m]["brier"] for m in meta_validate.METHODS}
    assert (
        brier["meta_model"] < brier["pooled_logistic"] and brier["meta_model"] < brier["per_family_logistic"]
    )
    assert levels["meta_model"]["auc"] > 0.85
    assert levels["meta_model"]["coverage90"] >= 0.8 and levels["n_rows"] == len(table.rows)
    families = result["scores"]["families"]  # a new family: only the population prior is left
    assert families["meta_model"]["brier"] < families["pooled_logistic"]["brier"]


def test_posterior_round_trips_and_arviz_reads_it(fitted):
    import arviz as az

    posterior, path = fitted
    loaded = meta_fit.load_posterior(path)
    assert json.dumps(loaded.meta, sort_keys=True) == json.dumps(posterior.meta, sort_keys=True)
    for name, x in posterior.draws.items():
        np.testing.assert_array_equal(loaded.draws[name], x)
    idata = az.from_netcdf(path)  # InferenceData on arviz 0.23, DataTree on 1.x: both index by group
    post = idata["posterior"]
    assert post["log_C"].shape == (NUTS.chains, NUTS.samples, 2)
    assert list(post["family"].values) == ["sim0", "sim1", "sim2", "sim3"]
    assert idata["sample_stats"]["diverging"].shape == (NUTS.chains, NUTS.samples)


def test_predict_moves_with_complexity_and_is_wider_for_new_families(fitted):
    posterior, path = fitted
    bits = list(np.geomspace(1, 100, 9))
    known = predict.predict(posterior, "sim0", bits, arch=0)
    p = [pt["p"] for pt in known["points"]]
    assert all(x > y for x, y in zip(p, p[1:])) and p[0] > 0.95 and p[-1] < 0.05
    bigger = predict.predict(posterior, "sim0", bits, arch=1)  # C_a1 = 2 C_a0 in the truth
    assert all(b >= a for a, b in zip(p, [pt["p"] for pt in bigger["points"]]))
    new = predict.predict(posterior, "unseen_family", bits, arch=0)
    assert not new["in_fit"]
    width = lambda r: np.mean([pt["hi90"] - pt["lo90"] for pt in r["points"]])  # noqa: E731
    assert width(new) > width(known)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "jaxcap.predict",
        "--posterior",
        str(path.parent),
        "--task",
        "sim1",
        "--complexity",
        "2",
        "64",
        "--arch",
        "a1",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "P(learned)" in line]
    values = [float(line.split("P(learned) = ")[1].split()[0]) for line in lines]
    assert len(values) == 2 and values[0] > values[1] and "a1:" in out.stdout

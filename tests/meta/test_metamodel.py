"""The meta-model on simulated data: the model is the simulator, parameters are recovered, the
scale is fixed, held-out predictions beat the baselines, the posterior round-trips through
netCDF (and ArviZ reads it), and predict moves the right way and uses fitted level effects.

NUTS is kept small (2 chains x 300 + 300, helpers.meta_nuts); on a 2-core CPU each run takes
10-30 s, and compiling its sampler ~35 CPU-s: every fit here has the simulated table's shape, so
one program (then persistent-cache hits) serves them all, and test_meta_anchor reads the same fit
(conftest.py's `meta_fitted`).
"""

import dataclasses
import json
import math

import jax
import numpy as np
import pytest
from helpers import meta_nuts
from numpyro import handlers
from scipy.stats import betabinom

from jaxcap.meta import arch_query, prediction
from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta import validate as meta_validate
from jaxcap.meta.cells import cell_data, stack_folds
from jaxcap.meta.validation import Validation, ValidationSettings
from jaxcap.results.store import clean

pytestmark = pytest.mark.slow  # NUTS fits of the meta-model on simulated data: the full tier

NUTS = meta_nuts()  # every fit here has the simulated table's shape: one sampler program


@pytest.fixture(scope="module")
def simulated(meta_simulated):
    return meta_simulated  # 2 archs x 4 families x 6 levels x 3 seeds (conftest.py)


@pytest.fixture(scope="module")
def fitted(meta_fitted, tmp_path_factory):
    posterior, by_chain = meta_fitted  # the fit test_meta_anchor reads too (conftest.py)
    path = meta_posterior.save_posterior(
        tmp_path_factory.mktemp("post") / "posterior.nc", posterior, by_chain
    )
    return posterior, path


def test_model_likelihood_is_the_simulators(simulated):
    """The NumPyro model, given the truth's C, θ, κ and level effects, gives each cell the
    simulator's probability, its count the beta-binomial of that mean and ρ; and the reference
    family's θ is exactly 1."""
    truth, table, effects = simulated
    data, obs = cell_data(table, reference=0)
    values = {
        "log_C": np.array(truth.log_c),
        "log_theta": np.array(truth.log_theta),
        "kappa": np.array(truth.kappa),
        "level_effect": effects,
        "rho": 0.3,
    }
    model = handlers.substitute(handlers.seed(metamodel.model, 0), data=values)
    with jax.enable_x64(True):
        trace = handlers.trace(model).get_trace(data, obs=obs)
        got = np.asarray(trace["successes"]["fn"].log_prob(obs))
        free = handlers.trace(handlers.seed(metamodel.model, 1)).get_trace(data, obs=obs)
    assert np.asarray(free["log_theta"]["value"])[0] == 0.0
    want = []
    for a, f, lv in zip(data["cell_arch"], data["cell_family"], data["cell_level"]):
        bits = table.levels[lv].bits
        logit = truth.kappa[f] * (truth.log_c[a] - truth.log_theta[f] - effects[lv] - math.log(bits))
        want.append(1 / (1 + math.exp(-logit)))
    p, phi = np.array(want), 1 / 0.3 - 1
    np.testing.assert_allclose(
        got, betabinom.logpmf(obs, data["trials"], p * phi, (1 - p) * phi), rtol=1e-6, atol=1e-9
    )


def test_slopes_saturate_below_the_cap():
    """κ = saturate(k): k itself where the data resolve it, never above KAPPA_MAX, increasing."""
    k = np.geomspace(0.1, 1e4, 400)
    kappa = metamodel.saturate(k)
    np.testing.assert_allclose(kappa[k <= 10], k[k <= 10], rtol=5e-3)
    assert (kappa <= metamodel.KAPPA_MAX).all() and (np.diff(kappa) >= 0).all()
    assert kappa[-1] > 0.99 * metamodel.KAPPA_MAX


def test_parameters_are_recovered(simulated, fitted):
    truth, _, _ = simulated
    posterior, _ = fitted
    d = posterior.draws
    checks = [(d["log_C"][:, a], v) for a, v in enumerate(truth.log_c)]
    checks += [(d["log_theta"][:, f], v) for f, v in enumerate(truth.log_theta) if f]
    checks += [(d["kappa"][:, f], v) for f, v in enumerate(truth.kappa)]
    inside = [lo <= v <= hi for x, v in checks for lo, hi in [np.quantile(x, [0.05, 0.95])]]
    assert sum(inside) >= 0.75 * len(inside), inside
    for a in range(2):  # not trivially wide: the capacities are located within a factor ~1.6
        lo, hi = np.quantile(d["log_C"][:, a], [0.05, 0.95])
        assert hi - lo < 1.0, (lo, hi)
    # two architectures that differ in size: the covariate regression explains their difference
    assert d["beta"].shape[1] == 4 and posterior.meta.diagnostics.max_rhat < 1.05


@pytest.mark.slow
def test_seed_correlation_is_recovered(simulated, fitted):
    """Parameter recovery of the beta-binomial term: seeds that share a cell's rate
    (ρ = 0.5) give a posterior ρ that covers it; independent seeds (the `fitted` data, ρ = 0) a
    ρ well below it, so the term does not invent agreement the data do not show."""
    truth = dataclasses.replace(simulated[0], rho=0.5)
    rows, _ = meta_simulate.simulate_rows(truth, seeds=8, rng=np.random.default_rng(5))  # 384 runs
    rho = meta_fit.fit(meta_data.build_table(rows), NUTS)[0].draws["rho"]
    # measured: [0.15, 0.72] with 6 seeds a cell; most cells sit far from a boundary (P ~ 0 or 1),
    # where agreeing seeds say nothing about ρ, so it is weakly identified
    lo, hi = np.quantile(rho, [0.05, 0.95])
    assert lo <= 0.5 <= hi and lo > 0.1, (lo, hi)
    independent = fitted[0].draws["rho"]
    assert np.quantile(independent, 0.95) < 0.4 and np.median(independent) < np.median(rho) - 0.2


def test_level_marginal_p_is_the_average_over_new_levels(fitted):
    """The level-marginal P (Gauss-Hermite over δ) equals the mean of fresh-δ draws, and near
    the boundary its interval is narrower: it leaves out the luck of one level."""
    posterior, _ = fitted
    rng = np.random.default_rng(0)
    draws = {k: np.repeat(v, 40, axis=0) for k, v in posterior.draws.items()}  # many δ per draw
    log_b = np.log([2.0, 8.0, 30.0])
    fresh = metamodel.success_probability(draws, log_b, rng, arch=0, family=1)
    typical = metamodel.success_probability(draws, log_b, rng, arch=0, family=1, marginal=True)
    np.testing.assert_allclose(typical.mean(0), fresh.mean(0), atol=0.01)
    spread = lambda p: np.quantile(p, 0.95, axis=0) - np.quantile(p, 0.05, axis=0)  # noqa: E731
    near = (typical.mean(0) > 0.2) & (typical.mean(0) < 0.8)
    assert near.any() and (spread(typical)[near] < spread(fresh)[near]).all()


def test_scale_is_fixed_and_reference_changes_only_units(simulated):
    """Three fits in one run: two with reference sim0 (different draws), one with sim1.

    θ_ref = 1 in every draw; the two sim0 fits agree on C (no drift along the unidentified
    direction); with sim1 as reference C shrinks by exactly θ_sim1 and b* = C/θ does not move.
    """
    _, table, _ = simulated
    data, obs = stack_folds([cell_data(table, 0), cell_data(table, 0), cell_data(table, 1)])
    run = meta_fit.run_nuts(data, obs, NUTS)
    fits = [meta_fit.flatten(meta_fit.fold_draws(run.draws, k)) for k in range(3)]
    assert np.all(fits[0]["log_theta"][:, 0] == 0.0) and np.all(fits[2]["log_theta"][:, 1] == 0.0)
    med = [np.median(f["log_C"], axis=0) for f in fits]
    np.testing.assert_allclose(med[0], med[1], atol=0.08)
    shift = np.median(fits[0]["log_theta"][:, 1])
    np.testing.assert_allclose(med[2], med[0] - shift, atol=0.12)
    bstar = [np.median(metamodel.boundary_bits(f), axis=0) for f in fits]
    np.testing.assert_allclose(np.log(bstar[2]), np.log(bstar[0]), atol=0.12)


def test_heldout_levels_and_top_levels_beat_the_baselines(simulated):
    _, table, _ = simulated
    settings = ValidationSettings(folds=3, seeds=(1,), designs=("levels", "top", "families"))
    result = meta_validate.validate(table, NUTS, settings)
    levels = result.scores["levels"]
    brier = {m: levels.methods[m].brier for m in meta_validate.METHODS}
    assert brier["meta_model"] < min(brier[b] for b in meta_validate.BASELINES), brier
    assert levels.meta_model.auc > 0.85 and levels.n_rows == len(table.rows)
    assert 0.7 <= levels.meta_model.pit_coverage90 <= 1.0
    top = result.scores["top"]
    assert top.meta_model.brier < top.methods["base_rate"].brier
    # 4 families: leaving one out keeps 3 < MIN_FAMILIES, so the design is refused, with the reason
    assert "families" not in result.scores and len(result.refused) == 4
    assert all("needs >= 4" in why for why in result.refused.values())
    assert all(f.diagnostics.max_rhat < 1.1 for f in result.folds)
    # validation.json reads back into the same record, and writes back the same bytes
    text = json.dumps(clean(result.to_json()))
    assert json.dumps(clean(Validation.from_json(json.loads(text)).to_json())) == text


def test_posterior_round_trips_and_arviz_reads_it(fitted):
    import arviz as az

    posterior, path = fitted
    loaded = meta_posterior.load_posterior(path)
    assert json.dumps(loaded.meta.to_json()) == json.dumps(posterior.meta.to_json())  # key order too
    for name, x in posterior.draws.items():
        np.testing.assert_array_equal(loaded.draws[name], x)
    idata = az.from_netcdf(path)  # InferenceData on arviz 0.23, DataTree on 1.x: both index by group
    post = idata["posterior"]
    assert post["log_C"].shape == (NUTS.chains, NUTS.samples, 2)
    assert list(post["family"].values) == ["sim0", "sim1", "sim2", "sim3"]
    assert idata["sample_stats"]["diverging"].shape == (NUTS.chains, NUTS.samples)
    # the full InferenceData: energy and tree depth for BFMI, pointwise log-likelihood
    # for LOO, the observed counts; ArviZ's own diagnostics run on it
    n_cells = idata["observed_data"]["successes"].shape[0]
    assert idata["log_likelihood"]["successes"].shape == (NUTS.chains, NUTS.samples, n_cells)
    assert (idata["sample_stats"]["tree_depth"].values >= 1).all()
    bfmi = az.bfmi(idata)
    assert bfmi.shape == (NUTS.chains,) and np.isfinite(bfmi).all()
    loo = az.loo(idata, pointwise=True)
    assert np.isfinite(loo.elpd_loo) and loo.loo_i.shape == (n_cells,)
    summary = az.summary(idata, var_names=["log_C"])
    assert list(summary.columns[:2]) == ["mean", "sd"] and len(summary) == 2
    # the posterior predictive: replicated counts of every cell, which az.plot_ppc draws
    assert idata["posterior_predictive"]["successes"].shape == (NUTS.chains, NUTS.samples, n_cells)
    plot_ppc = getattr(az, "plot_ppc", None) or az.plot_ppc_dist  # renamed in ArviZ 1.x
    assert plot_ppc(idata, var_names=["successes"]) is not None


def test_predict_moves_with_complexity_and_uses_fitted_levels(fitted):
    posterior, _ = fitted
    arch0 = arch_query.resolve_arch(posterior, "a0")[0]
    bits = list(np.geomspace(1, 100, 9))
    points = prediction.resolve_levels(posterior, "sim0", [], bits)
    p = [pt.p for pt in prediction.predict(posterior, "sim0", points, arch0).points]
    assert all(x > y for x, y in zip(p, p[1:])) and p[0] > 0.95 and p[-1] < 0.05
    arch1 = arch_query.resolve_arch(posterior, "a1")[0]  # C_a1 = 2 C_a0 in the truth
    bigger = prediction.predict(posterior, "sim0", points, arch1).points
    assert all(b.p >= a for a, b in zip(p, bigger))
    # a fitted level's complexity is that level: its fitted effect, a narrower interval
    lv = next(i for i, x in enumerate(posterior.meta.levels) if x.family == 1)
    seen = prediction.resolve_levels(posterior, "sim1", [], [posterior.meta.levels[lv].bits])
    assert seen[0].level == lv
    new = [dataclasses.replace(seen[0], level=None)]
    width = lambda r: r.points[0].hi90 - r.points[0].lo90  # noqa: E731
    assert width(prediction.predict(posterior, "sim1", seen, arch0)) < width(
        prediction.predict(posterior, "sim1", new, arch0)
    )
    # a new architecture goes through the covariate regression (and is labelled so)
    spec = "d_model=128,d_head=32,d_ff=256"
    new_arch = arch_query.resolve_arch(posterior, spec)[0]
    assert new_arch["index"] is None and "covariate regression" in new_arch["label"]
    out = prediction.predict(posterior, "sim0", points[:1], new_arch)
    assert set(out.boundaries) == {"sim0", "sim1", "sim2", "sim3"}
    assert prediction.Prediction.from_json(json.loads(json.dumps(out.to_json()))) == out  # --json


def test_out_of_grid_population_beats_the_base_rate(simulated, fitted):
    """A separate population from the same truth at levels between the fitted ones, new seeds:
    the posterior predicts it better than the calibrate table's base rate and family rates."""
    from jaxcap.meta import out_of_grid_scores

    truth, table, _ = simulated
    between = tuple(tuple(float(np.sqrt(a * b)) for a, b in zip(bits, bits[1:])) for bits in truth.bits)
    rows, _ = meta_simulate.simulate_rows(
        dataclasses.replace(truth, bits=between), seeds=3, rng=np.random.default_rng(7)
    )
    result = out_of_grid_scores.score_population(fitted[0], table, meta_data.build_table(rows))
    assert result["levels_also_fitted"] == 0 and result["n_cells"] == 2 * 4 * 5
    brier = {m: result[m]["brier"] for m in out_of_grid_scores.METHODS}
    assert brier["meta_model"] < min(brier["base_rate"], brier["family_rate"]), brier
    assert 0.6 <= result["meta_model"]["pit_coverage90"] <= 1.0

    # each family's Brier, from the cells' counts and mean P (the reference: sum of k (1 - p)^2
    # + (n - k) p^2 over its cells), and its runs
    new, fitted_names = meta_data.build_table(rows), fitted[0].meta.families
    assert sorted(result["families"]) == sorted(new.families)
    for name, fam in result["families"].items():
        cells = [
            (c["trials"], c["successes"], c["p_mean"])
            for c in result["cells"]
            if fitted_names[c["family"]] == name
        ]
        n = sum(t for t, _, _ in cells)
        ref = sum(k * (1 - p) ** 2 + (t - k) * p**2 for t, k, p in cells) / n
        assert (fam["runs"], fam["learned"]) == (n, sum(k for _, k, _ in cells))
        assert fam["meta_model"] == pytest.approx(ref, rel=1e-9), name
    # every seed of the hardest level of each family learned: the posterior gave that less than 5 %
    hardest = {f: max((lv for lv in new.levels if lv.family == f), key=lambda lv: lv.bits) for f in range(4)}
    flipped = [
        dataclasses.replace(r, success=True) if new.levels[r.level] is hardest[r.family] else r
        for r in new.rows
    ]
    result = out_of_grid_scores.score_population(fitted[0], table, dataclasses.replace(new, rows=flipped))
    outside = {(c["family"], c["level"]) for c in result["outside90"]}
    assert {(new.families[f], lv.label) for f, lv in hardest.items()} <= outside, outside
    covered = {(fitted_names[c["family"]], c["level"]) for c in result["cells"] if c["pit_covered90"]}
    assert not outside & covered  # a count outside the central 90 % has its PIT outside too

"""Validation pieces against slow, obvious references: the penalised logistic fit and the
baselines, AUC, reliability bins, the Brier decomposition and the replicate floor, the PIT
coverage bookkeeping, the stratified level folds, the top-level and refused family splits."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from jaxcap.meta import data as meta_data
from jaxcap.meta import logistic_baselines as meta_baselines
from jaxcap.meta import model as metamodel
from jaxcap.meta import scores as meta_scores
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta import splits as meta_splits
from jaxcap.meta import validate as meta_validate
from jaxcap.meta.validation import ValidationSettings


def test_logistic_fit_is_the_penalised_maximum_likelihood():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(60), rng.normal(size=60), rng.integers(0, 2, 60)])
    y = (rng.random(60) < 1 / (1 + np.exp(-(0.5 + 2 * x[:, 1] - x[:, 2])))).astype(float)

    def loss(w):  # negative log-likelihood + 0.5 * penalty * |w[1:]|^2
        z = x @ w
        return np.sum(np.logaddexp(0, z) - y * z) + 0.5 * meta_baselines.PENALTY * np.sum(w[1:] ** 2)

    want = minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(meta_baselines.fit_logistic(x, y), want, atol=1e-5)
    separable = (x[:, 1] > 0).astype(float)  # separable data: finite coefficients thanks to the penalty
    assert np.all(np.isfinite(meta_baselines.fit_logistic(x, separable)))


def test_baselines_base_rate_and_family_intercepts():
    rows, _ = meta_simulate.simulate_rows(
        meta_simulate.default_truth(n_levels=4), 2, np.random.default_rng(0)
    )
    table = meta_data.build_table(rows)
    train = [r for r in table.rows if r.family != 3]
    fitted = meta_baselines.fit_baselines(train, table.levels, 2, 4)
    p = meta_baselines.predict_baselines(fitted, table.rows, table.levels)
    assert set(p) == set(meta_validate.BASELINES)
    assert np.all(p["base_rate"] == np.mean([r.success for r in train]))
    new = np.array([r.family == 3 and r.arch == 0 for r in table.rows])
    # a family outside the fit: the family-intercept model uses the mean intercept, so it differs
    # from every fitted family's curve but keeps the common slope (decreasing in bits)
    bits = np.array([table.levels[r.level].bits for r in table.rows])
    order = np.argsort(bits[new])
    assert np.all(np.diff(p["family_intercepts"][new][order]) <= 1e-12)
    assert np.allclose(p["per_family_logistic"][new], p["pooled_logistic"][new])


def test_auc_matches_counting_pairs():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 40)
    p = np.round(rng.random(40), 1)  # ties
    pairs = [(i, j) for i, j in itertools.product(range(40), range(40)) if y[i] == 1 and y[j] == 0]
    want = np.mean([1.0 if p[i] > p[j] else 0.5 if p[i] == p[j] else 0.0 for i, j in pairs])
    assert abs(meta_scores.auc(y, p) - want) < 1e-12
    assert meta_scores.auc(np.ones(3), np.ones(3)) is None


def test_reliability_bins_partition_the_predictions():
    p = np.array([0.05, 0.15, 0.12, 0.95, 1.0])
    y = np.array([0, 1, 0, 1, 1])
    bins = meta_scores.reliability(y, p)
    assert sum(b.n for b in bins) == 5 and bins[-1].lo == 0.9 and bins[-1].n == 2
    assert bins[1].observed == 0.5 and abs(bins[1].predicted - 0.135) < 1e-12


def test_brier_decomposition_is_exact_and_the_floor_is_unbiased():
    rng = np.random.default_rng(2)
    group = np.repeat(np.arange(50), 4)
    p = np.repeat(rng.random(50), 4)  # one forecast per cell
    y = (rng.random(200) < p).astype(float)
    d = meta_scores.decomposition(y, p, group)
    brier = np.mean((p - y) ** 2)
    assert abs(d.reliability - d.resolution + d.uncertainty - brier) < 1e-12
    # the floor estimates E[p (1 - p)]: average over many replicate draws of the same cells
    q = rng.random(50)
    floors = [
        meta_scores.replicate_floor((rng.random(200) < np.repeat(q, 4)).astype(float), group)
        for _ in range(400)
    ]
    assert abs(np.mean(floors) - np.mean(q * (1 - q))) < 0.005


def test_cell_pit_coverage():
    rng = np.random.default_rng(0)
    wrong = meta_scores.cell_record((0, 0, 0), np.full(400, 0.001), 4, 4, rng)
    assert not wrong.pit_covered90 and wrong.pit > 0.99
    sure = meta_scores.cell_record((0, 0, 0), np.full(400, 0.999), 4, 4, rng)
    assert sure.p_lo90 == sure.p_hi90 == pytest.approx(0.999)
    # calibrated forecasts: PIT uniform, so central-interval coverage is nominal on average
    recs = [
        meta_scores.cell_record((0, 0, 0), np.full(200, q), 3, rng.binomial(3, q), rng)
        for q in rng.random(400)
    ]
    assert abs(np.mean([r.pit_covered50 for r in recs]) - 0.5) < 0.08
    assert abs(np.mean([r.pit_covered90 for r in recs]) - 0.9) < 0.05


def _table(seed=0, n_families=4):
    truth = meta_simulate.default_truth(n_levels=8, n_families=n_families)
    rows, _ = meta_simulate.simulate_rows(truth, 2, np.random.default_rng(seed))
    return meta_data.build_table(rows)


def test_level_folds_are_stratified_and_hold_out_every_free_level_once():
    table = _table()
    won, lost = meta_splits._level_outcomes(table)
    for seed in (1, 2, 3):
        folds = meta_splits.stratified_level_folds(table, 4, seed)
        assert len(folds) == 4 and np.all(np.sum(folds, axis=0) <= 1)
        for held in folds:
            for f in range(len(table.families)):
                mine = [i for i, lv in enumerate(table.levels) if lv.family == f]
                kept = [i for i in mine if not held[i]]
                assert not won[mine].any() or won[kept].any()  # never all of a family's successes
                assert not lost[mine].any() or lost[kept].any()  # ... nor all of its failures
    assert not np.array_equal(
        meta_splits.stratified_level_folds(table, 4, 1)[0], meta_splits.stratified_level_folds(table, 4, 2)[0]
    )


def test_top_levels_are_the_hardest_and_family_and_arch_folds_need_enough():
    table = _table(n_families=5)
    for f in range(5):
        held = meta_splits.top_levels(table, f)
        mine = sorted((lv.bits, i) for i, lv in enumerate(table.levels) if lv.family == f)
        top = {i for _, i in mine[-int(held.sum()) :]} if held.any() else set()
        assert set(np.flatnonzero(held)) == top
    folds = meta_splits.make_folds(table, 4, (1,), ("families", "archs"))
    assert [f.kind for f in folds] == ["families"] * 5 + ["archs"]
    assert not any(f.refused for f in folds[:5])  # 2 architectures: leave-one-out is refused
    assert "needs >= 3" in folds[5].refused and not folds[5].held.any()
    few = meta_splits.make_folds(_table(n_families=3), 4, (1,), ("families",))
    assert all("needs >= 4" in f.refused for f in few)


def test_the_development_seed_is_never_quoted():
    with pytest.raises(ValueError, match="development"):
        ValidationSettings(seeds=(0, 1))
    assert ValidationSettings(development=True).fold_seeds == (meta_splits.DEV_SEED,)
    with pytest.raises(ValueError, match="designs"):
        ValidationSettings(designs=("levels", "random"))


def test_cell_pit_scores_correlated_seeds_with_their_correlation():
    """Seeds that share a cell's rate (ρ = 0.6: mostly all-or-none) are scored calibrated when
    the PIT uses the beta-binomial of that ρ, and as surprises by the binomial of the same P."""
    rng = np.random.default_rng(1)
    rho, n = 0.6, 4
    phi = 1 / rho - 1
    beta_binomial, binomial = [], []
    for q in rng.uniform(0.2, 0.8, 600):
        k = rng.binomial(n, rng.beta(q * phi, (1 - q) * phi))  # the cell's own rate, then its seeds
        p = np.full(100, q)
        beta_binomial.append(meta_scores.cell_record((0, 0, 0), p, n, k, rng, rho=np.full(100, rho)))
        binomial.append(meta_scores.cell_record((0, 0, 0), p, n, k, rng))
    assert abs(np.mean([r.pit_covered90 for r in beta_binomial]) - 0.9) < 0.04
    assert np.mean([r.pit_covered90 for r in binomial]) < 0.75
    np.testing.assert_allclose(metamodel.count_cdf(n, n, np.full(3, 0.3), np.full(3, rho)), 1.0)

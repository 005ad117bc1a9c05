"""Validation pieces against slow, obvious references: the penalised logistic fit, AUC,
reliability bins, the level folds, and the count-interval coverage bookkeeping."""

import itertools

import numpy as np
from scipy.optimize import minimize

from jaxcap.meta import baselines as meta_baselines
from jaxcap.meta import data as meta_data
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta import validate as meta_validate


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


def test_auc_matches_counting_pairs():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 40)
    p = np.round(rng.random(40), 1)  # ties
    pairs = [(i, j) for i, j in itertools.product(range(40), range(40)) if y[i] == 1 and y[j] == 0]
    want = np.mean([1.0 if p[i] > p[j] else 0.5 if p[i] == p[j] else 0.0 for i, j in pairs])
    assert abs(meta_validate.auc(y, p) - want) < 1e-12
    assert meta_validate.auc(np.ones(3), np.ones(3)) is None


def test_reliability_bins_partition_the_predictions():
    p = np.array([0.05, 0.15, 0.12, 0.95, 1.0])
    y = np.array([0, 1, 0, 1, 1])
    bins = meta_validate.reliability(y, p)
    assert sum(b["n"] for b in bins) == 5 and bins[-1]["lo"] == 0.9 and bins[-1]["n"] == 2
    assert bins[1]["observed"] == 0.5 and abs(bins[1]["predicted"] - 0.135) < 1e-12


def test_level_folds_hold_out_every_level_once_spread_over_families():
    rows, _ = meta_simulate.simulate_rows(meta_simulate.default_truth(), 2, np.random.default_rng(0))
    table = meta_data.build_table(rows)
    folds = meta_validate.level_folds(table, 4, seed=3)
    assert len(folds) == 4 and np.all(np.sum(folds, axis=0) == 1)
    for held in folds:
        per_family = [
            sum(held[i] for i, lv in enumerate(table.levels) if lv["family"] == f) for f in range(3)
        ]
        assert per_family == [2, 2, 2]


def test_cell_coverage_and_pit():
    rng = np.random.default_rng(0)
    sure = meta_validate._cell_record(0, 0, 0, np.full(400, 0.999), 4, 4, rng, "levels")
    assert sure["covered50"] and sure["covered90"]
    wrong = meta_validate._cell_record(0, 0, 0, np.full(400, 0.001), 4, 4, rng, "levels")
    assert not wrong["covered90"] and not wrong["pit_covered90"] and wrong["pit"] > 0.99
    # calibrated forecasts: PIT uniform, so central-interval coverage is nominal on average
    recs = [
        meta_validate._cell_record(0, 0, 0, np.full(200, q), 3, rng.binomial(3, q), rng, "levels")
        for q in rng.random(400)
    ]
    assert abs(np.mean([r["pit_covered50"] for r in recs]) - 0.5) < 0.08
    assert abs(np.mean([r["pit_covered90"] for r in recs]) - 0.9) < 0.05

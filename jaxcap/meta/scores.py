"""Scores of held-out predictions: Brier and its decomposition, log loss, AUC, reliability, PIT.

Brier with Murphy's (1973) decomposition and the seed-replicate floor p (1 − p); log loss and
ROC AUC, pooled and per family; a reliability table; and for the meta-model, randomized PIT
coverage of each held-out cell's success count (Czado, Gneiting & Held 2009) with the widths of
its credible intervals (an interval of [0, 1] covers everything and says nothing).

Details: docs/design/meta-model.md#scores.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcap.meta.model import count_cdf
from jaxcap.meta.validation import (
    MASSES,
    Decomposition,
    DesignScores,
    HeldoutCell,
    HeldoutRow,
    MethodScores,
    ReliabilityBin,
)


def coverage_interval(covered: int, cells: int, mass: float = 0.90) -> tuple[float, float]:
    """Jeffreys interval of a coverage rate from `covered` of `cells` held-out cells (Brown, Cai &
    DasGupta 2001): with the 4-20 cells of one run, how far from nominal calibrated intervals
    can land by chance."""
    from scipy import stats

    lo, hi = stats.beta.ppf([(1 - mass) / 2, (1 + mass) / 2], covered + 0.5, cells - covered + 0.5)
    return float(lo), float(hi)


def cell_record(
    key: tuple,
    p: np.ndarray,
    n: int,
    k: int,
    rng: np.random.Generator,
    p_typical: np.ndarray | None = None,
    rho: np.ndarray | None = None,
) -> HeldoutCell:
    """One held-out cell: predictive draws p [S] of its P(success), n runs, k successes;
    `p_typical` [S]: draws of the level-marginal P whose intervals are reported (default p);
    `rho` [S]: the draws' intra-cell correlation of seeds (None: a binomial count)."""
    below, upto = count_cdf(k - 1, n, p, rho).mean(), count_cdf(k, n, p, rho).mean()
    pit = float(below + rng.random() * (upto - below))
    per_mass = {}
    for mass in MASSES:
        tail = (1 - mass / 100) / 2
        lo, hi = np.quantile(p if p_typical is None else p_typical, [tail, 1 - tail])
        per_mass[f"p_lo{mass}"], per_mass[f"p_hi{mass}"] = float(lo), float(hi)
        per_mass[f"pit_covered{mass}"] = bool(tail <= pit <= 1 - tail)
    arch, family, level = key
    return HeldoutCell(arch, family, level, n, k, float(p.mean()), pit, **per_mass)


def auc(y: np.ndarray, p: np.ndarray) -> float | None:
    """P(p_success > p_failure) over pairs, ties half; None if only one class is present."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return None
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def reliability(y: np.ndarray, p: np.ndarray, bins: int = 10) -> list[ReliabilityBin]:
    """Per probability bin: how many, mean predicted, observed frequency."""
    which = np.minimum((p * bins).astype(int), bins - 1)
    return [
        ReliabilityBin(
            lo=b / bins,
            hi=(b + 1) / bins,
            n=int((which == b).sum()),
            predicted=float(p[which == b].mean()),
            observed=float(y[which == b].mean()),
        )
        for b in range(bins)
        if (which == b).any()
    ]


def decomposition(y: np.ndarray, p: np.ndarray, group: np.ndarray) -> Decomposition:
    """Murphy's REL, RES, UNC over groups of equal forecasts (cells); REL − RES + UNC = Brier."""
    _, g = np.unique(group, return_inverse=True)
    n_g = np.bincount(g)
    o_g, f_g = np.bincount(g, y) / n_g, np.bincount(g, p) / n_g
    o = y.mean()
    return Decomposition(
        reliability=float(np.sum(n_g * (f_g - o_g) ** 2) / len(y)),
        resolution=float(np.sum(n_g * (o_g - o) ** 2) / len(y)),
        uncertainty=float(o * (1 - o)),
    )


def replicate_floor(y: np.ndarray, group: np.ndarray) -> float | None:
    """Mean over runs of the unbiased estimate of p (1 − p) of the run's cell (cells with >= 2
    runs); the Brier score no forecast can beat on average."""
    _, g = np.unique(group, return_inverse=True)
    n_g, k_g = np.bincount(g), np.bincount(g, y)
    ok = n_g >= 2
    if not ok.any():
        return None
    var = k_g[ok] * (n_g[ok] - k_g[ok]) / (n_g[ok] * (n_g[ok] - 1))
    return float(np.sum(n_g[ok] * var) / n_g[ok].sum())


def method_scores(y: np.ndarray, p: np.ndarray, family: np.ndarray, group: np.ndarray) -> MethodScores:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    within = {int(f): auc(y[family == f], p[family == f]) for f in np.unique(family)}
    defined = [v for v in within.values() if v is not None]
    return MethodScores(
        brier=float(np.mean((p - y) ** 2)),
        log_loss=float(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p)))),
        auc=auc(y, p),
        auc_within_family=within,
        auc_within_mean=float(np.mean(defined)) if defined else None,
        decomposition=decomposition(y, p, group),
        reliability=reliability(y, p),
    )


def scores(rows: list[HeldoutRow], cells: list[HeldoutCell], methods: tuple[str, ...]) -> DesignScores:
    """Every method's scores over held-out runs; PIT coverage and widths for the meta-model (no
    runs: no method scored)."""
    if not rows:
        return DesignScores({})
    y = np.array([r.y for r in rows], np.float64)
    family = np.array([r.family for r in rows])
    # a string key, not hash(): str hashes change per process, and with them the order of the
    # groups and the last bits of every sum over them
    group = np.array([f"{r.fold}|{r.arch}|{r.level}" for r in rows])
    out = {m: method_scores(y, np.array([r.p[m] for r in rows]), family, group) for m in methods}
    calibration = {}
    for mass in MASSES:
        calibration[f"pit_coverage{mass}"] = float(np.mean([c.covered(mass) for c in cells]))
        widths = [c.interval(mass)[1] - c.interval(mass)[0] for c in cells]
        calibration[f"median_width{mass}"] = float(np.median(widths))
    out["meta_model"] = dataclasses.replace(out["meta_model"], **calibration)
    return DesignScores(out, len(rows), len(cells), replicate_floor(y, group), float(y.mean()))

"""Held-out validation of the meta-model against two baselines.

Two designs (issue 6, "Validation"): (1) K-fold over difficulty levels — each family's levels are
shuffled and dealt to K folds, every level is held out once (all architectures' cells of it),
and the meta-model predicts it as a *new* level, with a fresh level effect; (2) leave one
family out — the family is predicted from the population prior alone (a harder test). Each
fold refits the meta-model and both baselines (`jaxcap.meta.baselines`) on the rest; the
meta-model's folds are independent copies of the model fitted in one NUTS run (see
`metamodel.model`), which costs one compile instead of one per fold.

Scores over the held-out seed-level outcomes: Brier score (Brier 1950), mean log predictive
density (the pointwise elpd of Vehtari et al. 2017, arXiv:1507.04544; for a Bernoulli outcome it
is the log of the posterior-mean probability), ROC AUC (Mann-Whitney form, ties counted half),
a reliability table (Murphy & Winkler 1977), and, for the meta-model, coverage of the central
50% / 90% posterior predictive intervals of each held-out cell's success count. The count is
discrete, so coverage at or slightly above nominal is what a calibrated model gives; well below
nominal means overconfident intervals.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from scipy.stats import binom

from jaxcap.meta import baselines as meta_baselines
from jaxcap.meta.data import Table, cell_data, stack_folds
from jaxcap.meta.fit import NutsSettings, choose_reference, diagnose, flatten, fold_draws, run_nuts
from jaxcap.meta.model import success_probability

METHODS = ("meta_model", "pooled_logistic", "per_family_logistic")


@dataclasses.dataclass(frozen=True)
class ValidationSettings:
    folds: int = 4  # K-fold over difficulty levels; 0 = none
    families: bool = True  # also leave each family out (needs >= 2 families)
    seed: int = 0


def level_folds(table: Table, n_folds: int, seed: int) -> list[np.ndarray]:
    """Boolean masks over levels; each family's levels are spread evenly over the folds."""
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(table.levels), np.int64)
    for f in range(len(table.families)):
        mine = np.array([i for i, lv in enumerate(table.levels) if lv["family"] == f])
        offset = rng.integers(n_folds)  # so small families do not always land in fold 0
        fold_of[rng.permutation(mine)] = (np.arange(len(mine)) + offset) % n_folds
    return [fold_of == k for k in range(n_folds) if (fold_of == k).any()]


def _held_families(table: Table, held: np.ndarray) -> set[int]:
    return {
        f
        for f in range(len(table.families))
        if all(held[i] for i, lv in enumerate(table.levels) if lv["family"] == f)
    }


def fold_input(table: Table, held: np.ndarray, reference: str) -> tuple[dict, np.ndarray]:
    """The fit of one fold: held-out levels get 0 trials; a held-out reference family hands the
    scale to the next reference candidate among the families that remain."""
    gone = _held_families(table, held)
    kept = [n for i, n in enumerate(table.families) if i not in gone]
    ref = table.families.index(kept[choose_reference(kept, reference)])
    return cell_data(table, ref, held_out=held)


def predict_fold(table: Table, held: np.ndarray, draws: dict, kind: str, rng: np.random.Generator):
    """Held-out rows (meta-model and baselines) and cells (with predictive intervals) of a fold."""
    gone = _held_families(table, held)
    train = [r for r in table.rows if not held[r["level"]]]
    test = [r for r in table.rows if held[r["level"]]]
    base = meta_baselines.predict_baselines(
        meta_baselines.fit_baselines(train, table.levels, len(table.archs)), test, table.levels
    )
    p_cell: dict[tuple, np.ndarray] = {}
    rows = []
    for i, r in enumerate(test):
        key = (r["arch"], r["family"], r["level"])
        if key not in p_cell:  # a held-out level is a new level; a held-out family a new family
            family = None if r["family"] in gone else r["family"]
            log_b = np.log([table.levels[r["level"]]["complexity_bits"]])
            p_cell[key] = success_probability(draws, log_b, rng, arch=r["arch"], family=family)[:, 0]
        rows.append(
            {
                "arch": r["arch"],
                "family": r["family"],
                "level": r["level"],
                "y": int(r["success"]),
                "kind": kind,
                "meta_model": float(p_cell[key].mean()),
                **{m: float(base[m][i]) for m in base},
            }
        )
    cells = []
    for (a, f, lv), p in p_cell.items():
        ys = [o["y"] for o in rows if (o["arch"], o["family"], o["level"]) == (a, f, lv)]
        cells.append(_cell_record(a, f, lv, p, len(ys), sum(ys), rng, kind))
    return rows, cells


def _cell_record(a, f, lv, p, n, k, rng, kind) -> dict:
    """Predictive intervals of the success count of one held-out cell, and whether k is inside:
    the central interval of the count (conservative, a count is discrete) and the randomized PIT
    u = F(k-1) + V (F(k) - F(k-1)), uniform under a calibrated forecast (Czado et al. 2009)."""
    reps = rng.binomial(n, p)
    rec = {
        "arch": a,
        "family": f,
        "level": lv,
        "kind": kind,
        "trials": n,
        "successes": k,
        "p_mean": float(p.mean()),
        "p_lo90": float(np.quantile(p, 0.05)),
        "p_hi90": float(np.quantile(p, 0.95)),
        "p_lo50": float(np.quantile(p, 0.25)),
        "p_hi50": float(np.quantile(p, 0.75)),
    }
    below, upto = binom.cdf(k - 1, n, p).mean(), binom.cdf(k, n, p).mean()
    rec["pit"] = float(below + rng.random() * (upto - below))
    for mass in (50, 90):
        tail = (1 - mass / 100) / 2
        lo, hi = np.quantile(reps, tail, method="lower"), np.quantile(reps, 1 - tail, method="higher")
        rec[f"covered{mass}"] = bool(lo <= k <= hi)
        rec[f"pit_covered{mass}"] = bool(tail <= rec["pit"] <= 1 - tail)
    return rec


def auc(y: np.ndarray, p: np.ndarray) -> float | None:
    """P(p_success > p_failure) over pairs, ties half; None if only one class is present."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return None
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def reliability(y: np.ndarray, p: np.ndarray, bins: int = 10) -> list[dict]:
    """Per probability bin: how many, mean predicted, observed frequency."""
    which = np.minimum((p * bins).astype(int), bins - 1)
    return [
        {
            "lo": b / bins,
            "hi": (b + 1) / bins,
            "n": int((which == b).sum()),
            "predicted": float(p[which == b].mean()),
            "observed": float(y[which == b].mean()),
        }
        for b in range(bins)
        if (which == b).any()
    ]


def scores(rows: list[dict], cells: list[dict]) -> dict:
    """Brier, log predictive density, AUC and reliability per method; coverage of the meta-model."""
    if not rows:
        return {}
    y = np.array([r["y"] for r in rows], np.float64)
    out = {"n_rows": len(rows), "n_cells": len(cells), "base_rate": float(y.mean())}
    for m in METHODS:
        p = np.clip(np.array([r[m] for r in rows]), 1e-12, 1 - 1e-12)
        out[m] = {
            "brier": float(np.mean((p - y) ** 2)),
            "lpd": float(np.mean(np.where(y == 1, np.log(p), np.log1p(-p)))),
            "auc": auc(y, p),
            "reliability": reliability(y, p),
        }
    for mass in (50, 90):
        out["meta_model"][f"coverage{mass}"] = float(np.mean([c[f"covered{mass}"] for c in cells]))
        out["meta_model"][f"pit_coverage{mass}"] = float(np.mean([c[f"pit_covered{mass}"] for c in cells]))
    return out


def validate(table: Table, nuts: NutsSettings, settings: ValidationSettings, reference: str = "") -> dict:
    """Every fold of both designs, fitted jointly in one NUTS run; scores per design."""
    start, rng = time.time(), np.random.default_rng(settings.seed)
    folds: list[tuple[str, np.ndarray]] = []
    if settings.folds > 1:
        folds += [("levels", m) for m in level_folds(table, settings.folds, settings.seed)]
    if settings.families and len(table.families) > 1:
        folds += [
            ("families", np.array([lv["family"] == f for lv in table.levels]))
            for f in range(len(table.families))
        ]
    if not folds:
        return {"predictions": [], "folds": [], "scores": {}, "seconds": 0.0}
    data, obs = stack_folds([fold_input(table, held, reference) for _, held in folds])
    draws, diverging, seconds = run_nuts(data, obs, nuts)
    result = {
        "predictions": [],
        "folds": [],
        "scores": {},
        "nuts_seconds": seconds,
        "divergences": int(diverging.sum()),
    }
    by_kind: dict[str, tuple[list, list]] = {}
    for k, (kind, held) in enumerate(folds):
        mine = fold_draws(draws, k)
        rows, cells = predict_fold(table, held, flatten(mine), kind, rng)
        by_kind.setdefault(kind, ([], []))
        by_kind[kind][0].extend(rows)
        by_kind[kind][1].extend(cells)
        result["predictions"] += rows
        diag = diagnose(mine, np.zeros_like(diverging))  # divergences are counted for the joint run
        result["folds"].append(
            {
                "kind": kind,
                "held_levels": int(held.sum()),
                "reference": table.families[int(data["reference"][k])],
                "diagnostics": diag,
                "cells": cells,
            }
        )
    result["scores"] = {kind: scores(rows, cells) for kind, (rows, cells) in by_kind.items()}
    result["seconds"] = time.time() - start
    return result

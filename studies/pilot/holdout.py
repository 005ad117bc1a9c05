"""A held-out family scored with k pilots: which pilots, what they predict, how well.

For a family f left out of the fit (its fold's posterior: studies/pilot/lofo.py), f's trained
levels are the pool. For k = 0..K pilots chosen one after another from it (sequence.py) by
expected information gain (`design`, 1, 2 or 4 seeds: the level's first n; `design4`, 4 seeds)
or by bisection (4 seeds; it stops when no untried level is inside the bracket), the REMAINING
levels' runs are predicted by `meta_model` (fit_family's posterior-mean P of a typical new level),
`pilot_logistic` (meta_baselines.fit_logistic on the pilot runs alone; with none or one class,
their rate smoothed toward the base rate with the weight of `SMOOTHING_RUNS` runs, since a free
intercept would predict 0 or 1) and `base_rate` (the other families' runs, as validate's). A
method `<predictor>+<pilots>` is scored (Brier 1950) on the runs its pilots left, and on the
levels no rule piloted (`common`: both rules on the same runs). The boundary check: does the 90 %
b* interval hold f's empirical boundary (the log-middle between the hardest level learned by >=
half its seeds and the easiest learned by fewer, over all f's levels)?
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from jaxcap.meta.data import Table, read_table
from jaxcap.meta.fit import NutsSettings
from jaxcap.meta.logistic_baselines import fit_logistic
from jaxcap.meta.pilot.fit import FamilyFit, Particles, prior_particles
from jaxcap.meta.posterior import Posterior
from jaxcap.results.curves import write_atomic
from jaxcap.results.store import clean
from studies.pilot.lofo import family_folds
from studies.pilot.sequence import PilotLog, make_rule

PILOTS = ("design", "design4", "bisection")
PREDICTORS = ("meta_model", "pilot_logistic", "base_rate")
METHODS = tuple(f"{p}+{r}" for r in PILOTS for p in PREDICTORS)
SMOOTHING_RUNS = 4  # pilot_logistic's fallback: the base rate counts as one level's seeds


@dataclasses.dataclass(frozen=True)
class Pool:
    """A family's trained levels: their table indices, log bits and outcomes in seed order."""

    levels: list[int]
    log_bits: np.ndarray
    outcomes: list[np.ndarray]

    def runs(self, idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(log bits, outcome) of every run of the levels `idx`."""
        if not idx:
            return np.zeros(0), np.zeros(0)
        x = np.concatenate([np.full(len(self.outcomes[i]), self.log_bits[i]) for i in idx])
        return x, np.concatenate([self.outcomes[i] for i in idx]).astype(np.float64)


def family_pool(table: Table, f: int) -> Pool:
    """Family f's levels in the table, each with its runs' outcomes in seed order."""
    levels = sorted({r.level for r in table.rows if r.family == f})
    outcomes = [
        np.array([r.success for r in sorted((r for r in table.rows if r.level == lv), key=lambda r: r.seed)])
        for lv in levels
    ]
    return Pool(levels, np.log([table.levels[lv].bits for lv in levels]), outcomes)


def empirical_boundary(pool: Pool) -> float | None:
    """Bits at the log-middle between the hardest level learned by >= half its seeds and the
    easiest learned by fewer; None unless both exist."""
    rate = np.array([o.mean() for o in pool.outcomes])
    if not (rate >= 0.5).any() or not (rate < 0.5).any():
        return None
    return float(np.exp(0.5 * (pool.log_bits[rate >= 0.5].max() + pool.log_bits[rate < 0.5].min())))


def pilot_logistic(x: np.ndarray, y: np.ndarray, base_rate: float, query: np.ndarray) -> np.ndarray:
    """P(success) at log bits `query` from pilot runs (log bits x, outcomes y) alone."""
    if len(y) == 0 or y.min() == y.max():
        return np.full(len(query), (y.sum() + SMOOTHING_RUNS * base_rate) / (len(y) + SMOOTHING_RUNS))
    center, scale = x.mean(), x.std() or 1.0
    w = fit_logistic(np.column_stack([np.ones_like(x), (x - center) / scale]), y)
    return 1.0 / (1.0 + np.exp(-(w[0] + w[1] * (query - center) / scale)))


def _brier(p: np.ndarray, y: np.ndarray) -> float | None:
    return float(np.mean((p - y) ** 2)) if len(y) else None


@dataclasses.dataclass(frozen=True)
class Stage:
    """One pilot rule after j pilots: the fit and the piloted levels (pool indices) and seeds."""

    fit: FamilyFit
    levels: tuple[int, ...]
    trials: tuple[int, ...]


def _stages(rule: str, particles: Particles, pool: Pool, k: int, seed: int) -> tuple[list[Stage], PilotLog]:
    """`rule`'s pilots one after another from the pool: its stage at 0..k pilots (a rule with
    nothing left to pilot keeps its last pilots) and the final log."""
    pick, log, out = make_rule(rule, None, seed), PilotLog(particles), []
    for j in range(k + 1):
        out.append(Stage(log.fit(), tuple(log.levels), tuple(log.trials)))
        if j < k:
            for i, n in pick(out[-1].fit, log, pool.log_bits, j):
                n = min(n, len(pool.outcomes[i]))
                log.add(i, pool.log_bits[i], n, int(pool.outcomes[i][:n].sum()))
    return out, log


def _brier(p: np.ndarray, y: np.ndarray) -> float | None:
    return float(np.mean((p - y) ** 2)) if len(y) else None


def _methods(pool: Pool, stage: Stage, rule: str, base_rate: float, idx: list[int]) -> dict:
    """Brier of each predictor from `stage`'s pilots over every run of the pool levels `idx`."""
    x, y = pool.runs(idx)
    px = np.concatenate([np.full(n, pool.log_bits[i]) for i, n in zip(stage.levels, stage.trials)] or [[]])
    py = np.concatenate([pool.outcomes[i][:n] for i, n in zip(stage.levels, stage.trials)] or [[]])
    return {
        f"meta_model+{rule}": _brier(stage.fit.predict(x) if len(x) else x, y),
        f"pilot_logistic+{rule}": _brier(pilot_logistic(px, py.astype(np.float64), base_rate, x), y),
        f"base_rate+{rule}": _brier(np.full(len(y), base_rate), y),
    }


def _interval(fit: FamilyFit, boundary: float | None) -> dict:
    lo, med, hi = fit.boundary_interval()
    covered = None if boundary is None else bool(lo <= boundary <= hi)
    return {"lo": lo, "median": med, "hi": hi, "factor": hi / lo, "covered": covered, "ess": fit.ess}


def score_family(
    pool: Pool, posterior: Posterior, base_rate: float, k: int, seed: int = 0, repeat: int = 4
) -> dict:
    """Every method at k = 0..`k` pilots for one held-out family (its fold's posterior): Brier
    over the runs each rule's pilots left (`brier`) and over those no rule piloted (`common`)."""
    particles = prior_particles(posterior, 0, seed, repeat)
    boundary = empirical_boundary(pool)
    runs = {rule: _stages(rule, particles, pool, k, seed) for rule in PILOTS}
    out: dict = {"levels": len(pool.levels), "empirical_boundary": boundary, "k": {}, "pilots": {}}
    for j in range(k + 1):
        stages = {rule: runs[rule][0][j] for rule in PILOTS}
        common = [i for i in range(len(pool.levels)) if all(i not in s.levels for s in stages.values())]
        at = {"brier": {}, "common": {}, "boundary": {}, "pilots": {}, "pilot_runs": {}, "remaining_runs": {}}
        for rule, stage in stages.items():
            rest = [i for i in range(len(pool.levels)) if i not in stage.levels]
            at["brier"] |= _methods(pool, stage, rule, base_rate, rest)
            at["common"] |= _methods(pool, stage, rule, base_rate, common)
            at["boundary"][rule] = _interval(stage.fit, boundary)
            at["pilots"][rule] = len(stage.levels)
            at["pilot_runs"][rule] = sum(stage.trials)
            at["remaining_runs"][rule] = len(pool.runs(rest)[1])
        out["k"][str(j)] = at | {"common_runs": len(pool.runs(common)[1])}
    for rule, (_, log) in runs.items():
        out["pilots"][rule] = [
            {"level": pool.levels[i], "bits": float(np.exp(b)), "seeds": n, "successes": s}
            for i, b, n, s in zip(log.levels, log.log_bits, log.trials, log.successes)
        ]
    return out


def _means(families: dict, k: int, key: str) -> dict:
    """{k: {method: mean over the families that scored it}} of `key` (brier or common)."""
    out = {}
    for j in map(str, range(k + 1)):
        out[j] = {}
        for m in METHODS:
            vals = [r["k"][j][key][m] for r in families.values() if r["k"][j][key][m] is not None]
            out[j][m] = float(np.mean(vals)) if vals else None
    return out


def score_table(table: Table, folds: dict, k: int, seed: int = 0, repeat: int = 4) -> dict:
    """Every family of the table, given its folds (lofo.family_folds); means over families."""
    families = {}
    for f, fold in enumerate(folds["folds"]):
        others = [r.success for r in table.rows if r.family != f]
        pool = family_pool(table, f)
        families[fold["family"]] = score_family(
            pool, fold["posterior"], float(np.mean(others)), k, seed, repeat
        )
        families[fold["family"]] |= {
            "reference": fold["reference"],
            "diagnostics": fold["diagnostics"].to_json(),
        }
    means = {"mean": _means(families, k, "brier"), "mean_common": _means(families, k, "common")}
    return {"k": k, "seed": seed, "repeat": repeat, "families": families, **means} | {
        "nuts_seconds": folds["nuts_seconds"],
        "cached": folds["cached"],
    }


CACHE, OUTPUT = "pilot_folds.npz", "pilot_score.json"  # in each scored workdir


def score_workdir(workdir: Path, nuts: NutsSettings, k: int, seed: int, repeat: int, reference: str) -> dict:
    """One workdir's folds (cached) and scores, written to <workdir>/pilot_score.json."""
    table = read_table(workdir / "table.json")
    folds = family_folds(table, nuts, workdir / CACHE, reference)
    result = {"workdir": str(workdir), **score_table(table, folds, k, seed, repeat)}
    write_atomic(workdir / OUTPUT, json.dumps(clean(result)) + "\n")
    return result

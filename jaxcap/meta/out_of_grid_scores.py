"""Score a fitted meta-model on a separate population run: levels it never saw, fresh seeds.

    python -m jaxcap.main.out_of_grid --posterior runs/calibrate --workdirs runs/modulo_new [--json]

validate.py holds out cells of the calibrate table itself; a user asks about other levels,
trained another day. Here a calibrate run's posterior predicts every cell of other population
workdirs, each level as a new level, scored with jaxcap/meta/scores.py against the calibrate
table's base rate and per-family rates. A family or architecture outside the fit is an error.
Beside the pooled scores: each family's Brier against the same baselines, and every cell whose
success count lies outside the central 90 % of its predictive count distribution (the seeds did
what the meta-model gave less than 5 % on either side).

Details: docs/design/meta-model.md#out-of-grid.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from jaxcap.meta import data as meta_data
from jaxcap.meta.model import count_cdf, success_probability
from jaxcap.meta.scores import cell_record, scores
from jaxcap.meta.validation import HeldoutRow

METHODS = ("meta_model", "base_rate", "family_rate")
TAIL = 0.05  # each side of the central 90 % of a cell's predictive count


def score_population(posterior, fitted: meta_data.Table, new: meta_data.Table, seed: int = 0) -> dict:
    """Predict every cell of `new` from `posterior` (fitted on `fitted`) and score it."""
    rng = np.random.default_rng(seed)
    meta = posterior.meta
    arch_of = {json.dumps(m, sort_keys=True): a for a, m in enumerate(meta.archs)}
    y_fit = np.array([r.success for r in fitted.rows], np.float64)
    fam_fit = np.array([fitted.families[r.family] for r in fitted.rows])
    rows, cells_out, outside, seen_levels = [], [], [], 0
    for (a_new, f_new, lv), group in _cells(new).items():
        name = new.families[f_new]
        key = json.dumps(new.archs[a_new], sort_keys=True)
        if name not in meta.families or key not in arch_of:
            what = f"family {name}" if name not in meta.families else f"architecture {new.arch_label(a_new)}"
            raise ValueError(f"--workdirs: {what} is not in the fit; out-of-grid scores new levels only")
        f, a = meta.families.index(name), arch_of[key]
        level = new.levels[lv]
        seen_levels += any(x.family == f and x.fields == level.fields for x in meta.levels)
        log_b = np.log([level.bits])
        p = success_probability(posterior.draws, log_b, rng, arch=a, family=f)[:, 0]
        typical = success_probability(posterior.draws, log_b, rng, arch=a, family=f, marginal=True)[:, 0]
        ys = [int(r.success) for r in group]
        rho = posterior.draws.get("rho")
        rec = cell_record((a, f, level.label), p, len(ys), sum(ys), rng, typical, rho)
        below, upto = (
            count_cdf(sum(ys) - 1, len(ys), p, rho).mean(),
            count_cdf(sum(ys), len(ys), p, rho).mean(),
        )
        if upto < TAIL or below > 1 - TAIL:  # P(count <= k) < 5 % or P(count >= k) < 5 %
            outside.append(
                {
                    "family": name,
                    "level": level.label,
                    "learned": sum(ys),
                    "runs": len(ys),
                    "p_mean": float(p.mean()),
                    "p_lo90": rec.p_lo90,
                    "p_hi90": rec.p_hi90,
                }
            )
        cells_out.append(dataclasses.replace(rec, extra={"bits": level.bits, "covariate": level.covariate}))
        family_rate = y_fit[fam_fit == name].mean()
        p_of = {
            "meta_model": float(p.mean()),
            "base_rate": float(y_fit.mean()),
            "family_rate": float(family_rate),
        }
        rows += [HeldoutRow(a, f, lv, y, fold="out_of_grid", p=p_of) for y in ys]
    return {  # the scores' JSON, every cell's, and how many level values the fit also has (new seeds)
        **scores(rows, cells_out, METHODS).to_json(),
        "cells": [c.to_json() for c in cells_out],
        "levels_also_fitted": int(seen_levels),
        "families": by_family(rows, meta.families),
        "outside90": outside,
    }


def by_family(rows: list[HeldoutRow], names: list[str]) -> dict[str, dict]:
    """Each family's runs, successes and Brier per method (mean over its runs)."""
    out = {}
    for f in sorted({r.family for r in rows}):
        mine = [r for r in rows if r.family == f]
        y = np.array([r.y for r in mine], np.float64)
        brier = {m: float(np.mean((np.array([r.p[m] for r in mine]) - y) ** 2)) for m in METHODS}
        out[names[f]] = {"runs": len(mine), "learned": int(y.sum()), **brier}
    return out


def _cells(table: meta_data.Table) -> dict[tuple, list[meta_data.TableRow]]:
    out: dict[tuple, list[meta_data.TableRow]] = {}
    for r in table.rows:
        out.setdefault((r.arch, r.family, r.level), []).append(r)
    return out

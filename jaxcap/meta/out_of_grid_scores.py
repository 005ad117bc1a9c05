"""Score a fitted meta-model on a separate population run: levels it never saw, fresh seeds.

    python -m jaxcap.main.out_of_grid --posterior runs/calibrate --workdirs runs/modulo_new [--json]

validate.py holds out cells of the calibrate table itself; a user asks about other levels,
trained another day. Here a calibrate run's posterior predicts every cell of other population
workdirs, each level as a new level, scored with jaxcap/meta/scores.py against the calibrate
table's base rate and per-family rates. A family or architecture outside the fit is an error.

Details: docs/design/meta-model.md#out-of-grid.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from jaxcap.meta import data as meta_data
from jaxcap.meta.model import success_probability
from jaxcap.meta.scores import cell_record, scores
from jaxcap.meta.validation import HeldoutRow

METHODS = ("meta_model", "base_rate", "family_rate")


def score_population(posterior, fitted: meta_data.Table, new: meta_data.Table, seed: int = 0) -> dict:
    """Predict every cell of `new` from `posterior` (fitted on `fitted`) and score it."""
    rng = np.random.default_rng(seed)
    meta = posterior.meta
    arch_of = {json.dumps(m, sort_keys=True): a for a, m in enumerate(meta.archs)}
    y_fit = np.array([r.success for r in fitted.rows], np.float64)
    fam_fit = np.array([fitted.families[r.family] for r in fitted.rows])
    rows, cells_out, seen_levels = [], [], 0
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
        rec = cell_record((a, f, level.label), p, len(ys), sum(ys), rng, typical, posterior.draws.get("rho"))
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
    }


def _cells(table: meta_data.Table) -> dict[tuple, list[meta_data.TableRow]]:
    out: dict[tuple, list[meta_data.TableRow]] = {}
    for r in table.rows:
        out.setdefault((r.arch, r.family, r.level), []).append(r)
    return out

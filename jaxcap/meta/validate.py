"""Held-out validation of the meta-model against four baselines.

The splits are jaxcap/meta/splits.py's: held-out levels (stratified K-fold, repeated over fold
seeds), held-out top levels per family, leave one family out (or refused, with the reason),
leave one architecture out (>= 3 architectures). Every fitted fold refits the meta-model and
the baselines (jaxcap/meta/logistic_baselines.py) on the rest; the meta-model's folds run one after
another through one compiled sampler (jaxcap/meta/fit.py: the data are its arguments).

The result is a `Validation` record (jaxcap/meta/validation.py), written as validation.json.
Details: docs/design/meta-model.md#validation-designs.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from jaxcap.meta import logistic_baselines as meta_baselines
from jaxcap.meta import splits as meta_splits
from jaxcap.meta.cells import cell_data, cells, reference_of, stack_folds
from jaxcap.meta.data import Table
from jaxcap.meta.fit import NutsSettings, diagnose, flatten, fold_draws, run_nuts
from jaxcap.meta.model import success_probability
from jaxcap.meta.scores import cell_record, scores
from jaxcap.meta.validation import FoldResult, HeldoutCell, HeldoutRow, Validation, ValidationSettings

BASELINES = ("base_rate", "family_intercepts", "pooled_logistic", "per_family_logistic")
METHODS = ("meta_model", *BASELINES)


def predict_fold(
    table: Table, fold: meta_splits.Fold, draws: dict, rng: np.random.Generator
) -> tuple[list[HeldoutRow], list[HeldoutCell], dict[str, list[int]]]:
    """Held-out rows (meta-model and baselines) and cells (with PIT and intervals) of a fold, and
    the architectures and families new to it."""
    keys, _, _ = cells(table)
    held_keys = {tuple(int(v) for v in k) for k in keys[fold.held]}
    new_families = meta_splits.held_families(table, fold.held)
    new_archs = meta_splits.held_archs(table, fold.held)
    train = [r for r in table.rows if (r.arch, r.family, r.level) not in held_keys]
    test = [r for r in table.rows if (r.arch, r.family, r.level) in held_keys]
    fitted = meta_baselines.fit_baselines(train, table.levels, len(table.archs), len(table.families))
    base = meta_baselines.predict_baselines(fitted, test, table.levels)
    p_cell: dict[tuple, np.ndarray] = {}
    p_typical: dict[tuple, np.ndarray] = {}
    rows = []
    for i, r in enumerate(test):
        key = (r.arch, r.family, r.level)
        if key not in p_cell:  # a new level (fresh effect), family or architecture
            family = None if r.family in new_families else r.family
            log_b = np.log([table.levels[r.level].bits])
            # a held-out architecture's log C in the fold's own draws is its regression prediction
            # (its z_C had no data), which is how predict treats a new architecture
            where = dict(arch=r.arch, family=family)
            p_cell[key] = success_probability(draws, log_b, rng, **where)[:, 0]
            p_typical[key] = success_probability(draws, log_b, rng, **where, marginal=True)[:, 0]
        rows.append(
            HeldoutRow(
                *key,
                y=int(r.success),
                fold=f"{fold.kind} {fold.name}",
                design=table.levels[r.level].design or "grid",
                p={"meta_model": float(p_cell[key].mean()), **{m: float(base[m][i]) for m in BASELINES}},
            )
        )
    out_cells = []
    for key, p in p_cell.items():
        ys = [o.y for o in rows if (o.arch, o.family, o.level) == key]
        rec = cell_record(key, p, len(ys), sum(ys), rng, p_typical[key], draws.get("rho"))
        design = table.levels[key[2]].design or "grid"
        out_cells.append(dataclasses.replace(rec, fold=f"{fold.kind} {fold.name}", design=design))
    return rows, out_cells, {"new_archs": sorted(new_archs), "new_families": sorted(new_families)}


def validate(
    table: Table, nuts: NutsSettings, settings: ValidationSettings, reference: str = ""
) -> Validation:
    """Every fold of every design; the fitted ones in one NUTS run; scores per design."""
    start, rng = time.time(), np.random.default_rng(0)
    folds = meta_splits.make_folds(table, settings.folds, settings.fold_seeds, settings.designs)
    fitted = [f for f in folds if not f.refused]
    refused = {f"{f.kind} {f.name}": f.refused for f in folds if f.refused}
    if not fitted:
        return Validation(settings, refused=refused, seconds=time.time() - start)
    parts = [
        cell_data(
            table, reference_of(table, reference, meta_splits.held_families(table, f.held)), held=f.held
        )
        for f in fitted
    ]
    data, obs = stack_folds(parts)
    run = run_nuts(data, obs, nuts)
    predictions, results, by_kind = [], [], {}
    for k, fold in enumerate(fitted):
        mine = fold_draws(run.draws, k)
        rows, fold_cells, new = predict_fold(table, fold, flatten(mine), rng)
        by_kind.setdefault(fold.kind, ([], []))
        by_kind[fold.kind][0].extend(rows)
        by_kind[fold.kind][1].extend(fold_cells)
        predictions += rows
        reference_name = table.families[int(data["reference"][k])]
        results.append(
            FoldResult(
                kind=fold.kind,
                name=fold.name,
                seed=fold.seed,
                held_cells=int(fold.held.sum()),
                reference=reference_name,
                **new,
                diagnostics=diagnose(mine, run.diverging[:, :, k], run.steps[:, :, k]),
                cells=fold_cells,
            )
        )
    scored = {}
    for kind, (rows, kind_cells) in by_kind.items():
        scored[kind] = scores(rows, kind_cells, METHODS)
        if kind == "levels":
            for design in ("grid", "boundary"):
                sub = [r for r in rows if r.design == design]
                sub_cells = [c for c in kind_cells if c.design == design]
                if sub:
                    scored[f"levels:{design}"] = scores(sub, sub_cells, METHODS)
    return Validation(settings, predictions, results, scored, refused, run.seconds, time.time() - start)

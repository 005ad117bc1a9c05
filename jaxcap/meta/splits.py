"""Held-out splits of a meta-model table: which cells each validation fit does not see.

Four designs, one per user question: `levels` (K-fold over each family's levels:
interpolation), `top` (each family's hardest levels: extrapolation), `families` (leave one family
out) and `archs` (leave one architecture out). Model choices are made on a development split that
reports never quote (Cawley & Talbot 2010).

Details: docs/design/meta-model.md#validation-designs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcap.meta.cells import cells
from jaxcap.meta.data import Table

DEV_SEED = 0
MIN_FAMILIES = 4  # families a fit must keep before it predicts a new one
MIN_ARCHS = 3


@dataclasses.dataclass(frozen=True)
class Fold:
    kind: str  # levels | top | families | archs
    name: str  # e.g. "seed 1 fold 2", "modulo"
    held: np.ndarray  # bool over meta_cells.cells(table)
    seed: int | None = None
    refused: str = ""  # why this fold is not fitted ("" = fitted)


def _family_levels(table: Table, f: int) -> list[int]:
    return [i for i, lv in enumerate(table.levels) if lv.family == f]


def _level_outcomes(table: Table) -> tuple[np.ndarray, np.ndarray]:
    """Per level: any success, any failure (over architectures and seeds)."""
    won = np.zeros(len(table.levels), bool)
    lost = np.zeros(len(table.levels), bool)
    for r in table.rows:
        (won if r.success else lost)[r.level] = True
    return won, lost


def _keeps_both(held_levels: set[int], mine: list[int], won: np.ndarray, lost: np.ndarray) -> bool:
    kept = [i for i in mine if i not in held_levels]
    return (not won[mine].any() or won[kept].any()) and (not lost[mine].any() or lost[kept].any())


def stratified_level_folds(table: Table, n_folds: int, seed: int, tries: int = 200) -> list[np.ndarray]:
    """Boolean masks over levels. Per family, levels are dealt to folds in a random order; an
    order is redrawn until every fold keeps one of the family's successes and one of its failures.
    A family's only success (or failure) level is never held out (it cannot be, by the rule)."""
    rng = np.random.default_rng(seed)
    won, lost = _level_outcomes(table)
    fold_of = np.full(len(table.levels), -1)
    for f in range(len(table.families)):
        mine = _family_levels(table, f)
        pinned = {i for flag in (won, lost) for i in mine if flag[mine].sum() == 1 and flag[i]}
        free = [i for i in mine if i not in pinned]
        for _ in range(tries):
            order = rng.permutation(free)
            offset = rng.integers(n_folds)  # so small families do not always start at fold 0
            assign = {int(i): (j + offset) % n_folds for j, i in enumerate(order)}
            groups = [{i for i, k in assign.items() if k == fold} for fold in range(n_folds)]
            if all(_keeps_both(g, mine, won, lost) for g in groups):
                break
        for i, k in assign.items():
            fold_of[i] = k
    return [fold_of == k for k in range(n_folds) if (fold_of == k).any()]


def top_levels(table: Table, f: int, fraction: float = 0.25) -> np.ndarray:
    """The hardest ceil(fraction x levels) of family f by its covariate, fewer if the family would
    keep no success or no failure; boolean over levels."""
    mine = sorted(_family_levels(table, f), key=lambda i: table.levels[i].bits)
    won, lost = _level_outcomes(table)
    n = max(1, int(np.ceil(fraction * len(mine))))
    while n > 0 and not _keeps_both(set(mine[-n:]), mine, won, lost):
        n -= 1
    held = np.zeros(len(table.levels), bool)
    held[mine[len(mine) - n :]] = n > 0
    return held


def make_folds(table: Table, n_folds: int, seeds: tuple[int, ...], designs: tuple[str, ...]) -> list[Fold]:
    """Every fold of the requested designs (`levels`, `top`, `families`, `archs`)."""
    keys = cells(table)[0]
    on_levels = lambda mask: mask[keys[:, 2]]  # noqa: E731
    out = []
    if "levels" in designs and n_folds > 1:
        for s in seeds:
            for k, mask in enumerate(stratified_level_folds(table, n_folds, s)):
                out.append(Fold("levels", f"seed {s} fold {k}", on_levels(mask), seed=s))
    for f, name in enumerate(table.families):
        if "top" in designs and len(_family_levels(table, f)) > 1:
            held = top_levels(table, f)
            if held.any():
                out.append(Fold("top", name, on_levels(held)))
    if "families" in designs and len(table.families) > 1:
        kept = len(table.families) - 1
        why = (
            f"the fit would keep {kept} families; a new family's θ is a draw from a population "
            f"fitted to them, which needs >= {MIN_FAMILIES}"
            if kept < MIN_FAMILIES
            else ""
        )
        out += [Fold("families", name, keys[:, 1] == f, refused=why) for f, name in enumerate(table.families)]
    if "archs" in designs and len(table.archs) >= MIN_ARCHS:
        out += [Fold("archs", f"a{a}", keys[:, 0] == a) for a in range(len(table.archs))]
    elif "archs" in designs:
        why = (
            f"the table has {len(table.archs)} architecture(s); leaving one out needs >= {MIN_ARCHS} "
            "(the fit must keep two that differ for the covariate regression to say anything)"
        )
        out.append(Fold("archs", "all", np.zeros(len(keys), bool), refused=why))
    return out


def held_families(table: Table, held: np.ndarray) -> set[int]:
    """Families with every cell held out (a fold's new families)."""
    keys = cells(table)[0]
    return {f for f in range(len(table.families)) if held[keys[:, 1] == f].all()}


def held_archs(table: Table, held: np.ndarray) -> set[int]:
    keys = cells(table)[0]
    return {a for a in range(len(table.archs)) if held[keys[:, 0] == a].all()}

"""Which difficulty levels calibrate trains: a spanning grid, then levels at each boundary.

A family's candidate levels (its `levels` values in the config) are placed by their difficulty
covariate (jaxcap/meta/difficulty.py). The coarse pass trains `grid` of them spread evenly in
log covariate over the whole range; each bisection round then adds, in every interval between
neighbouring trained levels where the success rate crosses 1/2 (a flip), the untrained
candidate nearest the interval's geometric middle, widest intervals first, `per_round` a round
(the boundary's location is what the fit is least sure of: Atkinson, Donev & Tobias 2007,
ch. 17, on designs for binary responses; this is the sequential, model-free form of it). With
`rule = "information"` a round adds the levels of largest expected information gain about b*
instead (pilot/boundary.py).

Details: docs/design/meta-model.md#calibrate-families-and-levels.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcap.fields import Bool, Choice, Int, setting
from jaxcap.meta.data import Table


@dataclasses.dataclass(frozen=True)
class Design:
    """config.calibrate.design: each `setting` is a field's default and its config rule."""

    grid: int = setting(0, Int(0, 1000))  # levels of the coarse pass; 0 = train every candidate
    rounds: int = setting(0, Int(0, 20))  # bisection rounds after it
    per_round: int = setting(1, Int(1, 100))  # levels added per family and round
    # how a round picks its levels: the middle of each flip, or the largest expected information
    # gain about b* from the family's own levels (pilot/boundary.py)
    rule: str = setting("bisection", Choice(("bisection", "information")))
    # the grid trained as populations of per_round levels, each the size of a round's, so that a
    # family's grid and rounds run one compiled program set (on a CPU four populations of 4 run
    # as fast as one of 16: docs/engine.md); False: one population a pass (an accelerator's choice)
    share_programs: bool = setting(True, Bool())

    @property
    def levels_per_population(self) -> int:
        """config.sweep.levels_per_population of a family pass (0: a pass is one population)."""
        return self.per_round if self.share_programs and self.grid and self.rounds else 0


def spanning_grid(bits: list[float], n: int) -> list[int]:
    """Indices of n candidates spread evenly in log bits from the easiest to the hardest."""
    order = np.argsort(bits, kind="stable")
    if n >= len(bits):
        return sorted(order.tolist())
    log_b = np.log(np.asarray(bits, np.float64))
    targets = np.linspace(log_b.min(), log_b.max(), n)
    chosen: list[int] = []
    for t in targets:  # nearest candidate not yet chosen
        free = [i for i in order if i not in chosen]
        chosen.append(min(free, key=lambda i: (abs(log_b[i] - t), i)))
    return sorted(chosen)


def flips(bits: list[float], rates: list[float]) -> list[tuple[float, float]]:
    """(low, high) bits of neighbouring trained levels whose success rates lie on either side of
    1/2 (either way round: a non-monotone family has several)."""
    order = np.argsort(bits, kind="stable")
    b, r = np.asarray(bits)[order], np.asarray(rates)[order]
    return [(b[i], b[i + 1]) for i in range(len(b) - 1) if (r[i] >= 0.5) != (r[i + 1] >= 0.5)]


def bisect(
    cand_bits: list[float], trained: set[int], bits: list[float], rates: list[float], n: int
) -> list[int]:
    """Up to n untrained candidates, one per flip interval (widest in log bits first), each the
    one nearest the interval's geometric middle strictly inside it."""
    out: list[int] = []
    for lo, hi in sorted(flips(bits, rates), key=lambda f: -np.log(f[1] / f[0])):
        inside = [i for i, b in enumerate(cand_bits) if lo < b < hi and i not in trained and i not in out]
        if inside and len(out) < n:
            mid = 0.5 * (np.log(lo) + np.log(hi))
            out.append(min(inside, key=lambda i: (abs(np.log(cand_bits[i]) - mid), i)))
    return sorted(out)


def level_rates(table: Table, family: str) -> dict[float, float]:
    """Success rate per level of one family (pooled over architectures), keyed by covariate bits."""
    return {b: k / n for b, (n, k) in level_counts(table, family).items()}


def level_counts(table: Table, family: str) -> dict[float, tuple[int, int]]:
    """(runs, successes) per level of one family (pooled over architectures), keyed by bits."""
    if family not in table.families:
        return {}
    f = table.families.index(family)
    runs: dict[int, list[bool]] = {}
    for r in table.rows:
        if r.family == f:
            runs.setdefault(r.level, []).append(r.success)
    return {table.levels[lv].bits: (len(v), int(sum(v))) for lv, v in runs.items()}


def candidate_counts(
    cand_bits: list[float], counts: dict[float, tuple[int, int]]
) -> dict[int, tuple[int, int]]:
    """The trained levels' counts keyed by candidate index (a level matches its candidate's bits)."""
    out = {}
    for i, b in enumerate(cand_bits):
        for t, c in counts.items():
            if np.isclose(b, t):
                out[i] = c
    return out


def next_levels(cand_bits: list[float], trained_bits: dict[float, float], n: int) -> list[int]:
    """The candidates a bisection round adds, from the trained levels' rates {bits: rate}."""
    trained = {i for i, b in enumerate(cand_bits) if any(np.isclose(b, t) for t in trained_bits)}
    return bisect(cand_bits, trained, list(trained_bits), list(trained_bits.values()), n)


def tag_levels(table: Table, boundary_sources: set[str]) -> None:
    """Set each level's `design`: "boundary" for levels trained by a bisection round, else "grid"
    (the records are frozen: the table's list gets new ones)."""
    boundary = {r.level for r in table.rows if r.source in boundary_sources}
    table.levels[:] = [
        dataclasses.replace(lv, design="boundary" if i in boundary else "grid")
        for i, lv in enumerate(table.levels)
    ]

"""Bits stored against exposures: the capacity protocol's clock and the record its stop rule
keeps (each architecture's curve and its flatness verdict: jaxcap/results/capacity_curves.py).

Exposures. An item's exposures are how many times training has shown it. Batches of B items are
drawn uniformly (with replacement) from the n training items, so after s steps every item has
been seen s·B/n times on average (Poisson-distributed per item). The protocol fixes exposures,
not steps, as Allen-Zhu & Li [1] do (knowledge capacity at 100 and 1,000 exposures): a dataset
twice as large needs twice the steps to reach the same budget, so a step budget favours small
datasets and says nothing about saturation.

Details: docs/design/capacity.md#exposures-saturation-and-plateau.

[1] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from jaxcap.results.records import Cursor

RECORDED = ("bits_stored", "net_bits", "exact_fraction")  # per member and budget, in the cursor


def exposures(step: int, batch_size: int, n: int) -> float:
    """Mean times each of n training items has been seen after `step` batches of `batch_size`."""
    return step * batch_size / n


def steps_to(budget: float, n: int, batch_size: int) -> int:
    """The first step at which n items have had `budget` exposures."""
    return math.ceil(budget * n / batch_size - 1e-9)


def fresh_record(n_members: int, n_budgets: int) -> dict:
    return {
        "step": 0,
        "last": None,
        "at": {m: [[None] * n_budgets for _ in range(n_members)] for m in RECORDED},
    }


def record(previous: dict, step: int, values: dict, sizes, batch_size: int, budgets) -> dict:
    """The record after an eval at `step` with per-member `values` of every RECORDED metric: each
    budget passed since the previous eval gets its log-exposure interpolation. A new dict: the
    previous one may still be on its way into an asynchronous checkpoint."""
    s0, before = previous["step"], previous["last"]
    at = {m: [list(row) for row in rows] for m, rows in previous["at"].items()}
    for i, n in enumerate(sizes):
        for k, budget in enumerate(budgets):
            target = budget * n / batch_size  # the (fractional) step at which member i passes it
            if not s0 < target <= step + 1e-9:
                continue
            if math.isclose(target, step, rel_tol=1e-12):
                w = 1.0  # measured exactly at the budget
            elif s0 > 0:
                w = math.log(target / s0) / math.log(step / s0)
            else:
                continue  # passed before the first eval: unresolved
            for m in RECORDED:
                v1 = float(values[m][i])
                at[m][i][k] = v1 if w == 1.0 else before[m][i] + w * (v1 - before[m][i])
    return {"step": step, "last": {m: [float(v) for v in values[m]] for m in RECORDED}, "at": at}


def make_stop_fn(sizes, batch_size: int, budgets) -> Callable[[Cursor], bool]:
    """`stop_fn(cursor)` for `train_bucket`: records the budgets passed at this eval into
    `cursor.extra['exposure']` (checkpointed with the cursor; from the eval's metrics in
    `cursor.last`) and is True once every member has passed the last budget."""
    sizes, budgets = [int(n) for n in sizes], [float(b) for b in budgets]
    need = max(budgets[-1] * n / batch_size for n in sizes)

    def stop_fn(cursor: Cursor) -> bool:
        previous = cursor.extra.get("exposure") or fresh_record(len(sizes), len(budgets))
        values = {m: cursor.last[m] for m in RECORDED}
        cursor.extra["exposure"] = record(previous, cursor.step, values, sizes, batch_size, budgets)
        return cursor.step >= need - 1e-9

    return stop_fn

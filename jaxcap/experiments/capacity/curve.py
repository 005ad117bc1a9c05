"""Bits stored against exposures: the capacity protocol's clock, the record its stop rule keeps,
and each architecture's curve with its flatness verdict.

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

import numpy as np

from jaxcap.results.records import CapacityRow, Cursor

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


def gain_over_doubling(budgets, values) -> tuple[float | None, float | None, float | None]:
    """(relative gain, from, to): the value at the last resolved budget over the value at the
    largest resolved budget at most half as large, (last − that) / last."""
    known = [(b, v) for b, v in zip(budgets, values) if v is not None]
    if not known:
        return None, None, None
    last_b, last_v = known[-1]
    before = [(b, v) for b, v in known if b <= last_b / 2]
    if not before:
        return None, None, last_b
    b, v = before[-1]
    return (last_v - v) / max(abs(last_v), 1e-12), b, last_b


def member_saturated(budgets, bits_at, dataset_bits: float, tol: float) -> bool:
    """A member's own curve is flat over its last doubling, or it stored (nearly) everything."""
    gain, _, _ = gain_over_doubling(budgets, bits_at)
    full = bits_at[-1] is not None and bits_at[-1] >= (1.0 - tol) * dataset_bits
    return bool(full or (gain is not None and gain <= tol))


def curve(members: list[CapacityRow], n_params: int) -> list[dict]:
    """C(E) per exposure budget: per seed the most bits any member (size, learning rate) stored
    at E, of the members not diverged and resolved at E; median and range over seeds."""
    points = []
    for k, budget in enumerate(members[0].exposures):
        per_seed: dict[int, CapacityRow] = {}
        for r in members:
            v = r.bits_at[k]
            if r.diverged or v is None:
                continue
            if r.seed not in per_seed or v > per_seed[r.seed].bits_at[k]:
                per_seed[r.seed] = r
        best = [per_seed[s] for s in sorted(per_seed)]
        bits = [r.bits_at[k] for r in best]
        median = float(np.median(bits)) if bits else None
        points.append(
            {
                "exposures": budget,
                "seeds": sorted(per_seed),
                "bits": bits,
                "median": median,
                "min": min(bits, default=None),
                "max": max(bits, default=None),
                "bits_per_param": None if median is None else median / n_params,
                "best_size": [r.dataset_size for r in best],
                "sizes": sorted({r.dataset_size for r in members if r.bits_at[k] is not None}),
            }
        )
    return points


def annealed_curve(rows: list[CapacityRow], n_params: int) -> list[dict]:
    """C(E) over annealed budgets: each budget E is its own runs (rows with `anneal_budget` E,
    one budget each), read like `curve`: per seed the most bits any size stored."""
    points = []
    for budget in sorted({r.anneal_budget for r in rows}):
        [point] = curve([r for r in rows if r.anneal_budget == budget], n_params)
        points.append(point)
    return points


def flatness(points: list[dict], tol: float) -> dict:
    """Whether the median C(E) had flattened at its last budget (gain over the last doubling)."""
    gain, start, end = gain_over_doubling([p["exposures"] for p in points], [p["median"] for p in points])
    return {"flat": gain is not None and gain <= tol, "gain": gain, "from": start, "to": end, "tol": tol}

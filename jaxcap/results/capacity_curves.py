"""Capacity curves and their verdicts, from capacity.jsonl rows: memorized bits estimated from a
training loss, when a member's series has saturated, C(E) over exposure budgets with its flatness
over the last doubling, C over dataset sizes with its plateau.

Shared by every experiment that measures memorization (capacity, enhance, calibrate's anchor);
the capacity experiment's protocol (the exposure clock, the scoring) stays in
jaxcap/experiments/capacity. Details: docs/design/capacity.md#exposures-saturation-and-plateau.

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

import math

import numpy as np

from jaxcap.results.records import CapacityRow

MEMORIZED = 0.9  # a size storing this fraction of its bits is still being memorized, not a plateau


def estimated_bits(
    dataset_bits: np.ndarray, n_targets: np.ndarray, train_loss_nats: np.ndarray
) -> np.ndarray:
    """Unclipped bits stored from the mean training loss: dataset bits − code length."""
    return dataset_bits - n_targets * train_loss_nats / math.log(2.0)


def saturated(series: np.ndarray, window: int, tol: float, floor: float, ceiling: np.ndarray) -> np.ndarray:
    """[member] bool from a bits series [eval, member]: the mean of the last `window` evals
    exceeds the mean of the `window` before by less than `tol` (relative, of at least `floor`
    bits), or the last eval is within `tol` of the member's dataset bits (`ceiling`: nothing is
    left to gain). Means over windows, because constant-rate SGD makes single evals jitter."""
    series = np.asarray(series, np.float64)
    full = series[-1] >= (1.0 - tol) * np.asarray(ceiling, np.float64)
    if series.shape[0] < 2 * window:
        return full
    recent, before = series[-window:].mean(0), series[-2 * window : -window].mean(0)
    return full | (recent - before <= tol * np.maximum(np.abs(recent), floor))


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


def size_curve(members: list[CapacityRow]) -> list[dict]:
    """Per dataset size: the bits each seed stored with its best learning rate."""
    points = []
    for size in sorted({r.dataset_size for r in members}):
        everyone = [r for r in members if r.dataset_size == size]
        per_seed: dict[int, CapacityRow] = {}
        for r in everyone:
            if r.diverged:
                continue
            if r.seed not in per_seed or r.bits_stored > per_seed[r.seed].bits_stored:
                per_seed[r.seed] = r
        best = [per_seed[s] for s in sorted(per_seed)]
        bits = [r.bits_stored for r in best]
        points.append(
            {
                "size": size,
                "dataset_bits": everyone[0].dataset_bits,
                "seeds": sorted(per_seed),
                "bits": bits,
                "median": float(np.median(bits)) if bits else None,
                "min": min(bits, default=None),
                "max": max(bits, default=None),
                "exact": float(np.median([r.exact_fraction for r in best])) if best else None,
                "best_lr": [r.learning_rate for r in best],
                "saturated": sum(r.saturated for r in everyone),
                "members": len(everyone),
            }
        )
    return points


def plateaued(sizes: list[int], bits: list[float], dataset_bits: list[float], tol: float) -> bool:
    """Whether the bits stored stopped growing with the dataset (sizes ascending)."""
    if len(sizes) < 2:
        return False
    best_before = max(bits[:-1])
    return bits[-1] < (1.0 + tol) * best_before and bits[-1] < MEMORIZED * dataset_bits[-1]

"""Capacity relative to the first architecture of a run: multipliers with credible intervals.

When `sweep.buckets` are variants of one architecture (`configs/capacity.py:precision`: float32,
bfloat16 compute, float64, int8 and int4 quantization-aware training), the question is a ratio:
how much does the variant store relative to the first bucket, at saturation? Seeds share their
keys across buckets (the same data and the same initial draw), so each seed gives one paired log
ratio log(C_variant / C_first). With a normal model of those ratios and the Jeffreys prior
p(μ, σ) ∝ 1/σ, the posterior of their mean μ is a Student-t with n − 1 degrees of freedom around
the sample mean [1]: its central interval, exponentiated, is the multiplier's credible interval.
With two or three seeds it is wide, which is what two or three seeds can say.

[1] Gelman et al., "Bayesian Data Analysis" (3rd ed.), section 3.2: the normal model with
    noninformative prior; the marginal posterior of μ is t_{n-1}(ȳ, s²/n).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from jaxcap.results.capacity_summary import CapacitySummary


def multiplier(reference: CapacitySummary, variant: CapacitySummary, level: float = 0.9) -> dict | None:
    """C_variant / C_reference from two `capacity_reading.summarize` entries: the posterior median and
    central `level` interval over the seeds both measured (None with fewer than two)."""
    ref = dict(zip(reference.c_mem_seed_ids, reference.c_mem_seeds))
    logs = [
        math.log(c / ref[s])
        for s, c in zip(variant.c_mem_seed_ids, variant.c_mem_seeds)
        if s in ref and c > 0 and ref[s] > 0
    ]
    if len(logs) < 2:
        return None
    n, mean, sd = len(logs), float(np.mean(logs)), float(np.std(logs, ddof=1))
    half = stats.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return {
        "median": math.exp(mean),
        "low": math.exp(mean - half),
        "high": math.exp(mean + half),
        "per_seed": [math.exp(x) for x in logs],
        "seeds": n,
        "level": level,
    }


def multiplier_lines(archs: list[dict], name) -> list[str]:
    """The report's table of every architecture against the first, when there are several."""
    if len(archs) < 2:
        return []
    first = archs[0]
    lines = [
        f"capacity relative to {name(first)} ({first.label or 'the base model'}), at each one's verdict "
        "budget: posterior median and 90 % credible interval of C / C_first over paired seeds "
        "(jaxcap/experiments/capacity/compare.py):",
        "",
        "| arch | C_mem bits | x first: median [90 % interval] | per seed | verdict |",
        "|---|---|---|---|---|",
    ]
    for a in archs[1:]:
        m = multiplier(first, a)
        cell = "—" if m is None else f"{m['median']:.3f} [{m['low']:.3f}–{m['high']:.3f}]"
        seeds = "—" if m is None else ", ".join(f"{x:.3f}" for x in m["per_seed"])
        verdict = "capacity" if a.is_capacity else "lower bound"
        lines.append(f"| {a.label or name(a)} | {a.c_mem:,.0f} | {cell} | {seeds} | {verdict} |")
    return [*lines, ""]

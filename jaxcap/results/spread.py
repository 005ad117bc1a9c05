"""Steps to a threshold over seeds: their spread, and whether two settings' seeds differ.

A step count from one or two seeds is not a result: seeds of one recipe grok hundreds of steps
apart. So every steps-to-threshold table quotes the seed count, the median and range of the
seeds that reached it, and from five of them a bootstrap interval of the median; a comparison
of two settings is a two-sided Mann-Whitney U test on their seeds, a seed that never reached
the threshold ranking after every one that did (censored at the run's end). Below p = 0.05 the
settings differ; otherwise their seeds cannot tell them apart (with 2 against 2 seeds no
ordering reaches p < 0.05, and the text says so).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

BOOTSTRAP_MIN = 5  # seeds that reached the threshold before a bootstrap interval is quoted
LEVEL = 0.05  # Mann-Whitney: below this p the two settings' seeds differ


@dataclasses.dataclass(frozen=True)
class StepsSpread:
    """The steps of the seeds that reached a threshold, out of `n` seeds."""

    steps: tuple[int, ...]  # sorted
    n: int
    low: float | None = None  # 95 % bootstrap interval of the median (>= BOOTSTRAP_MIN seeds)
    high: float | None = None

    @property
    def n_reached(self) -> int:
        return len(self.steps)

    @property
    def median(self) -> float | None:
        return float(np.median(self.steps)) if self.steps else None

    def text(self) -> str:
        """'2,480 [1,620–3,470] (5/5 seeds; 95 % CI 1,900–3,100)', or '— (0/2 seeds)'."""
        seeds = f"{self.n_reached}/{self.n} seeds"
        if not self.steps:
            return f"— ({seeds})"
        span = f"[{self.steps[0]:,}–{self.steps[-1]:,}]" if self.n_reached > 1 else ""
        ci = f"; 95 % CI {self.low:,.0f}–{self.high:,.0f}" if self.low is not None else ""
        return " ".join(filter(None, [f"{self.median:,.0f}", span, f"({seeds}{ci})"]))


def spread(steps: Sequence[int | None], seed: int = 0) -> StepsSpread:
    """The spread of per-seed steps (None: that seed never reached the threshold)."""
    reached = sorted(int(s) for s in steps if s is not None)
    if len(reached) < BOOTSTRAP_MIN or len(set(reached)) == 1:
        return StepsSpread(tuple(reached), len(steps))
    ci = stats.bootstrap(
        (np.asarray(reached, float),),
        np.median,
        n_resamples=2000,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return StepsSpread(tuple(reached), len(steps), float(ci.low), float(ci.high))


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Two settings' seeds, compared: the Mann-Whitney p and what it says."""

    p_value: float
    n_a: int
    n_b: int

    @property
    def differ(self) -> bool:
        return self.p_value < LEVEL

    def text(self) -> str:
        if self.differ:
            return f"differ (Mann-Whitney p = {self.p_value:.3f}, {self.n_a} vs {self.n_b} seeds)"
        return (
            f"seeds cannot tell them apart (Mann-Whitney p = {self.p_value:.2f}, "
            f"{self.n_a} vs {self.n_b} seeds)"
        )


def compare(a: Sequence[int | None], b: Sequence[int | None]) -> Comparison:
    """Mann-Whitney U, two-sided, on two settings' per-seed steps (None: censored, ranked last)."""
    censored = lambda xs: [math.inf if s is None else float(s) for s in xs]  # noqa: E731
    x, y = censored(a), censored(b)
    if not x or not y or len(set(x) | set(y)) == 1:  # nothing to rank apart
        return Comparison(1.0, len(x), len(y))
    p = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto").pvalue
    return Comparison(float(p), len(x), len(y))

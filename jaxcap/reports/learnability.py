"""Where a series of levels stops being learned, and the success-vs-complexity figure that shows it.

A learnability *boundary* in bits exists only when success is monotone in complexity: every
learned level below every level that was not. x mod N with decimal inputs is the counter-example
(N = 5, 10, 20, 40 learned, 7, 13, 31 not, although they have fewer bits): drawing "highest
learned: 5.3 bits" there would read as a capacity limit that the data do not show. So the figure
marks each level learned (filled) or not (hollow), shades the boundary between the last learned
and the first unlearned level only where the levels are monotone, and says "not monotone in
bits" otherwise. Chance and the shortcut are drawn per level (short ticks), not joined across
levels, and the legend sits outside the axes so it never hides a point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.records import LevelSummary


@dataclasses.dataclass(frozen=True)
class Boundary:
    """kind: 'between' (learned up to `low` bits, not from `high`), 'all', 'none' or 'not monotone'."""

    kind: str
    low: float | None = None
    high: float | None = None

    @property
    def text(self) -> str:
        if self.kind == "between":
            return f"learnability boundary: {self.low:.2f}-{self.high:.2f} bits"
        if self.kind == "all":
            return f"every level learned (boundary above {self.low:.2f} bits)"
        if self.kind == "none":
            return f"no level learned (boundary below {self.high:.2f} bits)"
        return "learned levels are not monotone in bits: no single boundary"


def boundary(levels: list[LevelSummary]) -> Boundary:
    """The boundary of one series of levels (dicts with 'complexity_bits' and 'learned')."""
    learned = [lv.complexity_bits for lv in levels if lv.learned]
    failed = [lv.complexity_bits for lv in levels if not lv.learned]
    if not failed:
        return Boundary("all", low=max(learned))
    if not learned:
        return Boundary("none", high=min(failed))
    if max(learned) < min(failed):
        return Boundary("between", low=max(learned), high=min(failed))
    return Boundary("not monotone")


def draw_series(ax, levels: list[LevelSummary], color: str, name: str) -> Boundary:
    """One series: seeds as dots, the median with its min-max, learned filled / not hollow,
    chance and shortcut ticks per level, the boundary where there is one."""
    levels = sorted((lv for lv in levels if lv.values), key=lambda lv: lv.complexity_bits)
    for lv in levels:
        x = lv.complexity_bits
        ax.scatter([x] * len(lv.values), lv.values, s=9, alpha=0.35, color=color, lw=0)
        err = [[lv.median - lv.min], [lv.max - lv.median]]
        face = color if lv.learned else "white"
        ax.errorbar([x], [lv.median], yerr=err, fmt="o", color=color, mfc=face, ms=5, capsize=2, zorder=3)
        text = ",".join(str(v) for v in lv.knobs.values())
        ax.annotate(text, (x, lv.median), xytext=(4, 4), textcoords="offset points", fontsize=7)
        ax.plot([x], [lv.chance], "_", color="gray", ms=12, mew=1.5)
        if lv.shortcut is not None:
            ax.plot([x], [lv.shortcut], "_", color="C1", ms=12, mew=1.5)
    found = boundary(levels) if levels else Boundary("none", high=0.0)
    if found.kind == "between":
        ax.axvspan(found.low, found.high, color=color, alpha=0.12, lw=0)
    # the legend's handle is an errorbar like the drawn ones, so the min-max bar is explained; the
    # series' boundary is on its entry (a handle-less entry of its own was listed after the lines)
    label = f"{name}: median (filled: learned)\n{found.text}"
    ax.errorbar([], [], yerr=[], fmt="o", color=color, ms=5, capsize=2, label=label)
    return found


def _some(levels: list[LevelSummary], figure: str) -> None:
    """A figure of no level would be an empty, unlabelled axes that reads as a result: refused
    before anything is drawn or written (a report of a workdir without member rows draws none)."""
    if not levels:
        raise ValueError(f"{figure}: got no levels; allowed: at least one level summary to draw")


def levels_figure(
    levels: list[LevelSummary],
    path: Path,
    title: str,
    series_of: Callable[[LevelSummary], str] = lambda lv: lv.family,
) -> tuple[Path, dict[str, Boundary]]:
    """The success metric vs complexity of every series; returns the path and each boundary."""
    _some(levels, "levels_figure")
    fig, ax = new_figure((8.6, 4.4))
    found = {}
    for i, name in enumerate(dict.fromkeys(series_of(lv) for lv in levels)):
        mine = [lv for lv in levels if series_of(lv) == name]
        found[name] = draw_series(ax, mine, f"C{i % 10}", name)
    first = levels[0]
    sign = ">=" if first.higher_is_better else "<="
    ax.axhline(
        first.threshold,
        color="C3",
        ls=":",
        lw=0.8,
        label=f"success: {first.metric} {sign} {first.threshold:g}",
    )
    ax.plot([], [], "o", color="gray", ms=3, alpha=0.5, label="dots: each seed; bars: min-max over seeds")
    ax.plot([], [], "_", color="gray", ms=12, mew=1.5, label="chance: input-blind, fitted on train")
    if any(lv.shortcut is not None for lv in levels):
        ax.plot([], [], "_", color="C1", ms=12, mew=1.5, label=f"shortcut: {first.shortcut_name}")
    if first.knobs:
        ax.plot([], [], " ", label=f"labels: {', '.join(first.knobs)}")
    ax.set_xlabel("task complexity (bits)")
    ax.set_ylabel(f"{first.metric} ({'higher' if first.higher_is_better else 'lower'} is better)")
    if first.metric.endswith(("accuracy", "exact")):
        ax.set_ylim(-0.03, 1.05)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_figure(fig, path, dpi=110), found


def success_rate_figure(
    levels: list[LevelSummary],
    path: Path,
    title: str,
    series_of: Callable[[LevelSummary], str] = lambda lv: lv.family,
) -> Path:
    """How many seeds succeeded at each level (k of n), beside whether the input-blind chance
    predictor would: the outcome the meta-model
    reads, where `levels_figure` shows the score. A level is learned when a strict majority of
    its seeds succeeded (the dotted line)."""
    _some(levels, "success_rate_figure")
    fig, ax = new_figure((8.6, 4.0))
    names = list(dict.fromkeys(series_of(lv) for lv in levels))
    width = 0.08 * (len(names) - 1)
    for i, name in enumerate(names):
        mine = sorted((lv for lv in levels if series_of(lv) == name), key=lambda lv: lv.complexity_bits)
        dx = (i * 0.08 - width / 2) if len(names) > 1 else 0.0
        xs = [lv.complexity_bits + dx for lv in mine]
        rates = [lv.n_success / lv.n if lv.n else float("nan") for lv in mine]
        color = f"C{i % 10}"
        faces = [color if lv.learned else "white" for lv in mine]
        ax.scatter(
            xs,
            rates,
            s=36,
            facecolors=faces,
            edgecolors=color,
            zorder=3,
            label=f"{name}: seeds that succeeded",
        )
        for x, rate, lv in zip(xs, rates, mine):
            knobs = ",".join(str(v) for v in lv.knobs.values())
            ax.annotate(
                f"{lv.n_success}/{lv.n}\n{knobs}",
                (x, rate),
                xytext=(0, 6),
                textcoords="offset points",
                fontsize=6,
                ha="center",
            )
            reaches = lv.chance is not None and (
                lv.chance >= lv.threshold if lv.higher_is_better else lv.chance <= lv.threshold
            )
            ax.plot([x], [1.0 if reaches else 0.0], "_", color="gray", ms=12, mew=1.5)
    first = levels[0]
    sign = ">=" if first.higher_is_better else "<="
    ax.axhline(0.5, color="C3", ls=":", lw=0.8, label="learned: more than half of the seeds (filled)")
    ax.plot([], [], "_", color="gray", ms=12, mew=1.5, label="chance predictor: succeeds (1) or not (0)")
    knobs = ", ".join(first.knobs)
    ax.plot([], [], " ", label="labels: seeds that succeeded / seeds" + (f"; {knobs}" if knobs else ""))
    ax.set_xlabel("task complexity (bits)")
    ax.set_ylabel(f"success rate ({first.metric} {sign} {first.threshold:g})")
    ax.set_ylim(-0.08, 1.2)
    ax.set_yticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_figure(fig, path, dpi=110)

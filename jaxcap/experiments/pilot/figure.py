"""report/pilot.png of a pilot workdir: what the pilots say about the new family, in one figure.

Top: P(learned) at every candidate level against its covariate bits (median and 90 % interval,
computed as report/pilot.md's table is), the pilot points (each trained level's observed success
fraction, sized and labelled by its seeds, with the round that trained it) and the final
boundary b* (median dashed, 90 % shaded); the top axis names each candidate by its level value.
Bottom: b*'s 90 % interval before the first round (the calibrated families' prior) and after
each round, on the same axis, so a reader sees how much each pilot narrowed it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np

from jaxcap.meta.records import PilotRecord
from jaxcap.meta.report import arch_words
from jaxcap.reports.figures import new_figure, save_figure

WIDEN = 3.0  # the x axis spans the candidates' bits widened by this factor each side,
REACH = 30.0  # and b*'s final interval as far as this factor beyond them
LABEL_GAP = 0.035  # of the axis width: closer candidates' level labels are thinned


def x_limits(bits: np.ndarray, boundary: dict) -> tuple[float, float]:
    """The candidates' range widened by WIDEN, and out to b*'s final interval (at most REACH)."""
    lo, hi = float(bits.min()), float(bits.max())
    return (
        max(min(lo / WIDEN, boundary["lo"]), lo / REACH),
        min(max(hi * WIDEN, boundary["hi"]), hi * REACH),
    )


def thinned(bits: np.ndarray, lim: tuple[float, float]) -> list[int]:
    """Indices of the candidates (by bits) whose level labels stand LABEL_GAP apart on the log axis."""
    span = np.log(lim[1] / lim[0])
    kept: list[int] = []
    for i in np.argsort(bits, kind="stable"):
        if not kept or np.log(bits[i] / bits[kept[-1]]) / span >= LABEL_GAP:
            kept.append(int(i))
    return sorted(kept)


def _interval_rows(ax, rows: list[tuple[str, list[float]]], lim: tuple[float, float]) -> None:
    """One horizontal 90 % interval per row (median marked); an end beyond the axis is an arrow."""
    for y, (_, (lo, med, hi)) in enumerate(rows):
        ax.plot([max(lo, lim[0]), min(hi, lim[1])], [y, y], color="C1", lw=2.5, solid_capstyle="butt")
        ax.plot([med], [y], "o", color="C1", mec="k", mew=0.6, ms=5)
        for end, edge, marker in ((lo, lim[0], "<"), (hi, lim[1], ">")):
            if (end < edge) if marker == "<" else (end > edge):
                ax.plot([edge], [y], marker, color="C1", ms=6, clip_on=False)
        ax.annotate(  # inside the axes, above the line's left end
            f"hi / lo {hi / lo:.3g}",
            (max(lo, lim[0]), y),
            xytext=(3, 5),
            textcoords="offset points",
            fontsize=6,
        )
    ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the prior on top, the last round at the bottom


def plot_pilot(path: Path, pilot: PilotRecord, rounds: list, p_draws: np.ndarray, covariate: str) -> Path:
    """The figure (module docstring). `rounds`: pilot.jsonl's rounds (rounds.PilotRound);
    `p_draws`: P(learned) draws [S, candidates] (report.candidate_rates); `covariate`: the name
    of the family's difficulty covariate."""
    bits = np.array([c["bits"] for c in pilot.candidates], np.float64)
    order = np.argsort(bits, kind="stable")
    b = pilot.boundary
    lim = x_limits(bits, b)
    heights = (3.0, 0.8 + 0.3 * (len(rounds) + 1))
    fig, (top, bottom) = new_figure(
        (6.4, sum(heights) + 0.6), 2, 1, sharex=True, gridspec_kw={"height_ratios": heights}
    )
    top.set_xscale("log")  # before the level axis, which takes the scale it finds
    top.set_xlim(*lim)
    lo, med, hi = np.quantile(p_draws, [0.05, 0.5, 0.95], axis=0)
    top.errorbar(
        bits[order],
        med[order],
        yerr=[med[order] - lo[order], hi[order] - med[order]],
        fmt="o-",
        color="C0",
        mfc="white",
        ms=5,
        lw=1,
        elinewidth=1.5,
        capsize=3,
        label="P(learned) at a candidate: median, 90 % interval",
    )
    for i, r in enumerate(rounds):
        y = r.successes / r.trials
        top.scatter([r.bits], [y], s=20 + 20 * r.trials, color="k", zorder=3)
        lift = (9 + 9 * (i % 2)) * (-1 if y > 0.5 else 1)  # staggered: neighbours' labels do not collide
        top.annotate(
            f"r{r.round}: {r.successes}/{r.trials}",
            (r.bits, y),
            xytext=(0, lift),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=7,
        )
    top.scatter([], [], s=40, color="k", label="pilot level: learned / seeds (r: its round)")
    top.axvline(b["median"], color="C1", ls="--", lw=1, label=f"b* (median; shaded: {b['mass']:.0%})")
    top.axvspan(max(b["lo"], lim[0]), min(b["hi"], lim[1]), color="C1", alpha=0.12, lw=0)
    top.set_ylim(-0.05, 1.05)
    top.set_ylabel("P(learned)")
    fig.suptitle(f"Pilot: {pilot.family} on {arch_words(pilot.arch_label or '')}", fontsize=9)
    top.legend(fontsize=7, loc="upper right")  # P(learned) falls to the right: that corner is free
    levels = top.secondary_xaxis("top")
    shown = thinned(bits, lim)
    levels.set_xticks(bits[shown], [str(pilot.candidates[i]["value"]) for i in shown], fontsize=7)
    levels.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    levels.set_xlabel(f"candidate level: {pilot.field}", fontsize=8)
    # a round's line holds b* as its fit knew it before training: the prior, then after each round
    bounds = [list(r.boundary) for r in rounds] + [[b["lo"], b["median"], b["hi"]]]
    labels = ["prior (the calibrated families)"] + [f"after round {r.round}" for r in rounds]
    rows = list(zip(labels, bounds))
    _interval_rows(bottom, rows, lim)
    bottom.set_title(f"b*: median and {b['mass']:.0%} interval, round by round", fontsize=8)
    bottom.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap
    bottom.set_xlabel(f"{covariate} of the level (bits)")
    return save_figure(fig, path)

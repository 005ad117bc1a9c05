"""`dynamics.png`: training curves of a population, one panel per metric, levels overlaid.

A grid of one row per level grew with the sweep (12 levels x 3 metrics was 3,146 px tall) and
autoscaled each panel on its own, so a loss going from 6e-4 to 0 read as a cliff. Here each
panel is one metric on one split (train and val of the primary metric, train and val loss,
val entropy, and any other eval split such as val_long) with every level overlaid: one colour
per level (ordered by complexity), its median over seeds as a thick line and each seed as a
thin one. Panels that compare share their y axis (train and val accuracy on [0, 1]; train and
val loss on one log axis), the step axis is logarithmic and says so, and at most three columns
keep the figure on a laptop screen. A loss below 1e-6 nats is drawn at that floor (labelled
"<=1e-06") rather than falling off the log axis. Test metrics are not drawn: they are read once, at the end
(the per-level tables), never to choose anything.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib
import matplotlib.ticker as ticker
import numpy as np
from matplotlib.lines import Line2D

from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store

COLUMNS = 3


LOSS_FLOOR = 1e-6  # nats: below this a loss reads as zero (the floor's tick says so)


def level_colors(n: int) -> list:
    """Colours that tell levels apart: the ten strong hues of tab20, then its ten light ones;
    a sequential map only past 20 levels, where no palette names each line."""
    if n <= 20:
        tab = matplotlib.colormaps["tab20"].colors
        return [tab[2 * i] if i < 10 else tab[2 * (i - 10) + 1] for i in range(n)]
    return list(matplotlib.colormaps["viridis"](np.linspace(0.0, 0.92, n)))


def log_steps(ax, label: bool = True) -> None:
    """A log step axis with labels at 1, 2 and 5 per decade (a short run still gets several)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    if label:
        ax.set_xlabel("training step (log scale)", fontsize=7)


def panels(names: list[str], metric: str, higher_is_better: bool) -> list[tuple[str, str, str]]:
    """(column name, panel title, y-axis group) of every panel the curves can fill."""
    out = [(f"train_{metric}", f"train {metric}", "metric"), (f"val_{metric}", f"val {metric}", "metric")]
    out += [
        (n, n.replace("_", " ", 1), "metric")
        for n in names
        if n.startswith("val_") and n.endswith(f"_{metric}") and n != f"val_{metric}"
    ]  # out-of-length splits (val_long_accuracy, ...)
    out += [
        ("train_loss", "train loss (nats, log scale)", "loss"),
        ("val_loss", "val loss (nats, log scale)", "loss"),
    ]
    if higher_is_better:  # classification: the model's certainty
        out.append(("val_entropy", "val predictive entropy (bits)", "entropy"))
    return [p for p in out if p[0] in names]


def _median(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a step where every seed diverged
        return np.nanmedian(values, axis=0)


def plot_dynamics(
    store: Store, groups: dict[tuple, list[MemberRow]], names_of: dict[tuple, str], title: str, path: Path
) -> Path:
    """The figure; `groups` maps each level to its member rows, `names_of` a level to its words."""
    rows = [r for members in groups.values() for r in members]
    metric, higher = rows[0].metric, rows[0].higher_is_better
    curves = {b: store.curves(b) for b in dict.fromkeys(r.bucket for r in rows)}
    names = sorted({n for names, _ in curves.values() for n in names})
    chosen = panels(names, metric, higher)
    n_cols = min(COLUMNS, len(chosen))
    n_rows = math.ceil((len(chosen) + 1) / n_cols)  # one more cell holds the level legend
    fig, axes = new_figure((3.6 * n_cols, 2.7 * n_rows + 0.5), n_rows, n_cols, squeeze=False)
    flat = list(axes.flat)
    order = sorted(groups, key=lambda key: groups[key][0].complexity_bits)
    colors = level_colors(len(order))
    handles = []
    for color, key in zip(colors, order):
        members = groups[key]
        bucket_names, array = curves[members[0].bucket]
        if not bucket_names:
            continue
        steps = array[0, :, 0]
        index = [r.member for r in members]
        for ax, (column, _, group) in zip(flat, chosen):
            if column not in bucket_names:
                continue
            values = array[index, :, bucket_names.index(column)]
            if group == "loss":  # a loss of 0 (or 1e-9) is drawn at the floor, not off a log axis
                values = np.maximum(values, LOSS_FLOOR)
            for seed_curve in values:
                ax.plot(steps, seed_curve, color=color, lw=0.5, alpha=0.35)
            ax.plot(steps, _median(values), color=color, lw=1.6)
        handles.append(Line2D([], [], color=color, lw=1.6, label=names_of[key]))
    _axes(flat, chosen, metric, higher)
    legend_ax = flat[len(chosen)]
    legend_ax.axis("off")
    for ax in flat[len(chosen) + 1 :]:
        ax.axis("off")
    seeds = len({r.seed for r in rows})
    note = Line2D([], [], color="black", lw=0.5, alpha=0.6, label=f"thin: each of {seeds} seeds")
    thick = Line2D([], [], color="black", lw=1.6, label="thick: median over seeds")
    legend_ax.legend(
        handles=[thick, note, *handles],
        loc="upper left",
        fontsize=7 if len(handles) <= 14 else 6,
        ncol=1 if len(handles) <= 14 else 2,
        frameon=False,
        title="level (by complexity)",
        title_fontsize=7,
    )
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path, dpi=110)


def _axes(flat: list, chosen: list[tuple[str, str, str]], metric: str, higher: bool) -> None:
    """Titles, log step axes, and one y range per group of panels that compare."""
    groups: dict[str, list] = {}
    for ax, (_, name, group) in zip(flat, chosen):
        ax.set_title(name, fontsize=8, loc="left")
        log_steps(ax)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25, lw=0.5)
        groups.setdefault(group, []).append(ax)
    for ax in groups.get("metric", []):
        if metric in ("accuracy", "exact"):
            ax.set_ylim(-0.02, 1.02)
        elif metric == "nmse":
            ax.set_ylim(0.0, 1.5)
        ax.set_ylabel(metric + ("" if higher else " (lower is better)"), fontsize=7)
    shared = groups.get("metric", [])
    if shared and metric not in ("accuracy", "exact", "nmse"):  # one range, so train and val compare
        low = min(ax.get_ylim()[0] for ax in shared)
        high = max(ax.get_ylim()[1] for ax in shared)
        for ax in shared:
            ax.set_ylim(low, high)
    for ax in groups.get("entropy", []):
        ax.set_ylim(bottom=0.0)
        ax.set_ylabel("bits", fontsize=7)
    losses = groups.get("loss", [])
    if losses:
        lows = [line.get_ydata() for ax in losses for line in ax.get_lines()]
        finite = np.concatenate([np.asarray(y, float) for y in lows]) if lows else np.array([1.0])
        finite = finite[np.isfinite(finite) & (finite > 0)]
        low, high = (finite.min(), finite.max()) if finite.size else (1e-3, 10.0)
        for ax in losses:
            ax.set_yscale("log")
            ax.set_ylim(LOSS_FLOOR / 1.5 if low <= LOSS_FLOOR else low / 1.5, high * 1.5)
            plain = ticker.FuncFormatter(lambda y, _: f"<={y:g}" if y == LOSS_FLOOR else f"{y:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain if high / low < 20 else ticker.NullFormatter())
            ax.tick_params(which="both", labelsize=6)
            ax.set_ylabel("nats", fontsize=7)

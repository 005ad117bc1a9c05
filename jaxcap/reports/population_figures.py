"""The population report's figures, drawn from a workdir's tables (never written to them).

Each figure says one thing (docs/population.md shows them): the success metric and the share of
seeds that succeeded against complexity_bits (with chance, shortcut and threshold), the training
dynamics, and the generalization gap; plus a per-level table of every final eval metric.

Details: docs/design/reports.md#the-population-figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from jaxcap.core.population import HPARAM_NAMES
from jaxcap.reports import dynamics, learnability
from jaxcap.reports import level_summary as summary
from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.records import LevelSummary, MemberRow
from jaxcap.results.store import Store


def level_key(row: MemberRow) -> tuple:
    """One difficulty level: the bucket and the task knobs."""
    return (row.bucket, tuple(sorted(row.knobs.items())))


def level_name(row: MemberRow, bits: bool = False) -> str:
    """A level in words: its bucket's overrides and task knobs (`operation=add, p=7`), never a
    bucket id; with `bits`, its complexity too."""
    label = ", ".join(part.strip().removeprefix("task.") for part in (row.bucket_label or "").split(","))
    knobs = ", ".join(f"{k}={v}" for k, v in row.knobs.items())
    name = ", ".join(s for s in (label, knobs) if s) or row.family
    return f"{name} ({summary.fmt_bits(row.complexity_bits)} bits)" if bits else name


def group_levels(rows: list[MemberRow]) -> dict[tuple, list[MemberRow]]:
    groups: dict[tuple, list[MemberRow]] = {}
    for row in sorted(rows, key=lambda r: (r.bucket, r.complexity_bits, r.member)):
        groups.setdefault(level_key(row), []).append(row)
    return groups


def series(label: str) -> tuple[str, str]:
    """(series, level) of a bucket label: overrides of numeric task fields (e.g.
    task.n_points=8) are difficulty levels of one series; everything else (a model change, a
    categorical task field such as task.operation) names its own series."""
    keep, level = [], []
    for item in filter(None, (part.strip() for part in label.split(","))):
        path, _, value = item.partition("=")
        numeric = value.replace(".", "", 1).lstrip("-").isdigit()
        (level if path.startswith("task.") and numeric else keep).append(item)
    return ",".join(keep), ",".join(item.split("=", 1)[1] for item in level)


def _series_name(level: LevelSummary) -> str:
    """A series in words: the non-numeric overrides of its buckets, else the task family."""
    return series(level.bucket_label)[0].replace("task.", "") or level.family


def plot_scores(rows: list[MemberRow], path: Path) -> Path:
    """The success metric (a test score) vs complexity, one series per bucket series
    (`jaxcap.reports.learnability`)."""
    levels = summary.levels(rows, HPARAM_NAMES)
    return learnability.levels_figure(levels, path, _model_title(rows), series_of=_series_name)[0]


def plot_success_rate(rows: list[MemberRow], path: Path) -> Path:
    """k of n seeds succeeding per level vs complexity (`jaxcap.reports.learnability`)."""
    levels = summary.levels(rows, HPARAM_NAMES)
    return learnability.success_rate_figure(levels, path, _model_title(rows), series_of=_series_name)


def _model_title(rows: list[MemberRow]) -> str:
    """The model shape; a field that differs between buckets is shown as '*'."""
    field = lambda name: "*" if len(v := {r.model[name] for r in rows}) > 1 else str(v.pop())  # noqa: E731
    params = sorted({r.n_params for r in rows})
    size = f"{params[0]:,}" if len(params) == 1 else f"{params[0]:,}-{params[-1]:,}"
    title = (
        f"{rows[0].family}: {field('n_layers')} layers, d_model {field('d_model')}, "
        f"{field('n_heads')} heads ({size} params)"
    )
    return title + ("; * varies by bucket" if "*" in title else "")


def plot_gap(store: Store, rows: list[MemberRow], path: Path) -> Path:
    """The generalization gap at the end (vs complexity) and over training (median per level).
    The final medians are markers, not a line: a series' levels need not be ordered in difficulty
    by their bits (x mod N), and a line between them would draw a trend the levels do not have."""
    fig, (left, right) = new_figure((10.0, 4.2), 1, 2)
    groups = group_levels(rows)
    label_of = lambda m: m[0].bucket_label or ""  # noqa: E731
    for i, name in enumerate(dict.fromkeys(series(label_of(m))[0] for m in groups.values())):
        fam = sorted(
            (m for m in groups.values() if series(label_of(m))[0] == name),
            key=lambda m: m[0].complexity_bits,
        )
        xs = [m[0].complexity_bits for m in fam]
        gaps = [[r.final["gap"] for r in m if r.final.get("gap") is not None] for m in fam]
        for x, g in zip(xs, gaps):
            left.scatter([x] * len(g), g, s=9, alpha=0.35, color=f"C{i % 10}")
        label = name.replace("task.", "") or fam[0][0].family
        medians = [statistics.median(g) if g else np.nan for g in gaps]
        left.plot(
            xs, medians, "o", ms=6, color=f"C{i % 10}", label=f"{label}: train - val (median; dots: seeds)"
        )
        # out-of-length splits: how much worse than in-length validation (the length-generalization gap)
        long = [[g for r in m if (g := _long_gap(r)) is not None] for m in fam]
        if any(long):
            medians = [statistics.median(g) if g else np.nan for g in long]
            left.plot(
                xs, medians, "D", mfc="none", color=f"C{i % 10}", label=f"{label}: val - val_long (median)"
            )
    left.axhline(0.0, color="gray", lw=0.8)
    left.set_xlabel("task complexity (bits)")
    left.set_ylabel(f"final gap in {rows[0].metric} (+ = worse on the held-out split)")
    left.legend(fontsize=7)
    curves = {b: store.curves(b) for b in dict.fromkeys(r.bucket for r in rows)}
    ordered = sorted(groups.values(), key=lambda m: m[0].complexity_bits)
    for color, members in zip(dynamics.level_colors(len(ordered)), ordered):  # as in dynamics.png
        names, array = curves[members[0].bucket]
        if "gap" in names:
            gap = np.median(array[[r.member for r in members], :, names.index("gap")], axis=0)
            right.plot(array[0, :, 0], gap, color=color, lw=1.0, label=level_name(members[0]))
    right.axhline(0.0, color="gray", lw=0.8)
    dynamics.log_steps(right, label=False)
    right.set_xlabel("training step (log scale)")
    right.set_ylabel("median gap over seeds")
    right.legend(fontsize=6, ncol=1 + len(groups) // 8)
    fig.suptitle(_model_title(rows), fontsize=9)
    return save_figure(fig, path, dpi=110)


def _long_gap(row: MemberRow) -> float | None:
    """val minus val_long of the primary metric (+ = worse out of length), if there is val_long."""
    val, long = row.final.get(f"val_{row.metric}"), row.final.get(f"val_long_{row.metric}")
    if val is None or long is None:
        return None
    return (val - long) if row.higher_is_better else (long - val)


def metrics_table(rows: list[MemberRow], markdown: bool = False) -> str:
    """Median over ok seeds of every final train/val/test metric, one line per level."""
    groups = group_levels(rows)
    splits = ("train_", "val_", "test_")
    names = sorted({k for r in rows for k, v in r.final.items() if k.startswith(splits) and v is not None})
    names = [n for n in names if not n.endswith("_loss")] + ["gap"]
    head = ["level", "bits", *names]
    lines = []
    for members in groups.values():
        ok = [r for r in members if r.status == "ok"]
        cells = []
        for n in names:
            values = [r.final[n] for r in ok if r.final.get(n) is not None]
            cells.append(f"{statistics.median(values):.3f}" if values else "—")
        lines.append([level_name(members[0]), summary.fmt_bits(members[0].complexity_bits), *cells])
    return "\n".join(summary.grid(head, lines, markdown))


CAPTIONS = {
    "accuracy_vs_complexity.png": "Test score per level vs complexity: seeds, median and range, chance.",
    "success_vs_complexity.png": "Seeds that succeeded per level (k of n); learned = more than half.",
    "dynamics.png": "Training curves: one panel per metric, levels overlaid (median thick, seeds thin).",
    "generalization_gap.png": "Train minus val of the primary metric: at the end, and over training.",
}

BAR_DELAY_S = 5.0  # a report rebuild shorter than this prints no bar


def draw(jobs: list[Callable[[], Path]], desc: str = "report") -> list[Path]:
    """Run figure-drawing jobs under a tqdm bar like training's, shown only once a rebuild has
    taken 5 s (a large workdir's dynamics figure can take minutes; a small one stays quiet)."""
    with tqdm(total=len(jobs), desc=desc, unit="figure", delay=BAR_DELAY_S, dynamic_ncols=True) as bar:
        paths = []
        for job in jobs:
            paths.append(job())
            bar.update(1)
    return paths


def population_figures(store: Store, rows: list[MemberRow] | None = None) -> tuple[list[Path], str]:
    """Write the four figures; returns their paths and a report.md section with each one and
    a line saying what it shows."""
    rows = store.members() if rows is None else rows
    if not rows:
        return [], ""
    store.report_path.mkdir(exist_ok=True)
    out = store.report_path
    groups = group_levels(rows)
    words = {key: level_name(members[0], bits=True) for key, members in groups.items()}
    paths = draw(
        [
            lambda: plot_scores(rows, out / "accuracy_vs_complexity.png"),
            lambda: plot_success_rate(rows, out / "success_vs_complexity.png"),
            lambda: dynamics.plot_dynamics(store, groups, words, _model_title(rows), out / "dynamics.png"),
            lambda: plot_gap(store, rows, out / "generalization_gap.png"),
        ]
    )
    section = "\n## Final metrics (median over seeds)\n\n" + metrics_table(rows, markdown=True) + "\n\n"
    section += "## Figures\n\n" + "".join(f"{CAPTIONS[p.name]}\n\n![{p.stem}]({p.name})\n\n" for p in paths)
    return paths, section

"""Figures for any run, read from its workdir alone: `python -m jaxcap.report --workdir D`.

The command dispatches on the workdir's `config.json` to the report of its experiment
(`jaxcap.experiments.EXPERIMENTS[config.experiment].report`). For population runs that report
adds, next to the per-level table and figure of `jaxcap.summary`:

- `success_vs_complexity.png`: the success metric (a test metric) vs complexity_bits, per-seed
  points, median with min–max, one series per bucket series, learned levels filled, chance and
  shortcut (where the task has one) per level, the threshold, and the learnability boundary only
  where success is monotone in bits (`jaxcap.learnability`); the y label says whether lower is
  better (NMSE). Out-of-length splits (`val_long_*`) are in `generalization_gap.png`.
- `dynamics.png`: one row per difficulty level; columns: the primary metric (train, val and
  any other eval split), the loss, and the predictive entropy, over training steps (log axis,
  so a grokking jump — train at 1.0 long before val — is visible), one thin line per seed.
- `generalization_gap.png`: the final gap (train minus val of the primary metric, sign
  chosen so positive = overfitting; and val minus val_long where an out-of-length split
  exists) vs complexity, and the median train-val gap over training per level.
- a per-level table of every final eval metric (`report.md`, section "Final metrics").
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402

from jaxcap import learnability, summary  # noqa: E402
from jaxcap.population import HPARAM_NAMES  # noqa: E402
from jaxcap.store import Store  # noqa: E402


def level_key(row: dict) -> tuple:
    """One difficulty level: the bucket and the task knobs."""
    return (row["bucket"], tuple(sorted(row["knobs"].items())))


def level_name(row: dict) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in row["knobs"].items())
    label = row.get("bucket_label") or ""
    return " | ".join(s for s in (label, knobs) if s) or row["bucket"]


def group_levels(rows: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["bucket"], r["complexity_bits"], r["member"])):
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


def plot_success(rows: list[dict], path: Path) -> Path:
    """Success metric vs complexity, one series per bucket series (`jaxcap.learnability`)."""
    levels = summary.levels(rows, HPARAM_NAMES)
    name = lambda lv: series(lv["bucket"])[0] or lv["family"]  # noqa: E731
    return learnability.levels_figure(levels, path, _model_title(rows), series_of=name)[0]


def _model_title(rows: list[dict]) -> str:
    """The model shape; a field that differs between buckets is shown as '*'."""
    field = lambda name: "*" if len(v := {r["model"][name] for r in rows}) > 1 else str(v.pop())  # noqa: E731
    params = sorted({r["n_params"] for r in rows})
    size = f"{params[0]:,}" if len(params) == 1 else f"{params[0]:,}-{params[-1]:,}"
    title = (
        f"{rows[0]['family']}: {field('n_layers')} layers, d_model {field('d_model')}, "
        f"{field('n_heads')} heads ({size} params)"
    )
    return title + ("; * varies by bucket" if "*" in title else "")


def _save(fig, path: Path, tight: bool = True) -> Path:
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


SPLIT_STYLES = {"train": "-", "val": "--", "test": ":"}  # other eval splits (val_long, ...): dash-dot


def plot_dynamics(store: Store, rows: list[dict], path: Path) -> Path:
    """The primary metric, loss and entropy over steps, one row per level: one colour per seed,
    one line style per split (train solid, val dashed, test dotted)."""
    groups = group_levels(rows)
    metric = rows[0]["metric"]
    columns = [metric, "loss"] + (["entropy"] if rows[0]["higher_is_better"] else [])
    labels = {metric: metric, "loss": "loss (nats)", "entropy": "entropy (bits)"}
    fig, axes = plt.subplots(len(groups), len(columns), figsize=(3.8 * len(columns), 2.3 * len(groups) + 1.0))
    axes = np.asarray(axes).reshape(len(groups), len(columns))
    curves = {b: store.curves(b) for b in dict.fromkeys(r["bucket"] for r in rows)}
    seeds = sorted({r["seed"] for r in rows})
    for axes_row, members in zip(axes, groups.values()):
        names, array = curves[members[0]["bucket"]]
        if not names:
            continue
        steps = array[0, :, 0]
        splits = [n[: -len(metric) - 1] for n in names if n.endswith(f"_{metric}")]
        splits.sort(
            key=lambda split: (list(SPLIT_STYLES).index(split) if split in SPLIT_STYLES else 3, split)
        )
        for ax, column in zip(axes_row, columns):
            for split in (s for s in splits if f"{s}_{column}" in names):
                style = SPLIT_STYLES.get(split, "-.")
                for r in members:
                    values = array[r["member"], :, names.index(f"{split}_{column}")]
                    ax.plot(steps, values, style, color=f"C{seeds.index(r['seed']) % 10}", lw=0.9)
            _log_steps(ax)
            _limits(ax, column)
            ax.set_ylabel(labels[column], fontsize=7)
            ax.tick_params(labelsize=7)
        axes_row[0].set_title(level_name(members[0]), fontsize=8, loc="left")
    for ax in axes[-1]:
        ax.set_xlabel("step", fontsize=7)
    handles = [plt.Line2D([], [], color=f"C{i % 10}", lw=1.2, label=f"seed {s}") for i, s in enumerate(seeds)]
    handles += [
        plt.Line2D([], [], color="black", ls=ls, lw=1, label=split) for split, ls in SPLIT_STYLES.items()
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.suptitle(_model_title(rows), fontsize=9)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))  # room for the legend below and the title above
    return _save(fig, path, tight=False)


def _log_steps(ax) -> None:
    """A log step axis with labels at 1, 2 and 5 per decade (a short run still gets several)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


def _limits(ax, column: str) -> None:
    """Fixed ranges for bounded metrics, so a level stuck at chance does not look like noise."""
    if column in ("accuracy", "exact"):
        ax.set_ylim(-0.02, 1.02)
    elif column == "nmse":
        ax.set_ylim(0.0, max(1.1, min(ax.get_ylim()[1], 2.0)))
    elif column == "entropy":
        ax.set_ylim(bottom=0.0)
    elif column == "loss":
        low, high = ax.get_ylim()
        if low > 0 and high / low > 20:  # only spans of orders of magnitude need a log axis
            ax.set_yscale("log")


def plot_gap(store: Store, rows: list[dict], path: Path) -> Path:
    """The generalization gap at the end (vs complexity) and over training (median per level)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0))
    groups = group_levels(rows)
    label_of = lambda m: m[0]["bucket_label"] or m[0]["bucket"]  # noqa: E731
    for i, name in enumerate(dict.fromkeys(series(label_of(m))[0] for m in groups.values())):
        fam = sorted(
            (m for m in groups.values() if series(label_of(m))[0] == name),
            key=lambda m: m[0]["complexity_bits"],
        )
        xs = [m[0]["complexity_bits"] for m in fam]
        gaps = [[r["final"]["gap"] for r in m if r["final"].get("gap") is not None] for m in fam]
        for x, g in zip(xs, gaps):
            left.scatter([x] * len(g), g, s=9, alpha=0.35, color=f"C{i % 10}")
        label = name or fam[0][0]["family"]
        medians = [statistics.median(g) if g else np.nan for g in gaps]
        left.plot(xs, medians, "o-", color=f"C{i % 10}", label=f"{label}: train - val")
        # out-of-length splits: how much worse than in-length validation (the length-generalization gap)
        long = [[g for r in m if (g := _long_gap(r)) is not None] for m in fam]
        if any(long):
            medians = [statistics.median(g) if g else np.nan for g in long]
            left.plot(xs, medians, "o--", mfc="none", color=f"C{i % 10}", label=f"{label}: val - val_long")
    left.axhline(0.0, color="gray", lw=0.8)
    left.set_xlabel("task complexity (bits)")
    left.set_ylabel(f"final gap in {rows[0]['metric']} (+ = worse on the held-out split)")
    left.legend(fontsize=7)
    curves = {b: store.curves(b) for b in dict.fromkeys(r["bucket"] for r in rows)}
    for j, members in enumerate(groups.values()):
        names, array = curves[members[0]["bucket"]]
        if "gap" in names:
            gap = np.median(array[[r["member"] for r in members], :, names.index("gap")], axis=0)
            color = plt.cm.viridis(j / max(1, len(groups) - 1))
            right.plot(array[0, :, 0], gap, color=color, lw=1.0, label=level_name(members[0]))
    right.axhline(0.0, color="gray", lw=0.8)
    _log_steps(right)
    right.set_xlabel("step")
    right.set_ylabel("median gap over seeds")
    right.legend(fontsize=6, ncol=1 + len(groups) // 8)
    fig.suptitle(_model_title(rows), fontsize=9)
    return _save(fig, path)


def _long_gap(row: dict) -> float | None:
    """val minus val_long of the primary metric (+ = worse out of length), if there is val_long."""
    val, long = row["final"].get(f"val_{row['metric']}"), row["final"].get(f"val_long_{row['metric']}")
    if val is None or long is None:
        return None
    return (val - long) if row["higher_is_better"] else (long - val)


def metrics_table(rows: list[dict]) -> str:
    """Median over ok seeds of every final train/val/test metric, one line per level."""
    groups = group_levels(rows)
    splits = ("train_", "val_", "test_")
    names = sorted({k for r in rows for k, v in r["final"].items() if k.startswith(splits) and v is not None})
    names = [n for n in names if not n.endswith("_loss")] + ["gap"]
    head = ["level", "bits", *names]
    lines = []
    for members in groups.values():
        ok = [r for r in members if r["status"] == "ok"]
        cells = []
        for n in names:
            values = [r["final"][n] for r in ok if r["final"].get(n) is not None]
            cells.append(f"{statistics.median(values):.3f}" if values else "—")
        lines.append([level_name(members[0]), summary.fmt_bits(members[0]["complexity_bits"]), *cells])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    out = [" ".join(h.rjust(w) for h, w in zip(head, widths))]
    out += [" ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(out)


def population_figures(store: Store, rows: list[dict] | None = None) -> tuple[list[Path], str]:
    """Write the three figures; returns their paths and a report.md section linking them."""
    rows = store.member_rows() if rows is None else rows
    if not rows:
        return [], ""
    store.report_path.mkdir(exist_ok=True)
    out = store.report_path
    paths = [
        plot_success(rows, out / "success_vs_complexity.png"),
        plot_dynamics(store, rows, out / "dynamics.png"),
        plot_gap(store, rows, out / "generalization_gap.png"),
    ]
    section = "\n## Final metrics (median over seeds)\n\n```\n" + metrics_table(rows) + "\n```\n\n"
    section += "".join(f"![{p.stem}]({p.name})\n" for p in paths)
    return paths, section


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, help="a run's workdir (holds config.json)")
    args = parser.parse_args(argv)
    if not (Path(args.workdir) / "config.json").exists():
        raise SystemExit(f"report error: {args.workdir} holds no config.json; is it a workdir?")
    store = Store(args.workdir)
    from jaxcap.experiments import EXPERIMENTS  # imports the trainer: only when actually reporting

    experiment = json.loads(store.config_path.read_text()).get("experiment", "population")
    written = EXPERIMENTS[experiment].report(store)
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()

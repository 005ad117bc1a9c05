"""Per-level summary of a run: the table the launch prints and the accuracy-vs-complexity plot.

A *level* is one task setting (family + knob values). If hyperparameters were swept, each
level is reported with its best setting (highest median success metric over seeds), since the
question is whether the architecture can learn the level, not whether one learning rate can.
Diverged members are counted and shown, never averaged in as NaN.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _key(row: dict) -> tuple:
    return (row["bucket"], row["family"], tuple(sorted(row["knobs"].items())))


def levels(rows: list[dict], hparam_names: tuple[str, ...]) -> list[dict]:
    """One summary dict per level, sorted by complexity."""
    swept = [n for n in hparam_names if len({r["hparams"][n] for r in rows}) > 1]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(_key(row), []).append(row)
    out = []
    for members in groups.values():
        by_setting: dict[tuple, list[dict]] = {}
        for r in members:
            by_setting.setdefault(tuple(r["hparams"][n] for n in swept), []).append(r)

        sign = 1.0 if members[0]["higher_is_better"] else -1.0

        def score(rs, sign=sign):
            ok = [r["final"][r["success_metric"]] for r in rs if r["status"] == "ok"]
            return sign * statistics.median(ok) if ok else -float("inf")

        setting, best = max(by_setting.items(), key=lambda kv: score(kv[1]))
        ok = [r for r in best if r["status"] == "ok"]
        values = [r["final"][r["success_metric"]] for r in ok]
        reached = [r["steps_to_val_threshold"] for r in ok if r["steps_to_val_threshold"] is not None]
        first = members[0]
        median = statistics.median(values) if values else None
        entropy = [r["final"]["val_entropy"] for r in ok if "val_entropy" in r["final"]]
        out.append(
            {
                "bucket": first["bucket_label"] or first["bucket"],
                "family": first["family"],
                "knobs": first["knobs"],
                "complexity_bits": first["complexity_bits"],
                "chance": first["chance"],
                "metric": first["success_metric"],
                "threshold": first["success_threshold"],
                "best": dict(zip(swept, setting)),
                "values": values,
                "median": median,
                "min": min(values) if values else None,
                "max": max(values) if values else None,
                "steps_to_val": statistics.median(reached) if reached else None,
                "n_reached": len(reached),
                "n": len(best),
                "entropy": statistics.median(entropy) if entropy else None,
                "diverged": sum(r["status"] == "diverged" for r in members),
                "higher_is_better": first["higher_is_better"],
                "learned": median is not None and sign * median >= sign * first["success_threshold"],
            }
        )
    return sorted(out, key=lambda lv: (lv["bucket"], lv["family"], lv["complexity_bits"]))


def fmt(x, spec=".3f") -> str:
    """A number for a table; a dash for a missing one."""
    return "—" if x is None else format(x, spec)


def fmt_bits(bits: float) -> str:
    """A complexity in bits: two decimals, or whole bits with thousands separators from 10,000 on
    (a text corpus's complexity runs to millions of bits)."""
    return f"{bits:,.0f}" if abs(bits) >= 1e4 else f"{bits:.2f}"


def format_table(levels_: list[dict]) -> str:
    """A fixed-width table: knobs, bits, median [min, max] of the success metric, steps, entropy."""
    if not levels_:
        return "(no finished members)"
    knob_names = list(dict.fromkeys(k for lv in levels_ for k in lv["knobs"]))
    best_names = list(dict.fromkeys(k for lv in levels_ for k in lv["best"]))
    buckets = list(dict.fromkeys(lv["bucket"] for lv in levels_))
    bucket_col = ["bucket"] if len(buckets) > 1 else []
    head = [
        *bucket_col,
        *knob_names,
        "bits",
        *best_names,
        "median",
        "min",
        "max",
        "steps_to_thr",
        "entropy",
        "diverged",
        "learned",
    ]
    lines = []
    for lv in levels_:
        lines.append(
            [
                *([lv["bucket"]] if bucket_col else []),
                *(str(lv["knobs"].get(k, "—")) for k in knob_names),
                fmt_bits(lv["complexity_bits"]),
                *(fmt(lv["best"].get(n), ".3g") for n in best_names),
                fmt(lv["median"]),
                fmt(lv["min"]),
                fmt(lv["max"]),
                f"{fmt(lv['steps_to_val'], '.0f')} ({lv['n_reached']}/{lv['n']})",
                fmt(lv["entropy"], ".2f"),
                str(lv["diverged"]),
                "yes" if lv["learned"] else "no",
            ]
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    families = ", ".join(dict.fromkeys(lv["family"] for lv in levels_))
    title = f"{families}: {levels_[0]['metric']} per level (best setting; {levels_[0]['n']} seeds)"
    rows = [" ".join(h.rjust(w) for h, w in zip(head, widths))]
    rows += [" ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join([title, *rows])


def plot_levels(rows: list[dict], path: Path) -> Path:
    """Success metric vs complexity (per-seed points, median line, chance, highest learned level)."""
    lvls = levels(rows, tuple(rows[0]["hparams"]) if rows else ())
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for family in sorted({lv["family"] for lv in lvls}):
        fam = [lv for lv in lvls if lv["family"] == family and lv["values"]]
        xs = [lv["complexity_bits"] for lv in fam]
        for lv in fam:
            ax.scatter([lv["complexity_bits"]] * len(lv["values"]), lv["values"], s=10, alpha=0.4, color="C0")
            label = ",".join(str(v) for v in lv["knobs"].values())
            ax.annotate(
                label,
                (lv["complexity_bits"], lv["median"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
            )
        medians = [lv["median"] for lv in fam]
        spread = [
            [m - lv["min"] for m, lv in zip(medians, fam)],
            [lv["max"] - m for m, lv in zip(medians, fam)],
        ]
        ax.errorbar(
            xs,
            medians,
            yerr=spread,
            fmt="o",
            color="C0",
            capsize=2,
            label=f"{family}: median (min-max) over seeds",
        )
        ax.plot(xs, [lv["chance"] for lv in fam], "--", color="gray", label="chance")
        learned = [lv for lv in fam if lv["learned"]]
        if learned:
            top = max(learned, key=lambda lv: lv["complexity_bits"])
            ax.axvline(top["complexity_bits"], color="C2", ls=":", label=f"highest learned: {top['knobs']}")
        if fam:
            ax.axhline(fam[0]["threshold"], color="C3", ls=":", lw=0.8, label="success threshold")
    model = rows[0]["model"] if rows else {}
    ax.set_xlabel("task complexity (bits)")
    ax.set_ylabel(lvls[0]["metric"] if lvls else "metric")
    top = max([1.0] + [v for lv in lvls for v in lv["values"]])
    ax.set_ylim(-0.02, 1.08 * top)
    ax.set_title(
        f"{model.get('n_layers')} layers, d_model {model.get('d_model')}, {model.get('n_heads')} heads "
        f"({rows[0]['n_params']:,} params)"
        if rows
        else "",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)

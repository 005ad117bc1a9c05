"""The precision curve of an ablation: does capacity follow the precision term of H x d_head x p?

The seed design bounds what attention stores by H x d_head x precision bits, so halving the bits
per weight should halve capacity if that term binds. `report/precision_curve.png` puts the
meta-model's and the memorization multipliers against bits per weight (16, 32, 64 and k-bit
quantization-aware training, Jacob et al. [1]) beside the line the precision term predicts.

Details: docs/design/enhance.md#precision.

[1] Jacob et al. 2018, "Quantization and training of neural networks for efficient
    integer-arithmetic-only inference", arXiv:1712.05877.
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcap.models.config import PRECISION_BITS
from jaxcap.reports.figures import new_figure, save_figure

PRECISION_FIELDS = ("qat_bits", "qat_activations", "param_dtype", "compute_dtype")


def weight_bits(arch: dict) -> int:
    """Bits a stored weight holds: k under k-bit QAT, else the parameter dtype's width."""
    return arch.get("qat_bits") or PRECISION_BITS[arch["param_dtype"]]


def precision_points(archs: list[dict], rows: list[dict], mem: list[dict]) -> list[dict]:
    """The baseline and every variant that changes only precision fields: its bits per weight,
    the meta-model multiplier (`rows` of enhance.multipliers) and the C_mem one (`mem`)."""
    base = archs[0]
    by_arch = {m["arch"]: m for m in mem}
    out = []
    for a, arch in enumerate(archs):
        if any(arch[k] != base[k] for k in arch if k not in PRECISION_FIELDS):
            continue
        m = by_arch.get(a)
        out.append(
            {
                "arch": a,
                "label": rows[a]["label"],
                "bits": weight_bits(arch),
                "multiplier": rows[a]["multiplier"],
                "memorization": m["per_param"] if m else None,
                "lower_bound": bool(m and m["lower_bound"]),
            }
        )
    return sorted(out, key=lambda p: (p["bits"], p["arch"]))


def plot_precision(path: Path, points: list[dict], base_bits: int) -> Path | None:
    """Multipliers against bits per weight with the precision term's line; None (nothing drawn)
    when the points hold fewer than two precisions."""
    if len({p["bits"] for p in points}) < 2:
        return None
    fig, ax = new_figure((6.4, 4.4))
    jitter = {}  # two variants at one precision (bfloat16 and a 16-bit run) side by side
    for p in points:
        jitter[p["bits"]] = jitter.get(p["bits"], -1) + 1
        x = p["bits"] * 1.06 ** jitter[p["bits"]]
        s = p["multiplier"]
        ax.errorbar(
            x,
            s["median"],
            yerr=[[s["median"] - s["lo90"]], [s["hi90"] - s["median"]]],
            fmt="o",
            color="C0",
            capsize=3,
            label="C / C_base, meta-model (median, 90%)" if p is points[0] else None,
        )
        m = p["memorization"]
        if m is not None:
            ax.errorbar(
                x * 1.03,
                m["point"],
                yerr=[[m["point"] - m["min"]], [m["max"] - m["point"]]],
                fmt="s",
                color="C1",
                mfc="none" if p["lower_bound"] else "C1",
                capsize=3,
                label="C_mem/param / base, random labels (seed range; open: C_mem not plateaued)"
                if p is points[0]
                else None,
            )
    grid = np.geomspace(min(p["bits"] for p in points), max(p["bits"] for p in points), 50)
    ax.plot(grid, grid / base_bits, "--", color="grey", label=f"precision term: bits / {base_bits}")
    ax.axhline(1.0, color="grey", lw=0.8)
    ticks = sorted({p["bits"] for p in points})
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlabel("bits per weight (k-bit QAT, bfloat16, float32, float64)")
    ax.set_ylabel("capacity multiplier over the baseline")
    ax.set_title("does capacity scale with H x d_head x precision?", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return save_figure(fig, path)


def format_precision(points: list[dict], base_bits: int) -> str:
    """The curve as a table: bits, both multipliers, and what the precision term predicts."""
    lines = ["| variant | bits/weight | C / C_base (90%) | bits/param / base (seeds) | bits / base bits |"]
    lines.append("|---|---|---|---|---|")
    for p in points:
        s, m = p["multiplier"], p["memorization"]
        mem = "—" if m is None else f"{m['point']:.3g} [{m['min']:.3g}, {m['max']:.3g}]"
        lines.append(
            f"| {p['label']} | {p['bits']} | {s['median']:.3g} [{s['lo90']:.3g}, {s['hi90']:.3g}] | {mem} "
            f"| {p['bits'] / base_bits:.3g} |"
        )
    return "\n".join(lines)

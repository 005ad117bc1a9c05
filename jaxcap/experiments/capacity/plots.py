"""The capacity report's figures, from `capacity_reading.summarize` and `capacity_fit.fit_all` output.

- exposure_curve.png: bits stored C(E) against exposures per item, one line per architecture
  (median over seeds, band: min–max) for the constant-rate run and open diamonds (with seed
  ranges) for the annealed budgets, next to bits per parameter with the published protocols'
  points: Allen-Zhu & Li [1] (~1 bit/param at 100 exposures, ~2 at 1,000) and Morris et al. [2]
  (~3.6 bits/param trained to convergence).
- capacity_curve.png: bits stored against dataset bits at the last budget (y = x, C_mem).
- bits_per_param.png: C_mem against n_params, the fitted slope and both budgets.

[1] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
[2] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.capacity_summary import CapacitySummary, name

LITERATURE = {"Allen-Zhu & Li 2024": 2.0, "Morris et al. 2025": 3.6}  # bits per parameter
ALLEN_ZHU_EXPOSURES = {100: 1.0, 1000: 2.0}  # exposures -> bits per parameter, their Figure 1


def plot_exposures(archs: list[CapacitySummary], path: Path) -> Path:
    fig, (left, right) = new_figure((10.5, 5.2), 1, 2)
    for i, a in enumerate(archs):
        points = [p for p in a.exposure_curve if p.median is not None]
        x = [p.exposures for p in points]
        flat = a.flat
        verdict = "capacity" if a.is_capacity else "lower bound"
        gain = "" if flat.gain is None else f", {flat.gain:+.0%} last doubling"
        label = f"{name(a)} ({a.n_params:,} params; {verdict}{gain})"
        annealed = [p for p in a.annealed_curve if p.median is not None]
        for ax, scale in ((left, 1.0), (right, 1.0 / a.n_params)):
            ax.plot(
                x,
                [p.median * scale for p in points],
                "o-",
                color=f"C{i % 10}",
                ms=3,
                label=label if ax is right else None,
            )
            low, high = [p.min * scale for p in points], [p.max * scale for p in points]
            ax.fill_between(x, low, high, color=f"C{i % 10}", alpha=0.2, lw=0)
            if annealed:  # each budget its own run, decayed to 0 there: the verdict's curve
                ax.errorbar(
                    [p.exposures for p in annealed],
                    [p.median * scale for p in annealed],
                    yerr=[
                        [(p.median - p.min) * scale for p in annealed],
                        [(p.max - p.median) * scale for p in annealed],
                    ],
                    fmt="D--",
                    color=f"C{i % 10}",
                    ms=5,
                    mfc="white",
                    capsize=2,
                )
    right.plot(
        list(ALLEN_ZHU_EXPOSURES),
        list(ALLEN_ZHU_EXPOSURES.values()),
        "s--",
        color="gray",
        label="Allen-Zhu & Li 2024 (bioS, GPT-2)",
    )
    right.axhline(
        LITERATURE["Morris et al. 2025"], color="gray", ls=":", label="Morris et al. 2025 (converged)"
    )
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("exposures per training item (steps x batch / n)")
    left.set_yscale("log")
    left.set_ylabel("bits stored C(E): best size per seed (median, min-max)")
    left.set_title("circles: constant rate (one run); diamonds: annealed (a run per budget)", fontsize=8)
    right.set_ylabel("bits per parameter")
    right.set_ylim(0, 4.0)
    fig.suptitle("memorization vs exposures (random data: every bit stored was memorized)", fontsize=9)
    # one legend under both panels: inside, five or more architectures hid the curves
    handles, labels = right.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncol=2, frameon=False)
    return save_figure(fig, path)


def plot_curves(archs: list[CapacitySummary], path: Path) -> Path:
    fig, ax = new_figure((6.4, 4.6))
    top, bottom = 1.0, np.inf
    for i, a in enumerate(archs):
        color = f"C{i % 10}"
        for p in a.curve:
            ax.scatter([p.dataset_bits] * len(p.bits), p.bits, s=8, alpha=0.4, color=color)
        xs = [p.dataset_bits for p in a.curve if p.median is not None]
        ax.plot(
            xs,
            [p.median for p in a.curve if p.median is not None],
            "o-",
            color=color,
            ms=3,
            label=f"{name(a)} ({a.n_params:,} params)",
        )
        ax.axhline(a.c_mem, color=color, ls=":", lw=1)
        top, bottom = max(top, *xs), min(bottom, *xs)
    ax.plot([bottom, top], [bottom, top], "--", color="gray", lw=1, label="y = x (everything stored)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dataset bits (entropy of the random answers)")
    ax.set_ylabel("bits stored at the last budget\n(median over seeds; dots: seeds)")  # one line overran
    ax.set_title("memorization against dataset size: dotted lines are C_mem", fontsize=9)
    ax.legend(fontsize=6, loc="upper left")
    return save_figure(fig, path)


def plot_bits_per_param(archs: list[CapacitySummary], fits: dict, path: Path) -> Path:
    fig, ax = new_figure((6.4, 4.2))
    p = np.array([a.n_params for a in archs], np.float64)
    c = np.array([a.c_mem for a in archs])
    err = [c - np.array([a.c_min for a in archs]), np.array([a.c_max for a in archs]) - c]
    ax.errorbar(p, c, yerr=err, fmt="o", capsize=3, label="C_mem (median, seed range)")
    for a in archs:
        ax.annotate(name(a), (a.n_params, a.c_mem), fontsize=6, textcoords="offset points", xytext=(4, -8))
    grid = np.linspace(0, p.max() * 1.1, 50)
    if "bits_per_param" in fits:
        ax.plot(
            grid,
            fits["bits_per_param"] * grid,
            "-",
            color="C1",
            label=f"fit: {fits['bits_per_param']:.2f} bits/param",
        )
    for (paper, value), ls in zip(LITERATURE.items(), (":", "-.")):
        ax.plot(grid, value * grid, ls, color="gray", lw=1, label=f"{paper}: {value} bits/param")
    heads = [a.head_budget_bits for a in archs]
    ax.scatter(p, heads, marker="x", color="C3", label="H × d_head × precision budget")
    ax.set_xlim(0, p.max() * 1.35)
    ax.set_xlabel("parameters")
    ax.set_ylabel("C_mem (bits)")
    ax.set_ylim(0, max(c.max(), 1.0) * 1.3)
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path)

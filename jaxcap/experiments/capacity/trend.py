"""The size trend: bits per parameter at saturation against parameter count, with intervals.

Details: docs/design/capacity.md#the-size-trend.

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

from jaxcap.experiments.capacity.plots import LITERATURE
from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.capacity_summary import CapacitySummary, name

PER = {"param": "bits per parameter", "body": "bits per non-embedding parameter"}


def _points(archs: list[CapacitySummary], per: str) -> tuple[np.ndarray, np.ndarray]:
    """(log10 n_params, bits per parameter or per body parameter), one point per arch and seed."""
    x, y = [], []
    for a in archs:
        denominator = a.n_params if per == "param" else a.c_mem / a.bits_per_body_param
        for c in a.c_mem_seeds:
            x.append(np.log10(a.n_params))
            y.append(c / denominator)
    return np.asarray(x), np.asarray(y)


def ols(x: np.ndarray, y: np.ndarray, level: float = 0.9) -> dict:
    """Intercept, slope, the slope's `level` interval and what `band` needs (residual sd, df)."""
    n = len(x)
    design = np.stack([np.ones(n), x], 1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    df = n - 2
    resid = y - design @ coef
    sd = float(np.sqrt((resid**2).sum() / df))
    xtx_inv = np.linalg.inv(design.T @ design)
    t = float(stats.t.ppf(0.5 + level / 2, df))
    half = t * sd * np.sqrt(xtx_inv[1, 1])
    return {
        "intercept": float(coef[0]),
        "slope": float(coef[1]),
        "slope_interval": [float(coef[1] - half), float(coef[1] + half)],
        "sd": sd,
        "df": df,
        "t": t,
        "xtx_inv": xtx_inv.tolist(),
        "points": n,
    }


def band(fit: dict, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, lower, upper) of the fitted line at x, the interval of the mean at fit's level."""
    design = np.stack([np.ones_like(x), x], 1)
    mean = design @ np.array([fit["intercept"], fit["slope"]])
    se = fit["sd"] * np.sqrt(np.einsum("ij,jk,ik->i", design, np.asarray(fit["xtx_inv"]), design))
    return mean, mean - fit["t"] * se, mean + fit["t"] * se


def size_trend(archs: list[CapacitySummary]) -> dict | None:
    """The trend per parameter and per body parameter, or None below 3 sizes or 4 points."""
    archs = [a for a in archs if a.c_mem_seeds and np.isfinite(a.c_mem) and a.c_mem > 0]
    if len({a.n_params for a in archs}) < 3:
        return None
    out = {"n_archs": len(archs), "lower_bounds": sum(not a.is_capacity for a in archs)}
    for per in PER:
        x, y = _points(archs, per)
        if len(x) < 4:
            return None
        out[per] = ols(x, y)
    return out


def trend_lines(archs: list[CapacitySummary], trend: dict | None) -> list[str]:
    if trend is None:
        return []
    lines = ["size trend (OLS on log10 n_params, every seed a point; 90 % t intervals):"]
    for per, words in PER.items():
        f = trend[per]
        lo, hi = f["slope_interval"]
        lines.append(
            f"- {words}: {f['slope']:+.2f} [{lo:+.2f}, {hi:+.2f}] per 10x parameters ({f['points']} points)"
        )
    sizes = ", ".join(f"{a.n_params:,}" for a in sorted(archs, key=lambda a: a.n_params))
    lines.append(
        f"- over {sizes} parameters; {trend['lower_bounds']} of {trend['n_archs']} architectures "
        "are lower bounds (not saturated), which pulls the trend down"
    )
    return lines


def plot_size_trend(archs: list[CapacitySummary], trend: dict, path: Path) -> Path:
    fig, ax = new_figure((6.6, 4.4))
    lo_x = np.log10(min(a.n_params for a in archs))
    hi_x = np.log10(max(a.n_params for a in archs))
    grid = np.linspace(lo_x - 0.1, hi_x + 0.1, 60)
    for (per, words), color, marker in zip(PER.items(), ("C0", "C2"), ("o", "s")):
        for a in archs:
            denominator = a.n_params if per == "param" else a.c_mem / a.bits_per_body_param
            seeds = np.asarray(a.c_mem_seeds) / denominator
            mid = a.c_mem / denominator
            ax.errorbar(
                a.n_params,
                mid,
                yerr=[[mid - seeds.min()], [seeds.max() - mid]],
                fmt=marker,
                color=color,
                mfc=color if a.is_capacity else "white",
                capsize=3,
            )
        mean, lower, upper = band(trend[per], grid)
        f = trend[per]
        ax.plot(10**grid, mean, "-", color=color, label=f"{words}: {f['slope']:+.2f} per 10x")
        ax.fill_between(10**grid, lower, upper, color=color, alpha=0.15)
    for (paper, value), ls in zip(LITERATURE.items(), (":", "-.")):
        ax.axhline(value, ls=ls, color="gray", lw=1, label=f"{paper}: {value}")
    for a in archs:
        ax.annotate(
            name(a),
            (a.n_params, a.bits_per_param),
            fontsize=6,
            textcoords="offset points",
            xytext=(4, -10),
        )
    ax.set_xscale("log")
    ax.set_xlabel("parameters (log scale)")
    ax.set_ylabel("bits stored per parameter at the verdict's budget")
    ax.set_title(
        "size trend: median, seed range, fitted line with 90 % band\n(hollow: lower bound, not saturated)",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path)

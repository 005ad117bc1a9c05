"""The meta-model's report: C, θ, boundaries, held-out validation, calibration (report/).

Reads only `table.json`, `posterior.nc` and `validation.json`. Figures: success vs complexity
per family with the posterior predictive curve for a new level (mean, 50% and 90% bands) and
the boundary b* = C/θ; success rate against each family's covariate and nominal bits (the
monotonicity check); the posterior of C per architecture next to its budgets; the reliability
diagram of held-out predictions; held-out predictions against outcomes per cell.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np
from matplotlib import rcParams
from matplotlib.lines import Line2D

from jaxcap.meta.data import Table
from jaxcap.meta.difficulty import family_checks
from jaxcap.meta.model import boundary_bits, success_probability
from jaxcap.meta.posterior import Posterior
from jaxcap.meta.scorecard import LABELS, METHODS, distinct
from jaxcap.meta.summary import markdown, posterior_tables
from jaxcap.meta.validation import Validation
from jaxcap.reports.figures import new_figure, save_figure, vector_path


def plot_curves(path: Path, table: Table, posterior: Posterior, rng: np.random.Generator) -> Path:
    meta, d = posterior.meta, posterior.draws
    n_f = len(meta.families)
    fig, axes = new_figure((4.2 * n_f, 3.8), 1, n_f, squeeze=False)
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    bstar = boundary_bits(d)
    for f, ax in enumerate(axes[0]):
        bits = [lv.bits for lv in table.levels if lv.family == f]
        grid = np.geomspace(min(bits) / 1.5, max(bits) * 1.5, 60)
        for a in range(len(meta.arch_labels)):
            color = colors[a % len(colors)]
            # a typical new level: its effect integrated out (the bands are what the fit does not know)
            p = success_probability(d, np.log(grid), rng, arch=a, family=f, marginal=True)
            ax.fill_between(grid, *np.quantile(p, [0.05, 0.95], axis=0), color=color, alpha=0.15, lw=0)
            ax.fill_between(grid, *np.quantile(p, [0.25, 0.75], axis=0), color=color, alpha=0.25, lw=0)
            ax.plot(grid, p.mean(0), color=color, label=arch_words(meta.arch_labels[a]))
            lo, mid, hi = np.quantile(bstar[:, a, f], [0.05, 0.5, 0.95])
            ax.axvline(mid, color=color, ls="--", lw=1)
            ax.axvspan(lo, hi, color=color, alpha=0.07)
            obs: dict[int, list[bool]] = {}
            for r in table.rows:
                if r.family == f and r.arch == a:
                    obs.setdefault(r.level, []).append(r.success)
            xs = [table.levels[lv].bits for lv in obs]
            ax.scatter(
                xs,
                [np.mean(v) for v in obs.values()],
                s=[12 + 6 * len(v) for v in obs.values()],
                color=color,
                edgecolor="k",
                lw=0.5,
                zorder=3,
            )
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(meta.families[f] + (" (θ = 1)" if f == meta.reference else ""))
        covariate = next(lv.covariate or "complexity" for lv in table.levels if lv.family == f)
        ax.set_xlabel(f"{covariate} (bits)")
    axes[0][0].set_ylabel("P(success)")
    handles = axes[0][0].get_legend_handles_labels()[0]
    handles += [
        Line2D([], [], color="gray", lw=6, alpha=0.35, label="predicted for a new level: 50% / 90% band"),
        Line2D([], [], color="gray", ls="--", lw=1, label="boundary b* = C/θ (median; shaded: 90%)"),
        Line2D([], [], color="gray", marker="o", ls="", mec="k", label="observed rate (size: seeds)"),
    ]
    fig.legend(
        handles=handles, loc="outside lower center", ncol=min(len(handles), 3), fontsize=7, frameon=False
    )
    return save_figure(fig, path)


def arch_words(label: str) -> str:
    """`a0: 1L d16 2x8 ff32 float32` -> `a0: 1 layers, d_model 16, 2 heads x 8, d_ff 32, float32`
    (the fit's compact labels, in words for a figure's reader; other fields stay as they are)."""
    name, _, short = label.partition(": ")
    words = []
    for part in short.split():
        if part.endswith("L") and part[:-1].isdigit():
            words.append(f"{part[:-1]} layers")
        elif part.startswith("d") and part[1:].isdigit():
            words.append(f"d_model {part[1:]}")
        elif "x" in part and part.replace("x", "").isdigit():
            heads, d_head = part.split("x", 1)
            words.append(f"{heads} heads x {d_head}")
        elif part.startswith("ff") and part[2:].isdigit():
            words.append(f"d_ff {part[2:]}")
        else:
            words.append(part)
    return f"{name}: {', '.join(words)}" if short else name


def plot_capacity(path: Path, posterior: Posterior) -> Path:
    tables = posterior_tables(posterior)
    c = np.exp(posterior.draws["log_C"])
    fig, ax = new_figure((1.6 + 1.4 * len(tables["archs"]), 3.6))
    ax.violinplot([c[:, a] for a in range(c.shape[1])], showmedians=True)
    budgets = (
        ("attention_bits", "C1", "H x d_head x precision"),
        ("param_bits", "C3", "params x precision (body)"),
    )
    for a, arch in enumerate(tables["archs"]):
        for key, colour, label in budgets:
            ax.scatter([a + 1], [arch[key]], marker="_", s=400, color=colour, label=label if a == 0 else None)
    ax.set_yscale("log")
    top = max([float(c.max())] + [arch[key] for arch in tables["archs"] for key, _, _ in budgets])
    ax.set_ylim(top=top * 4)  # every budget on the axis, however far above C it is
    names = [arch_words(a["label"]).replace(": ", "\n").replace(", ", "\n") for a in tables["archs"]]
    ax.set_xticks(range(1, c.shape[1] + 1), names, fontsize=6)
    ref = posterior.meta.families[posterior.meta.reference]
    ax.set_ylabel("C (bits stored at saturation)" if posterior.meta.anchor else f"C (bits of {ref})")
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.01), frameon=False)  # never over a budget
    return save_figure(fig, path)


def plot_calibration(path: Path, valid: Validation) -> Path:
    """One reliability panel per design with scores of its own (`scorecard.distinct`: a design
    that repeats another's cells is named in that one's title, not drawn twice)."""
    designs = distinct(valid.scores)
    fig, axes = new_figure((3.8 * max(len(designs), 1), 3.8), 1, max(len(designs), 1), squeeze=False)
    for ax, (words, scores) in zip(axes[0], designs.items()):
        for m, style in (
            ("meta_model", "o-"),
            ("base_rate", "x:"),
            ("family_intercepts", "d:"),
            ("pooled_logistic", "s:"),
            ("per_family_logistic", "^:"),
        ):
            bins = scores.methods[m].reliability
            ax.plot([b.predicted for b in bins], [b.observed for b in bins], style, label=METHODS[m], ms=4)
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        ax.set_title(words, fontsize=9)
        ax.set_xlabel("predicted P(success)")
        ax.set_ylabel("observed frequency")
        ax.legend(fontsize=7)
    return save_figure(fig, path)


FOLD_MARKERS = {"levels": "o", "top": "s", "families": "^", "archs": "D"}


def plot_heldout(path: Path, valid: Validation) -> Path:
    """Left: each held-out cell's mean predicted P(success) against its observed success
    fraction, drawn where it is (a cell with no success at 0, not nudged below it), the fold kinds
    by marker. Right: every cell's 90 % interval of P(success) on a row of its own, sorted by the
    mean, with the observed fraction beside it: on the left most cells share y = 0 or 1, so their
    intervals would lie on top of one another."""
    fig, (ax, rows) = new_figure((8.4, 4.0), 1, 2)
    drawn = []
    for fold_kind, marker in FOLD_MARKERS.items():
        cells = valid.cells(fold_kind)
        if not cells:
            continue
        x = np.array([c.p_mean for c in cells])
        y = np.array([c.successes / c.trials for c in cells])
        words = LABELS.get(fold_kind, fold_kind)
        ax.plot(x, y, marker, ls="", mfc="none", ms=4, label=f"{words} ({len(cells)} cells)")
        drawn += [(c.p_mean, c.p_lo90, c.p_hi90, c.successes / c.trials, marker) for c in cells]
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
    for a in (ax, rows):
        a.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("predicted P(success) (mean)")
    ax.set_ylabel("observed success fraction of the cell")
    ax.legend(fontsize=7)
    colours = {m: f"C{i}" for i, m in enumerate(FOLD_MARKERS.values())}  # as the left panel's
    n = max(len(drawn), 1)
    lw, ms = min(2.0, 150 / n), min(4.0, 300 / n)  # rows stay apart at 100+ cells
    for i, (mean, lo, hi, observed, marker) in enumerate(sorted(drawn, key=lambda d: d[:4])):
        colour = colours[marker]
        rows.plot([lo, hi], [i, i], color=colour, lw=lw, alpha=0.6, solid_capstyle="butt")
        rows.plot([mean], [i], marker, color=colour, mfc="none", ms=ms)
        rows.plot([observed], [i], "x", color="k", ms=ms)
    rows.plot([], [], "x", color="k", ms=4, label="observed fraction")
    rows.plot([], [], color="grey", lw=2, alpha=0.6, label="90% interval (marker: mean)")
    rows.set_ylim(len(drawn) - 0.5, -0.5)
    rows.set_yticks([])
    rows.set_ylabel(f"held-out cells ({len(drawn)}), by predicted mean")
    rows.set_xlabel("P(success): 90% interval, mean, observed")
    rows.legend(fontsize=7, loc="upper right")  # the top rows hold the lowest predictions
    return save_figure(fig, path)


def plot_monotone(path: Path, checks: list[dict]) -> Path:
    """Per family (and architecture): success rate per level against the model's covariate and
    against the nominal bits, with the best non-increasing fit (the monotonicity test's null)."""
    fig, axes = new_figure((3.6 * max(len(checks), 1), 5.6), 2, max(len(checks), 1), squeeze=False)
    for j, c in enumerate(checks):
        for i, (key, name) in enumerate((("test", c["covariate"]), ("nominal", "nominal complexity_bits"))):
            t, ax = c[key], axes[i][j]
            ax.plot(t["bits"], t["rate"], "o", ms=4, label="observed")
            ax.step(t["bits"], t["isotonic"], where="mid", color="C3", lw=1, label="non-increasing fit")
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap
            ax.set_ylim(-0.05, 1.05)
            ax.set_xlabel(f"{name} (bits)", fontsize=8)
            verdict = "monotone" if t["monotone"] else "NOT monotone"
            ax.set_title(f"{c['family']} a{c['arch']}: {verdict} (p {t['p_value']:.3f})", fontsize=8)
    axes[0][0].set_ylabel("success rate (model covariate)")
    axes[1][0].set_ylabel("success rate (nominal bits)")
    if checks:
        axes[0][0].legend(fontsize=7)
    return save_figure(fig, path)


def held_out_figures(valid: Validation) -> dict[str, object]:
    """The validation figures this run has something to draw in: calibration.png (a design with
    scores) and heldout.png (a held-out cell); none without validation."""
    out = {}
    if distinct(valid.scores):
        out["calibration.png"] = plot_calibration
    if any(valid.cells(kind) for kind in FOLD_MARKERS):
        out["heldout.png"] = plot_heldout
    return out


def write_report(report_dir: Path, table: Table, posterior: Posterior, valid: Validation) -> list[Path]:
    """report.md (jaxcap.meta.summary) and the figures: three always, the two of held-out
    validation where it ran (a figure left over from an earlier report is removed)."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    checks = family_checks(table)
    figures = [
        plot_curves(report_dir / "success_vs_complexity.png", table, posterior, rng),
        plot_monotone(report_dir / "monotone.png", checks),
        plot_capacity(report_dir / "capacity.png", posterior),
    ]
    drawn = held_out_figures(valid)
    for name in ("calibration.png", "heldout.png"):
        if name in drawn:
            figures.append(drawn[name](report_dir / name, valid))
        else:  # nothing to draw: no empty figure, and none from an earlier report
            for stale in (report_dir / name, vector_path(report_dir / name)):
                stale.unlink(missing_ok=True)
    path = report_dir / "report.md"
    path.write_text(markdown(posterior, valid, figures, checks))
    return [path, *figures]

"""The `enhance` experiment: capacity multipliers of model variants, with credible intervals.

A variant is a bucket-style override of model fields (`model.norm_type=rms`, `model.qat_bits=4`,
`model.n_layers=1`; the switches of jaxcap/models/). Every variant trains the same task
families, levels, seeds, steps and level search as the baseline (the first entry, normally ""),
as architectures of one `calibrate` run (jaxcap/experiments/calibrate/experiment.py),
so they share one meta-model fit and one scale: the multiplier of variant a is C_a / C_base,
computed draw by draw from the joint posterior (so the intervals account for the correlation of
the two capacities), and per parameter (C_a / P_a) / (C_base / P_base), since a variant that
adds parameters is expected to store more.

Details: docs/design/enhance.md#honest-multipliers.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import ml_collections
import numpy as np
from matplotlib.lines import Line2D

from jaxcap.config.plan import Plan
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.experiments.enhance.sections import report_sections
from jaxcap.fields import defaults
from jaxcap.meta.posterior import load_posterior, summarize
from jaxcap.meta.report import arch_words
from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.results.store import Store, write_atomic

TARGETS = (1.5, 5.0, 10.0)  # the seed design's multipliers


def verdict(s: dict) -> str:
    """ "no evidence of change", or the largest target whose 90% interval lies above it."""
    if s["lo90"] <= 1.0 <= s["hi90"]:
        return "no evidence of change"
    if s["hi90"] < 1.0:
        return "lower than the baseline"
    reached = [t for t in TARGETS if s["lo90"] > t]
    return f"reached {max(reached):g}x" if reached else "above 1x, below 1.5x"


def multipliers(posterior) -> list[dict]:
    """Per architecture: C, the multiplier C_a / C_0 and its per-parameter form, with verdicts."""
    c = np.exp(posterior.draws["log_C"])
    budgets = posterior.meta.budgets
    rows = []
    for a, label in enumerate(posterior.meta.arch_labels):
        params, base = budgets[a]["body_params"], budgets[0]["body_params"]
        ratio = c[:, a] / c[:, 0]
        per_param = ratio * base / params
        rows.append(
            {
                "label": label,
                "body_params": params,
                "flops_per_token": 6 * params,
                "C": summarize(c[:, a]),
                "multiplier": summarize(ratio),
                "per_param": summarize(per_param),
                "verdict": "baseline" if a == 0 else verdict(summarize(ratio)),
                "verdict_per_param": "baseline" if a == 0 else verdict(summarize(per_param)),
            }
        )
    return rows


def plot_forest(path: Path, rows: list[dict]) -> Path:
    """Multipliers with 50% (thick) and 90% (thin) intervals; 1x and the seed's targets marked."""
    fig, axes = new_figure((11, 0.5 * len(rows) + 2.4), 1, 2, sharey=True)
    y = np.arange(len(rows))[::-1]
    for ax, key, title in zip(axes, ("multiplier", "per_param"), ("C / C_base", "per parameter")):
        for yi, r in zip(y, rows):
            s = r[key]
            ax.plot([s["lo90"], s["hi90"]], [yi, yi], color="C0", lw=1.2)
            ax.plot([s["lo50"], s["hi50"]], [yi, yi], color="C0", lw=4)
            ax.plot(s["median"], yi, "o", color="C3" if "reached" in r["verdict"] else "k", ms=4)
        ax.axvline(1.0, color="grey", lw=1)
        for t in TARGETS:  # labelled just above the axes, whatever the number of rows
            ax.axvline(t, color="C2", ls=":", lw=1)
            ax.text(
                t, 1.01, f"{t:g}x", color="C2", fontsize=7, ha="center", transform=ax.get_xaxis_transform()
            )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}x"))
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_title(f"capacity multiplier: {title} (median, 50%, 90%)", fontsize=9, pad=14)
        ax.set_xlabel("multiplier (log scale; 1x: the baseline)", fontsize=8)
    axes[0].set_yticks(y, [arch_words(r["label"]).replace(", ", ",\n", 2) for r in rows], fontsize=7)
    marks = [
        Line2D([], [], color="k", marker="o", ls="", ms=4, label="median"),
        Line2D([], [], color="C3", marker="o", ls="", ms=4, label="median, target reached (90% above it)"),
        Line2D([], [], color="C2", ls=":", label="targets 1.5x, 5x, 10x"),
    ]
    fig.legend(handles=marks, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    return save_figure(fig, path)


def _ci(s: dict) -> str:
    return f"{s['median']:.3g} [{s['lo90']:.3g}, {s['hi90']:.3g}]"


def format_table(rows: list[dict]) -> str:
    cols = ("variant", "body params", "train FLOPs/token", "C (bits)", "C / C_base", "verdict")
    lines = ["| " + " | ".join((*cols, "per parameter", "verdict")) + " |", "|" + "---|" * 8]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['body_params']:,} | {r['flops_per_token']:,} | {_ci(r['C'])} | "
            f"{_ci(r['multiplier'])} | {r['verdict']} | {_ci(r['per_param'])} | {r['verdict_per_param']} |"
        )
    return "\n".join(lines)


def enhance_report(store: Store) -> list[Path]:
    """The calibrate report plus report/enhance.md, report/multipliers.png and, when the variants
    hold two precisions or more, report/precision_curve.png."""
    written = resolve(EXPERIMENTS["calibrate"].report)(store)  # the calibrate run underneath
    rows = multipliers(load_posterior(store.root / "posterior.nc"))
    figure = plot_forest(store.report_path / "multipliers.png", rows)
    text = (
        "# Capacity multipliers\n\nMedian [90% interval] from the joint posterior (report.md has the "
        "fit, its diagnostics and the validation). Same families, levels, seeds, steps and level "
        "search for every variant; FLOPs per token = 6 x body parameters.\n\n"
        f"{format_table(rows)}\n\n![multipliers]({figure.name})\n"
    )
    sections, figures = report_sections(store, rows)
    path = store.report_path / "enhance.md"
    write_atomic(path, text + sections)
    return [*written, path, figure, *figures]


def enhance_experiment(plan: Plan, store: Store) -> list[dict]:
    """Train every variant on every family (resumable), fit, then the multipliers."""
    resolve(EXPERIMENTS["calibrate"].run)(plan, store)  # every variant an architecture of one fit
    written = enhance_report(store)
    rows = multipliers(load_posterior(store.root / "posterior.nc"))
    print(format_table(rows), flush=True)
    new = [p for p in written if p.name in ("enhance.md", "multipliers.png", "precision_curve.png")]
    print(f"wrote {', '.join(str(p.relative_to(store.root)) for p in new)} in {store.root}")
    return rows


def memorization_family(smoke: bool) -> dict:
    """The reference family of every enhance fit: random labels (θ = 1, C in memorized bits)."""
    if smoke:
        task = dict(name="random_labels", vocab_size=16, seq_len=8, n_classes=4, n_eval=64)
        return dict(task=task, levels=dict(dataset_size=(8, 64)), overrides="")
    task = dict(name="random_labels", vocab_size=64, seq_len=8, n_classes=16)
    return dict(task=task, levels=dict(dataset_size=(64, 128, 256, 512, 1024, 2048)), overrides="")


def enhance_config(families: dict, variants: tuple[str, ...], variant: str) -> ml_collections.ConfigDict:
    """A calibrate config whose architectures are `variants` (the baseline first), sized by
    `variant` ('smoke' for the tests, 'default' for a 2-core CPU, 'full' for an accelerator).
    Held-out validation is off by default (the fit is the point; turn it on with
    --config.calibrate.validation.folds=4 --config.calibrate.validation.designs='("levels",)')."""
    from jaxcap.config.base import base_config

    c = base_config("modulo")  # config.task is unused: every family names its own task
    c.experiment = "enhance"
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=128)
    c.hparams.update(learning_rate=3e-3, weight_decay=0.1, warmup_steps=50.0)
    c.train.update(steps=1000, chunk_steps=250, batch_size=64)
    c.sweep.seeds = 2
    # no capacity_workdir: multipliers C_a / C_a0 do not depend on the unit (jaxcap/meta/anchor.py);
    # the design's defaults train every listed level of every variant
    settings = resolve(dict(EXPERIMENTS["enhance"].sections)["calibrate"])  # CalibrateSettings
    c.calibrate = defaults(settings, families=families, architectures=variants)
    c.calibrate.nuts.update(warmup=500, samples=500, target_accept=0.99)
    c.calibrate.validation.update(folds=0, designs=())
    if variant == "smoke":
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 256
        c.calibrate.nuts.update(warmup=100, samples=100, chains=2)
    elif variant == "full":
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.calibrate.nuts.update(warmup=1000, samples=1000)
        c.calibrate.validation.update(folds=4, designs=("levels", "top", "families", "archs"))
    c.note = f"{len(variants)} variants x {len(families)} families, one meta-model fit ({variant})"
    return c

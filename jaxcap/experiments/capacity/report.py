"""The capacity report, rebuilt from the workdir alone (config.json and capacity.jsonl). What
other experiments read of a capacity workdir (its saturated C_mem) is in the results layer,
jaxcap/results/capacity_reading.py, with the definitions (capacity_curves.py).

report/report.md holds, per architecture, bits per parameter at every exposure budget (median
and seed range) with the flatness verdict, the C_mem table at the last budget (both budgets and
utilizations), the fits across architectures (bits per parameter, power law, Härmä et al.'s
empirical capacity model, held-out MAPE), how the numbers compare with the published
protocols, and each architecture's curve over dataset sizes; report/capacity.json has the
numbers; figures: plots.py and trend.py (from 3 sizes on).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxcap.experiments.capacity import across_architectures as capacity_fit
from jaxcap.experiments.capacity import recipe as capacity_recipe
from jaxcap.experiments.capacity import trend as capacity_trend
from jaxcap.experiments.capacity.compare import multiplier_lines
from jaxcap.experiments.capacity.plots import LITERATURE, plot_bits_per_param, plot_curves, plot_exposures
from jaxcap.results import capacity_curves
from jaxcap.results.capacity_reading import read_summaries
from jaxcap.results.capacity_summary import CapacityReport, CapacitySummary, name
from jaxcap.results.store import Store, clean, read_jsonl, write_atomic


def load(store: Store) -> tuple[dict, list[CapacitySummary], dict, float]:
    """(config, per-architecture summaries, fits, summed wall time) of a capacity workdir."""
    config, archs = read_summaries(store.root)
    wall = sum(r["wall_s"] for r in read_jsonl(store.root / "capacity_time.jsonl"))
    return config, archs, capacity_fit.fit_all(archs), wall


def _f(x, spec=",.0f") -> str:
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def verdict(a: CapacitySummary) -> str:
    flat, tol = a.flat, a.flat.tol
    if a.is_capacity:
        return f"capacity (gain {flat.gain:+.1%} ≤ {tol:.0%})"
    why = []
    if not flat.flat:
        why.append("no doubling to judge" if flat.gain is None else f"still gaining {flat.gain:+.1%}")
    if not a.plateau:
        why.append("sizes not plateaued")
    return "lower bound: " + ", ".join(why)


def exposure_table(archs: list[CapacitySummary], key: str = "exposure_curve") -> list[str]:
    """Bits per parameter at each budget of one curve (`exposure_curve`: the constant-rate run;
    `annealed_curve`: a run per budget), its gain over the last doubling, and the verdict where
    this is the curve the verdict reads."""
    archs = [a for a in archs if getattr(a, key)]
    if not archs:
        return []
    budgets = sorted({p.exposures for a in archs for p in getattr(a, key)})
    lines = [
        "| arch | params | "
        + " | ".join(f"{e:g}" for e in budgets)
        + " | over the last doubling | verdict |",
        "|---|---|" + "---|" * len(budgets) + "---|---|",
    ]
    for a in archs:
        at = {p.exposures: p for p in getattr(a, key)}
        per_param = [
            [getattr(at[e], k) and getattr(at[e], k) / a.n_params for k in ("median", "min", "max")]
            if e in at
            else [None] * 3
            for e in budgets
        ]
        cells = ["—" if m is None else f"{m:.2f} [{lo:.2f}–{hi:.2f}]" for m, lo, hi in per_param]
        flat = capacity_curves.flatness([p.to_json() for p in getattr(a, key)], a.flat.tol)
        span = "—" if flat["gain"] is None else f"{flat['gain']:+.1%} ({flat['from']:g} → {flat['to']:g})"
        mine = (key == "annealed_curve") == (a.verdict_schedule == "annealed")
        lines.append(
            f"| {name(a)} | {a.n_params:,} | "
            + " | ".join(cells)
            + f" | {span} | {verdict(a) if mine else '(not the verdict curve)'} |"
        )
    return lines


def literature(archs: list[CapacitySummary]) -> str:
    """Our numbers beside the published protocols' (docs/capacity.md)."""

    def at(e):  # Allen-Zhu & Li anneal every budget: our annealed curve where it has e
        vals = []
        for a in archs:
            points = [p for p in a.annealed_curve if p.exposures == e]
            vals += [p.bits_per_param for p in points or a.exposure_curve if p.exposures == e]
        vals = [v for v in vals if v is not None]
        return f"{min(vals):.2f}–{max(vals):.2f}" if vals else "not measured"

    last = archs[0].flat.to
    return (
        f"Published protocols: Allen-Zhu & Li 2024 ~1 bit/param at 100 exposures and ~2 at 1,000 "
        f"(here {at(100.0)} and {at(1000.0)} across architectures); Morris et al. 2025 ~3.6 trained to "
        f"convergence (here {at(last)} at {last:g} exposures, "
        f"{sum(a.is_capacity for a in archs)} of {len(archs)} architectures flat)."
    )


def format_text(store: Store) -> str:
    config, archs, fits, wall = load(store)
    if not archs:
        return "(no capacity measurements yet)"
    task, cap = config["task"], config["capacity"]
    lines = [
        f"capacity of {archs[0].family} (vocab {task['vocab_size']}, seq_len {task['seq_len']}"
        + (f", {task['n_classes']} classes" if "n_classes" in task else "")
        + f"); {config['sweep']['seeds']} seeds; batch {config['train']['batch_size']}",
        *capacity_recipe.recipe_lines(archs, cap),
        "",
        "bits per parameter at each exposure budget of the constant-rate run (exposures per item = "
        "steps x batch / n; C(E) = per seed the most bits any dataset size stored at E, / n_params; "
        "median [min–max over seeds]; — : every size passed E before the first eval):",
        "",
        *exposure_table(archs),
        "",
        *capacity_recipe.annealed_lines(archs, exposure_table(archs, "annealed_curve")),
        f"A C_mem is a capacity when C(E) gained at most {cap['saturation_tol']:.0%} over the last doubling "
        f"of exposures and the sizes plateaued (the largest stores < {1 + cap['plateau_tol']:.2f} x the "
        f"best smaller one and < {capacity_curves.MEMORIZED:.0%} of its bits); otherwise it is a lower "
        "bound.",
        literature(archs),
        "",
        "| arch | params (embedding, head) | H x d_head | C_mem bits: median [min, max] | bits/param "
        "| bits/non-embedding param | sizes plateau | H·d_head·p | C/that | n_params·p | C/that "
        "| members flat |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for a in archs:
        lines.append(
            f"| {name(a)} | {a.n_params:,} ({a.n_embedding_params:,}, {a.n_head_params:,}) | "
            f"{a.n_heads} x {a.d_head} | {_f(a.c_mem)} [{_f(a.c_min)}, {_f(a.c_max)}] | "
            f"{a.bits_per_param:.2f} | {a.bits_per_body_param:.2f} | "
            f"{'yes' if a.plateau else 'NO'} | {a.head_budget_bits:,.0f} | "
            f"{a.head_utilization:.2f} | {a.storage_budget_bits:,.0f} | "
            f"{a.storage_utilization:.3f} | {a.members - a.unsaturated}/{a.members} |"
        )
    lines += ["", "fits across architectures (C_mem at the last budget):"]
    if "bits_per_param" in fits:
        seeds = fits["bits_per_param_seeds"]
        lines.append(
            f"- bits per parameter (slope through the origin): {fits['bits_per_param']:.2f} "
            f"(per seed {min(seeds):.2f}–{max(seeds):.2f})"
            + (f"; with an intercept: {fits['line_slope']:.2f} bits/param" if "line_slope" in fits else "")
            + f"; from unclipped net bits: {fits['net_bits_per_param']:.2f}"
            + "; literature: "
            + ", ".join(f"{k} ~{v}" for k, v in LITERATURE.items())
        )
    if "power_law" in fits:
        pl = fits["power_law"]
        lines.append(
            f"- power law C = {pl['k']:.3g} · n_params^{pl['gamma']:.3f}: MAPE in sample "
            f"{fits['power_law_mape_in_sample']:.1f}%, "
            f"held out {_f(fits.get('power_law_mape_held_out'), '.1f')}%"
        )
    if "ecm" in fits:
        ecm = ", ".join(f"{k}={v:.3g}" for k, v in fits["ecm"].items())
        lines.append(
            f"- Härmä et al. ECM ({ecm}): MAPE in sample {fits['ecm_mape_in_sample']:.1f}%, held out "
            f"{_f(fits.get('ecm_mape_held_out'), '.1f')}% ({fits['n_archs']} architectures for 7 parameters)"
        )
    lines += ["", *capacity_trend.trend_lines(archs, capacity_trend.size_trend(archs))]
    lines += ["", bound_statement(archs), "", *multiplier_lines(archs, name)]
    for a in archs:
        lines += [
            f"curve over dataset sizes of {name(a)} ({a.label or 'the base model'}; {a.rounds} "
            f"round(s)), at {a.flat.to:g} exposures ({a.verdict_schedule} rate):",
            "",
            "| n | dataset bits | bits stored: median [min, max] | exact | best lr | members flat |",
            "|---|---|---|---|---|---|",
        ]
        for p in a.curve:
            lines.append(
                f"| {p.size} | {p.dataset_bits:,.0f} | "
                f"{_f(p.median)} [{_f(p.min)}, {_f(p.max)}] "
                f"| {_f(p.exact, '.3f')} | {','.join(f'{x:g}' for x in p.best_lr)} "
                f"| {p.saturated}/{p.members} |"
            )
        lines.append("")
    lines.append(f"\ntraining + measurement time: {wall:.0f} s (summed over sizes and processes)")
    return "\n".join(lines)


def bound_statement(archs: list[CapacitySummary]) -> str:
    """Which of the two budgets actually bounds the measured capacity, in words."""
    over = [a for a in archs if a.c_mem > a.head_budget_bits]
    storage = max(a.storage_utilization for a in archs)
    head = (
        f"C_mem exceeds the seed design's H × d_head × precision budget for {len(over)} of {len(archs)} "
        "architectures, so that budget is not an upper bound on memorization: it counts one layer's "
        "attention width, while every parameter (embeddings, MLPs, head) stores bits."
        if over
        else f"C_mem stays below H × d_head × precision for all {len(archs)} architectures "
        f"(at most {max(a.head_utilization for a in archs):.0%} of it)."
    )
    return (
        f"{head} The storage budget n_params × precision always holds but is loose: at most "
        f"{storage:.1%} of it is used (at most {max(a.bits_per_param for a in archs):.2f} bits per "
        f"parameter of {archs[0].precision_bits})."
    )


def write_report(store: Store) -> list[Path]:
    """report/report.md, capacity.json and the three figures; regenerable from the workdir."""
    config, archs, fits, wall = load(store)
    out = store.report_path
    out.mkdir(exist_ok=True)
    if not archs:
        return []
    figures = [
        plot_exposures(archs, out / "exposure_curve.png"),
        plot_curves(archs, out / "capacity_curve.png"),
        plot_bits_per_param(archs, fits, out / "bits_per_param.png"),
    ]
    if trend := capacity_trend.size_trend(archs):
        figures.append(capacity_trend.plot_size_trend(archs, trend, out / "size_trend.png"))
    text = f"# capacity: {store.root.name}\n\n{format_text(store)}\n\n"
    text += "".join(f"![{f.stem}]({f.name})\n" for f in figures)
    write_atomic(out / "report.md", text)
    summary = CapacityReport(archs, fits, wall).to_json()
    write_atomic(out / "capacity.json", json.dumps(clean(summary), indent=1) + "\n")
    return [out / "report.md", out / "capacity.json", *figures]

"""The capacity report, rebuilt from the workdir alone (config.json and capacity.jsonl).

report/report.md holds the per-architecture table (C_mem over seeds, bits per parameter,
both budgets and utilizations), the fits across architectures (bits per parameter, power law,
Härmä et al.'s empirical capacity model, held-out MAPE), which budget bounds what was measured,
and each architecture's curve; report/capacity_curve.png plots bits stored against dataset bits
(with y = x and each plateau), report/bits_per_param.png C_mem against n_params; the numbers
are also in report/capacity.json. See jaxcap/capacity.py for the definitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxcap import capacity, capacity_fit  # noqa: E402
from jaxcap.store import Store, clean, read_jsonl, write_atomic  # noqa: E402

LITERATURE = {"Allen-Zhu & Li 2024": 2.0, "Morris et al. 2025": 3.6}  # bits per parameter


def load(store: Store) -> tuple[dict, list[dict], dict, float]:
    """(config, per-architecture summaries, fits, summed wall time) of a capacity workdir."""
    config = json.loads(store.config_path.read_text())
    rows = read_jsonl(store.root / "capacity.jsonl")
    archs = capacity.summarize(rows, config["capacity"]["plateau_tol"])
    wall = sum({r["bucket"]: r.get("wall_s", 0.0) for r in rows}.values())
    return config, archs, capacity_fit.fit_all(archs), wall


def name(a: dict) -> str:
    """A short architecture name: layers, d_model, heads x d_head, d_ff (and N if not the task's)."""
    return f"{a['n_layers']}L d{a['d_model']} {a['n_heads']}x{a['d_head']} ff{a['d_ff']} N{a['seq_len']}"


def caveat(archs: list[dict]) -> str:
    """Say when C_mem was reached by members that had not flattened within train.steps."""
    short = []
    for a in archs:
        at = [p for p in a["curve"] if p["median"] is not None and p["max"] == a["c_max"]]
        if at and at[0]["saturated"] < at[0]["members"]:
            short.append(name(a))
    if not short:
        return "Every architecture's C_mem comes from members whose curves had flattened."
    return (
        f"Caveat: for {len(short)} of {len(archs)} architectures ({'; '.join(short)}) the size that "
        "stored the most bits still had members gaining when train.steps ran out, so their C_mem is "
        "a lower bound at this training budget; sizes past the peak were further from saturation "
        "still (see the saturated column), which is why the curve falls off instead of staying flat."
    )


def _f(x, spec=",.0f") -> str:
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def bound_statement(archs: list[dict]) -> str:
    """Which of the two budgets actually bounds the measured capacity, in words."""
    over = [a for a in archs if a["c_mem"] > a["head_budget_bits"]]
    storage = max(a["storage_utilization"] for a in archs)
    head = (
        f"C_mem exceeds the seed design's H × d_head × precision budget for {len(over)} of {len(archs)} "
        "architectures, so that budget is not an upper bound on memorization: it counts one layer's "
        "attention width, while every parameter (embeddings, MLPs, head) stores bits."
        if over
        else f"C_mem stays below H × d_head × precision for all {len(archs)} architectures "
        f"(at most {max(a['head_utilization'] for a in archs):.0%} of it)."
    )
    return (
        f"{head} The storage budget n_params × precision always holds but is loose: at most "
        f"{storage:.1%} of it is used (at most {max(a['bits_per_param'] for a in archs):.2f} bits per "
        f"parameter of {archs[0]['precision_bits']}). What limits memorization here is the parameter "
        "count times a small bits-per-parameter constant (the fit above), not the number of "
        "representable float values."
    )


def format_text(store: Store) -> str:
    config, archs, fits, wall = load(store)
    if not archs:
        return "(no capacity measurements yet)"
    task = config["task"]
    lines = [
        f"capacity of {archs[0]['family']} (vocab {task['vocab_size']}, seq_len {task['seq_len']}"
        + (f", {task['n_classes']} classes" if "n_classes" in task else "")
        + f"); {config['sweep']['seeds']} seeds x learning rates "
        + str(config["sweep"]["hparams"]["learning_rate"]),
        "",
        "| arch | params | H x d_head | C_mem bits: median [min, max] | bits/param | plateau "
        "| H·d_head·p | C/that | n_params·p | C/that | unsaturated |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for a in archs:
        lines.append(
            f"| {name(a)} | {a['n_params']:,} | {a['n_heads']} x {a['d_head']} | "
            f"{_f(a['c_mem'])} [{_f(a['c_min'])}, {_f(a['c_max'])}] | {a['bits_per_param']:.2f} | "
            f"{'yes' if a['plateau'] else 'NO'} | {a['head_budget_bits']:,.0f} | "
            f"{a['head_utilization']:.2f} | {a['storage_budget_bits']:,.0f} | "
            f"{a['storage_utilization']:.3f} | {a['unsaturated']}/{a['members']} |"
        )
    lines += ["", "fits across architectures:"]
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
    lines += ["", bound_statement(archs), "", caveat(archs), ""]
    for a in archs:
        lines += [
            f"curve of {name(a)} ({a['label'] or 'the base model'}; {a['rounds']} round(s)):",
            "",
            "| n | dataset bits | bits stored: median [min, max] | exact | best lr | saturated |",
            "|---|---|---|---|---|---|",
        ]
        for p in a["curve"]:
            lines.append(
                f"| {p['size']} | {p['dataset_bits']:,.0f} | "
                f"{_f(p['median'])} [{_f(p['min'])}, {_f(p['max'])}] "
                f"| {_f(p['exact'], '.3f')} | {','.join(f'{x:g}' for x in p['best_lr'])} "
                f"| {p['saturated']}/{p['members']} |"
            )
        lines.append("")
    lines.append(
        f"\ntraining + measurement time: {wall:.0f} s (summed over rounds; a resumed run counts less)"
    )
    return "\n".join(lines)


def plot_curves(archs: list[dict], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    top, bottom = 1.0, np.inf
    for i, a in enumerate(archs):
        color = f"C{i % 10}"
        for p in a["curve"]:
            ax.scatter([p["dataset_bits"]] * len(p["bits"]), p["bits"], s=8, alpha=0.4, color=color)
        xs = [p["dataset_bits"] for p in a["curve"] if p["median"] is not None]
        ax.plot(
            xs,
            [p["median"] for p in a["curve"] if p["median"] is not None],
            "o-",
            color=color,
            ms=3,
            label=f"{name(a)} ({a['n_params']:,} params)",
        )
        ax.axhline(a["c_mem"], color=color, ls=":", lw=1)
        top, bottom = max(top, *xs), min(bottom, *xs)
    ax.plot([bottom, top], [bottom, top], "--", color="gray", lw=1, label="y = x (everything stored)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dataset bits (entropy of the random answers)")
    ax.set_ylabel("bits stored (median over seeds; dots: seeds)")
    ax.set_title("memorization capacity: dotted lines are C_mem", fontsize=9)
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_bits_per_param(archs: list[dict], fits: dict, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    p = np.array([a["n_params"] for a in archs], np.float64)
    c = np.array([a["c_mem"] for a in archs])
    err = [c - np.array([a["c_min"] for a in archs]), np.array([a["c_max"] for a in archs]) - c]
    ax.errorbar(p, c, yerr=err, fmt="o", capsize=3, label="C_mem (median, seed range)")
    for a in archs:
        ax.annotate(
            name(a),
            (a["n_params"], a["c_mem"]),
            fontsize=6,
            textcoords="offset points",
            xytext=(4, -8),
        )
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
    heads = [a["head_budget_bits"] for a in archs]
    ax.scatter(p, heads, marker="x", color="C3", label="H × d_head × precision budget")
    ax.set_xlim(0, p.max() * 1.35)
    ax.set_xlabel("parameters")
    ax.set_ylabel("C_mem (bits)")
    ax.set_ylim(0, max(c.max(), 1.0) * 1.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(store: Store) -> list[Path]:
    """report/report.md, capacity.json and the two figures; regenerable from the workdir."""
    config, archs, fits, wall = load(store)
    out = store.report_path
    out.mkdir(exist_ok=True)
    if not archs:
        return []
    figures = [
        plot_curves(archs, out / "capacity_curve.png"),
        plot_bits_per_param(archs, fits, out / "bits_per_param.png"),
    ]
    text = f"# capacity: {store.root.name}\n\n{format_text(store)}\n\n"
    text += "".join(f"![{f.stem}]({f.name})\n" for f in figures)
    write_atomic(out / "report.md", text)
    summary = {"architectures": archs, "fits": fits, "wall_s": wall}
    write_atomic(out / "capacity.json", json.dumps(clean(summary), indent=1) + "\n")
    return [out / "report.md", out / "capacity.json", *figures]

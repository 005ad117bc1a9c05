"""The meta-model's numbers in words: tables of C, θ, κ, boundaries, validation (report.md).

`posterior_tables` turns a `Posterior` into medians and 90% / 50% central intervals of the
quantities the issue asks for: C per architecture next to its budgets (H x d_head x precision
and parameters x precision) with utilization and multipliers C_a / C_a0, θ and κ per family,
and the learnability boundary b* = C_a / θ_f; `markdown` writes them and the held-out scores.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.fit import Posterior, summarize
from jaxcap.meta.model import boundary_bits


def posterior_tables(posterior: Posterior) -> dict:
    """Capacities (with budgets, utilization, multipliers), difficulties, slopes, boundaries."""
    d, meta = posterior.draws, posterior.meta
    c = np.exp(d["log_C"])
    archs = []
    for a, label in enumerate(meta["arch_labels"]):
        b = meta["budgets"][a]
        archs.append(
            {
                "label": label,
                "C": summarize(c[:, a]),
                **b,
                "utilization_attention": summarize(c[:, a] / b["attention_bits"]),
                "utilization_params": summarize(c[:, a] / b["param_bits"]),
                "multiplier": summarize(c[:, a] / c[:, 0]),
                "p_above_base": float(np.mean(c[:, a] > c[:, 0])),
            }
        )
    families = [
        {
            "name": n,
            "reference": f == meta["reference"],
            "theta": summarize(np.exp(d["log_theta"][:, f])),
            "kappa": summarize(d["kappa"][:, f]),
        }
        for f, n in enumerate(meta["families"])
    ]
    bstar = boundary_bits(d)
    boundaries = [
        {"arch": meta["arch_labels"][a], "family": n, "bits": summarize(bstar[:, a, f])}
        for a in range(len(archs))
        for f, n in enumerate(meta["families"])
    ]
    hyper = {k: summarize(d[k]) for k in ("sigma_level", "sigma_log_theta", "sigma_log_kappa", "sigma_log_C")}
    return {"archs": archs, "families": families, "boundaries": boundaries, "hyper": hyper}


def _ci(s: dict, fmt: str = ".3g") -> str:
    return f"{s['median']:{fmt}} [{s['lo90']:{fmt}}, {s['hi90']:{fmt}}]"


def headline(posterior: Posterior, valid: dict) -> str:
    """The answer in a few lines (printed at the end of a calibrate run)."""
    t, meta = posterior_tables(posterior), posterior.meta
    ref = meta["families"][meta["reference"]]
    lines = [f"effective capacity C (bits of {ref}, θ_{ref} = 1; median [90% interval]):"]
    lines += [f"  {a['label']}: C = {_ci(a['C'])}" for a in t["archs"]]
    lines += [
        f"  boundary b* {b['family']} ({b['arch'].split(':')[0]}): {_ci(b['bits'])} bits"
        for b in t["boundaries"]
    ]
    for kind, s in valid.get("scores", {}).items():
        m = s["meta_model"]
        others = ", ".join(f"{k} {s[k]['brier']:.3f}" for k in ("pooled_logistic", "per_family_logistic"))
        auc = "—" if m["auc"] is None else f"{m['auc']:.3f}"
        lines.append(
            f"held-out {kind}: Brier {m['brier']:.3f} (baselines: {others}), AUC {auc}, "
            f"coverage 50% {m['coverage50']:.2f} / 90% {m['coverage90']:.2f} ({s['n_rows']} runs)"
        )
    return "\n".join(lines)


def _validation_md(valid: dict) -> list[str]:
    out = ["## Held-out validation", ""]
    if not valid.get("scores"):
        return out + ["(no validation: fewer than 2 folds and families)", ""]
    out += [
        f"One NUTS run fitted every fold ({valid['nuts_seconds']:.1f} s, "
        f"{valid['divergences']} divergences). "
        "`levels`: K-fold over difficulty levels (a held-out level is predicted as a new level); "
        "`families`: leave one family out (predicted from the population prior). Scores over held-out "
        "runs; coverage of the central predictive intervals of each held-out cell's success count "
        "(`interval`: discrete, so at or above nominal when calibrated; `PIT`: randomized, nominal "
        "when calibrated).",
        "",
        "| design | method | Brier | log pred. density | AUC | cov. 50% (interval / PIT) | cov. 90% |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, s in valid["scores"].items():
        for m in ("meta_model", "pooled_logistic", "per_family_logistic"):
            r = s[m]
            auc = "—" if r["auc"] is None else f"{r['auc']:.3f}"
            cov = lambda q, r=r: (
                f"{r[f'coverage{q}']:.2f} / {r[f'pit_coverage{q}']:.2f}" if f"coverage{q}" in r else ""
            )
            out.append(
                f"| {kind} ({s['n_rows']} runs, {s['n_cells']} cells) | {m} | {r['brier']:.4f} | "
                f"{r['lpd']:.4f} | {auc} | {cov(50)} | {cov(90)} |"
            )
    out += [
        "",
        "Reliability of the meta-model (held-out levels):",
        "",
        "| predicted bin | runs | mean predicted | observed |",
        "|---|---|---|---|",
    ]
    for b in valid["scores"].get("levels", next(iter(valid["scores"].values())))["meta_model"]["reliability"]:
        out.append(f"| {b['lo']:.1f}–{b['hi']:.1f} | {b['n']} | {b['predicted']:.3f} | {b['observed']:.3f} |")
    return out + [""]


def markdown(posterior: Posterior, valid: dict, figures: list) -> str:
    """report.md: the model, the scale, NUTS diagnostics, the tables, validation, the figures."""
    t, meta = posterior_tables(posterior), posterior.meta
    ref = meta["families"][meta["reference"]]
    diag = meta["diagnostics"]
    lines = [
        "# Capacity meta-model",
        "",
        f"{meta['n_rows']} runs: {len(meta['arch_labels'])} architecture(s) x "
        f"{len(meta['families'])} families "
        f"({', '.join(meta['families'])}), {len(meta['levels'])} levels. Model: logit P(success) = "
        "κ_f (log C_a − log θ_f − δ_level − log bits) (jaxcap/meta/model.py).",
        f"Scale: θ_{ref} = 1, so C is in bits of `{ref}`"
        + (
            " (memorization-equivalent bits)."
            if ref.startswith("random")
            else f" — no random-data family in the fit, so `{ref}` is the named reference family."
        ),
        "",
        f"NUTS: {meta['nuts']['chains']} chains ({meta['nuts']['chain_method']}) x "
        f"{meta['nuts']['warmup']} warmup + {meta['nuts']['samples']} draws, {meta['seconds']:.1f} s; "
        f"max R-hat {diag['max_rhat']:.3f}, "
        f"min ESS {diag['min_ess']:.0f}, {diag['divergences']} divergences.",
        *[f"**Warning**: {w}" for w in diag["warnings"]],
        "",
        "## Effective capacity C per architecture (median [90% interval])",
        "",
        "| architecture | C (bits) | 50% interval | H·d_head·prec (bits) | C / that "
        "| body params·prec (bits) | C_a / C_a0 | P(C_a > C_a0) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, a in enumerate(t["archs"]):
        versus = f"{_ci(a['multiplier'])} | {a['p_above_base']:.2f}" if i else "1 (base) | —"
        lines.append(
            f"| {a['label']} | {_ci(a['C'])} | [{a['C']['lo50']:.3g}, {a['C']['hi50']:.3g}] | "
            f"{a['attention_bits']:,} | {_ci(a['utilization_attention'])} | {a['param_bits']:,} | {versus} |"
        )
    lines += ["", "## Task families", "", "| family | θ (difficulty per bit) | κ (slope) |", "|---|---|---|"]
    for f in t["families"]:
        theta = "1 (reference)" if f["reference"] else _ci(f["theta"])
        lines.append(f"| {f['name']} | {theta} | {_ci(f['kappa'])} |")
    lines += [
        "",
        "## Learnability boundary b* = C_a / θ_f (bits; P = 1/2 for a typical level)",
        "",
        "| architecture | family | b* (bits) |",
        "|---|---|---|",
    ]
    lines += [f"| {b['arch']} | {b['family']} | {_ci(b['bits'])} |" for b in t["boundaries"]]
    h = t["hyper"]
    lines += [
        "",
        f"Level effect sd σ_level = {_ci(h['sigma_level'])} (log-bits); family sd of log θ "
        f"{_ci(h['sigma_log_theta'])}, of log κ {_ci(h['sigma_log_kappa'])}.",
        "",
    ]
    lines += _validation_md(valid)
    lines += [f"![{p.stem}]({p.name})" for p in figures]
    return "\n".join(lines) + "\n"

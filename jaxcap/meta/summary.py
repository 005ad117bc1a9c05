"""The meta-model's numbers in words: tables of C, θ, κ, boundaries, validation (report.md).

`posterior_tables` turns a `Posterior` into medians and 90% / 50% central intervals of the
quantities the issue asks for: C per architecture next to its budgets (H x d_head x precision
and parameters x precision) with utilization and multipliers C_a / C_a0, θ and κ per family,
and the learnability boundary b* = C_a / θ_f; `markdown` writes them and the held-out scores.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.anchor import anchor_line
from jaxcap.meta.model import boundary_bits
from jaxcap.meta.posterior import Posterior, summarize
from jaxcap.meta.scorecard import BASELINES, METHODS, distinct, losses, num, sampler_health, scorecard
from jaxcap.meta.validation import Validation


def posterior_tables(posterior: Posterior) -> dict:
    """Capacities (with budgets, utilization, multipliers), difficulties, slopes, boundaries."""
    d, meta = posterior.draws, posterior.meta
    c = np.exp(d["log_C"])
    archs = []
    for a, label in enumerate(meta.arch_labels):
        b = meta.budgets[a]
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
            "reference": f == meta.reference,
            "theta": summarize(np.exp(d["log_theta"][:, f])),
            "kappa": summarize(d["kappa"][:, f]),
            "sigma_level": summarize(d["sigma_level"][:, f]),
        }
        for f, n in enumerate(meta.families)
    ]
    bstar = boundary_bits(d)
    boundaries = [
        {"arch": meta.arch_labels[a], "family": n, "bits": summarize(bstar[:, a, f])}
        for a in range(len(archs))
        for f, n in enumerate(meta.families)
    ]
    hyper = {k: summarize(d[k]) for k in ("sigma_log_theta", "sigma_log_kappa", "sigma_log_C")}
    beta = {k: summarize(d["beta"][:, j]) for j, k in enumerate(meta.arch_covariates)}
    return {"archs": archs, "families": families, "boundaries": boundaries, "hyper": hyper, "beta": beta}


def _ci(s: dict, fmt: str = ".3g") -> str:
    return f"{s['median']:{fmt}} [{s['lo90']:{fmt}}, {s['hi90']:{fmt}}]"


def headline(posterior: Posterior, valid: Validation) -> str:
    """The answer in a few lines (printed at the end of a calibrate run)."""
    t, meta = posterior_tables(posterior), posterior.meta
    ref = meta.families[meta.reference]
    unit = (
        f"bits stored at saturation, θ_{ref} from the fit" if meta.anchor else f"bits of {ref}, θ_{ref} = 1"
    )
    lines = [f"effective capacity C ({unit}; median [90% interval]):"]
    lines += [f"  {a['label']}: C = {_ci(a['C'])}" for a in t["archs"]]
    lines += [
        f"  boundary b* {b['family']} ({b['arch'].split(':')[0]}): {_ci(b['bits'])} bits"
        for b in t["boundaries"]
    ]
    for words, sc in distinct(valid.scores).items():
        m = sc.meta_model
        others = ", ".join(f"{METHODS[k]} {sc.methods[k].brier:.3f}" for k in BASELINES)
        lines.append(
            f"{words}: Brier {m.brier:.3f} (baselines: {others}), AUC {num(m.auc)}, "
            f"PIT coverage 90% {m.pit_coverage90:.2f} (median width {m.median_width90:.2f}), "
            f"floor {num(sc.floor)} ({sc.n_rows} runs)"
        )
    lines += [f"refused {k}: {v}" for k, v in valid.refused.items()]
    lost = losses(valid.scores)
    if lost:  # one line per design, not one per design and baseline
        lines.append(
            "WHERE THE META-MODEL LOSES to a baseline (its score vs the best baseline's; lower wins):"
        )
        lines += [f"  {x}" for x in lost]
    return "\n".join(lines)


def monotone_md(checks: list[dict]) -> list[str]:
    """Is success monotone in each family's difficulty covariate (and in its nominal bits)?"""
    out = [
        "## Difficulty covariates: is success monotone in them?",
        "",
        "Likelihood-ratio test of free per-level success rates against the best non-increasing rates "
        "(isotonic fit), bootstrap p-value; violations: level pairs where the harder level was learned "
        "more often (jaxcap/meta/difficulty.py). The model's covariate, then the task's nominal bits.",
        "",
        "| family | arch | covariate | levels | LR | p | violations | monotone "
        "| nominal bits: p | violations | monotone |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        t, n = c["test"], c["nominal"]
        out.append(
            f"| {c['family']} | a{c['arch']} | {c['covariate']} | {t['levels']} | {t['lr']:.2f} | "
            f"{t['p_value']:.3f} | {t['violations']} | {'yes' if t['monotone'] else '**no**'} | "
            f"{n['p_value']:.3f} | {n['violations']} | {'yes' if n['monotone'] else '**no**'} |"
        )
    return out + [""]


def markdown(posterior: Posterior, valid: Validation, figures: list, checks: list[dict] = ()) -> str:
    """report.md: the model, the scale, NUTS diagnostics, the tables, validation, the figures."""
    t, meta = posterior_tables(posterior), posterior.meta
    ref = meta.families[meta.reference]
    diag = meta.diagnostics
    lines = [
        "# Capacity meta-model",
        "",
        *sampler_health(diag, valid),
        "",
        f"{meta.n_rows} runs: {len(meta.arch_labels)} architecture(s) x "
        f"{len(meta.families)} families "
        f"({', '.join(meta.families)}), {len(meta.levels)} levels. Model: logit P(success) = "
        "κ_f (log C_a − log θ_f − δ_level − log bits) (jaxcap/meta/model.py).",
        f"Scale: {anchor_line(meta.anchor)}."
        if meta.anchor
        else f"Scale: θ_{ref} = 1, so C is in bits of `{ref}`"
        + (
            " (memorization-equivalent bits)."
            if ref.startswith("random")
            else f" — no random-data family in the fit, so `{ref}` is the named reference family."
        ),
        "",
        f"NUTS: {meta.nuts.chains} chains ({meta.nuts.chain_method}) x "
        f"{meta.nuts.warmup} warmup + {meta.nuts.samples} draws, {meta.seconds:.1f} s; "
        f"max R-hat {diag.max_rhat:.3f}, "
        f"min ESS {diag.min_ess:.0f}, {diag.divergences} divergences."
        + (
            f" Seeds of one cell agree beyond their P: intra-cell correlation ρ "
            f"{_ci(summarize(posterior.draws['rho']))}."
            if "rho" in posterior.draws
            else ""
        ),
        *[f"**Warning**: {w}" for w in diag.warnings],
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
    lines += [
        "",
        "## Task families",
        "",
        "| family | covariate | θ (difficulty per bit) | κ (slope) | level spread σ_f (log-bits) |",
        "|---|---|---|---|---|",
    ]
    covariates = {lv.family: lv.covariate or "complexity_bits" for lv in meta.levels}
    for f, fam in enumerate(t["families"]):
        theta = "1 (reference)" if fam["reference"] and not meta.anchor else _ci(fam["theta"])
        lines.append(
            f"| {fam['name']} | {covariates.get(f)} | {theta} | {_ci(fam['kappa'])} | "
            f"{_ci(fam['sigma_level'])} |"
        )
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
        f"Family sd of log θ {_ci(h['sigma_log_theta'])}, of log κ {_ci(h['sigma_log_kappa'])}; "
        f"architectures: residual sd of log C {_ci(h['sigma_log_C'])}, slopes on "
        + ", ".join(f"{k} {_ci(v)}" for k, v in t["beta"].items())
        + (" (one architecture: these are the priors)." if len(meta.archs) == 1 else "."),
        "",
        "## Levels (nominal bits and the model's covariate)",
        "",
        "| family | level | nominal bits | covariate bits | design | fitted effect δ (log-bits) |",
        "|---|---|---|---|---|---|",
    ]
    for i, lv in enumerate(meta.levels):
        lines.append(
            f"| {meta.families[lv.family]} | {lv.label} | {lv.complexity_bits:.4g} | "
            f"{lv.complexity_bits if lv.bits is None else lv.bits:.4g} | {lv.design or 'grid'} | "
            f"{_ci(summarize(posterior.draws['level_effect'][:, i]), '.2f')} |"
        )
    lines.append("")
    lines += monotone_md(checks)
    lines += scorecard(valid)
    lines += [f"![{p.stem}]({p.name})" for p in figures]
    return "\n".join(lines) + "\n"

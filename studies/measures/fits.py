"""Score difficulty measures on a calibrate workdir: does one put the task families on one scale?

    python -m studies.measures.score runs/cal_s0 [--measures nominal,table_bits] [--json | --markdown]

Per measure (studies/measures/closed_form.py) the workdir's table.json takes that covariate and is fitted
twice: the full NUTS fit (σ_θ, the spread of log θ over families, median and 90 % interval; each
family's θ and κ; sampler diagnostics) and leave one family out with no pilot runs (k = 0,
jaxcap.meta.validate with designs ("families",)): each held-out family's Brier beside the base
rate's. σ_θ is in log-bits, so a measure b^a of another has a·σ_θ and κ/a; σ_θ·κ̄ (κ̄ = exp μ_logκ,
the typical slope) is the spread in logits, comparable across measures. Monotone tests:
jaxcap/meta/difficulty.py. NUTS here draws 1,000 + 1,000 x 4 chains (calibrate: 1,000 + 4,000).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from jaxcap.meta import difficulty, fit, validate
from jaxcap.meta.data import Table
from jaxcap.meta.model import saturate
from jaxcap.meta.posterior import summarize
from jaxcap.meta.records import FitDiagnostics
from jaxcap.meta.validation import HeldoutRow, ValidationSettings


@dataclasses.dataclass(frozen=True)
class MeasureScore:
    """One measure on one table: the full fit, leave-one-family-out at k = 0, monotone tests."""

    measure: str
    bits: dict[str, list[float]]  # family -> the measure at its levels, sorted
    sigma_theta: dict  # summarize(): median, lo50, hi50, lo90, hi90
    sigma_logit: dict  # σ_θ x κ̄ per draw, summarized
    theta: dict[str, dict]  # family -> summarize(θ)
    kappa: dict[str, dict]
    fit_diagnostics: dict  # max_rhat, min_ess, divergences, transitions, mean_steps, warnings
    fit_seconds: float
    lofo: dict[str, dict]  # held-out family -> {"rows", "meta_model", "base_rate"} Brier
    lofo_mean: dict  # unweighted mean over held-out families: {"meta_model", "base_rate"}
    lofo_pooled: dict  # over every held-out run (validate's score)
    lofo_diagnostics: dict  # worst over the fits
    lofo_folds: dict[str, dict]  # held-out family -> its fit's divergences, max R-hat, min ESS
    lofo_seconds: float
    refused: dict[str, str]  # held-out folds validate refused, with the reason
    monotone: list[dict]  # per family and architecture: p_value, violations, levels

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


DIAGNOSTICS = ("max_rhat", "min_ess", "divergences", "transitions", "mean_steps", "warnings")
METHODS = ("meta_model", "base_rate")


def family_briers(predictions: list[HeldoutRow], families: list[str]) -> dict[str, dict]:
    """Brier of the meta-model and the base rate over each held-out family's runs."""
    out = {}
    for f, name in enumerate(families):
        rows = [p for p in predictions if p.family == f]
        if rows:
            y = np.array([r.y for r in rows], np.float64)
            briers = {m: float(np.mean((np.array([r.p[m] for r in rows]) - y) ** 2)) for m in METHODS}
            out[name] = {"rows": len(rows), **briers}
    return out


def worst(diagnostics: list[FitDiagnostics]) -> dict:
    """The worst of several fits' diagnostics: max R-hat, min ESS, total divergences."""
    if not diagnostics:
        return {}
    return {
        "max_rhat": max(d.max_rhat for d in diagnostics),
        "min_ess": min(d.min_ess for d in diagnostics),
        "divergences": sum(d.divergences for d in diagnostics),
        "transitions": sum(d.transitions for d in diagnostics),
        "fits": len(diagnostics),
    }


def score_measure(t: Table, name: str, nuts: fit.NutsSettings, reference: str = "") -> MeasureScore:
    """The full fit and the k = 0 leave-one-family-out fits of `t`, a table whose covariate is
    measure `name` (closed_form.with_measure)."""
    bits = {fam: sorted(lv.bits for lv in t.levels if lv.family == f) for f, fam in enumerate(t.families)}
    start = time.time()
    posterior, _ = fit.fit(t, nuts, reference)
    fit_seconds = time.time() - start
    d = posterior.draws
    sigma = d["sigma_log_theta"]
    start = time.time()
    settings = ValidationSettings(folds=0, designs=("families",))
    valid = validate.validate(t, nuts, settings, reference)
    lofo_seconds = time.time() - start
    per_family = family_briers(valid.predictions, t.families)
    pooled = valid.scores.get("families")
    checks = difficulty.family_checks(t)
    return MeasureScore(
        measure=name,
        bits=bits,
        sigma_theta=summarize(sigma),
        sigma_logit=summarize(sigma * saturate(np.exp(d["mu_log_kappa"]))),
        theta={fam: summarize(np.exp(d["log_theta"][:, f])) for f, fam in enumerate(t.families)},
        kappa={fam: summarize(d["kappa"][:, f]) for f, fam in enumerate(t.families)},
        fit_diagnostics={k: getattr(posterior.meta.diagnostics, k) for k in DIAGNOSTICS},
        fit_seconds=fit_seconds,
        lofo=per_family,
        lofo_mean={m: float(np.mean([v[m] for v in per_family.values()])) for m in METHODS}
        if per_family
        else {},
        lofo_pooled={m: pooled.methods[m].brier for m in METHODS} if pooled else {},
        lofo_diagnostics=worst([f.diagnostics for f in valid.folds]),
        lofo_folds={
            f.name: {k: getattr(f.diagnostics, k) for k in ("divergences", "max_rhat", "min_ess")}
            for f in valid.folds
        },
        lofo_seconds=lofo_seconds,
        refused=valid.refused,
        monotone=[
            {
                "family": c["family"],
                "arch": c["arch"],
                **{k: c["test"][k] for k in ("p_value", "violations", "levels")},
            }
            for c in checks
        ],
    )


def _ci(s: dict, fmt: str = ".3g") -> str:
    return f"{s['median']:{fmt}} [{s['lo90']:{fmt}}, {s['hi90']:{fmt}}]"


def _diag(d: dict) -> str:
    return f"{d['divergences']} / {d['max_rhat']:.3f} / {d['min_ess']:.0f}" if d else "-"


def markdown(scores: list[MeasureScore], label: str) -> list[str]:
    """Four tables: the headline per measure, θ per family, LOFO Brier per family, monotone p."""
    families = list(scores[0].theta)
    out = [
        f"Difficulty measures on {label} (σ_θ in log-bits; σ_θ·κ̄ in logits; Brier: meta-model / base rate).",
        "",
        "| measure | σ_θ [90 %] | σ_θ·κ̄ [90 %] | LOFO k=0 Brier, family mean | pooled | "
        "full fit div / R-hat / ESS | LOFO fits div / R-hat / ESS | fit + LOFO s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        mean = f"{s.lofo_mean['meta_model']:.3f} / {s.lofo_mean['base_rate']:.3f}" if s.lofo_mean else "-"
        pooled = (
            f"{s.lofo_pooled['meta_model']:.3f} / {s.lofo_pooled['base_rate']:.3f}" if s.lofo_pooled else "-"
        )
        out.append(
            f"| {s.measure} | {_ci(s.sigma_theta)} | {_ci(s.sigma_logit)} | {mean} | {pooled} | "
            f"{_diag(s.fit_diagnostics)} | {_diag(s.lofo_diagnostics)} | "
            f"{s.fit_seconds:.0f} + {s.lofo_seconds:.0f} |"
        )
    head = "| measure | " + " | ".join(families) + " |"
    rule = "|---|" + "---|" * len(families)
    out += ["", "θ (difficulty per bit) [90 %]:", "", head, rule]
    out += [f"| {s.measure} | " + " | ".join(_ci(s.theta[f]) for f in families) + " |" for s in scores]
    out += ["", "Leave one family out, k = 0: Brier meta-model / base rate (runs):", "", head, rule]
    for s in scores:
        cells = [
            f"{s.lofo[f]['meta_model']:.3f} / {s.lofo[f]['base_rate']:.3f} ({s.lofo[f]['rows']})"
            if f in s.lofo
            else "refused"
            for f in families
        ]
        out.append(f"| {s.measure} | " + " | ".join(cells) + " |")
    out += ["", "Monotone test p-value (levels; violating pairs), per family and architecture:", ""]
    out += [head, rule]
    for s in scores:
        cells = [
            "; ".join(
                f"a{c['arch']} {c['p_value']:.3f} ({c['levels']}; {c['violations']})"
                for c in s.monotone
                if c["family"] == f
            )
            or "-"
            for f in families
        ]
        out.append(f"| {s.measure} | " + " | ".join(cells) + " |")
    return out


def text(scores: list[MeasureScore], label: str) -> list[str]:
    """One line per measure: σ_θ, the held-out-family Brier against the base rate, the fit's health."""
    out = [f"{label}:"]
    for s in scores:
        lofo = s.lofo_mean
        brier = f"{lofo['meta_model']:.3f} vs base rate {lofo['base_rate']:.3f}" if lofo else "refused"
        out.append(
            f"  {s.measure}: σ_θ {_ci(s.sigma_theta)} log-bits (x κ̄: {_ci(s.sigma_logit)} logits); "
            f"LOFO k=0 Brier {brier}; full fit div / R-hat / ESS {_diag(s.fit_diagnostics)}"
        )
    return out

"""The held-out scorecard of report.md: every split against every baseline, in words.

Per design (jaxcap/meta/splits.py) a table of Brier, log loss, AUC (pooled and within family),
randomized-PIT coverage with median interval widths, for the meta-model and the four baselines;
for held-out levels, the spanning grid and the boundary levels separately with the Brier
decomposition and the replicate floor; the validation targets with each measured number; the
folds' NUTS diagnostics; refused folds with their reason; and, plainly, every design on which
the meta-model loses to a baseline.
"""

from __future__ import annotations

from jaxcap.meta.fit import DIVERGENCE_RATE_MAX, ESS_MIN, RHAT_MAX
from jaxcap.meta.records import FitDiagnostics
from jaxcap.meta.scores import coverage_interval
from jaxcap.meta.validation import DesignScores, Validation

BASELINES = ("base_rate", "family_intercepts", "pooled_logistic", "per_family_logistic")
TITLES = {
    "levels": "held-out levels (interpolation, stratified K-fold over fold seeds)",
    "levels:grid": "held-out levels, spanning-grid levels only",
    "levels:boundary": "held-out levels, boundary levels only (added by bisection)",
    "top": "held-out top levels per family (extrapolation)",
    "families": "leave one family out",
    "archs": "leave one architecture out",
}


def num(x, fmt=".3f") -> str:
    return "—" if x is None else f"{x:{fmt}}"


def _cells(coverage: float, cells: int | None) -> str:
    """ ", k of n cells [90% interval]": whether a miss of the nominal 0.90 can be one run's luck."""
    if not cells:
        return ""
    k = round(coverage * cells)
    lo, hi = coverage_interval(k, cells)
    return f", {k} of {cells} cells [{lo:.2f}, {hi:.2f}]"


LABELS = {  # a design in the reader's words (figures, printed lines)
    "levels": "held-out levels",
    "levels:grid": "held-out grid levels",
    "levels:boundary": "held-out boundary levels",
    "top": "held-out top levels",
    "families": "left-out families",
    "archs": "left-out architectures",
}
METHODS = {
    "meta_model": "meta-model",
    "base_rate": "base rate",
    "family_intercepts": "family intercepts",
    "pooled_logistic": "pooled logistic",
    "per_family_logistic": "per-family logistic",
}


def label(kind: str) -> str:
    return LABELS.get(kind, f"held-out {kind}")


def distinct(scores: dict[str, DesignScores]) -> dict[str, DesignScores]:
    """The designs that have numbers of their own, keyed by their words: a design whose scores
    repeat an earlier one's (the grid levels when no boundary level was added, so every held-out
    level is a grid level) is named beside that one instead of shown twice."""
    groups: dict[str, list[str]] = {}  # the first design -> every design with its scores
    for kind, s in scores.items():
        first = next((k for k in groups if scores[k] == s), kind)
        groups.setdefault(first, []).append(kind)
    out = {}
    for kind, names in groups.items():
        words = label(kind)
        if len(names) > 1:
            words += " (= " + ", ".join(label(k).removeprefix("held-out ") for k in names[1:]) + ")"
        out[words] = scores[kind]
    return out


def losses(scores: dict[str, DesignScores]) -> list[str]:
    """One line per design on which a baseline beats the meta-model on Brier or on log loss:
    the meta-model's number against the best baseline's, then the baselines that beat it."""
    out = []
    for words, s in distinct(scores).items():
        m = s.meta_model
        number = {  # (the meta-model's, each baseline's) Brier and log loss
            "Brier": (m.brier, {b: s.methods[b].brier for b in BASELINES}),
            "log loss": (m.log_loss, {b: s.methods[b].log_loss for b in BASELINES}),
        }
        beaten = [b for b in BASELINES if any(theirs[b] < mine for mine, theirs in number.values())]
        if not beaten:
            continue
        parts = [
            f"{name} {mine:.4f} vs {min(theirs[b] for b in beaten):.4f}"
            for name, (mine, theirs) in number.items()
            if any(theirs[b] < mine for b in beaten)
        ]
        out.append(f"{words}: {', '.join(parts)} ({', '.join(METHODS[b] for b in beaten)})")
    return out


def sampler_health(diag: FitDiagnostics, valid: Validation) -> list[str]:
    """report.md's first lines: the full fit and the validation fits against the sampler targets
    (fit.RHAT_MAX, ESS_MIN; no divergence in the full fit, DIVERGENCE_RATE_MAX in a validation
    fit), and plainly which fit misses them: intervals from a sampler that diverges are not
    credible intervals."""
    folds = [f.diagnostics for f in valid.folds]
    div = sum(d.divergences for d in folds)
    steps = sum(d.transitions or 0 for d in folds)
    full_ok = diag.divergences == 0 and diag.max_rhat <= RHAT_MAX and diag.min_ess >= ESS_MIN
    full = (
        f"full fit {diag.divergences} divergences, max R-hat {diag.max_rhat:.3f}, "
        f"min bulk ESS {diag.min_ess:.0f}"
    )
    lines = [
        f"Sampler health: {full} ({'meets' if full_ok else '**MISSES**'} 0 / <= {RHAT_MAX} / >= {ESS_MIN})"
    ]
    if folds:
        rhat, ess = max(d.max_rhat for d in folds), min(d.min_ess for d in folds)
        rate = div / steps if steps else float("nan")
        ok = rate <= DIVERGENCE_RATE_MAX and rhat <= RHAT_MAX and ess >= ESS_MIN
        lines.append(
            f"Sampler health: {len(folds)} validation fits {div} divergences ({100 * rate:.2f} % of "
            f"{steps} transitions), worst R-hat {rhat:.3f}, min bulk ESS {ess:.0f} "
            f"({'meets' if ok else '**MISSES**'} <= {100 * DIVERGENCE_RATE_MAX:g} % / <= {RHAT_MAX} "
            f"/ >= {ESS_MIN})"
        )
    return lines


def targets(valid: Validation) -> list[tuple[str, str, str, bool | None]]:
    """(target, measured, required, met) for the validation targets (docs/meta-model.md)."""
    s, out = valid.scores, []
    grid = s.get("levels:grid") or s.get("levels")
    if grid:
        brier = grid.meta_model.brier
        out.append(("grid levels: Brier", num(brier), "<= 0.10", brier <= 0.10))
        a = grid.meta_model.auc
        out.append(("grid levels: AUC", num(a), ">= 0.90", a is not None and a >= 0.90))
    boundary = s.get("levels:boundary")
    if boundary:
        brier = boundary.meta_model.brier
        gap = brier - (boundary.floor or 0.0)
        out.append(
            ("boundary levels: Brier − floor", f"{brier:.3f} − {num(boundary.floor)}", "<= 0.03", gap <= 0.03)
        )
    shown: list[DesignScores] = []  # the grid levels are the held-out levels when no boundary level was added
    for kind in ("levels", "levels:grid", "levels:boundary"):  # calibrated at both ends
        if kind in s and s[kind] not in shown:
            shown.append(s[kind])
            m = s[kind].meta_model
            ok = 0.85 <= m.pit_coverage90 <= 0.95
            width = f"{m.pit_coverage90:.2f}{_cells(m.pit_coverage90, s[kind].n_cells)}"
            width += f" (median 90% width {m.median_width90:.2f})"
            out.append((f"held-out {kind}: PIT coverage 90%", width, "in [0.85, 0.95]", ok))
    if boundary:
        w = boundary.meta_model.median_width90
        out.append(("boundary levels: median 90% width", f"{w:.2f}", "<= 0.8", w <= 0.8))
    if "top" in s:
        top = s["top"]
        m, best = top.meta_model.brier, min(top.methods[b].brier for b in BASELINES)
        out.append(
            ("top levels: Brier vs best baseline", f"{m:.3f} vs {best:.3f}", "below every baseline", m < best)
        )
    if "families" in s:
        m, base = s["families"].meta_model.brier, s["families"].methods["base_rate"].brier
        out.append(("held-out families: Brier vs base rate", f"{m:.3f} vs {base:.3f}", "below", m < base))
    elif any(k.startswith("families") for k in valid.refused):
        reason = next(v for k, v in valid.refused.items() if k.startswith("families"))
        out.append(("held-out families", f"refused: {reason}", "better than base rate, or refused", True))
    return out


def _method_rows(kind: str, s: DesignScores) -> list[str]:
    rows = []
    for m in ("meta_model", *BASELINES):
        r = s.methods[m]
        cov = (
            f"{r.pit_coverage50:.2f} / {r.pit_coverage90:.2f} | "
            f"{r.median_width50:.2f} / {r.median_width90:.2f}"
            if r.pit_coverage50 is not None
            else "| "
        )
        rows.append(
            f"| {kind} | {m} | {r.brier:.4f} | {r.log_loss:.4f} | {num(r.auc)} | "
            f"{num(r.auc_within_mean)} | {cov} |"
        )
    return rows


def scorecard(valid: Validation) -> list[str]:
    out = ["## Held-out validation", ""]
    scores = valid.scores
    if not scores:
        no_figures = (
            "No calibration.png or heldout.png: without held-out predictions they have nothing to draw."
        )
        return out + ["(no validation in this run)", "", no_figures, ""]
    st = valid.settings
    out += [
        f"Designs {', '.join(st.designs)}; levels: {st.folds} folds x fold seeds "
        f"{list(st.seeds)} (seed 0, the development split on which model choices were made, is "
        f"not quoted){' — THIS IS THE DEVELOPMENT SPLIT' if st.development else ''}. NUTS "
        f"fits of every fold: {valid.nuts_seconds or 0:.1f} s. A held-out level "
        "is predicted as a new level, a family as a new family, an architecture through the "
        "covariate regression. PIT: randomized PIT coverage of each held-out cell's success count "
        "(nominal when calibrated); widths: median width of the 50% / 90% intervals of P(success).",
        "",
        "| split | method | Brier | log loss | AUC | AUC within family | PIT cov. 50% / 90% "
        "| width 50% / 90% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for words, s in distinct(scores).items():
        out += _method_rows(f"{words} ({s.n_rows} runs, {s.n_cells} cells)", s)
    out += ["", "Brier decomposition of the meta-model (REL − RES + UNC) and the replicate floor:", ""]
    out += ["| split | Brier | reliability | resolution | uncertainty | floor |", "|---|---|---|---|---|---|"]
    for words, s in distinct(scores).items():
        d = s.meta_model.decomposition
        out.append(
            f"| {words} | {s.meta_model.brier:.4f} | {d.reliability:.4f} | {d.resolution:.4f} | "
            f"{d.uncertainty:.4f} | {num(s.floor, '.4f')} |"
        )
    lost = losses(scores)
    out += [
        "",
        "**Where the meta-model loses to a baseline:** " + ("; ".join(lost) if lost else "nowhere."),
        "",
    ]
    out += ["Targets of the meta-model's validation:", ""]
    out += ["| target | measured | required | met |", "|---|---|---|---|"]
    out += [f"| {t} | {m} | {r} | {'yes' if ok else '**no**'} |" for t, m, r, ok in targets(valid)]
    out += [
        "",
        "A coverage's [interval] is its Jeffreys 90 % interval from the cells this run held out: one "
        "that holds 0.90 cannot tell a miss of the band from chance (`python -m "
        "jaxcap.main.replicates` pools the cells of several data seeds).",
    ]
    for name, why in valid.refused.items():
        out.append(f"\nRefused fold `{name}`: {why}.")
    out += [
        "",
        "Folds (NUTS diagnostics):",
        "",
        "| fold | held cells | reference | max R-hat | min ESS | divergences |",
    ]
    out.append("|---|---|---|---|---|---|")
    for f in valid.folds:
        d = f.diagnostics
        out.append(
            f"| {f.kind} {f.name} | {f.held_cells} | {f.reference} | {d.max_rhat:.3f} | "
            f"{d.min_ess:.0f} | {d.divergences} |"
        )
    return out + [""]

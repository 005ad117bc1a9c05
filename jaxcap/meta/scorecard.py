"""The held-out scorecard of report.md: every split against every baseline, in words.

Per design (jaxcap/meta/splits.py) a table of Brier, log loss, AUC (pooled and within family),
randomized-PIT coverage with median interval widths, for the meta-model and the four baselines;
for held-out levels, the spanning grid and the boundary levels separately with the Brier
decomposition and the replicate floor; the issue-16 targets with each measured number; the
folds' NUTS diagnostics; refused folds with their reason; and, plainly, every design on which
the meta-model loses to a baseline.
"""

from __future__ import annotations

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


def losses(scores: dict) -> list[str]:
    """Designs on which a baseline beats the meta-model on Brier or on log loss."""
    out = []
    for kind, s in scores.items():
        m = s["meta_model"]
        for b in BASELINES:
            worse = [k for k in ("brier", "log_loss") if s[b][k] < m[k]]
            if worse:
                what = ", ".join(f"{k} {m[k]:.4f} vs {s[b][k]:.4f}" for k in worse)
                out.append(f"{kind}: loses to {b} ({what})")
    return out


def targets(valid: dict) -> list[tuple[str, str, str, bool | None]]:
    """(target, measured, required, met) for issue 16's done-when list."""
    s, out = valid.get("scores", {}), []
    grid = s.get("levels:grid") or s.get("levels")
    if grid:
        out.append(
            (
                "grid levels: Brier",
                num(grid["meta_model"]["brier"]),
                "<= 0.10",
                grid["meta_model"]["brier"] <= 0.10,
            )
        )
        a = grid["meta_model"]["auc"]
        out.append(("grid levels: AUC", num(a), ">= 0.90", a is not None and a >= 0.90))
    if "levels:boundary" in s:
        b = s["levels:boundary"]
        gap = b["meta_model"]["brier"] - (b["floor"] or 0.0)
        out.append(
            (
                "boundary levels: Brier − floor",
                f"{b['meta_model']['brier']:.3f} − {num(b['floor'])}",
                "<= 0.03",
                gap <= 0.03,
            )
        )
    if "levels" in s:
        m = s["levels"]["meta_model"]
        ok = 0.85 <= m["pit_coverage90"] <= 0.95
        width = f"{m['pit_coverage90']:.2f} (median 90% width {m['median_width90']:.2f})"
        out.append(("held-out levels: PIT coverage 90%", width, "in [0.85, 0.95]", ok))
    if "top" in s:
        m, best = s["top"]["meta_model"]["brier"], min(s["top"][b]["brier"] for b in BASELINES)
        out.append(
            ("top levels: Brier vs best baseline", f"{m:.3f} vs {best:.3f}", "below every baseline", m < best)
        )
    if "families" in s:
        m, base = s["families"]["meta_model"]["brier"], s["families"]["base_rate"]["brier"]
        out.append(("held-out families: Brier vs base rate", f"{m:.3f} vs {base:.3f}", "below", m < base))
    elif any(k.startswith("families") for k in valid.get("refused", {})):
        reason = next(v for k, v in valid["refused"].items() if k.startswith("families"))
        out.append(("held-out families", f"refused: {reason}", "better than base rate, or refused", True))
    return out


def _method_rows(kind: str, s: dict) -> list[str]:
    rows = []
    for m in ("meta_model", *BASELINES):
        r = s[m]
        cov = (
            f"{r['pit_coverage50']:.2f} / {r['pit_coverage90']:.2f} | "
            f"{r['median_width50']:.2f} / {r['median_width90']:.2f}"
            if "pit_coverage50" in r
            else "| "
        )
        rows.append(
            f"| {kind} | {m} | {r['brier']:.4f} | {r['log_loss']:.4f} | {num(r['auc'])} | "
            f"{num(r['auc_within_mean'])} | {cov} |"
        )
    return rows


def scorecard(valid: dict) -> list[str]:
    out = ["## Held-out validation", ""]
    scores = valid.get("scores", {})
    if not scores:
        return out + ["(no validation in this run)", ""]
    st = valid.get("settings", {})
    out += [
        f"Designs {', '.join(st.get('designs', ()))}; levels: {st.get('folds')} folds x fold seeds "
        f"{st.get('seeds')} (seed 0, the development split on which model choices were made, is "
        f"not quoted){' — THIS IS THE DEVELOPMENT SPLIT' if st.get('development') else ''}. NUTS "
        f"fits of every fold: {valid.get('nuts_seconds', 0):.1f} s. A held-out level "
        "is predicted as a new level, a family as a new family, an architecture through the "
        "covariate regression. PIT: randomized PIT coverage of each held-out cell's success count "
        "(nominal when calibrated); widths: median width of the 50% / 90% intervals of P(success).",
        "",
        "| split | method | Brier | log loss | AUC | AUC within family | PIT cov. 50% / 90% "
        "| width 50% / 90% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, s in scores.items():
        out += _method_rows(f"{kind} ({s['n_rows']} runs, {s['n_cells']} cells)", s)
    out += ["", "Brier decomposition of the meta-model (REL − RES + UNC) and the replicate floor:", ""]
    out += ["| split | Brier | reliability | resolution | uncertainty | floor |", "|---|---|---|---|---|---|"]
    for kind, s in scores.items():
        d = s["meta_model"]["decomposition"]
        out.append(
            f"| {kind} | {s['meta_model']['brier']:.4f} | {d['reliability']:.4f} | {d['resolution']:.4f} | "
            f"{d['uncertainty']:.4f} | {num(s['floor'], '.4f')} |"
        )
    lost = losses(scores)
    out += [
        "",
        "**Where the meta-model loses to a baseline:** " + ("; ".join(lost) if lost else "nowhere."),
        "",
    ]
    out += ["Targets (issue 16):", "", "| target | measured | required | met |", "|---|---|---|---|"]
    out += [f"| {t} | {m} | {r} | {'yes' if ok else '**no**'} |" for t, m, r, ok in targets(valid)]
    for name, why in valid.get("refused", {}).items():
        out.append(f"\nRefused fold `{name}`: {why}.")
    out += [
        "",
        "Folds (NUTS diagnostics):",
        "",
        "| fold | held cells | reference | max R-hat | min ESS | divergences |",
    ]
    out.append("|---|---|---|---|---|---|")
    for f in valid.get("folds", []):
        d = f["diagnostics"]
        out.append(
            f"| {f['kind']} {f['name']} | {f['held_cells']} | {f['reference']} | {d['max_rhat']:.3f} | "
            f"{d['min_ess']:.0f} | {d['divergences']} |"
        )
    return out + [""]

"""report/pilot.md of a pilot workdir, rebuilt from posterior.nc and pilot.jsonl alone.

Three parts: the rounds (what each round's fit knew of the boundary b*, which level it chose,
with how many seeds and at what expected information gain, and what the level gave), the final
b* interval with what it rests on, and P(learned) at every candidate level with its 90 %
interval, computed as `python -m jaxcap.predict` computes it (pilot levels with their fitted
effects, the others integrated over a new level's effect); pilot.png draws the same, the pilot
points and b* round by round (figure.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcap.experiments.pilot.figure import plot_pilot
from jaxcap.experiments.pilot.rounds import ROUNDS, read_rounds
from jaxcap.meta.model import success_probability
from jaxcap.meta.posterior import Posterior, load_posterior, summarize
from jaxcap.results.store import Store, write_atomic


def headline(summary: dict) -> str:
    """One line: the family, what its fit rests on, its boundary, why the rounds stopped."""
    b = summary["boundary"]
    return (
        f"pilot: {summary['family']} on a{summary['arch']} rests on {summary['pilots']} pilot levels, "
        f"{summary['runs']} runs: boundary b* {b['median']:.4g} bits ({b['mass']:.0%}: {b['lo']:.4g}-"
        f"{b['hi']:.4g}, a factor {b['factor']:.3g}), ESS {summary['ess']:.0f}; stopped: {summary['stopped']}"
    )


def candidate_rates(posterior: Posterior, seed: int = 0) -> np.ndarray:
    """P(learned) draws [S, candidates] of the pilot family on its architecture."""
    meta, pilot = posterior.meta, posterior.meta.pilot
    f = meta.families.index(pilot.family)
    seen = {lv.fields[pilot.field]: i for i, lv in enumerate(meta.levels) if lv.family == f}
    cands = pilot.candidates
    return success_probability(
        posterior.draws,
        np.log([c["bits"] for c in cands]),
        np.random.default_rng(seed),
        arch=pilot.arch,
        family=f,
        levels=[seen.get(c["value"]) for c in cands],
        marginal=True,
    )


def rounds_table(store: Store, field: str) -> list[str]:
    lines = [
        "| round | level | covariate bits | seeds | learned | b* before: median (90 %) | factor | ESS "
        "| gain (nats) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in read_rounds(store.root / ROUNDS):
        lo, med, hi = r.boundary
        gain = r.gains[str(r.seeds)][r.untried.index(r.level)]
        lines.append(
            f"| {r.round} | {field}={r.value} | {r.bits:.4g} | {r.seeds} | {r.successes} of {r.trials} | "
            f"{med:.4g} ({lo:.4g}-{hi:.4g}) | {r.factor:.3g} | {r.ess:.0f} | {gain:.3f} |"
        )
    return lines


def pilot_report(store: Store) -> list[Path]:
    """report/pilot.md and report/pilot.png (and posterior.nc, which they read)."""
    posterior = load_posterior(store.root / "posterior.nc")
    pilot = posterior.meta.pilot
    b = pilot.boundary
    rounds = read_rounds(store.root / ROUNDS)
    tried = {r.value: r for r in rounds}
    p = candidate_rates(posterior)
    f = posterior.meta.families.index(pilot.family)
    covariate = next((lv.covariate for lv in posterior.meta.levels if lv.family == f and lv.covariate), None)
    store.report_path.mkdir(exist_ok=True)
    figure = plot_pilot(store.report_path / "pilot.png", pilot, rounds, p, covariate or "complexity_bits")
    text = [
        f"# Pilot: {pilot.family} on {pilot.arch_label}",
        "",
        f"Base posterior: `{pilot.base}`; families {', '.join(posterior.meta.families)}.",
        f"Settings: k = {pilot.settings['k']}, seed options {pilot.settings['seeds']}, "
        f"stop_factor {pilot.settings['stop_factor']:g}. Stopped: {pilot.stopped}.",
        "",
        "## Rounds",
        "",
        *rounds_table(store, pilot.field),
        "",
        "## Boundary",
        "",
        f"b* = {b['median']:.4g} bits ({b['mass']:.0%}: {b['lo']:.4g}-{b['hi']:.4g}, a factor "
        f"{b['factor']:.3g}); rests on {pilot.pilots} pilot levels, {pilot.runs} runs; effective "
        f"sample size of the family's weights {pilot.ess:.0f}.",
        "",
        "## P(learned) at every candidate level",
        "",
        "| level | covariate bits | piloted | P median | 90 % |",
        "|---|---|---|---|---|",
    ]
    for i, c in enumerate(pilot.candidates):
        s = summarize(p[:, i])
        r = tried.get(c["value"])
        piloted = f"{r.successes} of {r.trials}" if r else "no"
        text.append(
            f"| {pilot.field}={c['value']} | {c['bits']:.4g} | {piloted} | {s['median']:.3f} | "
            f"{s['lo90']:.3f}-{s['hi90']:.3f} |"
        )
    text += [
        "",
        "The same in a figure: P(learned) at every candidate (90 % interval), the pilot points "
        "(observed learned / seeds) and b*'s interval before the first round and after each.",
        "",
        f"![pilot]({figure.name})",
    ]
    path = store.report_path / "pilot.md"
    write_atomic(path, "\n".join(text) + "\n")
    return [store.root / "posterior.nc", path, figure]

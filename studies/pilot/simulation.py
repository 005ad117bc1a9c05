"""Runs to a boundary: how many trained runs each pilot rule needs until b* is known within 2x.

    python -m studies.pilot.simulate [--families 40] [--posterior runs/cal_s0] [--json]

On simulated families with a known b* (world.py), each rule of sequence.py
(`design`, calibrate's `bisection_grid`, `design_after_grid`) trains pilots until the fit's 90 %
b* interval (fit_family after every pass) has hi/lo <= the strictest of `targets`, `cap`
runs, or nothing is left (bisection with no untried level inside a flip). One fit judges every
rule, so they stop at equal accuracy; coverage of the true b* where a target is crossed checks
it. Per target: fraction reaching it, median and mean runs (censored at `cap`), runs relative
to bisection_grid, coverage; and each rule's interval at equal runs (where bisection_grid
stopped): should calibrate's boundary rounds use information gain? Candidates spaced wider than
a level's spread σ bound how narrow any rule's interval gets (`--levels`, `--prior_mass`).
Bayesian adaptive design for binary responses: Chaloner & Verdinelli 1995, Stat. Sci. 10.
"""

from __future__ import annotations

import time

import numpy as np

from jaxcap.meta.pilot.fit import Particles, prior_particles
from jaxcap.meta.posterior import Posterior
from studies.pilot.sequence import PilotLog, make_rule
from studies.pilot.world import (
    PRIOR_MASS,
    SimFamily,
    candidate_levels,
    simulate_families,
)

SIM_RULES = ("design", "bisection_grid", "design_after_grid", "information_grid")
BASELINE = "bisection_grid"


def run_rule(
    family: SimFamily,
    particles: Particles,
    rule: str,
    target: float,
    cap: int,
    max_pilots: int | None = None,
    design_particles: int | None = None,
    seed: int = 0,
) -> tuple[dict, PilotLog]:
    """`rule`'s pilots on `family` until the 90 % b* interval's hi/lo <= `target`, `cap` runs,
    `max_pilots` levels or nothing left. The record holds the trajectory [runs, lo, hi] after
    every pass (the prior first) and why it stopped; the log holds the pilots."""
    pick = make_rule(rule, design_particles, seed)
    log = PilotLog(particles)
    fit, step, stop = log.fit(), 0, "target"
    trajectory = [[0, *fit.boundary_interval()[::2]]]
    while fit.boundary_factor() > target:
        if log.runs >= cap or (max_pilots is not None and len(log.levels) >= max_pilots):
            stop = "cap"
            break
        chosen = pick(fit, log, family.cand_log_bits, step)
        if not chosen:
            stop = "nothing_left"
            break
        for i, n in chosen:
            log.add(i, family.cand_log_bits[i], n, int(family.outcomes[i, :n].sum()))
        fit, step = log.fit(), step + 1
        trajectory.append([log.runs, *fit.boundary_interval()[::2]])
    record = {"true_boundary": float(np.exp(family.log_boundary)), "stop": stop, "ess": fit.ess}
    return {**record, "levels": len(log.levels), "trajectory": trajectory}, log


def at_target(record: dict, target: float, cap: int) -> dict:
    """Runs until hi/lo <= target (censored at `cap`) and whether that interval held b*."""
    for runs, lo, hi in record["trajectory"]:
        if hi / lo <= target and runs <= cap:
            return {"reached": True, "runs": runs, "covered": lo <= record["true_boundary"] <= hi}
    return {"reached": False, "runs": cap, "covered": None}


def at_runs(record: dict, runs: int) -> dict:
    """The interval after the last pass within `runs` runs: its factor and whether it held b*."""
    _, lo, hi = [t for t in record["trajectory"] if t[0] <= runs][-1]
    return {"factor": hi / lo, "covered": lo <= record["true_boundary"] <= hi}


def summarize(per_rule: dict[str, list[dict]], targets: tuple[float, ...], cap: int) -> dict:
    """{target: {rule: reached, median/mean runs, ratio to BASELINE, coverage}}, and at the
    baseline's final runs {rule: median factor, coverage}."""
    out: dict = {"targets": {}, "equal_runs": {}, "stops": {}}
    for rule, recs in per_rule.items():  # why each family's run ended: target, cap, nothing_left
        stops = [r["stop"] for r in recs]
        out["stops"][rule] = {s: stops.count(s) for s in sorted(set(stops))}
    for t in targets:
        rows = {rule: [at_target(r, t, cap) for r in recs] for rule, recs in per_rule.items()}
        summary = {}
        for rule, hits in rows.items():
            runs = np.array([h["runs"] for h in hits], np.float64)
            covered = [h["covered"] for h in hits if h["reached"]]
            summary[rule] = {
                "reached": float(np.mean([h["reached"] for h in hits])),
                "median_runs": float(np.median(runs)),
                "mean_runs": float(runs.mean()),
                "coverage": float(np.mean(covered)) if covered else None,
            }
        if BASELINE in summary:
            base = summary[BASELINE]
            for s in summary.values():
                s["ratio_median"] = s["median_runs"] / base["median_runs"]
                s["ratio_mean"] = s["mean_runs"] / base["mean_runs"]
        out["targets"][str(t)] = summary
    if BASELINE in per_rule:
        budgets = [r["trajectory"][-1][0] for r in per_rule[BASELINE]]
        for rule, recs in per_rule.items():
            hits = [at_runs(r, b) for r, b in zip(recs, budgets)]
            out["equal_runs"][rule] = {
                "median_runs": float(np.median(budgets)),
                "median_factor": float(np.median([h["factor"] for h in hits])),
                "coverage": float(np.mean([h["covered"] for h in hits])),
            }
    return out


def simulate(
    posterior: Posterior,
    families: int,
    seed: int = 0,
    repeat: int = 1,
    levels: int = 24,
    targets: tuple[float, ...] = (2.0,),
    cap: int = 80,
    design_particles: int | None = 1000,
    arch: int = 0,
    rules: tuple[str, ...] = SIM_RULES,
    prior_mass: float = PRIOR_MASS,
) -> dict:
    """Every rule on the same simulated families: per-family records and the summary."""
    start = time.time()
    particles = prior_particles(posterior, arch, seed, repeat)
    cands = candidate_levels(particles, levels, prior_mass)
    truths = prior_particles(posterior, arch, seed + 1, 1)  # not the fit's own particles
    fams = simulate_families(truths, families, cands, seed + 2)
    per_rule = {
        rule: [
            run_rule(f, particles, rule, min(targets), cap, None, design_particles, seed + j)[0]
            for j, f in enumerate(fams)
        ]
        for rule in rules
    }
    settings = dict(families=families, seed=seed, repeat=repeat, levels=levels, targets=list(targets))
    settings |= dict(cap=cap, design_particles=design_particles, particles=len(particles.log_c), arch=arch)
    settings |= dict(prior_mass=prior_mass)
    return {
        "settings": settings,
        "candidate_bits": np.exp(cands).tolist(),
        "summary": summarize(per_rule, targets, cap),
        "families": per_rule,
        "seconds": time.time() - start,
    }


def _f(x, fmt: str = ".2f") -> str:
    return "" if x is None else format(x, fmt)


def markdown(result: dict) -> list[str]:
    s = result["settings"]
    out = [
        f"Runs until the 90 % b* interval's hi/lo <= target ({s['families']} simulated families, "
        f"{s['levels']} candidate levels over the prior's central {s['prior_mass']:.0%} of b*, "
        f"cap {s['cap']} runs, {s['particles']} particles, design on {s['design_particles']}; "
        f"{result['seconds']:.0f} s).",
        "",
        f"| target | rule | reached | median runs | mean runs | median / {BASELINE} | mean / {BASELINE} "
        "| coverage of true b* |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t, rules in result["summary"]["targets"].items():
        for rule, v in rules.items():
            out.append(
                f"| {t} | {rule} | {v['reached']:.2f} | {v['median_runs']:.0f} | {v['mean_runs']:.1f} "
                f"| {_f(v.get('ratio_median'))} | {_f(v.get('ratio_mean'))} | {_f(v['coverage'])} |"
            )
    equal = result["summary"]["equal_runs"]
    if equal:
        out += ["", f"At equal runs (where {BASELINE} stopped):", "", "| rule | median runs | median hi/lo "]
        out[-1] += "| coverage of true b* | runs ended by |"
        out.append("|---|---|---|---|---|")
        for rule, v in equal.items():
            stops = ", ".join(f"{k} {n}" for k, n in result["summary"]["stops"][rule].items())
            head = f"| {rule} | {v['median_runs']:.0f} | {v['median_factor']:.2f}"
            out.append(f"{head} | {v['coverage']:.2f} | {stops} |")
    return out

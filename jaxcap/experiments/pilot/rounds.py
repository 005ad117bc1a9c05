"""Pilot rounds: fit the new family on the pilots so far, then stop or train the next level.

Round r reads the table of the levels trained in rounds < r (jaxcap.meta.data), reweights the
family's prior particles by their outcomes (jaxcap/meta/pilot/fit.py: the calibrated families as
the family population, importance sampling; Smith & Gelfand 1992), and stops once a level is
trained and the boundary b* is known within `stop_factor` (its 90 % interval's hi / lo), or `k`
levels are spent, or no candidate is left. Otherwise it trains the untried candidate of largest
expected information gain about b*, with the seeds that gain asks for
(jaxcap/meta/pilot/information.py: the Ψ method, Kontsevich & Tyler 1999; QUEST+, Watson 2017), into
<workdir>/pilots/round<r>/ with calibrate's level search. A round appends its line to
pilot.jsonl only after its training finished, so a killed run redoes at most the round in
flight; a recorded round is neither re-decided nor retrained, and every random choice is seeded
from `pilot.seed`, so a rerun makes the same choices.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from jaxcap.experiments.families import train_runs
from jaxcap.experiments.pilot.settings import PilotPlan
from jaxcap.fields import ConfigError
from jaxcap.meta.data import Table, load_table
from jaxcap.meta.pilot.fit import FamilyFit, Particles, fit_family, prior_particles
from jaxcap.meta.pilot.information import next_pilot
from jaxcap.meta.posterior import Posterior
from jaxcap.results.store import Store, clean, read_jsonl

REPEAT = 4  # population draws of (θ, κ, σ) per calibrated draw: the family's prior particles
ROUNDS = "pilot.jsonl"


@dataclasses.dataclass(frozen=True)
class PilotRound:
    """One trained pilot level, a line of pilot.jsonl: what the round's fit knew, what it chose
    and why (the expected gain of each untried candidate at each seed count), what it gave."""

    round: int
    level: int  # index into the candidate levels
    value: Any  # the level field's value
    bits: float  # its difficulty covariate
    seeds: int
    trials: int  # the level's runs in the table (its best hyperparameter setting)
    successes: int
    untried: list[int]  # the candidates the round chose among
    gains: dict[str, list[float]]  # seeds -> expected information gain (nats) per untried candidate
    boundary: list[float]  # (lo, median, hi) bits of b*, the 90 % interval of the round's fit
    factor: float  # its hi / lo
    ess: float  # the fit's effective sample size
    workdirs: list[str]  # the round's workdirs, relative to the pilot workdir

    @classmethod
    def from_json(cls, data: dict) -> PilotRound:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})

    def to_json(self) -> dict:
        return json.loads(json.dumps(clean(dataclasses.asdict(self))))


@dataclasses.dataclass(frozen=True)
class Rounds:
    """What the rounds ended with: every trained round, the fit on all of them, and why they stopped."""

    rounds: list[PilotRound]
    fit: FamilyFit
    table: Table | None  # the pilot levels' table (None before any pilot)
    stopped: str


def read_rounds(path: Path) -> list[PilotRound]:
    return [PilotRound.from_json(r) for r in read_jsonl(path)]


def append_round(path: Path, rnd: PilotRound) -> None:
    """One line, flushed to disk; a line torn by a kill stays its own (unparsed) line."""
    text = json.dumps(rnd.to_json(), sort_keys=True) + "\n"
    with open(path, "ab+") as f:
        if f.seek(0, os.SEEK_END):
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                text = "\n" + text
        f.write(text.encode())
        f.flush()
        os.fsync(f.fileno())


def pilot_table(plan: PilotPlan, root: Path, rounds: list[PilotRound], arch: dict) -> Table:
    """The table of the trained rounds, which must have trained the posterior's architecture."""
    table = load_table([root / w for rnd in rounds for w in rnd.workdirs])
    if table.archs != [arch]:
        raise ConfigError(
            f"config.pilot.arch: the pilots trained {table.archs}, not the fitted architecture "
            f"{plan.settings.arch} ({arch}); allowed: overrides that leave the model as fitted"
        )
    return table


def outcomes(plan: PilotPlan, table: Table | None) -> dict[int, tuple[int, int]]:
    """{candidate index: (runs, successes)} of every pilot level in `table`."""
    out: dict[int, tuple[int, int]] = {}
    for row in table.rows if table else ():
        i = plan.values.index(table.levels[row.level].fields[plan.field])
        n, y = out.get(i, (0, 0))
        out[i] = (n + 1, y + int(row.success))
    return out


def fit_on(particles: Particles, plan: PilotPlan, tried: dict[int, tuple[int, int]]) -> FamilyFit:
    levels = sorted(tried)
    log_bits = np.log(np.asarray(plan.bits, np.float64)[levels])
    return fit_family(particles, log_bits, [tried[i][0] for i in levels], [tried[i][1] for i in levels])


def stop_reason(fit: FamilyFit, plan: PilotPlan, tried: dict, untried: list[int]) -> str:
    s = plan.settings
    factor = fit.boundary_factor()
    if tried and factor <= s.stop_factor:  # the prior alone is no pilot: a family rests on >= 1
        return f"b* known within a factor {factor:.3g} (stop_factor {s.stop_factor:g})"
    if len(tried) >= s.k:
        return f"k = {s.k} pilot levels spent (b* within a factor {factor:.3g})"
    return "" if untried else f"no candidate level left (b* within a factor {factor:.3g})"


def run_rounds(plan: PilotPlan, posterior: Posterior, architecture: str, store: Store) -> Rounds:
    """Every round (resuming from pilot.jsonl), to the stopping rule; the last fit."""
    s, path = plan.settings, store.root / ROUNDS
    arch = posterior.meta.archs[plan.arch]
    particles = prior_particles(posterior, plan.arch, s.seed, REPEAT)
    log_bits = np.log(np.asarray(plan.bits, np.float64))
    done, rounds, table = read_rounds(path), [], None
    while True:
        r = len(rounds) + 1
        tried = outcomes(plan, table)
        untried = [i for i in range(len(plan.values)) if i not in tried]
        fit = fit_on(particles, plan, tried)
        stopped = stop_reason(fit, plan, tried, untried)
        lo, med, hi = fit.boundary_interval()
        print(
            f"== pilot round {r}: {len(tried)} pilot levels, b* {med:.4g} bits (90%: {lo:.4g}-{hi:.4g}, "
            f"factor {hi / lo:.3g}), ESS {fit.ess:.0f}" + (f"; stop: {stopped}" if stopped else ""),
            flush=True,
        )
        if stopped:
            return Rounds(rounds, fit, table, stopped)
        if r <= len(done):  # recorded after its training finished: neither re-decided nor retrained
            rounds.append(done[r - 1])
            table = pilot_table(plan, store.root, rounds, arch)
            continue
        level, seeds, gains = next_pilot(fit, log_bits, untried, tuple(s.seeds), seed=s.seed + r)
        value = plan.values[level]
        print(f"== pilot round {r}: trains {plan.field}={value} with {seeds} seeds", flush=True)
        root = store.root / "pilots" / f"round{r}"
        runs = plan.runs(value, seeds, architecture)
        workdirs = train_runs(plan.family.search, root, runs, "pilot")
        rnd = PilotRound(
            r, level, value, plan.bits[level], seeds, 0, 0, untried, {str(n): g for n, g in gains.items()},
            [lo, med, hi], hi / lo, fit.ess, [str(w.relative_to(store.root)) for w in workdirs],
        )  # fmt: skip
        table = pilot_table(plan, store.root, [*rounds, rnd], arch)
        trials, successes = outcomes(plan, table)[level]
        rnd = dataclasses.replace(rnd, trials=trials, successes=successes)
        append_round(path, rnd)
        rounds.append(rnd)

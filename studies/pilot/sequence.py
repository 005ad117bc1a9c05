"""A new family's pilot levels one after another: the running fit and the rules that pick the next.

Both measurements of the pilot design (holdout.py, simulation.py) run one loop: a rule names
the next level(s) and seeds, the world answers with outcomes, the fit (jaxcap/meta/pilot/fit.py)
takes them in. The rules: the pilot of largest expected information gain about b* (the Ψ method, Kontsevich
& Tyler 1999; QUEST+, Watson 2017), bisection, and calibrate's own grid-then-boundary designs.

Details: docs/design/pilot.md#measuring-the-pilot-design.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy.special import logsumexp

from jaxcap.meta import design as meta_design
from jaxcap.meta.pilot.boundary import information_levels
from jaxcap.meta.pilot.fit import FamilyFit, Particles, log_likelihood
from jaxcap.meta.pilot.information import bisection_pilot, next_pilot

SEED_OPTIONS = (1, 2, 4)  # seeds a design pilot may take
LEVEL_SEEDS = 4  # seeds of a bisection or grid level (calibrate's default)
GRID = 4  # levels of calibrate's spanning grid


@dataclasses.dataclass
class PilotLog:
    """The pilots of one family so far (candidate index, log bits, seeds, successes) and the
    summed log-likelihood of each particle under them."""

    particles: Particles
    levels: list[int] = dataclasses.field(default_factory=list)
    log_bits: list[float] = dataclasses.field(default_factory=list)
    trials: list[int] = dataclasses.field(default_factory=list)
    successes: list[int] = dataclasses.field(default_factory=list)
    log_lik: np.ndarray | None = None

    def add(self, level: int, log_bits: float, trials: int, successes: int) -> None:
        if level in self.levels:  # a level's effect is shared by its seeds: never piloted twice
            raise ValueError(f"pilot level {level}: already piloted; allowed: an untried level")
        one = log_likelihood(self.particles, [log_bits], [trials], [successes])
        self.log_lik = one if self.log_lik is None else self.log_lik + one
        self.levels.append(level)
        self.log_bits.append(float(log_bits))
        self.trials.append(int(trials))
        self.successes.append(int(successes))

    @property
    def runs(self) -> int:
        return sum(self.trials)

    def rates(self) -> dict[int, float]:
        """Success rate per piloted level."""
        return {i: k / n for i, n, k in zip(self.levels, self.trials, self.successes)}

    def fit(self) -> FamilyFit:
        """The family's fit on every pilot so far (the prior before any)."""
        n = len(self.particles.log_c)
        log_w = np.full(n, -np.log(n)) if self.log_lik is None else self.log_lik - logsumexp(self.log_lik)
        return FamilyFit(self.particles, log_w, len(self.levels), self.runs)


def thinned(fit: FamilyFit, n: int | None, seed: int) -> FamilyFit:
    """The fit on n particles resampled by weight (all of it when n is None or not fewer): what
    the design's gain is computed on, at a cost that grows with n."""
    if n is None or n >= len(fit.log_w):
        return fit
    idx = fit.resample(n, seed)
    p = fit.particles
    sub = Particles(*(getattr(p, f.name)[idx] for f in dataclasses.fields(p)))
    return FamilyFit(sub, np.full(n, -np.log(n)), fit.pilots, fit.runs)


# A rule: (fit, log, candidate log bits, step) -> [(candidate, seeds)] to train next; [] = done.
Rule = Callable[[FamilyFit, PilotLog, np.ndarray, int], list[tuple[int, int]]]


def _untried(log: PilotLog, cand_log_bits: np.ndarray) -> list[int]:
    return [i for i in range(len(cand_log_bits)) if i not in log.levels]


def make_design(
    design_particles: int | None = None, seed: int = 0, seed_options: tuple[int, ...] = SEED_OPTIONS
) -> Rule:
    """`design`: next_pilot on the current fit (thinned to `design_particles`)."""

    def rule(fit: FamilyFit, log: PilotLog, cand_log_bits: np.ndarray, step: int) -> list[tuple[int, int]]:
        untried = _untried(log, cand_log_bits)
        if not untried:
            return []
        view = thinned(fit, design_particles, seed + step)
        i, seeds, _ = next_pilot(view, cand_log_bits, untried, seed_options, seed + step)
        return [(i, seeds)]

    return rule


def bisection(fit: FamilyFit, log: PilotLog, cand_log_bits: np.ndarray, step: int) -> list[tuple[int, int]]:
    """`bisection`: the untried level nearest the log-middle of the bracket; [] when none is in it."""
    i = bisection_pilot(cand_log_bits, log.rates())
    return [] if i is None else [(i, LEVEL_SEEDS)]


def grid_pass(log: PilotLog, cand_log_bits: np.ndarray) -> list[tuple[int, int]]:
    """The spanning grid's levels, all in one pass (calibrate trains them as one population)."""
    return [(i, LEVEL_SEEDS) for i in meta_design.spanning_grid(np.exp(cand_log_bits).tolist(), GRID)]


def bisection_grid(
    fit: FamilyFit, log: PilotLog, cand_log_bits: np.ndarray, step: int
) -> list[tuple[int, int]]:
    """`bisection_grid`: the grid, then calibrate's bisection round (one level where success flips,
    widest interval first); [] when no flip has an untried level inside."""
    if not log.levels:
        return grid_pass(log, cand_log_bits)
    bits = np.exp(cand_log_bits).tolist()
    rates = log.rates()
    new = meta_design.bisect(bits, set(rates), [bits[i] for i in rates], list(rates.values()), 1)
    return [(i, LEVEL_SEEDS) for i in new]


def make_design_after_grid(design_particles: int | None = None, seed: int = 0) -> Rule:
    """`design_after_grid`: the grid, then `design` pilots."""
    design = make_design(design_particles, seed)

    def rule(fit: FamilyFit, log: PilotLog, cand_log_bits: np.ndarray, step: int) -> list[tuple[int, int]]:
        return grid_pass(log, cand_log_bits) if not log.levels else design(fit, log, cand_log_bits, step)

    return rule


def make_information_grid(design_particles: int | None = None, seed: int = 0) -> Rule:
    """`information_grid`: calibrate's `information` rule: the grid, then one level a pass by its
    gain under a prior that knows no other family (jaxcap/meta/pilot/boundary.py), with LEVEL_SEEDS seeds."""

    def rule(fit: FamilyFit, log: PilotLog, cand_log_bits: np.ndarray, step: int) -> list[tuple[int, int]]:
        if not log.levels:
            return grid_pass(log, cand_log_bits)
        trained = {i: (n, k) for i, n, k in zip(log.levels, log.trials, log.successes)}
        new = information_levels(cand_log_bits, trained, 1, LEVEL_SEEDS, seed + step)
        return [(i, LEVEL_SEEDS) for i in new]

    return rule


def make_rule(name: str, design_particles: int | None = None, seed: int = 0) -> Rule:
    """The rule called `name` (one of RULES)."""
    if name not in RULES:
        raise ValueError(f"pilot rule: got {name!r}; allowed: {', '.join(RULES)}")
    return RULES[name](design_particles, seed)


RULES: dict[str, Callable[[int | None, int], Rule]] = {
    "design": make_design,
    "design4": lambda n, s: make_design(n, s, (LEVEL_SEEDS,)),
    "bisection": lambda n, s: bisection,
    "bisection_grid": lambda n, s: bisection_grid,
    "design_after_grid": make_design_after_grid,
    "information_grid": make_information_grid,
}

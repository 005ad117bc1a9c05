"""Calibrate's boundary rounds by expected information gain, from what one family's levels say.

Bisection (jaxcap/meta/design.py) adds the middle of each interval where success flips. With
`config.calibrate.design.rule = "information"` a round instead weighs the family's trained levels
so far (fit.fit_family) against a prior that knows nothing of the other families (calibrate
has no posterior until every family is trained): log b* uniform over the candidate range widened
by `WIDEN` (log bits) on each side, and κ, the level spread σ and the seeds' correlation ρ drawn
from the meta-model's own priors (model.PRIOR). It then adds the `per_round` untried candidates
of largest expected information gain about which interval between candidates holds b*
(information.information_gain; Chaloner & Verdinelli 1995, Stat. Sci. 10), each with the
family's seeds, and adds nothing once no candidate is worth `MIN_GAIN` nats. Which rule is the
default, measured against bisection at equal runs on simulated families: docs/meta-model.md.
"""

from __future__ import annotations

import math

import numpy as np

from jaxcap.meta.model import PRIOR, saturate
from jaxcap.meta.pilot.fit import Particles, fit_family
from jaxcap.meta.pilot.information import DESIGN_PARTICLES, information_gain

WIDEN = math.log(2.0)  # b* may lie up to 2x beyond the easiest or hardest candidate
MIN_GAIN = 0.02  # nats (~3 % of a bit): a flip pinned between neighbouring candidates leaves less
RULES = ("bisection", "information")


def flat_particles(cand_log_bits, n: int = DESIGN_PARTICLES, seed: int = 0) -> Particles:
    """A family's prior with no other family in it: [n] particles, log C = 0 so log θ = −log b*."""
    rng = np.random.default_rng(seed)
    x = np.asarray(cand_log_bits, np.float64)
    log_b = rng.uniform(x.min() - WIDEN, x.max() + WIDEN, n)
    mu_k = rng.normal(PRIOR["mu_log_kappa"], PRIOR["mu_log_kappa_scale"], n)
    sigma_k = np.abs(rng.normal(0.0, PRIOR["sigma_log_kappa"], n))
    kappa = saturate(np.exp(mu_k + sigma_k * rng.standard_normal(n)))
    sigma = np.abs(rng.normal(0.0, PRIOR["sigma_level"], n))
    rho = rng.beta(*PRIOR["rho"], n)
    return Particles(np.zeros(n), -log_b, kappa, sigma, rho, np.arange(n))


def information_levels(
    cand_log_bits, trained: dict[int, tuple[int, int]], n: int, seeds: int, seed: int = 0
) -> list[int]:
    """Up to `n` untried candidates (indices, sorted) of largest gain for a pass of `seeds` seeds
    each, given the trained ones {candidate: (runs, successes)}."""
    x = np.asarray(cand_log_bits, np.float64)
    untried = [i for i in range(len(x)) if i not in trained]
    if not untried:
        return []
    done = sorted(trained)
    fit = fit_family(
        flat_particles(x, seed=seed),
        [x[i] for i in done],
        [trained[i][0] for i in done],
        [trained[i][1] for i in done],
    )
    gains = information_gain(fit, x[untried], seeds, seed, edges=x)
    order = np.argsort(-gains, kind="stable")
    return sorted(untried[j] for j in order[:n] if gains[j] >= MIN_GAIN)

"""Simulated new task families with a KNOWN boundary, for scoring pilot rules (simulation.py).

Each family is one draw from the family population of a posterior: its true log C, log θ, κ,
level spread σ and seed correlation ρ, i.e. one particle of jaxcap/meta/pilot/fit.py's
prior_particles (a family the fit has not seen, as the prior of the pilot fit assumes: the check
is that of simulation-based calibration, Talts et al. 2018, arXiv:1804.06788). Its candidate
levels are evenly spaced in log bits over the central `PRIOR_MASS` of the prior's b*, which is
all a user knows of a new family.
Every candidate draws its true level effect δ ~ N(0, σ) and its seeds' shared success rate from
the model's beta-binomial at ρ (jaxcap/meta/model.py) once, so every rule trains the same world
(common random numbers): a pilot of n seeds reveals the level's first n outcomes.

`synthetic_posterior` is an assumed population for tests and for runs without a calibrate
workdir; a calibrate run's posterior.nc gives the measured one.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit

from jaxcap.meta.model import P_EDGE
from jaxcap.meta.pilot.fit import Particles, weighted_quantile
from jaxcap.meta.posterior import Posterior
from jaxcap.meta.records import PosteriorMeta
from studies.pilot.sequence import LEVEL_SEEDS

PRIOR_MASS = 0.99  # the candidates span this central mass of the prior b* (by default)


def synthetic_posterior(draws: int = 2000, seed: int = 0) -> Posterior:
    """An assumed family population, not a fit: one architecture of log C ~ 8 (about 3,000
    bits); families' log θ ~ N(μ, σ) with μ ~ N(0, 0.5), σ ~ 2 (θ over orders of magnitude, as
    real families are); κ log-normal about 5 (the model's prior centre); level spread σ_f ~ 0.3
    log-bits; seed correlation ρ ~ Beta(4, 4). Only the sites prior_particles reads."""
    r = np.random.default_rng(seed)
    return Posterior(
        {
            "mu_log_C": r.normal(8.0, 0.1, draws),
            "sigma_log_C": np.full(draws, 0.3),
            "beta": np.zeros((draws, 4)),
            "log_C": r.normal(8.0, 0.1, (draws, 1)),
            "mu_log_theta": r.normal(0.0, 0.5, draws),
            "sigma_log_theta": np.abs(r.normal(2.0, 0.3, draws)),
            "mu_log_kappa": r.normal(np.log(5.0), 0.2, draws),
            "sigma_log_kappa": np.abs(r.normal(0.3, 0.1, draws)),
            "sigma_level": np.abs(r.normal(0.3, 0.1, (draws, 3))),
            "rho": r.beta(4.0, 4.0, draws),
        },
        PosteriorMeta(extra={"source": "synthetic"}),
    )


@dataclasses.dataclass(frozen=True)
class SimFamily:
    """One simulated family: its true parameters and every candidate level's seed outcomes."""

    truth: Particles  # one particle: log C, log θ, κ, σ, ρ
    cand_log_bits: np.ndarray  # [L]
    outcomes: np.ndarray  # bool [L, LEVEL_SEEDS], seeds in the order a pilot reveals them

    @property
    def log_boundary(self) -> float:
        """log b* of a typical level (δ = 0): what the fit's interval should hold."""
        return float(self.truth.log_boundary[0])


def candidate_levels(particles: Particles, levels: int, mass: float = PRIOR_MASS) -> np.ndarray:
    """`levels` log bits evenly over the central `mass` of the particles' log b*."""
    tail = (1 - mass) / 2
    lo, hi = weighted_quantile(particles.log_boundary, np.ones(len(particles.log_c)), [tail, 1 - tail])
    return np.linspace(lo, hi, levels)


def particle(particles: Particles, s: int) -> Particles:
    """Particle s alone (arrays of length 1)."""
    return Particles(*(getattr(particles, f.name)[s : s + 1] for f in dataclasses.fields(particles)))


def simulate_families(truths: Particles, n: int, cand_log_bits: np.ndarray, seed: int) -> list[SimFamily]:
    """n families, each a distinct particle of `truths` (its true parameters), with every
    candidate's seed outcomes drawn once."""
    if n > len(truths.log_c):
        raise ValueError(f"families: got {n}; allowed: at most {len(truths.log_c)} (the truth particles)")
    rng = np.random.default_rng(seed)
    out = []
    for s in rng.choice(len(truths.log_c), n, replace=False):
        truth = particle(truths, int(s))
        delta = truth.sigma[0] * rng.standard_normal(len(cand_log_bits))
        p = np.clip(
            expit(truth.kappa[0] * (truth.log_boundary[0] - delta - cand_log_bits)), P_EDGE, 1 - P_EDGE
        )
        if np.isnan(truth.rho[0]):  # a posterior without ρ: independent seeds
            rate = p
        else:
            phi = 1.0 / truth.rho[0] - 1.0
            rate = rng.beta(p * phi, (1 - p) * phi)  # the level's own rate, shared by its seeds
        seeds = rng.random((len(cand_log_bits), LEVEL_SEEDS)) < rate[:, None]
        out.append(SimFamily(truth, np.asarray(cand_log_bits, np.float64), seeds))
    return out

"""A new task family's parameters from a few pilot levels, with the calibrated families as prior.

A family outside the fit is one more draw from the family population of the meta-model
(jaxcap/meta/model.py): log θ_f ~ N(μ_θ, σ_θ), κ_f from the κ population, a level spread σ_f.
Each posterior draw of the calibrated fit (μ_θ, σ_θ, ..., C_a, ρ) is tiled `repeat` times with
a fresh population draw of (θ_f, κ_f, σ_f): these particles are the new family's prior with the
calibrated families' knowledge in it (partial pooling; Gelman & Hill 2007, ch. 12-13). Pilot
levels then reweight them by their likelihood (importance sampling with the prior as proposal,
Smith & Gelfand 1992, "Bayesian statistics without tears"): a pilot of n seeds with y successes
has, per particle, the model's own beta-binomial likelihood with the level effect δ ~ N(0, σ_f)
integrated out (Gauss-Hermite), so a pilot level counts as one level, its seeds as correlated.
The calibrated families are not refitted: their data say little about one new family's
parameters and nothing that a few pilots could change much; the effective sample size of the
weights is reported, so a fit that has run out of particles says so.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import expit, logsumexp

from jaxcap.meta.model import P_EDGE, family_draws, new_arch_log_c
from jaxcap.meta.posterior import Posterior

MASS = 0.9  # the boundary interval the stopping rule and reports read
# Gauss-Hermite nodes of a pilot's count probabilities: the beta-binomial of a sharp sigmoid
# (κσ ~ 4) needs more than the model's 24 for P(y) (24: errors ~1e-3; 48: < 1e-4, against
# adaptive quadrature in tests/meta/test_meta_pilot.py)
NODES = 48


@dataclasses.dataclass(frozen=True)
class Particles:
    """A new family's parameters per particle [S]: the pilot architecture's log C, the family's
    log θ, κ and level spread σ, the seeds' correlation ρ, and the calibrated draw it came from."""

    log_c: np.ndarray
    log_theta: np.ndarray
    kappa: np.ndarray
    sigma: np.ndarray
    rho: np.ndarray
    draw: np.ndarray  # index into the calibrated posterior's draws

    @property
    def log_boundary(self) -> np.ndarray:
        """log b* = log C − log θ: the covariate at which a typical level is learned half the time."""
        return self.log_c - self.log_theta


def prior_particles(
    posterior: Posterior, arch: int | None, seed: int, repeat: int = 4, arch_x: np.ndarray | None = None
) -> Particles:
    """The new family's prior: every calibrated draw `repeat` times, each with its own population
    draw of (θ, κ, σ). `arch`: a fitted architecture, or None for one outside the fit (`arch_x`)."""
    rng = np.random.default_rng(seed)
    d = posterior.draws
    n = d["mu_log_C"].shape[0]
    idx = np.tile(np.arange(n), repeat)
    tiled = {k: v[idx] for k, v in d.items()}
    if arch is None:
        x = np.zeros(d["beta"].shape[1]) if arch_x is None else arch_x
        log_c = new_arch_log_c(tiled, x, d["log_C"].shape[1], rng)
    else:
        log_c = tiled["log_C"][:, arch]
    log_theta, kappa, sigma = family_draws(tiled, None, rng)
    rho = tiled["rho"] if "rho" in tiled else np.full(len(idx), np.nan)
    return Particles(log_c, log_theta, kappa, sigma, rho, idx)


def outcome_probabilities(particles: Particles, log_bits: np.ndarray, trials: int) -> np.ndarray:
    """P(y successes of `trials` seeds | particle) for y = 0..trials at each level: [S, L, trials + 1].

    A new level's effect δ ~ N(0, σ) is integrated out (probabilists' Gauss-Hermite nodes); given
    δ the count is the model's beta-binomial (binomial where the posterior has no ρ)."""
    x, w = np.polynomial.hermite_e.hermegauss(NODES)
    w = w / w.sum()
    gap = particles.log_c - particles.log_theta
    out = np.empty((gap.shape[0], np.size(log_bits), trials + 1))
    for i, b in enumerate(np.atleast_1d(np.asarray(log_bits, np.float64))):  # [S, G, Y] at a time
        p = expit(particles.kappa[:, None] * (gap[:, None] - b - particles.sigma[:, None] * x))
        pmf = count_pmf(np.clip(p, P_EDGE, 1 - P_EDGE), particles.rho, trials)
        out[:, i] = np.einsum("sgy,g->sy", pmf, w)
    return out


def count_pmf(p: np.ndarray, rho: np.ndarray, n: int) -> np.ndarray:
    """P(y successes of n) for y = 0..n, [S, G, n + 1]: beta-binomial with mean p [S, G] and
    intra-cell correlation ρ [S] (binomial where ρ is NaN: a posterior saved before ρ existed).

    Written as rising factorials, BB(y) = C(n, y) (a)_y (b)_(n−y) / (a + b)_n with a = p φ,
    b = (1 − p) φ, φ = 1/ρ − 1: a few products for the handful of seeds a pilot has, ~10x
    faster than log-beta functions and exact to rounding."""
    y = np.arange(n + 1)
    comb = np.array([math.comb(n, k) for k in y], np.float64)
    if np.isnan(rho).any():
        return comb * p[..., None] ** y * (1 - p[..., None]) ** (n - y)
    phi = (1.0 / rho - 1.0)[:, None, None]
    steps = np.arange(n)  # (a)_k = a (a + 1) ... (a + k − 1)
    rise_a = np.concatenate([np.ones((*p.shape, 1)), np.cumprod(p[..., None] * phi + steps, axis=-1)], -1)
    rise_b = np.concatenate([np.ones((*p.shape, 1)), np.cumprod((1 - p[..., None]) * phi + steps, -1)], -1)
    total = np.prod(phi + steps, axis=-1)  # (a + b)_n, [S, 1]
    return comb * rise_a * rise_b[..., ::-1] / total[..., None]


def log_likelihood(particles: Particles, log_bits, trials, successes) -> np.ndarray:
    """log P(pilot outcomes | particle) [S]: each pilot level independent given the particle."""
    out = np.zeros(particles.log_c.shape[0])
    for b, n, k in zip(np.atleast_1d(log_bits), np.atleast_1d(trials), np.atleast_1d(successes)):
        if n > 0:
            probs = outcome_probabilities(particles, np.array([b]), int(n))[:, 0, int(k)]
            out += np.log(np.maximum(probs, 1e-300))
    return out


@dataclasses.dataclass(frozen=True)
class FamilyFit:
    """The new family's posterior after its pilots: particles and normalized log weights."""

    particles: Particles
    log_w: np.ndarray  # [S], logsumexp = 0
    pilots: int  # pilot levels the fit rests on
    runs: int  # pilot runs (levels x seeds)

    @property
    def weights(self) -> np.ndarray:
        return np.exp(self.log_w)

    @property
    def ess(self) -> float:
        """Kish's effective sample size of the weights."""
        w = self.weights
        return float(1.0 / np.sum(w**2))

    def boundary_interval(self, mass: float = MASS) -> tuple[float, float, float]:
        """(lo, median, hi) of b* in bits: the central `mass` interval of the weighted draws."""
        q = [(1 - mass) / 2, 0.5, (1 + mass) / 2]
        lo, med, hi = weighted_quantile(self.particles.log_boundary, self.weights, q)
        return float(np.exp(lo)), float(np.exp(med)), float(np.exp(hi))

    def boundary_factor(self, mass: float = MASS) -> float:
        """hi / lo of b*'s central interval: "b* known within a factor X"."""
        lo, _, hi = self.boundary_interval(mass)
        return hi / lo

    def success_draws(self, log_bits) -> np.ndarray:
        """A typical new level's P(success) per particle [S, L] (δ integrated out)."""
        return outcome_probabilities(self.particles, np.asarray(log_bits, np.float64), 1)[..., 1]

    def predict(self, log_bits) -> np.ndarray:
        """Posterior mean P(success) of a new level [L]: the number a Brier score reads."""
        return self.weights @ self.success_draws(log_bits)

    def resample(self, n: int, seed: int) -> np.ndarray:
        """Indices of n particles drawn by weight (systematic resampling: Kitagawa 1996)."""
        u = (np.random.default_rng(seed).random() + np.arange(n)) / n
        return np.minimum(np.searchsorted(np.cumsum(self.weights), u), len(self.log_w) - 1)


def fit_family(particles: Particles, log_bits=(), trials=(), successes=()) -> FamilyFit:
    """Reweight the prior particles by the pilot levels' outcomes (nothing given: the prior)."""
    log_w = log_likelihood(particles, log_bits, trials, successes)
    log_w = log_w - logsumexp(log_w)
    trials = np.atleast_1d(np.asarray(trials, np.int64))
    return FamilyFit(particles, log_w, int((trials > 0).sum()), int(trials.sum()))


def weighted_quantile(x: np.ndarray, w: np.ndarray, q) -> np.ndarray:
    """Quantiles q of draws x with weights w (the inverse of the weighted empirical CDF, with
    each draw's mass centred on it, so equal weights give numpy's 'hazen' quantiles)."""
    order = np.argsort(x)
    xs, ws = x[order], w[order] / w.sum()
    cdf = np.cumsum(ws) - 0.5 * ws
    return np.interp(np.asarray(q, np.float64), cdf, xs)

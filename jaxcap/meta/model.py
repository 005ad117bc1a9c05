"""The capacity meta-model: a hierarchical logistic model of "did this run learn the task?".

A cell is one (architecture a, task family f, difficulty level l) with `trials` runs (seeds)
of which `successes` reached the family's success threshold. With b_l the level's complexity
in bits,

    logit P(success) = κ_f · (log C_a − log θ_f − δ_l − log b_l)

so an architecture of effective capacity C_a (bits) learns a typical level of family f with
probability 1/2 at the learnability boundary b* = C_a / θ_f; θ_f is the family's difficulty
per bit, κ_f how sharp the transition is, and δ_l ~ N(0, σ_level) a level effect in log-bits:
a level may be harder or easier than its bit count says (x mod 16 needs every digit of x,
x mod 20 only the last two). This is a two-parameter item-response model (Birnbaum 1968;
Lord 1980) on a log scale with random item effects (De Boeck & Wilson 2004), with partial
pooling of θ_f, κ_f across families and C_a across architectures (Gelman & Hill 2007,
ch. 12-14). (A level effect added to the logit instead was tried on a real calibrate table:
worse held-out Brier, 0.162 vs 0.148, and more divergences in the fold fits.)

Parameterization (Papaspiliopoulos et al. 2007; Betancourt & Girolami 2013, arXiv:1312.0906):
C_a, κ_f and δ_l are non-centred — a fit has one to a few architectures, so σ_C is barely
identified and the centred form is a funnel in (μ_C, σ_C) (on the real table: 17 divergent
transitions of 2,000 centred, 8 non-centred); the level effects are many and weakly informed.
log θ_f is centred: the families' θ differ by orders of magnitude (complexity is defined per
family) and each is pinned by all of its cells, the case in which the centred form samples
better (simulated data: half the leapfrog steps per draw). NUTS (Hoffman & Gelman 2011,
arXiv:1111.4246) runs with target acceptance 0.99 (2 divergences on the real table).

Scale: only log C_a − log θ_f is identified, so the reference family `data["reference"]` has
θ = 1 by definition; C is then in that family's bits ("memorization-equivalent bits" when the
reference is random-data memorization). The reference θ also counts as one draw from the family
population, so a family outside the fit is predicted from N(μ_θ, σ_θ) with everything the fitted
families say about it (the reference's own free draw is then unused: it only follows its prior).
Sizes come from array shapes; held-out cells enter with trials = 0.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from scipy.special import expit

PRIOR = {
    # Complexity is defined per family (log2 N for x mod N, n log2 K for n random labels), so
    # families' θ can differ by orders of magnitude: wide priors on the log scale.
    "log_C_scale": 3.0,  # around the data's mean log complexity: a factor e^3 ~ 20 per sd
    "sigma_log_C": 1.0,
    "mu_log_theta_scale": 5.0,
    "sigma_log_theta": 3.0,
    "mu_log_kappa": math.log(5.0),  # logit slope per unit log-bits: p 0.9 -> 0.1 over a factor ~2.4
    "mu_log_kappa_scale": 1.0,
    "sigma_log_kappa": 0.5,
    "sigma_level": 0.5,  # log-bits: a level 1.65x harder or easier than its bits at 1 sd
}


def model(data: dict, obs=None) -> None:
    """NumPyro model of K independent fits at once (K = 1 for one fit; one per fold in validation).

    `data` (arrays): cell_arch, cell_family, cell_level, log_bits [N]; trials [K, N] (0 where a
    fold holds a cell out); reference [K]; arch_index [A]; family_index [F]; level_family [L];
    log_bits_center []. `obs`: successes [K, N]. Every site has a leading fold axis; the folds
    share nothing, so the joint posterior is the product of the K posteriors and one sampler
    (one compile) serves them all.
    """
    n_fold, n_cell = data["trials"].shape
    n_arch, n_family = data["arch_index"].shape[0], data["family_index"].shape[0]
    n_level = data["level_family"].shape[0]
    with numpyro.plate("fold", n_fold, dim=-2):
        mu_c = numpyro.sample("mu_log_C", dist.Normal(data["log_bits_center"], PRIOR["log_C_scale"]))
        sigma_c = numpyro.sample("sigma_log_C", dist.HalfNormal(PRIOR["sigma_log_C"]))
        mu_t = numpyro.sample("mu_log_theta", dist.Normal(0.0, PRIOR["mu_log_theta_scale"]))
        sigma_t = numpyro.sample("sigma_log_theta", dist.HalfNormal(PRIOR["sigma_log_theta"]))
        mu_k = numpyro.sample("mu_log_kappa", dist.Normal(PRIOR["mu_log_kappa"], PRIOR["mu_log_kappa_scale"]))
        sigma_k = numpyro.sample("sigma_log_kappa", dist.HalfNormal(PRIOR["sigma_log_kappa"]))
        sigma_l = numpyro.sample("sigma_level", dist.HalfNormal(PRIOR["sigma_level"]))
        # The reference family is a member of the family population with log θ = 0 exactly.
        numpyro.sample("reference_log_theta", dist.Normal(mu_t, sigma_t), obs=jnp.zeros_like(mu_t))

        with numpyro.plate("arch", n_arch, dim=-1):
            z_c = numpyro.sample("z_C", dist.Normal(0.0, 1.0))
        log_c = numpyro.deterministic("log_C", mu_c + sigma_c * z_c)
        with numpyro.plate("family", n_family, dim=-1):
            free_theta = numpyro.sample("log_theta_free", dist.Normal(mu_t, sigma_t))
            z_k = numpyro.sample("z_kappa", dist.Normal(0.0, 1.0))
        with numpyro.plate("level", n_level, dim=-1):
            z_l = numpyro.sample("z_level", dist.Normal(0.0, 1.0))

        is_ref = data["family_index"][None, :] == data["reference"][:, None]
        log_theta = numpyro.deterministic("log_theta", jnp.where(is_ref, 0.0, free_theta))
        kappa = numpyro.deterministic("kappa", jnp.exp(mu_k + sigma_k * z_k))
        effect = numpyro.deterministic("level_effect", sigma_l * z_l)

        f, a, lv = data["cell_family"], data["cell_arch"], data["cell_level"]
        gap = log_c[:, a] - log_theta[:, f] - effect[:, lv] - data["log_bits"][None, :]
        logits = kappa[:, f] * gap
        with numpyro.plate("cell", n_cell, dim=-1):
            numpyro.sample("successes", dist.Binomial(data["trials"], logits=logits), obs=obs)


def success_probability(
    draws: dict[str, np.ndarray],
    log_bits: np.ndarray,
    rng: np.random.Generator,
    arch: int | None = None,
    family: int | None = None,
    level: int | None = None,
) -> np.ndarray:
    """P(success) per posterior draw, [S, len(log_bits)].

    `None` means "not in the fit": a new architecture draws log C from N(μ_C, σ_C), a new family
    draws log θ and log κ from their population, and a new level (level None) its effect δ from
    N(0, σ_level): every query point is its own new level, which is what a held-out cell is.
    Draws are the flattened posterior: {site: [S, ...]}.
    """
    n = draws["mu_log_C"].shape[0]
    log_bits = np.asarray(log_bits, np.float64).reshape(1, -1)

    def population(mu: str, sigma: str) -> np.ndarray:
        return draws[mu][:, None] + draws[sigma][:, None] * rng.standard_normal((n, 1))

    log_c = population("mu_log_C", "sigma_log_C") if arch is None else draws["log_C"][:, arch, None]
    if family is None:
        log_theta = population("mu_log_theta", "sigma_log_theta")
        kappa = np.exp(population("mu_log_kappa", "sigma_log_kappa"))
    else:
        log_theta, kappa = draws["log_theta"][:, family, None], draws["kappa"][:, family, None]
    if level is None:
        effect = draws["sigma_level"][:, None] * rng.standard_normal((n, log_bits.shape[1]))
    else:
        effect = draws["level_effect"][:, level, None]
    return expit(kappa * (log_c - log_theta - effect - log_bits))


def boundary_bits(draws: dict[str, np.ndarray]) -> np.ndarray:
    """b*_{a,f} = C_a / θ_f per draw, [S, A, F]: where a typical level is learned half the time."""
    return np.exp(draws["log_C"][:, :, None] - draws["log_theta"][:, None, :])

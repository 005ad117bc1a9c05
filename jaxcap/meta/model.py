"""The capacity meta-model: a hierarchical logistic model of "did this run learn the task?".

A cell (architecture a, task family f, difficulty level l) has `trials` seeds, `successes` of
which learned the task. With b_l the level's difficulty covariate in bits,

    logit P(success) = κ_f · (log C_a − log θ_f − δ_l − log b_l),

so C_a is the architecture's capacity in bits, b* = C_a / θ_f the learnability boundary and δ_l
a level effect: a two-parameter item-response model (Birnbaum 1968) with partial pooling across
families (Gelman & Hill 2007), log C_a regressed on architecture covariates, and a beta-binomial
count for correlated seeds (Williams 1982).

Details: docs/design/meta-model.md#the-learnability-curve.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from scipy.special import expit
from scipy.stats import betabinom, binom

# log body parameters, layers, log(H x d_head), log precision bits
ARCH_COVARIATES = ("log_params", "n_layers", "log_heads_x_dhead", "log_precision_bits")
PRIOR = {
    "log_C_scale": 3.0,  # around the reference family's mean log bits: a factor e^3 ~ 20 per sd
    "sigma_log_C": 0.5,  # residual sd of log C around the covariate regression
    "beta_mean": (1.0, 0.0, 0.0, 0.0),  # C ~ parameters (see the docstring)
    "beta_scale": (0.5, 0.5, 0.5, 0.5),
    "mu_log_theta_scale": 5.0,  # complexity units differ per family: θ spans orders of magnitude
    "sigma_log_theta": 3.0,
    "mu_log_kappa": math.log(5.0),  # logit slope per unit log-bits: p 0.9 -> 0.1 over a factor ~2.4
    "mu_log_kappa_scale": 1.0,
    "sigma_log_kappa": 0.5,
    "sigma_level": 0.5,  # log-bits: a level 1.65x harder or easier than its bits at 1 sd
    "rho": (2.0, 2.0),  # Beta: seeds' intra-cell correlation, mean 1/2, 90 % in [0.14, 0.86]
}
KAPPA_MAX = 30.0  # per log-bit: see "Slopes saturate" above
P_EDGE = 1e-6  # P kept off 0 and 1: a beta-binomial needs both shape parameters > 0
GH_NODES = 24  # Gauss-Hermite nodes of the level-marginal P (error < 1e-6 at κσ <= 20)


def model(data: dict, obs=None) -> None:
    """NumPyro model of one fit.

    `data` (arrays): cell_arch, cell_family, cell_level, log_bits, trials [N]; reference [];
    arch_x [A, J] (covariates centred on the fitted architectures); arch_rot [J, J];
    arch_fitted [A]; arch_saturated []; family_index [F]; family_fitted [F]; family_bracketed [F];
    level_family [L];
    log_C_center [].
    `obs`: successes [N].
    """
    n_arch, n_family = data["arch_x"].shape[0], data["family_index"].shape[0]
    n_level = data["level_family"].shape[0]
    mu_c = numpyro.sample("mu_log_C", dist.Normal(data["log_C_center"], PRIOR["log_C_scale"]))
    sigma_c = numpyro.sample("sigma_log_C", dist.HalfNormal(PRIOR["sigma_log_C"]))
    n_cov = data["arch_rot"].shape[0]
    with numpyro.plate("covariate", n_cov):
        u = numpyro.sample("u_beta", dist.Normal(0.0, 1.0))
    beta_mean, beta_scale = jnp.asarray(PRIOR["beta_mean"]), jnp.asarray(PRIOR["beta_scale"])
    beta = numpyro.deterministic("beta", beta_mean + beta_scale * (data["arch_rot"] @ u))
    mu_t = numpyro.sample("mu_log_theta", dist.Normal(0.0, PRIOR["mu_log_theta_scale"]))
    sigma_t = numpyro.sample("sigma_log_theta", dist.HalfNormal(PRIOR["sigma_log_theta"]))
    mu_k = numpyro.sample("mu_log_kappa", dist.Normal(PRIOR["mu_log_kappa"], PRIOR["mu_log_kappa_scale"]))
    sigma_k = numpyro.sample("sigma_log_kappa", dist.HalfNormal(PRIOR["sigma_log_kappa"]))
    # The reference family is a member of the family population with log θ = 0 exactly.
    numpyro.sample("reference_log_theta", dist.Normal(mu_t, sigma_t), obs=jnp.zeros_like(mu_t))

    with numpyro.plate("arch", n_arch):
        z_c = numpyro.sample("z_C", dist.Normal(0.0, 1.0))
    fitted = data["arch_fitted"]
    n_fitted = jnp.maximum(fitted.sum(), 1)
    # fitted: residuals summing to zero, none when the covariates already fit them exactly
    own = jnp.where(data["arch_saturated"], 0.0, z_c - (z_c * fitted).sum() / n_fitted)
    resid = jnp.where(fitted, own, z_c * jnp.sqrt(1 + 1 / n_fitted))
    log_c = numpyro.deterministic("log_C", mu_c + data["arch_x"] @ beta + sigma_c * resid)
    # A family with data is sampled through its boundary for the mean architecture,
    # g_f = μ_C − log θ_f ~ N(μ_C − μ_θ, σ_θ), which its cells pin directly (log θ_f itself moves
    # with μ_C: posterior correlation 0.7 on simulated data), if its cells bracket the boundary;
    # a family without data (the reference, whose θ is fixed, or a held-out one) or with data on
    # one side of its boundary only is non-centred: a free draw is a funnel.
    is_ref = data["family_index"] == data["reference"]
    pinned = data["family_fitted"] & data["family_bracketed"] & ~is_ref
    with numpyro.plate("family", n_family):
        loc, scale = jnp.where(pinned, mu_c - mu_t, 0.0), jnp.where(pinned, sigma_t, 1.0)
        raw = numpyro.sample("log_theta_raw", dist.Normal(loc, scale))
        z_k = numpyro.sample("z_kappa", dist.Normal(0.0, 1.0))
        sigma_l = numpyro.sample("sigma_level", dist.HalfNormal(PRIOR["sigma_level"]))
    with numpyro.plate("level", n_level):
        z_l = numpyro.sample("z_level", dist.Normal(0.0, 1.0))
    rho = numpyro.sample("rho", dist.Beta(*PRIOR["rho"]))

    free_theta = jnp.where(pinned, mu_c - raw, mu_t + sigma_t * raw)
    log_theta = numpyro.deterministic("log_theta", jnp.where(is_ref, 0.0, free_theta))
    kappa = numpyro.deterministic("kappa", saturate(jnp.exp(mu_k + sigma_k * z_k)))
    effect = numpyro.deterministic("level_effect", sigma_l[data["level_family"]] * z_l)

    f, a, lv = data["cell_family"], data["cell_arch"], data["cell_level"]
    logits = kappa[f] * (log_c[a] - log_theta[f] - effect[lv] - data["log_bits"])
    probs = jax.nn.sigmoid(logits)
    with numpyro.plate("cell", data["trials"].shape[0]):
        numpyro.sample("successes", count_distribution(data["trials"], probs, rho), obs=obs)


def count_distribution(trials, probs, rho) -> dist.Distribution:
    """A cell's success count: beta-binomial with mean P and intra-cell correlation ρ."""
    probs = jnp.clip(probs, P_EDGE, 1.0 - P_EDGE)
    phi = 1.0 / rho - 1.0
    return dist.BetaBinomial(probs * phi, (1.0 - probs) * phi, total_count=trials)


def count_cdf(k: int, n: int, p: np.ndarray, rho: np.ndarray | None) -> np.ndarray:
    """P(successes <= k) of a cell of n runs per draw, [S] (numpy): beta-binomial with each
    draw's ρ, binomial for a posterior saved before ρ existed (`rho` None)."""
    if rho is None:
        return binom.cdf(k, n, p)
    p = np.clip(p, P_EDGE, 1.0 - P_EDGE)
    phi = 1.0 / rho - 1.0
    return betabinom.cdf(k, n, p * phi, (1.0 - p) * phi)


def saturate(k):
    """The slope κ of a log-normal k: ≈ k below ~20, at most KAPPA_MAX (jnp or numpy)."""
    return k / (1.0 + (k / KAPPA_MAX) ** 4) ** 0.25


def population(draws: dict, mu: str, sigma: str, rng: np.random.Generator, shape: tuple = ()) -> np.ndarray:
    """A new member of a population per draw: N(μ, σ), [S, *shape]."""
    n = draws[mu].shape[0]
    scale = draws[sigma].reshape(n, *(1,) * len(shape))
    return draws[mu].reshape(n, *(1,) * len(shape)) + scale * rng.standard_normal((n, *shape))


def new_arch_log_c(draws: dict, x: np.ndarray, n_fitted: int, rng: np.random.Generator) -> np.ndarray:
    """log C of an architecture outside the fit with centred covariates x [J], per draw [S]:
    μ_C is the fitted architectures' mean, so a new one's residual has variance σ²(1 + 1/A)."""
    n = draws["mu_log_C"].shape[0]
    resid = draws["sigma_log_C"] * np.sqrt(1 + 1 / n_fitted) * rng.standard_normal(n)
    return draws["mu_log_C"] + draws["beta"] @ np.asarray(x, np.float64) + resid


def family_draws(draws: dict, family: int | None, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(log θ, κ, σ_level) per draw [S] of a fitted family, or of a new one from the population
    (its level spread: a fitted family's, picked at random per draw)."""
    if family is not None:
        return draws["log_theta"][:, family], draws["kappa"][:, family], draws["sigma_level"][:, family]
    n, n_f = draws["sigma_level"].shape
    sigma = draws["sigma_level"][np.arange(n), rng.integers(n_f, size=n)]
    log_theta = population(draws, "mu_log_theta", "sigma_log_theta", rng)
    kappa = saturate(np.exp(population(draws, "mu_log_kappa", "sigma_log_kappa", rng)))
    return log_theta, kappa, sigma


def success_probability(
    draws: dict[str, np.ndarray],
    log_bits: np.ndarray,
    rng: np.random.Generator,
    arch: int | None = None,
    family: int | None = None,
    levels: list[int | None] | None = None,
    arch_x: np.ndarray | None = None,
    marginal: bool = False,
) -> np.ndarray:
    """P(success) per posterior draw, [S, len(log_bits)].

    `marginal`: a new level's δ is integrated out per draw (Gauss-Hermite) instead of drawn, so
    the spread over draws is what the parameters do not know, and P is the success rate of a
    typical level of those bits. Without it (a fresh δ per draw) the draws are the predictive
    distribution of one new level's rate, which is what a held-out cell's count is scored on.

    `arch`: a fitted architecture, or None for one outside the fit (its centred covariates
    `arch_x` through the regression; without them, one at the fitted ones' mean covariates). `family`:
    a fitted family or None for a new one. `levels[i]`: the fitted level of point i (its fitted
    effect δ), or None for a new level (a fresh δ ~ N(0, σ_f)), which is what a held-out cell is.
    Draws are the flattened posterior: {site: [S, ...]}.
    """
    n = draws["mu_log_C"].shape[0]
    log_bits = np.asarray(log_bits, np.float64).reshape(1, -1)
    if arch is not None:
        log_c = draws["log_C"][:, arch]
    else:  # a new architecture; without covariates, one at the fitted architectures' mean
        x = np.zeros(draws["beta"].shape[1]) if arch_x is None else arch_x
        log_c = new_arch_log_c(draws, x, draws["log_C"].shape[1], rng)
    log_theta, kappa, sigma = family_draws(draws, family, rng)
    fresh = np.ones((n, log_bits.shape[1]), bool)
    effect = sigma[:, None] * rng.standard_normal((n, log_bits.shape[1]))
    for i, lv in enumerate(levels or ()):
        if lv is not None:
            effect[:, i], fresh[:, i] = draws["level_effect"][:, lv], False
    gap = log_c[:, None] - log_theta[:, None] - log_bits
    p = expit(kappa[:, None] * (gap - effect))
    if marginal:  # E over δ ~ N(0, σ) of sigmoid(κ (gap − δ)), probabilists' Hermite nodes
        x, w = np.polynomial.hermite_e.hermegauss(GH_NODES)
        inner = expit(kappa[:, None, None] * (gap[..., None] - sigma[:, None, None] * x))
        p = np.where(fresh, inner @ (w / w.sum()), p)
    return p


def boundary_bits(draws: dict[str, np.ndarray]) -> np.ndarray:
    """b*_{a,f} = C_a / θ_f per draw, [S, A, F]: where a typical level is learned half the time."""
    return np.exp(draws["log_C"][:, :, None] - draws["log_theta"][:, None, :])

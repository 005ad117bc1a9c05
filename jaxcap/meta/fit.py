"""Fit the meta-model with NUTS and check the chains.

`fit(table, settings)` runs NUTS (Hoffman & Gelman 2011, arXiv:1111.4246) on the cells of a
`meta_data.Table` in float64 and returns a `Posterior`, always on the host CPU: NUTS is a long
chain of tiny, data-dependent steps, which an accelerator runs one kernel launch at a time
(docs/meta-model.md#run-times). Chains run in parallel over CPU host devices when the process
reserved them (`reserve_chain_devices`), otherwise one after another; the K fits of a
validation share one compiled program. Diagnostics: split R-hat and effective sample size
(Vehtari et al. 2021, arXiv:1903.08008) of every site and the number of divergent transitions;
`warnings` names what is bad. The posterior is saved and read by jaxcap/meta/posterior.py.

Details: docs/design/meta-model.md#fitting-with-nuts.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import NamedTuple

import jax
import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS, log_likelihood

from jaxcap.core import keys as host_keys
from jaxcap.core.progress import tqdm
from jaxcap.fields import Float, Int, setting
from jaxcap.meta import model as metamodel
from jaxcap.meta.cells import (
    FOLD_KEYS,
    arch_design,
    cell_data,
    choose_reference,
    pad_to_class,
    stack_folds,
)
from jaxcap.meta.data import Table
from jaxcap.meta.difficulty import family_info
from jaxcap.meta.posterior import SITES, Posterior
from jaxcap.meta.records import FamilyInfo, FitDiagnostics, NutsRecord, PosteriorMeta

# The sampler-health targets report.md checks (scorecard.sampler_health). R-hat <= 1.01 and bulk
# ESS >= 100 per chain, 400 with 4 chains: Vehtari et al. 2021. Divergences, the project's own
# bar: none in the full fit, whose posterior gives C and its interval, and <= 0.1 % of the
# post-warmup transitions in a validation fit, whose K fits only score held-out predictions
RHAT_MAX, ESS_MIN, DIVERGENCE_RATE_MAX = 1.01, 400, 0.001


@dataclasses.dataclass(frozen=True)
class NutsSettings:
    """config.calibrate.nuts: each `setting` is a field's default and its config rule."""

    warmup: int = setting(1000, Int(1))
    # 4,000 draws at acceptance 0.97: every sampler target met with margin on two random streams
    # of the real default (docs/meta-model.md); 2,000 at 0.95 met them on some streams only
    samples: int = setting(4000, Int(1))
    chains: int = setting(4, Int(1, 64))
    target_accept: float = setting(0.97, Float(0.5, 0.999))
    seed: int = setting(0, Int(0))


def reserve_chain_devices(chains: int) -> bool:
    """Ask XLA for `chains` CPU devices so chains run in parallel; False if JAX already started."""
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return False
    import numpyro

    numpyro.set_host_device_count(max(chains, 1))
    return True


def chain_method(chains: int) -> str:
    return "parallel" if len(jax.devices("cpu")) >= chains else "sequential"


def _chain(key, data: dict, obs, settings: NutsSettings):
    """One chain of one fit, traced inside `_chains_on_devices` or `_chains_in_turn`: a one-chain
    MCMC started from the key NumPyro's multi-chain runner gives that chain (`key`: its uint32
    key data, made on the host by jaxcap.core.keys so that no eager key program compiles)."""
    key = jax.random.wrap_key_data(key)
    mcmc = MCMC(
        NUTS(metamodel.model, target_accept_prob=settings.target_accept),
        num_warmup=settings.warmup,
        num_samples=settings.samples,
        num_chains=1,
        progress_bar=False,
    )
    mcmc.run(key, data, obs=obs, extra_fields=("diverging", "num_steps", "energy"))
    samples = mcmc.get_samples()
    # pointwise log-likelihood of every cell under every draw (az.loo, az.waic)
    ll = log_likelihood(metamodel.model, samples, data, obs=obs)["successes"]
    return samples, mcmc.get_extra_fields(), ll


# Every fit: ONE module-level program with the data as arguments, compiled once per table shape
# (the K fits of a validation share it). NumPyro's multi-chain runner retraces per `run` (its
# parallel path pmaps a fresh closure over the data; the sequential one maps unjitted chains):
# on the 2-core CPU the calibrate smoke's 4 validation fits compiled 22 programs, 87 of their
# 111 s, and with one device 414 programs, 74 of 100 s. Chains: one per CPU host device, or one
# after another in one program; the draws are the same either way.
_chains_on_devices = jax.pmap(
    _chain, in_axes=(0, None, None, None), static_broadcasted_argnums=(3,), backend="cpu"
)


@functools.partial(jax.jit, static_argnums=(3,))
def _chains_in_turn(keys, data: dict, obs, settings: NutsSettings):
    return jax.lax.map(lambda key: _chain(key, data, obs, settings), keys)


class NutsRun(NamedTuple):
    draws: dict[str, np.ndarray]  # site -> [chains, draws, K, ...]
    diverging: np.ndarray  # [chains, draws, K]
    steps: np.ndarray  # leapfrog steps per draw [chains, draws, K]
    seconds: float
    energy: np.ndarray  # Hamiltonian energy per draw [chains, draws, K] (ArviZ's BFMI)
    log_lik: np.ndarray  # pointwise log-likelihood per cell [chains, draws, K, cells] (az.loo)


def run_nuts(data: dict, successes: np.ndarray, settings: NutsSettings) -> NutsRun:
    """NUTS on K fits of one table (FOLD_KEYS stacked on a leading axis, see
    meta_cells.stack_folds), one after another with one compiled program; chains in parallel
    over the CPU host devices when the process has one per chain (`reserve_chain_devices`),
    otherwise in turn, with the same draws. Cells, architectures, families and levels are padded
    to a size class (`meta_cells.pad_to_class`), so tables of similar size share the program."""
    start = time.time()
    real = {
        "arch": len(data["arch_fitted"]),
        "family": len(data["family_index"]),
        "level": len(data["level_family"]),
    }
    n_cells = successes.shape[1]
    data, successes = pad_to_class(data, successes)
    values: dict[str, list] = {k: [] for k in SITES}
    diverging, steps, energy, log_lik = [], [], [], []
    n_fits = successes.shape[0]
    # the host CPU even beside an accelerator (the module docstring says why): numpy inputs are
    # uncommitted, so the default device places `_chains_in_turn`; `_chains_on_devices` names it
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        chains = _chains_on_devices if chain_method(settings.chains) == "parallel" else _chains_in_turn
        # one bar over the fits: a compiled fit has no per-draw callbacks (they would slow it)
        for k in tqdm(range(n_fits), desc="NUTS fits", unit="fit", dynamic_ncols=True, mininterval=1.0):
            fold = {name: np.asarray(v[k] if name in FOLD_KEYS else v) for name, v in data.items()}
            key = host_keys.fold_in(host_keys.key_data(settings.seed), k)
            obs = np.asarray(successes[k], np.float64)
            # each chain starts from the key NumPyro's multi-chain runner would split from `key`
            samples, extra, ll = chains(host_keys.split(key, settings.chains), fold, obs, settings)
            for name, dims in SITES.items():  # the pads dropped (meta_cells.pad_to_class)
                keep = (Ellipsis, *(slice(real.get(d)) for d in dims))
                values[name].append(np.asarray(samples[name], np.float64)[keep])
            diverging.append(np.asarray(extra["diverging"]))
            steps.append(np.asarray(extra["num_steps"]))
            energy.append(np.asarray(extra["energy"], np.float64))
            log_lik.append(np.asarray(ll, np.float64).reshape(*extra["energy"].shape[:2], -1)[..., :n_cells])
    return NutsRun(
        {name: np.stack(v, axis=2) for name, v in values.items()},
        np.stack(diverging, axis=2),
        np.stack(steps, axis=2),
        time.time() - start,
        np.stack(energy, axis=2),
        np.stack(log_lik, axis=2),
    )


def fold_draws(draws: dict[str, np.ndarray], k: int) -> dict[str, np.ndarray]:
    """Fold k of a K-fold run: {site: [chains, draws, ...]}."""
    return {name: x[:, :, k] for name, x in draws.items()}


def flatten(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{site: [chains, draws, ...]} -> {site: [chains * draws, ...]}."""
    return {name: x.reshape(-1, *x.shape[2:]) for name, x in draws.items()}


def diagnose(
    draws: dict[str, np.ndarray], diverging: np.ndarray, steps: np.ndarray | None = None
) -> FitDiagnostics:
    """Worst R-hat and smallest ESS over the non-constant entries of every site; divergences;
    the mean leapfrog steps of `steps` (None: not recorded)."""
    rhat, ess = {}, {}
    for name, x in draws.items():
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        varying = flat.std(axis=(0, 1)) > 0  # the reference log θ is exactly 0
        if not varying.any():
            continue
        flat = flat[:, :, varying]
        if flat.shape[0] > 1:
            rhat[name] = float(np.nanmax(split_gelman_rubin(flat)))
        ess[name] = float(np.nanmin(effective_sample_size(flat)))
    warnings = []
    worst_rhat = max(rhat.values(), default=float("nan"))
    if worst_rhat > RHAT_MAX:
        bad = ", ".join(k for k, v in rhat.items() if v > RHAT_MAX)
        warnings.append(f"R-hat {worst_rhat:.3f} > {RHAT_MAX} ({bad}): run more warmup/samples")
    if min(ess.values(), default=0.0) < ESS_MIN:
        bad = ", ".join(k for k, v in ess.items() if v < ESS_MIN)
        warnings.append(f"effective sample size < {ESS_MIN} ({bad}): run more samples")
    n_div = int(diverging.sum())
    if n_div:
        warnings.append(f"{n_div} divergent transitions: intervals may be biased (raise target_accept)")
    return FitDiagnostics(
        max_rhat=worst_rhat,
        min_ess=min(ess.values(), default=float("nan")),
        divergences=n_div,
        transitions=int(diverging.size),
        rhat=rhat,
        ess=ess,
        warnings=warnings,
        mean_steps=None if steps is None else float(steps.mean()),
    )


def table_meta(table: Table, reference: int) -> PosteriorMeta:
    """What a posterior needs to know about its table: labels, budgets, the families' tasks and
    ranges (jaxcap.predict), the levels, the reference and the architectures' covariate centre."""
    return PosteriorMeta(
        archs=table.archs,
        arch_labels=[table.arch_label(a) for a in range(len(table.archs))],
        budgets=[table.budgets(a) for a in range(len(table.archs))],
        families=table.families,
        family_info=[
            FamilyInfo.from_json(family_info(name, [lv.fields for lv in table.levels if lv.family == f]))
            for f, name in enumerate(table.families)
        ],
        levels=list(table.levels),
        reference=reference,
        arch_covariates=list(metamodel.ARCH_COVARIATES),
        arch_center=arch_design(table)["center"].tolist(),  # a new architecture is centred on it
        fingerprint=table.fingerprint,
        n_rows=len(table.rows),
    )


def fit(table: Table, settings: NutsSettings, reference: str = "") -> tuple[Posterior, dict]:
    """Fit on every cell of `table`; returns the posterior and the by-chain arrays to save."""
    ref = choose_reference(table.families, reference)
    data, successes = cell_data(table, ref)
    run = run_nuts(*stack_folds([(data, successes)]), settings)
    draws, diverging = fold_draws(run.draws, 0), run.diverging[:, :, 0]
    meta = dataclasses.replace(
        table_meta(table, ref),
        nuts=NutsRecord(**dataclasses.asdict(settings), chain_method=chain_method(settings.chains)),
        seconds=run.seconds,
        diagnostics=diagnose(draws, diverging, run.steps),
    )
    by_chain = {
        "draws": draws,
        "diverging": diverging,
        "data": data,
        "obs": successes,
        "energy": run.energy[:, :, 0],
        "steps": run.steps[:, :, 0],
        "log_lik": run.log_lik[:, :, 0],
    }
    return Posterior(flatten(draws), meta), by_chain

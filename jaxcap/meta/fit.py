"""Fit the meta-model with NUTS, check the chains, and save / load the posterior.

`fit(table, settings)` runs NUTS (Hoffman & Gelman 2011, arXiv:1111.4246) on the cells of a
`meta_data.Table` in float64 (inside `jax.enable_x64`, so population training stays float32)
and returns a `Posterior`. Chains run in parallel over CPU host devices when the process has
enough of them (`reserve_chain_devices`, which must run before JAX initialises: it changes the
device count of the whole process), otherwise one after another. Diagnostics: split R-hat and
effective sample size (Vehtari et al. 2021, arXiv:1903.08008) of every sampled and derived site,
and the number of divergent transitions; `warnings` names what is bad.

The posterior is written as `posterior.nc`: netCDF groups `posterior`, `sample_stats`,
`observed_data` and `constant_data` in ArviZ's InferenceData layout (readable by
`arviz.from_netcdf` in 0.23 and 1.x) plus a JSON `jaxcap` attribute on `posterior` holding the
labels of architectures, families and levels, the reference family and the diagnostics.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import jax
import numpy as np
import xarray as xr
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS

from jaxcap.meta import model as metamodel
from jaxcap.meta.data import Table, cell_data

SITES = {  # saved sites and their dims beyond (chain, draw)
    "mu_log_C": (),
    "sigma_log_C": (),
    "mu_log_theta": (),
    "sigma_log_theta": (),
    "mu_log_kappa": (),
    "sigma_log_kappa": (),
    "sigma_level": (),
    "log_C": ("arch",),
    "log_theta": ("family",),
    "kappa": ("family",),
    "level_effect": ("level",),
}
RHAT_MAX, ESS_MIN = 1.01, 100  # Vehtari et al. 2021: R-hat < 1.01; ESS >= 100 per estimate at least


@dataclasses.dataclass(frozen=True)
class NutsSettings:
    warmup: int = 500
    samples: int = 500
    chains: int = 4
    target_accept: float = 0.99  # see jaxcap.meta.model: fewer divergences on real tables
    seed: int = 0


@dataclasses.dataclass
class Posterior:
    draws: dict[str, np.ndarray]  # site -> [chain * draw, ...]
    meta: dict  # archs, arch_labels, families, levels, reference, diagnostics, ...

    def family_index(self, name: str) -> int | None:
        return self.meta["families"].index(name) if name in self.meta["families"] else None


def reserve_chain_devices(chains: int) -> bool:
    """Ask XLA for `chains` CPU devices so chains run in parallel; False if JAX already started."""
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return False
    import numpyro

    numpyro.set_host_device_count(max(chains, 1))
    return True


def chain_method(chains: int) -> str:
    if jax.default_backend() != "cpu":
        return "vectorized"  # one accelerator: chains as a batch
    return "parallel" if jax.local_device_count() >= chains else "sequential"


REFERENCE_FAMILIES = ("random_labels", "random_tokens")  # memorization: complexity = stored bits


def choose_reference(families: list[str], preferred: str = "") -> int:
    """The family with θ = 1: `preferred` if fitted, else random-data memorization (C is then in
    memorization-equivalent bits), else the first family of the table (named in the report)."""
    for name in (preferred, *REFERENCE_FAMILIES):
        if name and name in families:
            return families.index(name)
    return 0


def _sampler(settings: NutsSettings, method: str) -> MCMC:
    return MCMC(
        NUTS(metamodel.model, target_accept_prob=settings.target_accept),
        num_warmup=settings.warmup,
        num_samples=settings.samples,
        num_chains=settings.chains,
        chain_method=method,
        progress_bar=False,
    )


def run_nuts(data: dict, successes: np.ndarray, settings: NutsSettings) -> tuple[dict, np.ndarray, float]:
    """NUTS on K stacked fits: ({site: [chains, draws, K, ...]}, diverging [chains, draws], seconds)."""
    start = time.time()
    with jax.enable_x64(True):
        mcmc = _sampler(settings, chain_method(settings.chains))
        data = jax.tree.map(np.asarray, data)
        mcmc.run(jax.random.key(settings.seed), data, obs=np.asarray(successes), extra_fields=("diverging",))
        samples = mcmc.get_samples(group_by_chain=True)
        draws = {}
        for k, dims in SITES.items():
            x = np.asarray(samples[k], np.float64)
            draws[k] = x[..., 0] if not dims else x  # hyperparameters are [chains, draws, K, 1]
        diverging = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    return draws, diverging, time.time() - start


def fold_draws(draws: dict[str, np.ndarray], k: int) -> dict[str, np.ndarray]:
    """Fold k of a K-fold run: {site: [chains, draws, ...]}."""
    return {name: x[:, :, k] for name, x in draws.items()}


def flatten(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{site: [chains, draws, ...]} -> {site: [chains * draws, ...]}."""
    return {name: x.reshape(-1, *x.shape[2:]) for name, x in draws.items()}


def diagnose(draws: dict[str, np.ndarray], diverging: np.ndarray) -> dict:
    """Worst R-hat and smallest ESS over the non-constant entries of every site; divergences."""
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
    return {
        "max_rhat": worst_rhat,
        "min_ess": min(ess.values(), default=float("nan")),
        "divergences": n_div,
        "rhat": rhat,
        "ess": ess,
        "warnings": warnings,
    }


def fit(table: Table, settings: NutsSettings, reference: str = "") -> tuple[Posterior, dict]:
    """Fit on every cell of `table`; returns the posterior and the by-chain arrays to save."""
    ref = choose_reference(table.families, reference)
    data, successes = cell_data(table, ref)
    draws, diverging, seconds = run_nuts(data, successes, settings)
    draws = fold_draws(draws, 0)
    diag = diagnose(draws, diverging)
    meta = {
        "archs": table.archs,
        "arch_labels": [table.arch_label(a) for a in range(len(table.archs))],
        "budgets": [table.budgets(a) for a in range(len(table.archs))],
        "families": table.families,
        "levels": table.levels,
        "reference": ref,
        "fingerprint": table.fingerprint,
        "nuts": {**dataclasses.asdict(settings), "chain_method": chain_method(settings.chains)},
        "seconds": seconds,
        "diagnostics": diag,
        "n_rows": len(table.rows),
    }
    by_chain = {"draws": draws, "diverging": diverging, "data": data, "obs": successes}
    return Posterior(flatten(draws), meta), by_chain


def _coords(meta: dict) -> dict:
    return {
        "arch": meta["arch_labels"],
        "family": meta["families"],
        "level": [f"{meta['families'][lv['family']]} {lv['label']}" for lv in meta["levels"]],
    }


def save_posterior(path: str | Path, posterior: Posterior, by_chain: dict) -> Path:
    """Write posterior.nc (InferenceData layout, h5netcdf) atomically."""
    path = Path(path)
    coords = _coords(posterior.meta)
    draws = by_chain["draws"]
    n_chain, n_draw = draws["mu_log_C"].shape[:2]
    base = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    post = xr.Dataset(
        {k: (("chain", "draw", *SITES[k]), v) for k, v in draws.items()},
        coords={**base, **{d: coords[d] for d in ("arch", "family", "level")}},
        attrs={"jaxcap": json.dumps(posterior.meta), "inference_library": "numpyro"},
    )
    stats = xr.Dataset({"diverging": (("chain", "draw"), by_chain["diverging"])}, coords=base)
    observed = xr.Dataset({"successes": (("cell",), by_chain["obs"][0])})
    dims = {"arch_index": ("arch",), "family_index": ("family",), "level_family": ("level",)}
    data = {
        **by_chain["data"],
        "trials": by_chain["data"]["trials"][0],
        "reference": by_chain["data"]["reference"][0],
    }
    constant = xr.Dataset(
        {k: (dims.get(k, ("cell",) if np.ndim(v) else ()), np.asarray(v)) for k, v in data.items()}
    )
    tmp = path.with_name(path.name + ".tmp")
    for i, (group, ds) in enumerate(
        [
            ("posterior", post),
            ("sample_stats", stats),
            ("observed_data", observed),
            ("constant_data", constant),
        ]
    ):
        ds.to_netcdf(tmp, mode="w" if i == 0 else "a", group=group, engine="h5netcdf")
    tmp.replace(path)
    return path


def read_meta(path: str | Path) -> dict:
    """Only the JSON metadata of a posterior.nc (labels, diagnostics, the stamp of its fit)."""
    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        return json.loads(ds.attrs["jaxcap"])


def load_posterior(path: str | Path) -> Posterior:
    """Read posterior.nc (or the posterior.nc inside a workdir) back into a `Posterior`."""
    path = Path(path)
    if path.is_dir():
        path = path / "posterior.nc"
    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        meta = json.loads(ds.attrs["jaxcap"])
        draws = {k: ds[k].values.reshape(-1, *ds[k].shape[2:]) for k in SITES}
    return Posterior(draws, meta)


def interval(x: np.ndarray, mass: float = 0.9, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Central (equal-tailed) credible interval."""
    tail = (1 - mass) / 2
    return np.quantile(x, tail, axis=axis), np.quantile(x, 1 - tail, axis=axis)


def summarize(x: np.ndarray) -> dict:
    """Median and 50% / 90% central intervals of draws x [S] (NaN-free floats for JSON)."""
    lo50, hi50 = interval(x, 0.5)
    lo90, hi90 = interval(x, 0.9)
    out = {"median": np.median(x), "lo50": lo50, "hi50": hi50, "lo90": lo90, "hi90": hi90}
    return {k: float(v) if math.isfinite(v) else None for k, v in out.items()}

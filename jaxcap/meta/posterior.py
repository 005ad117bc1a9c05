"""The fitted meta-model's posterior: its draws and labels, and `posterior.nc` on disk.

`posterior.nc` holds netCDF groups `posterior`, `posterior_predictive`, `sample_stats`,
`log_likelihood`, `observed_data` and `constant_data` in ArviZ's InferenceData layout (readable
by `arviz.from_netcdf` in 0.23 and 1.x) plus a JSON `jaxcap` attribute on `posterior` holding the
labels of architectures, families and levels, the reference family and the diagnostics. Every
group names its coordinates: a cell (one architecture, family and level) carries its labels
(`cell_arch_label`, `cell_family_label`, `cell_level_label`; `constant_data` also holds the
model's integer indices `cell_arch`, ...), and `posterior_predictive.successes` is one draw of
each cell's success count per posterior draw from the model's own likelihood (beta-binomial of
the cell's P and ρ), so `az.plot_ppc` compares the observed counts with replicated ones. A
posterior derived from a fit (the pilot's, `save_draws`) has no sample_stats or log_likelihood.
Details: docs/design/meta-model.md#the-posterior-file.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import xarray as xr

from jaxcap.meta.records import PosteriorMeta

SITES = {  # saved sites and their dims beyond (chain, draw)
    "mu_log_C": (),
    "sigma_log_C": (),
    "beta": ("covariate",),
    "mu_log_theta": (),
    "sigma_log_theta": (),
    "mu_log_kappa": (),
    "sigma_log_kappa": (),
    "sigma_level": ("family",),
    "log_C": ("arch",),
    "log_theta": ("family",),
    "kappa": ("family",),
    "level_effect": ("level",),
    "rho": (),
}


@dataclasses.dataclass
class Posterior:
    draws: dict[str, np.ndarray]  # site -> [chain * draw, ...]
    meta: PosteriorMeta  # the labels, the reference family, how the fit ran

    def family_index(self, name: str) -> int | None:
        return self.meta.family_index(name)


def _coords(meta: PosteriorMeta) -> dict:
    return {
        "arch": meta.arch_labels,
        "family": meta.families,
        "level": [meta.level_name(i) for i in range(len(meta.levels))],
        "covariate": meta.arch_covariates,
    }


def _posterior_group(draws: dict[str, np.ndarray], meta: PosteriorMeta) -> xr.Dataset:
    """The `posterior` group: every site [chain, draw, ...] with its labels, the meta as JSON."""
    n_chain, n_draw = draws["mu_log_C"].shape[:2]
    base = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    return xr.Dataset(
        {k: (("chain", "draw", *SITES[k]), v) for k, v in draws.items()},
        coords={**base, **_coords(meta)},
        attrs={"jaxcap": json.dumps(meta.to_json()), "inference_library": "numpyro"},
    )


def _cell_coords(meta: PosteriorMeta, data: dict) -> dict:
    """The `cell` dimension's coordinates: its index and each cell's architecture, family and
    level in words."""
    coords = _coords(meta)
    return {
        "cell": np.arange(len(data["trials"])),
        "cell_arch_label": ("cell", [coords["arch"][a] for a in data["cell_arch"]]),
        "cell_family_label": ("cell", [coords["family"][f] for f in data["cell_family"]]),
        "cell_level_label": ("cell", [coords["level"][lv] for lv in data["cell_level"]]),
    }


def predictive_counts(draws: dict[str, np.ndarray], data: dict, rng: np.random.Generator) -> np.ndarray:
    """One replicated success count per cell and posterior draw, int [chain, draw, cell]: the model's
    likelihood (jaxcap/meta/model.py) with each draw's parameters, a cell's rate drawn from
    Beta(P φ, (1 − P) φ) and its count from Binomial(trials, rate); a held-out cell (0 trials)
    replicates 0."""
    from jaxcap.meta.model import P_EDGE  # the model's clip: JAX and NumPyro load only here

    f, a, lv = (np.asarray(data[k]) for k in ("cell_family", "cell_arch", "cell_level"))
    logits = draws["kappa"][..., f] * (
        draws["log_C"][..., a]
        - draws["log_theta"][..., f]
        - draws["level_effect"][..., lv]
        - data["log_bits"]
    )
    p = np.clip(1.0 / (1.0 + np.exp(-logits)), P_EDGE, 1.0 - P_EDGE)
    if "rho" not in draws:  # a posterior from before ρ: the binomial
        return rng.binomial(np.asarray(data["trials"], np.int64), p)
    phi = np.maximum(1.0 / draws["rho"] - 1.0, 1e-12)[..., None]  # ρ -> 1: all seeds agree
    rate = rng.beta(p * phi, (1.0 - p) * phi)
    return rng.binomial(np.asarray(data["trials"], np.int64), rate)


def _cell_groups(meta: PosteriorMeta, draws: dict[str, np.ndarray], data: dict, obs) -> dict[str, xr.Dataset]:
    """The cell-indexed groups of draws [chain, draw, ...] on cells `data` (cells.cell_data) with
    observed successes `obs`: observed_data, posterior_predictive and constant_data."""
    n_chain, n_draw = draws["mu_log_C"].shape[:2]
    base = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    cell = _cell_coords(meta, data)
    # counts as integers: ArviZ draws a discrete variable's predictive check as one
    observed = xr.Dataset({"successes": (("cell",), np.rint(obs).astype(np.int64))}, coords=cell)
    replicated = predictive_counts(draws, data, np.random.default_rng(0))
    predictive = xr.Dataset({"successes": (("chain", "draw", "cell"), replicated)}, coords={**base, **cell})
    dims = {
        "arch_x": ("arch", "covariate"),
        "arch_rot": ("covariate", "basis"),
        "arch_fitted": ("arch",),
        "family_index": ("family",),
        "family_fitted": ("family",),
        "family_bracketed": ("family",),
        "level_family": ("level",),
    }
    labels = {**_coords(meta), "basis": np.arange(np.shape(data["arch_rot"])[1]), **cell}
    constant = xr.Dataset(
        {k: (dims.get(k, ("cell",) if np.ndim(v) else ()), np.asarray(v)) for k, v in data.items()},
        coords=labels,
    )
    return {"posterior_predictive": predictive, "observed_data": observed, "constant_data": constant}


def _write_groups(path: Path, groups: dict[str, xr.Dataset]) -> Path:
    """Every group into one netCDF file (h5netcdf), atomically."""
    tmp = path.with_name(path.name + ".tmp")
    for i, (group, ds) in enumerate(groups.items()):
        ds.to_netcdf(tmp, mode="w" if i == 0 else "a", group=group, engine="h5netcdf")
    tmp.replace(path)
    return path


def save_posterior(path: str | Path, posterior: Posterior, by_chain: dict) -> Path:
    """Write posterior.nc (InferenceData layout, h5netcdf) atomically."""
    draws = by_chain["draws"]
    n_chain, n_draw = draws["mu_log_C"].shape[:2]
    base = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    steps = by_chain["steps"]
    stats = xr.Dataset(
        {
            "diverging": (("chain", "draw"), by_chain["diverging"]),
            "energy": (("chain", "draw"), by_chain["energy"]),
            "n_steps": (("chain", "draw"), steps),
            # NUTS doubles its trajectory: 2^depth - 1 leapfrog steps for a full tree of depth `depth`
            "tree_depth": (("chain", "draw"), np.ceil(np.log2(steps + 1)).astype(np.int64)),
        },
        coords=base,
    )
    data = by_chain["data"]
    cells = _cell_groups(posterior.meta, draws, data, by_chain["obs"])
    log_lik = xr.Dataset(
        {"successes": (("chain", "draw", "cell"), by_chain["log_lik"])},
        coords={**base, **_cell_coords(posterior.meta, data)},
    )
    groups = {
        "posterior": _posterior_group(draws, posterior.meta),
        "posterior_predictive": cells["posterior_predictive"],
        "sample_stats": stats,
        "log_likelihood": log_lik,
        "observed_data": cells["observed_data"],
        "constant_data": cells["constant_data"],
    }
    return _write_groups(Path(path), groups)


def chain_layout(posterior: Posterior) -> tuple[int, int]:
    """(chains, draws per chain) of flat draws: the fit's NUTS chains where they divide the draws
    (a posterior derived draw for draw from a fit keeps its layout), else one chain."""
    n = posterior.draws["mu_log_C"].shape[0]
    nuts = posterior.meta.nuts
    chains = nuts.chains if nuts is not None and nuts.chains > 0 and n % nuts.chains == 0 else 1
    return chains, n // chains


def save_draws(path: str | Path, posterior: Posterior, data: dict | None = None, obs=None) -> Path:
    """Write a posterior.nc of flat draws, atomically: a posterior that is not a NUTS run of its
    own (a new family appended to a fit by importance sampling, jaxcap/meta/pilot/fit.py) has no
    sampler statistics to save. Its draws go in `chain_layout` (consecutive draws, chain by
    chain); with its cells (`data`, cells.cell_data, and their observed successes `obs`) it also
    gets observed_data, posterior_predictive and constant_data, written as `save_posterior`
    writes them."""
    chains, per_chain = chain_layout(posterior)
    draws = {k: v.reshape(chains, per_chain, *v.shape[1:]) for k, v in posterior.draws.items()}
    groups = {"posterior": _posterior_group(draws, posterior.meta)}
    if data is not None:
        groups.update(_cell_groups(posterior.meta, draws, data, obs))
    return _write_groups(Path(path), groups)


def read_meta(path: str | Path) -> PosteriorMeta:
    """Only the metadata of a posterior.nc (labels, diagnostics, the stamp of its fit)."""
    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        return PosteriorMeta.from_json(json.loads(ds.attrs["jaxcap"]))


def load_posterior(path: str | Path) -> Posterior:
    """Read posterior.nc (or the posterior.nc inside a workdir) back into a `Posterior`."""
    path = Path(path)
    if path.is_dir():
        path = path / "posterior.nc"
    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        meta = PosteriorMeta.from_json(json.loads(ds.attrs["jaxcap"]))
        # a posterior saved before a site existed (rho) loads without it; one saved with a site
        # the model no longer has (the lapse rates of an earlier model) loads without that
        draws = {k: ds[k].values.reshape(-1, *ds[k].shape[2:]) for k in SITES if k in ds}
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

"""A NumPyro NUTS run as a complete ArviZ InferenceData, and its diagnostics from ArviZ.

`az.from_numpyro(mcmc)` alone gives a posterior that `az.summary` reads, but `az.bfmi` needs the
sampler's `energy` and `az.loo` a `log_likelihood` group, and NumPyro collects neither unless
asked: the energy only when `mcmc.run(..., extra_fields=EXTRA_FIELDS)` names it, the pointwise
log likelihood only when ArviZ is told to recompute it from the model and its arguments. This
module asks for both and checks they are there, so every group the ArviZ diagnostics read is
present: posterior, sample_stats (energy, diverging, tree_depth, step size, acceptance),
log_likelihood and observed_data.

Details: docs/design/meta-model.md#the-posterior-file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# What NUTS must record for a full sample_stats group (pass to `mcmc.run(extra_fields=...)`).
EXTRA_FIELDS = (
    "diverging",
    "energy",
    "num_steps",
    "potential_energy",
    "accept_prob",
    "adapt_state.step_size",
)


def inference_data(mcmc, coords: dict | None = None, dims: dict | None = None) -> Any:
    """The InferenceData of a finished NUTS run, with the log likelihood of every observed site.

    Args:
      mcmc: a `numpyro.infer.MCMC` after `run(..., extra_fields=EXTRA_FIELDS)`; its model
        arguments (kept by `run`) are what the log likelihood and observed data are computed from.
      coords, dims: named coordinates and the dims of each variable, as `az.from_numpyro` takes.
    Raises:
      ValueError: the run did not record the sampler's energy (one line saying what to pass).
    """
    import arviz as az

    fields = mcmc.get_extra_fields()
    missing = [f for f in ("energy", "diverging", "num_steps") if f not in fields]
    if missing:
        raise ValueError(
            f"the NUTS run recorded no {', '.join(missing)}; allowed: "
            "mcmc.run(..., extra_fields=jaxcap.meta.inference_data.EXTRA_FIELDS)"
        )
    idata = az.from_numpyro(mcmc, log_likelihood=True, coords=coords, dims=dims)
    stats = idata["sample_stats"]
    if "tree_depth" not in stats and "n_steps" in stats:  # ArviZ versions that do not derive it
        stats["tree_depth"] = (np.log2(stats["n_steps"]).astype(int) + 1).astype(np.int64)
    for group in ("posterior", "sample_stats", "log_likelihood", "observed_data"):
        if group not in _groups(idata):
            raise ValueError(f"the InferenceData has no {group} group; the model has no observed site?")
    return idata


def _groups(idata) -> list[str]:
    """Group names of an InferenceData (ArviZ 0.x) or a DataTree (ArviZ 1.x)."""
    return list(idata.groups()) if callable(getattr(idata, "groups", None)) else list(idata.children)


def diagnostics(idata) -> dict[str, float]:
    """The convergence numbers to print beside a posterior, all from ArviZ: the largest
    rank-normalized R-hat, the smallest bulk and tail ESS, the number of divergent transitions,
    and the smallest per-chain BFMI (below 0.3: the sampler explores the energy poorly)."""
    import arviz as az

    values = lambda ds: np.concatenate([np.ravel(v) for v in ds.data_vars.values()])
    return {
        "r_hat": float(np.nanmax(values(az.rhat(idata)))),
        "ess_bulk": float(np.nanmin(values(az.ess(idata, method="bulk")))),
        "ess_tail": float(np.nanmin(values(az.ess(idata, method="tail")))),
        "divergences": int(np.asarray(idata["sample_stats"]["diverging"]).sum()),
        "bfmi_min": float(np.min(az.bfmi(idata))),
    }

"""posterior.nc as ArviZ reads it: a posterior-predictive group (replicated success counts drawn
from the model's likelihood) that `az.plot_ppc` draws against the observed counts, and labelled
coordinates in every cell-indexed group, constant_data included. The draws here are the
model's prior draws on a simulated table (no NUTS: seconds), saved the way a fit is saved."""

import json

import numpy as np
import pytest

from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.cells import cell_data
from jaxcap.meta.records import PosteriorMeta

az = pytest.importorskip("arviz")
CHAINS, DRAWS = 2, 30


@pytest.fixture(scope="module")
def saved(meta_simulated, tmp_path_factory):
    """A posterior.nc whose draws are prior draws of the model on the simulated table."""
    import jax
    from numpyro.infer import Predictive

    _, table, _ = meta_simulated
    data, successes = cell_data(table, reference=0)
    held = np.arange(len(successes)) % 7 == 0  # a few held-out cells: 0 trials, 0 replicated
    data = {**data, "trials": np.where(held, 0.0, data["trials"])}
    successes = np.where(held, 0.0, successes)
    prior = Predictive(metamodel.model, num_samples=CHAINS * DRAWS)(jax.random.key(0), data, obs=successes)
    draws = {
        k: np.asarray(prior[k]).reshape(CHAINS, DRAWS, *prior[k].shape[1:]) for k in meta_posterior.SITES
    }
    zeros = np.zeros((CHAINS, DRAWS))
    by_chain = {
        "draws": draws,
        "diverging": zeros.astype(bool),
        "energy": zeros,
        "steps": zeros + 7,
        "data": data,
        "obs": successes,
        "log_lik": np.zeros((CHAINS, DRAWS, len(successes))),
    }
    flat = {k: v.reshape(CHAINS * DRAWS, *v.shape[2:]) for k, v in draws.items()}
    posterior = meta_posterior.Posterior(flat, meta_fit.table_meta(table, 0))
    path = meta_posterior.save_posterior(
        tmp_path_factory.mktemp("post") / "posterior.nc", posterior, by_chain
    )
    return path, data, successes


def test_the_posterior_predictive_replicates_each_cell_from_the_likelihood(saved):
    path, data, successes = saved
    idata = az.from_netcdf(path)  # InferenceData on arviz 0.23, DataTree on 1.x
    replicated = idata["posterior_predictive"]["successes"].values
    assert replicated.shape == (CHAINS, DRAWS, len(successes))
    assert ((replicated >= 0) & (replicated <= data["trials"])).all() and replicated.dtype.kind == "i"
    assert (replicated[..., data["trials"] == 0] == 0).all()  # held out: nothing to replicate
    assert replicated.std() > 0  # draws, not a copy of the observed counts


def test_cells_and_constant_data_carry_labelled_coordinates(saved):
    path, data, _ = saved
    idata = az.from_netcdf(path)
    meta = PosteriorMeta.from_json(json.loads(idata["posterior"].attrs["jaxcap"]))
    constant = idata["constant_data"]
    assert list(constant["family"].values) == meta.families
    assert list(constant["arch"].values) == meta.arch_labels
    assert list(constant["covariate"].values) == meta.arch_covariates
    first = int(data["cell_family"][0])
    for group in ("observed_data", "posterior_predictive", "log_likelihood", "constant_data"):
        cells = idata[group]
        assert list(cells["cell"].values) == list(range(len(data["trials"])))
        assert cells["cell_family_label"].values[0] == meta.families[first]
    assert str(constant["cell_level_label"].values[0]).startswith(meta.families[first])


def test_az_plot_ppc_draws_the_observed_against_the_replicated_counts(saved):
    path, _, _ = saved
    idata = az.from_netcdf(path)
    if hasattr(az, "plot_ppc"):  # ArviZ 0.23
        drawn = az.plot_ppc(idata, var_names=["successes"], num_pp_samples=20, random_seed=0)
    else:  # ArviZ 1.x (arviz-plots)
        drawn = az.plot_ppc_dist(idata, var_names=["successes"])
    assert drawn is not None


def test_flat_draws_are_saved_in_the_fits_chains_with_the_groups_arviz_reads(saved, tmp_path):
    """save_draws (a derived posterior: the pilot's) keeps the fit's chain layout and writes the
    cells, so az.summary has chains to compare and az.plot_ppc has counts to draw."""
    import dataclasses

    from jaxcap.meta.records import NutsRecord

    path, data, successes = saved
    fitted = meta_posterior.load_posterior(path)
    meta = dataclasses.replace(fitted.meta, nuts=NutsRecord(warmup=10, samples=DRAWS, chains=CHAINS))
    derived = meta_posterior.save_draws(
        tmp_path / "posterior.nc", meta_posterior.Posterior(fitted.draws, meta), data, successes
    )
    idata = az.from_netcdf(derived)
    assert (
        dict(idata["posterior"].sizes)["chain"] == CHAINS and dict(idata["posterior"].sizes)["draw"] == DRAWS
    )
    back = meta_posterior.load_posterior(derived)
    assert all(np.array_equal(back.draws[k], v) for k, v in fitted.draws.items())  # chain by chain
    rhat = az.summary(idata, var_names=["mu_log_C", "log_C", "kappa"], kind="diagnostics")["r_hat"]
    assert np.isfinite(np.asarray(rhat, float)).all()
    observed = idata["observed_data"]["successes"].values
    assert np.array_equal(observed, successes.astype(np.int64))
    assert idata["posterior_predictive"]["successes"].shape == (CHAINS, DRAWS, len(successes))
    test_az_plot_ppc_draws_the_observed_against_the_replicated_counts((derived, None, None))

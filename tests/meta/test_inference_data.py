"""A NUTS run on a tiny logistic model becomes a full InferenceData: the groups ArviZ's
diagnostics read are there and az.summary, az.bfmi, az.loo and az.plot_trace run on it."""

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

from jaxcap.meta.inference_data import EXTRA_FIELDS, diagnostics, inference_data

matplotlib.use("Agg")
numpyro = pytest.importorskip("numpyro")
az = pytest.importorskip("arviz")
dist = numpyro.distributions
# arviz 0.23's matplotlib backend calls an API matplotlib 3.11 deprecates
pytestmark = [
    pytest.mark.filterwarnings("ignore::matplotlib.MatplotlibDeprecationWarning"),
    pytest.mark.slow,  # NUTS runs: the full tier
]


def logistic(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("item", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ w + b), obs=y)


def run(extra_fields=EXTRA_FIELDS):
    from numpyro.infer import MCMC, NUTS

    key_x, key_y, key_mcmc = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(key_x, (60, 2))
    y = jax.random.bernoulli(key_y, jax.nn.sigmoid(x @ jnp.array([1.5, -1.0]))).astype(jnp.int32)
    mcmc = MCMC(
        NUTS(logistic),
        num_warmup=150,
        num_samples=150,
        num_chains=2,
        chain_method="sequential",
        progress_bar=False,
    )
    mcmc.run(key_mcmc, x, y=y, extra_fields=extra_fields)
    return mcmc


@pytest.fixture(scope="module")
def idata():
    return inference_data(run(), coords={"feature": ["a", "b"]}, dims={"w": ["feature"]})


def test_every_group_the_diagnostics_read(idata):
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(idata.groups())
    assert {"energy", "diverging", "tree_depth"} <= set(idata.sample_stats.data_vars)
    assert idata.posterior.w.dims == ("chain", "draw", "feature")
    assert idata.log_likelihood.y.shape == (2, 150, 60) and idata.observed_data.y.shape == (60,)


def test_arviz_summary_bfmi_loo_and_trace_run(idata):
    summary = az.summary(idata)
    assert {"w[a]", "w[b]", "b"} <= set(summary.index)
    assert az.bfmi(idata).shape == (2,)
    assert np.isfinite(az.loo(idata).elpd_loo)
    assert az.plot_trace(idata).shape == (2, 2)
    numbers = diagnostics(idata)
    assert numbers["r_hat"] == pytest.approx(summary["r_hat"].max(), abs=0.01)  # ArviZ's own R-hat
    assert numbers["divergences"] >= 0 and numbers["bfmi_min"] > 0 and numbers["ess_bulk"] > 10


def test_a_run_without_energy_says_what_to_pass():
    with pytest.raises(ValueError, match=r"recorded no energy, num_steps; allowed: .*EXTRA_FIELDS"):
        inference_data(run(extra_fields=("diverging",)))

"""Padding a fit to its size class (jaxcap/meta/cells.py:pad_to_class) leaves the real
parameters' posterior alone: the padded model's log density is the unpadded one's plus a term
of the pad latents only, whatever the real parameters are."""

import dataclasses

import jax
import numpy as np
from numpyro import handlers
from numpyro.infer.util import log_density

from jaxcap.meta import data as meta_data
from jaxcap.meta import model as metamodel
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta.cells import FOLD_KEYS, cell_data, pad_to_class, size_class, stack_folds

LATENT_DIMS = {"z_C": "arch", "log_theta_raw": "family", "z_kappa": "family", "sigma_level": "family"}
LATENT_DIMS["z_level"] = "level"


def test_size_classes_waste_at_most_a_third_and_grow():
    classes = [size_class(n) for n in range(1, 400)]
    assert classes[:12] == [1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12]
    assert all(c >= n and c <= max(n * 3 // 2 + 1, 2) for n, c in enumerate(classes, 1))
    assert classes == sorted(classes) and len(set(classes)) == 18


# jitted: op by op, the model's log density is hundreds of small eager dispatches
LOG_DENSITY = jax.jit(
    lambda data, obs, params: log_density(metamodel.model, (data,), {"obs": obs}, params)[0]
)


@jax.jit
def _latents(data, obs, key):
    """A draw of every latent site of the model on `data` (its prior); jitted, as LOG_DENSITY."""
    trace = handlers.trace(handlers.seed(metamodel.model, key)).get_trace(data, obs)
    return {k: v["value"] for k, v in trace.items() if v["type"] == "sample" and not v["is_observed"]}


def test_pads_add_a_term_of_their_own_only():
    # 5 architectures, 5 families, 15 levels, 72 cells: each axis pads (6, 6, 16, 96)
    truth = meta_simulate.default_truth(n_levels=3, n_families=5)
    truth = dataclasses.replace(truth, log_c=tuple(np.log([4.0, 8.0, 12.0, 16.0, 24.0])))
    rows, _ = meta_simulate.simulate_rows(truth, seeds=2, rng=np.random.default_rng(1))
    table = meta_data.build_table([r for r in rows if not (r.family == "sim0" and r.bucket == "b1")])
    stacked, obs = stack_folds([cell_data(table, 0)])
    padded, padded_obs = pad_to_class(stacked, obs)
    fold = lambda d: {k: v[0] if k in FOLD_KEYS else v for k, v in d.items()}  # noqa: E731
    real, pad = fold(stacked), fold(padded)
    sizes = {"arch": len(real["arch_fitted"]), "family": len(real["family_index"])}
    sizes["level"] = len(real["level_family"])
    assert len(pad["trials"]) > len(real["trials"]) and len(pad["level_family"]) > sizes["level"]
    assert len(pad["family_index"]) > sizes["family"] and len(pad["arch_fitted"]) > sizes["arch"]
    with jax.enable_x64(True):
        pads = jax.tree.map(np.asarray, _latents(pad, padded_obs[0], jax.random.key(0)))
        gaps = []
        for seed in (1, 2):
            mine = jax.tree.map(np.asarray, _latents(real, obs[0], jax.random.key(seed)))
            params = dict(pads)
            for k, v in mine.items():
                params[k] = np.concatenate([v, pads[k][len(v) :]]) if k in LATENT_DIMS else v
            lp_pad = LOG_DENSITY(pad, padded_obs[0], params)
            lp_real = LOG_DENSITY(real, obs[0], mine)
            gaps.append(float(lp_pad - lp_real))
    assert np.isfinite(gaps).all()
    np.testing.assert_allclose(gaps, gaps[0], rtol=0, atol=1e-9)

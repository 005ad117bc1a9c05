"""The meta-model's NUTS runs as one compiled program per table size class (jaxcap/meta/fit.py):
the K fits of a validation and tables of similar size share it, a fit's draws do not depend on
the fits beside it, and chains on host devices draw exactly what chains in turn draw."""

import logging
import subprocess
import sys

import jax
import numpy as np
import pytest
from helpers import ENV, ROOT

from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta.cells import cell_data, stack_folds

pytestmark = pytest.mark.slow  # NUTS compiles: the full tier

NUTS = meta_fit.NutsSettings(warmup=40, samples=40, chains=2, seed=3)


def _rows():
    truth = meta_simulate.default_truth(n_levels=4)
    rows, _ = meta_simulate.simulate_rows(truth, seeds=2, rng=np.random.default_rng(0))
    return rows


class _Compiles(logging.Handler):
    """The programs XLA compiles while `jax.log_compiles()` is on (their "Compiling ..." lines)."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def emit(self, record):
        if record.getMessage().startswith("Compiling"):
            self.names.append(record.getMessage().split(" with ")[0])


def test_k_fits_compile_once_and_a_fit_does_not_depend_on_its_neighbours():
    rows = _rows()
    table, top = meta_data.build_table(rows), max(r.complexity_bits for r in rows)
    compiles = _Compiles()
    logging.getLogger("jax").addHandler(compiles)
    try:
        with jax.log_compiles():
            both = meta_fit.run_nuts(*stack_folds([cell_data(table, 0), cell_data(table, 1)]), NUTS)
            first = len(compiles.names)
            alone = meta_fit.run_nuts(*stack_folds([cell_data(table, 0)]), NUTS)
            # a table of one level less: smaller, but of the same size class (cells, levels)
            smaller = meta_data.build_table([r for r in rows if r.complexity_bits < top])
            fewer = meta_fit.run_nuts(*stack_folds([cell_data(smaller, 0)]), NUTS)
    finally:
        logging.getLogger("jax").removeHandler(compiles)
    # one sampler program and a few key programs for the two fits (NumPyro's runner compiled
    # ~100 programs per fit), nothing for a third fit of the same shape nor for the smaller
    # table, padded to the same size class; the pads are dropped from what a fit returns
    assert first <= 10 and compiles.names[first:] == [], compiles.names
    assert fewer.draws["level_effect"].shape[-1] == len(smaller.levels) == len(table.levels) - 1
    assert fewer.log_lik.shape[-1] == len(cell_data(smaller, 0)[1]) < len(cell_data(table, 0)[1])
    for name, x in alone.draws.items():
        np.testing.assert_array_equal(both.draws[name][:, :, :1], x, err_msg=name)
    np.testing.assert_array_equal(both.log_lik[:, :, :1], alone.log_lik)
    assert both.draws["log_C"].shape == (NUTS.chains, NUTS.samples, 2, len(table.archs))
    # the two folds are fitted with their own keys: different draws
    assert not np.array_equal(both.draws["log_C"][:, :, 0], both.draws["log_C"][:, :, 1])


CHECK = """
import numpy as np, jax
from jaxcap.meta import fit as meta_fit
assert meta_fit.reserve_chain_devices(2)
from jaxcap.meta import data as meta_data, simulate as meta_simulate
from jaxcap.meta.cells import cell_data
NUTS = meta_fit.NutsSettings(warmup=40, samples=40, chains=2, seed=3)
truth = meta_simulate.default_truth(n_levels=4)
rows, _ = meta_simulate.simulate_rows(truth, seeds=2, rng=np.random.default_rng(0))
data, obs = cell_data(meta_data.build_table(rows), 0)
data = {k: np.asarray(v) for k, v in data.items()}
keys = jax.random.key_data(jax.random.split(jax.random.key(0), NUTS.chains))  # key data, as run_nuts passes
with jax.enable_x64(True):
    a = meta_fit._chains_on_devices(keys, data, np.asarray(obs, np.float64), NUTS)
    b = meta_fit._chains_in_turn(keys, data, np.asarray(obs, np.float64), NUTS)
assert meta_fit.chain_method(NUTS.chains) == "parallel"
for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
print("same draws")
"""


def test_chains_on_devices_draw_what_chains_in_turn_draw():
    """With one CPU device per chain (a process of its own: the count is fixed at JAX's start)."""
    out = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0 and "same draws" in out.stdout, out.stderr[-3000:]

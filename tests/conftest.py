"""Test settings: a persistent compilation cache shared by every test process, XLA:CPU's thread
pool pinned, rank-promotion errors to catch accidental broadcasting across the population axis,
and the fixtures several
files use (a tiny trainer setup, a PostgreSQL server). Shared plain helpers live in helpers.py."""

import contextlib
import os
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / ".jax_cache"
os.environ.setdefault("JAXCAP_CACHE", str(CACHE))  # also seen by launch subprocesses
# LLVM -O2, not XLA's default -O3, for the tests' CPU programs (launch subprocesses inherit it):
# a trade of run time for compile time that pays on a cold cache (a clean clone, CI). The cache
# keys include the flag, so the two never share an entry; runs outside the tests keep -O3.
# Likewise XLA's older loop emitters instead of its fusion emitters, every test passing
# unchanged. And LLVM -O0 for the programs a bucket runs once or once per eval (data, baselines,
# evaluate; `jaxcap.core.runtime.few_options`), whose cost in a test is all compile.
# What each saves: docs/tests.md#compile-levels-measured.
os.environ.setdefault("JAXCAP_XLA_FEW_LEVEL", "0")
# XLA:CPU's intra-op thread pool, pinned: its size ($NPROC, else the cores a process may run on)
# changes how a long contraction is split into partial sums, so without a pin the same test
# computes other numbers on a runner with other cores (docs/engine.md, "bfloat16 on the CPU:
# same command, same numbers"). 2: this 2-core CPU's own default, so no measured number moves.
os.environ.setdefault("NPROC", "2")
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    fast_compile = "--xla_backend_optimization_level=2 --xla_cpu_use_fusion_emitters=false"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {fast_compile}".strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from jaxcap.core.runtime import enable_compilation_cache  # noqa: E402

enable_compilation_cache(CACHE)
jax.config.update("jax_numpy_rank_promotion", "raise")


def pytest_collection_modifyitems(config, items):
    """How two xdist workers share the work (`--dist loadfile --no-loadscope-reorder`, set in
    pyproject.toml): one file's tests run in one worker, so a module-scoped launch and the file's
    in-process compiles happen once, not once per worker; and the files with slow tests are dealt
    first, so that a long end-to-end test never starts last while short ones fill in the end;
    among them, the `late` ones last: they launch what other files launch (the smoke configs), so
    by then most of their programs are in the shared compilation cache."""
    marked = lambda item, name: item.get_closest_marker(name) is not None  # noqa: E731
    items.sort(key=lambda item: (not marked(item, "slow"), marked(item, "late")))  # stable: files stay whole


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL URL (JAXCAP_TEST_POSTGRES_URL or a throwaway server); skip if there is none."""
    from postgres_server import Unavailable, postgres_url

    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_url())
        except Unavailable as e:
            pytest.skip(f"no PostgreSQL server: {e}")
        yield url


@pytest.fixture(scope="session")
def modmod_smoke(tmp_path_factory):
    """configs/modmod.py:smoke launched once per test process through the real entry point:
    (its workdir, the finished launch). Readers only: a test that writes copies it first."""
    from helpers import MODMOD_SMOKE, launch

    workdir = tmp_path_factory.mktemp("modmod_smoke")
    return workdir, launch(*MODMOD_SMOKE, "--workdir", str(workdir))


@pytest.fixture
def tiny():
    """A tiny binop task + model + settings shared by the trainer tests (one compile, cached)."""
    from jaxcap import tasks
    from jaxcap.core.train import TrainSettings
    from jaxcap.models import ModelConfig

    task = tasks.build({"name": "binop", "operation": "add", "p": 11, "train_fraction": 0.5})
    model = ModelConfig.for_task(task.spec, n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    settings = TrainSettings(steps=20, chunk_steps=10, batch_size=16, eval_batch_size=64)
    return task, model, settings


@pytest.fixture(scope="session")
def fork_server():
    """This test process's fork_server.ForkServer (helpers.fork_server, the one `launch` uses):
    launches without ~5 s of imports each."""
    from helpers import fork_server

    return fork_server()


@pytest.fixture(scope="session")
def meta_simulated():
    """The meta-model's simulated table: default_truth(n_levels=6), 2 archs x 4 families x 6
    levels x 3 seeds, rng 0: (truth, table, level effects). Readers only."""
    import numpy as np

    from jaxcap.meta import data as meta_data
    from jaxcap.meta import simulate as meta_simulate

    truth = meta_simulate.default_truth(n_levels=6)
    rows, effects = meta_simulate.simulate_rows(truth, seeds=3, rng=np.random.default_rng(0))
    return truth, meta_data.build_table(rows), effects


@pytest.fixture(scope="session")
def meta_fitted(meta_simulated):
    """One NUTS fit (helpers.meta_nuts) of `meta_simulated`: (posterior, by-chain arrays), read by
    test_metamodel and test_meta_anchor, so a test process fits it once. Readers only."""
    from helpers import meta_nuts

    from jaxcap.meta import fit as meta_fit

    return meta_fit.fit(meta_simulated[1], meta_nuts())

"""Test settings: a persistent compilation cache shared by every test process, rank-promotion
errors to catch accidental broadcasting across the population axis, and tiny shared configs."""

import os
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / ".jax_cache"
os.environ.setdefault("JAXCAP_CACHE", str(CACHE))  # also seen by launch subprocesses

import jax  # noqa: E402
import pytest  # noqa: E402

from jaxcap.population import DEFAULT_HPARAMS  # noqa: E402
from jaxcap.runtime import enable_compilation_cache  # noqa: E402

enable_compilation_cache(CACHE)
jax.config.update("jax_numpy_rank_promotion", "raise")

HP = {**DEFAULT_HPARAMS, "learning_rate": 3e-3}


def killer(appends: int, json_delay_s: float = 0.0) -> str:
    """A `python -c` launch that dies like SIGKILL (os._exit: nothing flushed or closed) right
    after its `appends`-th batch of evals was stored: the kill-and-resume tests. `json_delay_s`
    delays Orbax's writes of checkpoint JSON (as a large state does), so saves are in flight."""
    return f"""
import asyncio, os, sys
import jaxcap.store as store
from orbax.checkpoint._src.handlers.json_checkpoint_handler import JsonCheckpointHandler
save_json = JsonCheckpointHandler._save_fn
async def late(self, x, directory):
    await asyncio.sleep({json_delay_s})
    await save_json(self, x, directory)
JsonCheckpointHandler._save_fn = late
appended = 0
original = store.Store.append_evals
def append_then_die(self, *a, **k):
    global appended
    original(self, *a, **k)
    appended += 1
    if appended == {appends}:
        os._exit(137)
store.Store.append_evals = append_then_die
from absl import app
from jaxcap import launch
sys.argv = ["launch", *sys.argv[1:]]
app.run(launch.main, flags_parser=launch._parse)
"""


@pytest.fixture
def tiny():
    """A tiny binop task + model + settings shared by the trainer tests (one compile, cached)."""
    from jaxcap import tasks
    from jaxcap.models import ModelConfig
    from jaxcap.train import TrainSettings

    task = tasks.build({"name": "binop", "operation": "add", "p": 11, "train_fraction": 0.5})
    model = ModelConfig.for_task(task.spec, n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    settings = TrainSettings(steps=20, chunk_steps=10, batch_size=16, eval_batch_size=64)
    return task, model, settings

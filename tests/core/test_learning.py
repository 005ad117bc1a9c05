"""An honest end-to-end learning test: a population on modular addition goes from chance to
generalization (Power et al. 2022, arXiv:2201.02177), on a CPU-sized budget (~20 s)."""

import jax
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.core.population import DEFAULT_HPARAMS, grid_members, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig


@pytest.mark.slow
def test_population_groks_modular_addition():
    task = tasks.build({"name": "binop", "operation": "add", "p": 47, "train_fraction": 0.7})
    model = ModelConfig.for_task(task.spec, n_layers=1, d_model=64, n_heads=4, d_head=16, d_ff=256)
    settings = TrainSettings(steps=1200, chunk_steps=200, batch_size=128, clip_norm=1.0)
    defaults = {**DEFAULT_HPARAMS, "weight_decay": 1.0, "warmup_steps": 10.0}
    members = grid_members(defaults, {"learning_rate": (2e-3, 3e-3)}, {}, {}, seeds=2)
    program = make_population(settings, task, model)
    keys, hp = stack(members, base_seed=0)
    state, data = program.init(keys, hp), program.data(keys, hp)
    val = [jax.device_get(program.evaluate(state, hp, data))["val_accuracy"]]  # before training
    for _ in range(settings.steps // settings.chunk_steps):
        state, _ = program.chunk(state, hp, data)
        metrics = jax.device_get(program.evaluate(state, hp, data))
        val.append(metrics["val_accuracy"])
    val = np.array(val)  # [eval, member]
    chance = task.chance({})
    assert (val[0] < 3 * chance).all(), f"not at chance before training: {val[0]} (chance {chance:.3f})"
    assert (val[1] < 0.5).all(), f"generalized before memorizing: {val[1]}"
    assert np.median(val[-1]) > 0.95 and (val[-1] > 0.9).all(), f"did not generalize: {val[-1]}"
    assert metrics["train_accuracy"].min() > 0.95

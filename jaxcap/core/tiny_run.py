"""One jit-compiled training step, one evaluation and the baselines of a tiny model on any task:
the last check of `python -m jaxcap.main.check_task`.

It runs the real population machinery (`jaxcap.core.train.make_population`: `jax.jit(jax.vmap)`
with the knobs traced, one member per level), at a size that compiles in seconds on a CPU, so a
task that is not jittable, whose loss is not finite, whose spec names a metric the evaluation
does not return, or whose chance or shortcut (what members.jsonl compares with) cannot be
scored fails here, before a launch spends a compile on it.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.fields import ConfigError
from jaxcap.models import ModelConfig
from jaxcap.tasks import Task
from jaxcap.tasks.checks import Check, run_check

TINY_MODEL = dict(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
TINY_SETTINGS = TrainSettings(steps=1, chunk_steps=1, batch_size=8, eval_batch_size=64)


def tiny_model(task: Task) -> ModelConfig:
    """A 1-layer d_model-16 model for the task (causal attention where the task predicts tokens)."""
    attention = "causal" if task.causal else "bidirectional"
    return ModelConfig.for_task(task.spec, attention=attention, **TINY_MODEL)


def _label(knobs: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in knobs.items()) or "the defaults"


def _step(task: Task, levels: list[dict]) -> str:
    name, spec = type(task).__name__, task.spec
    members = [Member(index=i, seed=0, hparams=dict(DEFAULT_HPARAMS), knobs=k) for i, k in enumerate(levels)]
    program = make_population(TINY_SETTINGS, task, tiny_model(task))
    keys, hp = stack(members, base_seed=0)
    data = program.data(keys, hp)
    state, stats = program.chunk(program.init(keys, hp), hp, data)
    metrics = jax.device_get(program.evaluate(state, hp, data))
    diverged = np.asarray(state.diverged)
    if diverged.any():
        at = _label(levels[int(np.flatnonzero(diverged)[0])])
        raise ConfigError(
            f"{name}: the training loss or its gradient is not finite after one step at {at}; allowed: "
            "finite (targets in range, weights >= 0, finite inputs)"
        )
    for field in ("success_metric", "select_metric"):
        metric = getattr(spec, field)
        if metric not in metrics:
            raise ConfigError(
                f"{name}.spec.{field}: got {metric!r}, which the evaluation does not return; allowed: "
                f"one of {', '.join(sorted(metrics))}"
            )
        values = np.asarray(metrics[metric], np.float64)
        if not np.isfinite(values).all():
            at = _label(levels[int(np.flatnonzero(~np.isfinite(values))[0])])
            raise ConfigError(f"{name}: {metric} is not finite after one step at {at}; allowed: finite")
    baselines = jax.device_get(program.baselines(hp, data))
    for kind in ("chance", *(("shortcut",) if task.shortcut_name else ())):
        key = f"{kind}_{spec.success_metric}"
        values = np.asarray(baselines.get(key, np.nan), np.float64)
        if not np.isfinite(values).all():
            method = "shortcut" if kind == "shortcut" else "make_data (its train split)"
            raise ConfigError(
                f"{name}.{method}: the {kind} baseline of {spec.success_metric} is not finite; allowed: a "
                "finite score (jaxcap.core.baselines)"
            )
    loss = float(np.asarray(stats.loss).max())
    return (
        f"one jitted step, eval and baselines of a 1-layer d_model-16 model, {len(levels)} levels: "
        f"loss {loss:.3g}, {spec.success_metric} {float(np.median(metrics[spec.success_metric])):.3g}"
    )


def step_check(task: Task, levels: list[dict]) -> Check:
    """The `step` check: one member per level (its knobs), seed 0, default hyperparameters; the
    model is trained, evaluated and compared with its input-blind chance (and shortcut)."""
    return run_check("step", lambda: _step(task, levels), f"{type(task).__name__} in a jitted training step")

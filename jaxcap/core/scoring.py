"""Scoring any predictor on a split: the trained model, and the baselines it is compared with.

A split is scored whole (up to the task's n_eval cap) in fixed-size batches, padded with
zero-weight rows, inside a `lax.scan`, so memory stays bounded and a split of any size is scored
exactly: the objective accumulates sums per batch (`losses.Objective.sums`) and turns them into
means once (`finalize`). `score_splits` scores every eval split of a member and adds the task's
derived metrics (e.g. macro F1 from per-class copies of a split).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcap.core import losses
from jaxcap.tasks import Split, Task

PredictFn = Callable[[jax.Array], jax.Array]  # inputs [B, ...] -> outputs (logits) [B, ...]


def score_split(
    predict: PredictFn, split: Split, mask, objective: losses.Objective, n_outputs: int, batch_size: int
) -> dict[str, jax.Array]:
    """The objective's metrics of `predict` on `split` (one member)."""
    n_batches = -(-split.size // batch_size)
    size = -(-split.size // n_batches)  # sized evenly: fewer padding rows than batches
    pad = n_batches * size - split.size
    padded = jax.tree.map(lambda a: jnp.concatenate([a, jnp.zeros((pad,) + a.shape[1:], a.dtype)]), split)
    batches = jax.tree.map(lambda a: a.reshape((n_batches, size) + a.shape[1:]), padded)

    def body(total, batch: Split):
        sums = objective.sums(predict(batch.inputs), batch.targets, batch.weights, mask, batch.optimum)
        # cast to the carry: a float64 model (or float64 baseline tables under x64) still sums into
        # the float32 totals the scan started with
        return jax.tree.map(lambda t, s: t + s.astype(t.dtype), total, sums), None

    zeros = objective.zeros(n_outputs, split.optimum is not None)
    total, _ = jax.lax.scan(body, zeros, batches)
    return objective.finalize(total)


def score_splits(
    predict: PredictFn, task: Task, splits: dict[str, Split], mask, n_outputs: int, batch_size: int
) -> dict[str, jax.Array]:
    """{split_metric: value} of `predict` on every split, plus the task's derived metrics."""
    objective = losses.OBJECTIVES[task.spec.kind]
    out = {}
    for name, split in splits.items():
        for metric, value in score_split(predict, split, mask, objective, n_outputs, batch_size).items():
            out[f"{name}_{metric}"] = value
    return {**out, **task.derived_metrics(out, splits)}

"""What every held-out score is compared with: chance, the task's shortcut, and split overlap.

A held-out score means little alone: **chance** is the best input-blind predictor, fitted on
the member's training split only and scored on every split like the model; **shortcut** is the
score of a task's obvious strategy that reads the input but does not solve it
(`Task.shortcut`); **overlap** is the measured fraction of val and test inputs that occur in the
training split. All computed on device, once per member (`make_baselines`).

Details: docs/design/tasks.md#what-a-score-is-compared-with.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcap.core.losses import masked
from jaxcap.core.scoring import PredictFn, score_splits
from jaxcap.tasks import Split, Task
from jaxcap.tasks.holdout import overlap, row_hash

_SURE = 30.0  # logit margin of a constant one-hot answer (softmax ~ 1 - 1e-13)


def class_frequencies(train: Split, n_outputs: int, mask) -> jax.Array:
    """Log class frequencies of the scored training targets: [C] (one answer per example) or
    [T, C] (one per position), add-½ smoothed over the member's valid classes."""
    targets, weights = train.targets, train.weights
    if targets.ndim == 1:
        counts = jnp.zeros((n_outputs,), jnp.float32).at[targets].add(weights)
    else:
        t = jnp.broadcast_to(jnp.arange(targets.shape[1]), targets.shape)
        counts = jnp.zeros((targets.shape[1], n_outputs), jnp.float32).at[t, targets].add(weights)
    valid = jnp.ones((n_outputs,), jnp.float32) if mask is None else mask.astype(jnp.float32)
    smoothed = (counts + 0.5) * valid.reshape((1,) * (counts.ndim - 1) + valid.shape)
    return masked(jnp.log(smoothed / smoothed.sum(-1, keepdims=True)), mask)


def commonest_sequence(train: Split, n_outputs: int) -> jax.Array:
    """[T, C] logits of the commonest scored target sequence of the training split, answered at
    every position (its exact-match rate is the best constant answer's)."""
    scored = train.weights > 0
    active = scored.any(axis=1)
    h = jnp.where(active, row_hash(jnp.where(scored, train.targets, -1)), jnp.uint32(0xFFFFFFFF))
    sorted_h = jnp.sort(h)
    count = jnp.searchsorted(sorted_h, h, side="right") - jnp.searchsorted(sorted_h, h, side="left")
    mode = train.targets[jnp.argmax(jnp.where(active, count, 0))]
    return _SURE * (jax.nn.one_hot(mode, n_outputs) - 1.0)


def _constant(table: jax.Array) -> PredictFn:
    return lambda inputs: jnp.broadcast_to(table, (inputs.shape[0],) + table.shape)


def blind_predictors(task: Task, train: Split, n_outputs: int, mask) -> dict[str, PredictFn]:
    """The input-blind predictors fitted on `train`: {'frequencies'[, 'sequence']}."""
    if task.spec.kind == "regress":
        w = train.weights[:, None]
        return {"frequencies": _constant((train.targets * w).sum(0) / jnp.maximum(w.sum(), 1e-9))}
    out = {"frequencies": _constant(class_frequencies(train, n_outputs, mask))}
    if train.targets.ndim > 1:
        out["sequence"] = _constant(commonest_sequence(train, n_outputs))
    return out


def make_baselines(task: Task, n_outputs: int, batch_size: int) -> Callable:
    """`baselines(knobs, data) -> {name: scalar}` for one member: chance_<split>_<metric>,
    shortcut_<split>_<metric> (tasks with a shortcut), overlap_val and overlap_test."""

    def baselines(knobs: dict, data: dict[str, Split]) -> dict[str, jax.Array]:
        mask = task.output_mask(knobs)
        splits = task.eval_splits(data)
        blind = {
            name: score_splits(predict, task, splits, mask, n_outputs, batch_size)
            for name, predict in blind_predictors(task, data["train"], n_outputs, mask).items()
        }
        chance = blind["frequencies"]
        if "sequence" in blind:  # exact match: the better constant answer on train
            better = blind["sequence"]["train_exact"] > chance["train_exact"]
            for key in (k for k in chance if k.endswith("_exact")):
                chance[key] = jnp.where(better, blind["sequence"][key], chance[key])
        out = {f"chance_{k}": v for k, v in chance.items()}
        if task.shortcut_name:
            shortcut = score_splits(
                lambda x: task.shortcut(x, knobs), task, splits, mask, n_outputs, batch_size
            )
            out.update({f"shortcut_{k}": v for k, v in shortcut.items()})
        for name in ("val", "test"):
            out[f"overlap_{name}"] = overlap(data["train"], data[name])
        return out

    return baselines

"""A dataset task's examples on the host: arrays at its seq_len, fixed splits, inferred fields, chance.

`host_arrays` pads the pool (`jaxcap.tasks.dataset.encoding`) to the task's seq_len and derives
targets and weights by kind: one class per example (weight 1), one label per input token (weight 1
on the row's tokens), the next token (position t predicts token t + 1 of the row) or K floats.
`host_splits` is the split the task's host-side numbers (chance, complexity, the level checks) are
computed on: the user's, or a cut of one fixed permutation (seed 0), since those numbers belong to
the task, not to a member's key.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from jaxcap.tasks.dataset import encoding
from jaxcap.tasks.retrieval import REGRESS_METRICS

REGRESS_SPEC = REGRESS_METRICS  # regression: scored as the built-in regression tasks are


def host_arrays(task: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs [N, T] int32, targets, weights) of every example, T = the task's seq_len."""
    return _host_arrays(task.source().stamped(), task.seq_len)


@functools.lru_cache(maxsize=8)
def _host_arrays(source: encoding.Source, seq_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pool = encoding.load(source)
    n, width = pool.inputs.shape
    extra = max(seq_len - width, 0)
    pad = source.pad_id if source.input == "ids" else encoding.PAD
    per_position = source.kind == "sequence"
    side = ((0, 0), (0, extra) if per_position else (extra, 0))
    inputs = np.pad(pool.inputs, side, constant_values=pad)[:, :seq_len]
    positions = np.arange(inputs.shape[1])[None, :]
    if source.kind in ("classify", "regress"):
        targets = pool.targets.astype(np.int32 if source.kind == "classify" else np.float32)
        return inputs, targets, np.ones(n, np.float32)
    if source.target:  # one label per input token
        targets = np.pad(pool.targets, ((0, 0), (0, extra)))[:, :seq_len].astype(np.int32)
        return inputs, targets, (positions < pool.lengths[:, None]).astype(np.float32)
    targets = np.concatenate([inputs[:, 1:], np.zeros((n, 1), np.int32)], axis=1)
    return inputs, targets, (positions < pool.lengths[:, None] - 1).astype(np.float32)


def host_splits(pool: encoding.Pool, sizes: tuple[int, int, int]) -> dict[str, np.ndarray]:
    """{split: example indices}: the user's splits, or a cut of the permutation of seed 0."""
    if pool.split is not None:
        return {name: np.nonzero(pool.split == i)[0] for i, name in enumerate(encoding.SPLIT_NAMES)}
    order = np.random.default_rng(0).permutation(pool.size)
    cut = np.cumsum((0, *sizes))
    return {name: order[cut[i] : cut[i + 1]] for i, name in enumerate(encoding.SPLIT_NAMES)}


def inferred(pool: encoding.Pool, task: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The values of the 0 fields `names` that the pool decides."""
    seq_len = max(int(pool.lengths.max()), 1) if "seq_len" in names else task.seq_len
    out: dict[str, Any] = {"seq_len": seq_len}
    if "vocab_size" in names:
        padded = bool((pool.lengths < seq_len).any())
        out["vocab_size"] = max(int(pool.column_max.max()), task.pad_id if padded else 0) + 1
    if "n_classes" in names:
        if task.kind == "regress":
            out["n_classes"] = int(pool.targets.shape[1])
        else:
            out["n_classes"] = int(pool.targets.max()) + 1
    if "alphabet" in names:
        out["alphabet"] = pool.alphabet
    return {k: v for k, v in out.items() if k in names}


def chance(
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray], train: np.ndarray, test: np.ndarray, kind: str
) -> float:
    """The best input-blind score from the train examples `train` (indices): majority class
    frequency, per-position majority frequency, or (regress) the NMSE on `test` of the train mean."""
    _, targets, weights = arrays
    if kind == "regress":
        mean = targets[train].mean(axis=0)
        y = targets[test]
        mse = ((y - mean[None, :]) ** 2).mean()
        return float(mse / max(float(y.var(axis=0).mean()), 1e-12))
    t, w = targets[train], weights[train]
    if kind == "classify":
        return float(np.bincount(t, weights=w).max() / max(w.sum(), 1e-12))
    n_classes = int(t.max()) + 1
    counts = np.zeros((t.shape[1], n_classes))
    np.add.at(counts, (np.broadcast_to(np.arange(t.shape[1]), t.shape), t), w)
    return float(counts.max(axis=1).sum() / max(w.sum(), 1e-12))

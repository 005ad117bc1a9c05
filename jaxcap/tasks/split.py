"""A set of examples, the unit every task produces and every evaluation scores."""

from __future__ import annotations

import jax
from flax import struct


@struct.dataclass
class Split:
    """A set of examples. inputs: [N, T] int32 tokens, or [N, T, input_dim] float32 vectors;
    targets: [N] or [N, T] int32 classes, or [N, K] float32 for regression; weights: one per
    scored answer ([N] or [N, T]), 0 where nothing is scored. optimum (optional, like weights):
    the loss in nats of the true process on each target, where it is known (language tasks);
    evaluation then reports the model's excess over it."""

    inputs: jax.Array
    targets: jax.Array
    weights: jax.Array
    optimum: jax.Array | None = None

    def take(self, idx: jax.Array) -> Split:
        return jax.tree.map(lambda a: a[idx], self)

    def head(self, n: int) -> Split:
        return jax.tree.map(lambda a: a[:n], self)

    @property
    def size(self) -> int:
        return self.inputs.shape[0]

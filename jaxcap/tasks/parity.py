"""Parity of n bits, full or sparse: the classic hard case for gradient descent.

The input is n uniform random bits followed by an '=' token; the answer, read at the last
position, is the XOR of the bits at k secret positions (Barak et al. 2022 [1]). k = n is full
parity. The secret subset is fixed by `secret_seed` (the same for every member, so seeds
vary only the initialization, split and batches): the first k entries of a fixed random
permutation of the n positions. `k` is a per-member knob, so every sparsity level of a sweep
trains in one program; the subsets are nested (the k-subset contains the (k-1)-subset).

Details: docs/design/tasks.md#parity.

[1] Barak, Edelman, Goel, Kakade, Malach, Zhang 2022, "Hidden progress in deep learning: SGD
    learns parities near the computational limit", arXiv:2207.08799.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets

MAX_ENUMERABLE_BITS = 20  # 2^20 inputs is the largest finite dataset held on device


def secret_ranks(n: int, secret_seed: int) -> np.ndarray:
    """rank[i] = where position i comes in the fixed random order; the secret is rank < k."""
    order = np.random.default_rng(secret_seed).permutation(n)
    return np.argsort(order).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class Parity(Task):
    """XOR of k secret bits out of n (`k` a knob; k = n is full parity)."""

    n: int = 16
    k: int = 3
    secret_seed: int = 0

    SCHEMA = {**Task.SCHEMA, "n": Int(1, 4096), "k": Int(1, 4096), "secret_seed": Int(0)}

    def check(self) -> None:
        if self.k > self.n:
            raise ConfigError(f"config.task.k: got {self.k}; allowed: at most config.task.n ({self.n})")
        if self.train_fraction > 0 and self.train_size > 0:
            raise ConfigError(
                "config.task.train_size: set either train_size (sampled) or train_fraction (all 2^n "
                "inputs split), not both"
            )
        if self.train_fraction > 0 and self.n > MAX_ENUMERABLE_BITS:
            raise ConfigError(
                f"config.task.train_fraction: n = {self.n} bits has too many inputs to enumerate; "
                f"allowed: n <= {MAX_ENUMERABLE_BITS}, or train_size / a stream"
            )
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="parity",
            kind="classify",
            vocab_size=3,  # 0, 1, '='
            seq_len=self.n + 1,
            n_outputs=2,
            readout="last",
            knobs=("k",),
        )

    def secret_mask(self, k: jax.Array) -> jax.Array:
        """[n] bool: the member's k secret positions."""
        return jnp.asarray(secret_ranks(self.n, self.secret_seed)) < k

    def _split(self, bits_NxN: jax.Array, knobs: dict[str, jax.Array]) -> Split:
        secret = self.secret_mask(knobs["k"]).astype(jnp.int32)
        targets = (bits_NxN * secret[None, :]).sum(-1) % 2
        equals = jnp.full((bits_NxN.shape[0], 1), 2, jnp.int32)
        inputs = jnp.concatenate([bits_NxN, equals], axis=1)
        return Split(inputs, targets, ones_like_targets(targets))

    def n_examples(self) -> int | None:
        return 2**self.n if self.train_fraction > 0 else None

    def examples(self, knobs):
        if self.train_fraction == 0:
            return None
        x = jnp.arange(2**self.n, dtype=jnp.int32)
        bits = (x[:, None] >> jnp.arange(self.n - 1, -1, -1, dtype=jnp.int32)[None, :]) & 1
        return self._split(bits, knobs)

    def draw(self, key, knobs, n):
        return self._split(jax.random.bernoulli(key, 0.5, (n, self.n)).astype(jnp.int32), knobs)

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        k = int(knobs["k"])
        return math.log2(sum(math.comb(self.n, j) for j in range(k + 1)))

    def chance(self, knobs: dict[str, Any]) -> float:
        return 0.5

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Parity:
        return cls(**cfg)

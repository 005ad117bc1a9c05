"""Binary operations on a finite set, the grokking family (Power et al. 2022, arXiv:2201.02177).

Inputs are the four tokens `a ∘ b =`; the answer, read at the last position, is the element
a ∘ b. Operations: (a + b), (a − b), (a × b) mod p, (a ÷ b) mod p = a · b^(p−2) mod p with
b ≠ 0 (p prime), and composition in the symmetric group S_k, (σ ∘ τ)(i) = σ(τ(i)), elements
numbered in lexicographic order. The train set is a fraction of all valid pairs.

The operation table is computed once on the host with NumPy (it has at most a few hundred
thousand entries); splits and batches are drawn on device from each member's key.

Complexity: log2 n bits for n elements — the information in one answer, as for x mod N.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from functools import cached_property
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxcap.fields import Choice, ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets

OPERATIONS = ("add", "sub", "mul", "div", "perm")


def operation_table(operation: str, p: int, k: int) -> np.ndarray:
    """table[a, b] = a ∘ b, or -1 where the pair is not in the domain (b = 0 for div)."""
    if operation == "perm":
        perms = np.array(list(itertools.permutations(range(k))))  # lexicographic: [k!, k]
        composed = perms[:, perms]  # composed[s, t, i] = perms[s, perms[t, i]] = (s ∘ t)(i)
        codes = perms @ (k ** np.arange(k - 1, -1, -1))  # increasing, as perms are sorted
        return np.searchsorted(codes, composed @ (k ** np.arange(k - 1, -1, -1))).astype(np.int32)
    a, b = np.arange(p)[:, None], np.arange(p)[None, :]
    if operation == "add":
        return ((a + b) % p).astype(np.int32)
    if operation == "sub":
        return ((a - b) % p).astype(np.int32)
    if operation == "mul":
        return ((a * b) % p).astype(np.int32)
    inverse = np.array([pow(int(v), p - 2, p) if v else 0 for v in range(p)])
    return np.where(b == 0, -1, (a * inverse[None, :]) % p).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class BinaryOp(Task):
    """(a ∘ b) mod p for ∘ in add/sub/mul/div, or composition in S_k (operation='perm')."""

    operation: str = "add"
    p: int = 97
    k: int = 5
    train_fraction: float = 0.5

    SCHEMA = {**Task.SCHEMA, "operation": Choice(OPERATIONS), "p": Int(2, 2000), "k": Int(2, 6)}

    def check(self) -> None:
        if self.operation == "div" and any(self.p % d == 0 for d in range(2, int(self.p**0.5) + 1)):
            raise ConfigError(f"config.task.p: got {self.p}; allowed: a prime for operation 'div'")
        super().check()

    @property
    def n_elements(self) -> int:
        return math.factorial(self.k) if self.operation == "perm" else self.p

    @cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        table = operation_table(self.operation, self.p, self.k)
        a, b = np.nonzero(table >= 0)
        return np.stack([a, b], 1).astype(np.int32), table[a, b]

    @property
    def spec(self) -> TaskSpec:
        n = self.n_elements
        return TaskSpec("binop", "classify", vocab_size=n + 2, seq_len=4, n_outputs=n, readout="last")

    def n_examples(self) -> int:
        # counted, not read off the table: the constructor's check needs it, and the table of a
        # large p takes a second to build
        n = self.n_elements
        return n * n - (n if self.operation == "div" else 0)  # div: b = 0 is not in the domain

    def examples(self, knobs):
        pairs, answers = self._pairs
        n = self.n_elements
        a, b = jnp.asarray(pairs[:, 0]), jnp.asarray(pairs[:, 1])
        inputs = jnp.stack([a, jnp.full_like(a, n), b, jnp.full_like(a, n + 1)], axis=1)
        targets = jnp.asarray(answers)
        return Split(inputs, targets, ones_like_targets(targets))

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return math.log2(self.n_elements)

    def chance(self, knobs: dict[str, Any]) -> float:
        answers = self._pairs[1]
        return float(np.bincount(answers).max() / len(answers))

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> BinaryOp:
        return cls(**cfg)

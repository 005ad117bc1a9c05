"""Sorting as a task from outside jaxcap: a worked example of a researcher's own Task subclass.

The input is l <= max_length symbols over `vocab` (then PAD up to max_length, so the shape is
the same at every level); the answer at position i < l is the i-th smallest symbol. `length` is
a knob: every length of a sweep trains in one program. Complexity: an answer is a multiset of l
symbols out of V, so log2 C(l + V - 1, l) bits. Load it by path (docs/tasks.md, "Your own task"):

    python -m jaxcap.main.check_task --task examples/sort_task.py:SortTask --level length=2,4,8
    python -m jaxcap.launch --config examples/sort.py:smoke
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks import Split, Task, TaskSpec


@dataclasses.dataclass(frozen=True)
class SortTask(Task):
    """Sort l <= max_length symbols over `vocab` (l = `length`, a knob)."""

    length: int = 4
    vocab: int = 8
    max_length: int = 8
    n_eval: int = 256

    SCHEMA = {**Task.SCHEMA, "length": Int(1, 64), "vocab": Int(2, 256), "max_length": Int(1, 64)}

    def check(self) -> None:
        if self.length > self.max_length:
            allowed = f"at most config.task.max_length ({self.max_length})"
            raise ConfigError(f"config.task.length: got {self.length}; allowed: {allowed}")
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="sort",
            kind="sequence",
            vocab_size=self.vocab + 1,  # the symbols, then PAD
            seq_len=self.max_length,
            n_outputs=self.vocab,
            readout="all",
            knobs=("length",),
            metric="exact",
            success_metric="test_exact",
            select_metric="val_exact",
        )

    def draw(self, key: jax.Array, knobs: dict, n: int) -> Split:
        scored = jnp.arange(self.max_length)[None, :] < knobs["length"]  # [1, M]: the l positions
        symbols = jax.random.randint(key, (n, self.max_length), 0, self.vocab, jnp.int32)
        inputs = jnp.where(scored, symbols, self.vocab)  # PAD sorts after every symbol
        targets = jnp.where(scored, jnp.sort(inputs, axis=1), 0)
        weights = jnp.broadcast_to(scored, inputs.shape).astype(jnp.float32)
        return Split(inputs, targets, weights)

    def complexity_bits(self, knobs: dict) -> float:
        length = int(knobs["length"])
        return math.log2(math.comb(length + self.vocab - 1, length))

    def chance(self, knobs: dict) -> float:
        """P(the likeliest sorted answer): counts as even as can be, l!/(prod counts!)/V^l."""
        length, v = int(knobs["length"]), self.vocab
        q, r = divmod(length, v)
        ways = math.factorial(length) / (math.factorial(q + 1) ** r * math.factorial(q) ** (v - r))
        return ways / v**length

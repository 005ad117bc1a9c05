"""Uniformly random data, which can only be memorized: the direct probe of capacity in bits.

Two tasks, both sized by the per-member knob `dataset_size` (n), so that one compiled program
trains every n of a capacity sweep: each member draws `max_dataset_size` examples from its key
and only the first n are trained on (batch indices are drawn from [0, n)) and scored (weights
are zero beyond n).

Details: docs/design/tasks.md#random-data.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec

# Extra bits demanded of T·log2 V beyond 2·log2 n: P(two equal inputs) <= n^2 / 2^(1 + 2 log2 n + 20).
DISTINCT_MARGIN_BITS = 20


@dataclasses.dataclass(frozen=True)
class RandomData(Task):
    """Shared plumbing: n_max examples from the key, the first `dataset_size` of them in use."""

    vocab_size: int = 64
    seq_len: int = 8
    dataset_size: int = 256  # per-member knob: n, the number of training examples
    max_dataset_size: int = 0  # n_max, the examples drawn; 0: dataset_size (set from the sweep)
    n_eval: int = 1024  # size of the fresh `val` set (the training set is always scored whole)

    SCHEMA = {
        **Task.SCHEMA,
        "vocab_size": Int(2, 1 << 16),
        "seq_len": Int(1, 4096),
        "dataset_size": Int(1, 1 << 22),
        "max_dataset_size": Int(0, 1 << 22),
    }

    @property
    def n_max(self) -> int:
        return max(self.max_dataset_size, self.dataset_size)

    @property
    def is_stream(self) -> bool:
        return False

    def check(self) -> None:
        for name in ("train_fraction", "train_size"):
            if getattr(self, name):
                raise ConfigError(
                    f"config.task.{name}: got {getattr(self, name)}; allowed: 0 (random-data tasks "
                    "are sized by config.task.dataset_size / config.sweep.task.dataset_size)"
                )

    def split_sizes(self) -> tuple[int, int, int]:
        return self.n_max, self.n_eval, self.n_eval

    def n_examples(self) -> int:
        """The examples one member holds: the training set plus the fresh val and test sets."""
        return self.n_max + 2 * self.n_eval

    def tokens(self, key: jax.Array, n: int) -> jax.Array:
        return jax.random.randint(key, (n, self.seq_len), 0, self.vocab_size, jnp.int32)

    def in_use(self, knobs: dict[str, jax.Array]) -> jax.Array:
        """[n_max] bool: which examples are this member's training set."""
        return jnp.arange(self.n_max) < knobs["dataset_size"]

    def make_data(self, key: jax.Array, knobs: dict[str, jax.Array]) -> dict[str, Split]:
        train = self.draw(jax.random.fold_in(key, 1), knobs, self.n_max)
        used = self.in_use(knobs).reshape((self.n_max,) + (1,) * (train.weights.ndim - 1))
        train = train.replace(weights=jnp.where(used, train.weights, 0.0))
        # val and test are fresh draws: what a memorizer scores on inputs it never stored (chance);
        # an input drawn again by chance is counted in members.jsonl's measured overlap
        fresh = {
            name: self.draw(jax.random.fold_in(key, i), knobs, self.n_eval)
            for i, name in ((2, "val"), (3, "test"))
        }
        return {"train": train, **fresh}

    def sample_batch(self, key, data, knobs, batch_size):
        n = jnp.clip(knobs["dataset_size"], 1, self.n_max)
        return data["train"].take(jax.random.randint(key, (batch_size,), 0, n))

    def eval_splits(self, data: dict[str, Split]) -> dict[str, Split]:
        return dict(data)  # the whole training set: bits stored are measured on all of it

    def overlap_guaranteed(self) -> bool:
        return False

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> RandomData:
        sizes = [cfg.get("dataset_size", cls.dataset_size), *knob_grid.get("dataset_size", ())]
        return cls(**{**cfg, "max_dataset_size": max(max(sizes), cfg.get("max_dataset_size", 0))})


@dataclasses.dataclass(frozen=True)
class RandomLabels(RandomData):
    """n distinct uniform random inputs, each with a uniform label in [0, n_classes)."""

    n_classes: int = 16

    SCHEMA = {**RandomData.SCHEMA, "n_classes": Int(2, 1 << 16)}

    def check(self) -> None:
        super().check()
        need = 2 * math.log2(self.n_max) + DISTINCT_MARGIN_BITS
        have = self.seq_len * math.log2(self.vocab_size)
        if have < need:
            raise ConfigError(
                f"config.task.seq_len: got {self.seq_len} (seq_len·log2 vocab_size = {have:.0f} bits); "
                f"allowed: at least {need:.0f} bits for {self.n_max} distinct random inputs "
                "(raise seq_len or vocab_size, or lower the dataset sizes)"
            )

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="random_labels",
            kind="classify",
            vocab_size=self.vocab_size,
            seq_len=self.seq_len,
            n_outputs=self.n_classes,
            readout="last",
            knobs=("dataset_size",),
            success_metric="train_accuracy",
            select_metric="train_accuracy",
            success_threshold=0.99,
        )

    def draw(self, key, knobs, n):
        key_x, key_y = jax.random.split(key)
        labels = jax.random.randint(key_y, (n,), 0, self.n_classes, jnp.int32)
        return Split(self.tokens(key_x, n), labels, jnp.ones((n,), jnp.float32))

    def targets_per_example(self) -> int:
        return 1

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return int(knobs["dataset_size"]) * math.log2(self.n_classes)

    def chance(self, knobs: dict[str, Any]) -> float:
        return 1.0 / self.n_classes  # the expected accuracy of any input-blind guess


@dataclasses.dataclass(frozen=True)
class RandomTokens(RandomData):
    """n uniform random token sequences for next-token prediction (causal attention)."""

    causal: ClassVar[bool] = True  # next-token prediction: needs model.attention = causal

    vocab_size: int = 16
    seq_len: int = 16

    def check(self) -> None:
        super().check()
        if self.seq_len < 2:
            raise ConfigError(
                f"config.task.seq_len: got {self.seq_len}; allowed: >= 2 (one token predicts the next)"
            )

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="random_tokens",
            kind="sequence",
            vocab_size=self.vocab_size,
            seq_len=self.seq_len,
            n_outputs=self.vocab_size,
            readout="all",
            knobs=("dataset_size",),
            success_metric="train_accuracy",
            select_metric="train_accuracy",
            success_threshold=0.99,
        )

    def draw(self, key, knobs, n):
        x = self.tokens(key, n)
        targets = jnp.concatenate([x[:, 1:], jnp.zeros((n, 1), jnp.int32)], axis=1)
        scored = (jnp.arange(self.seq_len) < self.seq_len - 1).astype(jnp.float32)
        return Split(x, targets, jnp.broadcast_to(scored[None], (n, self.seq_len)))

    def targets_per_example(self) -> int:
        return self.seq_len - 1

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return int(knobs["dataset_size"]) * (self.seq_len - 1) * math.log2(self.vocab_size)

    def chance(self, knobs: dict[str, Any]) -> float:
        return 1.0 / self.vocab_size

"""Associative recall: key–value pairs in context, then a query key; answer its value.

A sequence is `k_1 v_1 k_2 v_2 … k_n v_n PAD … q`: n distinct keys and n values (with
repetition), each drawn from `vocab` symbols (keys and values use separate token ranges),
padded to the longest n of the sweep, then one of the n keys as the query in the last
position, where the answer (the value that followed it) is read out.

Details: docs/design/tasks.md#associative-recall.

[1] Olsson et al. 2022, "In-context Learning and Induction Heads", arXiv:2209.11895.
[2] Sanford, Hsu, Telgarsky 2023, "Representational Strengths and Limitations of Transformers",
    arXiv:2306.02896.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets


@dataclasses.dataclass(frozen=True)
class Recall(Task):
    """n key-value pairs over `vocab` symbols and a query (both knobs)."""

    n_pairs: int = 8
    vocab: int = 16
    max_pairs: int = 0  # 0: set from the sweep; the padded number of pairs
    max_vocab: int = 0  # 0: set from the sweep; the output head size

    SCHEMA = {
        **Task.SCHEMA,
        "n_pairs": Int(1, 1024),
        "vocab": Int(2, 1 << 14),
        "max_pairs": Int(0, 1024),
        "max_vocab": Int(0, 1 << 14),
    }

    def check(self) -> None:
        if self.n_pairs > self.vocab:
            raise ConfigError(
                f"config.task.n_pairs: got {self.n_pairs}; allowed: at most config.task.vocab "
                f"({self.vocab}), since the keys of a sequence are distinct"
            )
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (recall is sampled: "
                "use train_size for a finite train set)"
            )
        super().check()

    @property
    def pairs(self) -> int:
        return max(self.max_pairs, self.n_pairs)

    @property
    def n_symbols(self) -> int:
        return max(self.max_vocab, self.vocab, self.pairs)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="recall",
            kind="classify",
            vocab_size=2 * self.n_symbols + 1,  # keys, values, PAD
            seq_len=2 * self.pairs + 1,
            n_outputs=self.n_symbols,
            readout="last",
            knobs=("n_pairs", "vocab"),
        )

    def draw(self, key, knobs, n):
        s, m = self.n_symbols, self.pairs
        n_pairs, vocab = knobs["n_pairs"], knobs["vocab"]
        key_keys, key_values, key_query = jax.random.split(key, 3)
        # Distinct keys from [0, vocab): the symbols with the m smallest random scores, where
        # symbols >= vocab score above every valid one (n_pairs <= vocab, so pairs < n are valid).
        scores = jax.random.uniform(key_keys, (n, s))
        scores = jnp.where(jnp.arange(s)[None, :] < vocab, scores, 2.0)
        keys_NxM = jnp.argsort(scores, axis=1)[:, :m].astype(jnp.int32)
        values_NxM = jax.random.randint(key_values, (n, m), 0, vocab, jnp.int32)
        which = jax.random.randint(key_query, (n,), 0, n_pairs, jnp.int32)
        query = jnp.take_along_axis(keys_NxM, which[:, None], axis=1)
        targets = jnp.take_along_axis(values_NxM, which[:, None], axis=1)[:, 0]
        live = jnp.arange(m)[None, :] < n_pairs
        pairs = jnp.stack([jnp.where(live, keys_NxM, 2 * s), jnp.where(live, values_NxM + s, 2 * s)], -1)
        inputs = jnp.concatenate([pairs.reshape(n, 2 * m), query], axis=1)
        return Split(inputs, targets, ones_like_targets(targets))

    def output_mask(self, knobs):
        return jnp.arange(self.n_symbols) < knobs["vocab"]

    shortcut_name = "commonest value shown"

    def shortcut(self, inputs, knobs):
        """Log counts of each value among the shown pairs: argmax is the commonest value shown,
        the softmax is the uniform guess over the n shown values."""
        s = self.n_symbols
        values = inputs[:, 1 : 2 * self.pairs : 2] - s  # padding (2s) lands at s: out of range
        counts = (values[:, :, None] == jnp.arange(s)[None, None, :]).sum(1).astype(jnp.float32)
        return jnp.log(jnp.maximum(counts, 1e-12))

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return int(knobs["n_pairs"]) * math.log2(int(knobs["vocab"]))

    def chance(self, knobs: dict[str, Any]) -> float:
        return 1.0 / int(knobs["vocab"])

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Recall:
        pairs = list(knob_grid.get("n_pairs") or [cfg["n_pairs"]])
        vocabs = list(knob_grid.get("vocab") or [cfg["vocab"]])
        if max(pairs) > min(vocabs):  # the grid is a product: every n_pairs meets every vocab
            raise ConfigError(
                f"config.sweep.task.n_pairs: {max(pairs)} pairs with vocab {min(vocabs)} in the grid; "
                "allowed: n_pairs <= vocab for every combination (keys are distinct)"
            )
        return cls(
            **{
                **cfg,
                "max_pairs": max(*pairs, cfg["n_pairs"], cfg.get("max_pairs", 0)),
                "max_vocab": max(*vocabs, cfg["vocab"], cfg.get("max_vocab", 0)),
            }
        )

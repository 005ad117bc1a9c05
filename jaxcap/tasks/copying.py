"""Sequence copying as a causal language model, with a length-generalization split.

Details: docs/design/tasks.md#copying.

[1] Zhou et al. 2023, "What Algorithms can Transformers Learn? A Study in Length
    Generalization", arXiv:2310.16028.
[2] Jelassi et al. 2024, "Repeat After Me: Transformers are Better than State Space Models at
    Copying", arXiv:2402.01032.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec


@dataclasses.dataclass(frozen=True)
class Copying(Task):
    """Copy l <= `length` symbols over `vocab` after a separator (both knobs)."""

    causal: ClassVar[bool] = True  # next-token prediction: needs model.attention = causal

    length: int = 8
    vocab: int = 8
    min_length: int = 1
    longer_by: int = 0  # > 0: a val_long split with lengths in [length + 1, length + longer_by]
    max_length: int = 0  # 0: set from the sweep (longest length + longer_by); the padded size
    max_vocab: int = 0  # 0: set from the sweep; the output head size

    SCHEMA = {
        **Task.SCHEMA,
        "length": Int(1, 1024),
        "vocab": Int(2, 1 << 16),
        "min_length": Int(1, 1024),
        "longer_by": Int(0, 1024),
        "max_length": Int(0, 2048),
        "max_vocab": Int(0, 1 << 16),
    }

    def check(self) -> None:
        if self.min_length > self.length:
            raise ConfigError(
                f"config.task.min_length: got {self.min_length}; allowed: at most config.task.length "
                f"({self.length})"
            )
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (copying is sampled: "
                "use train_size for a finite train set)"
            )
        super().check()

    @property
    def padded_length(self) -> int:
        return max(self.max_length, self.length + self.longer_by)

    @property
    def n_symbols(self) -> int:
        return max(self.max_vocab, self.vocab)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="copying",
            kind="sequence",
            vocab_size=self.n_symbols + 2,  # symbols, SEP, PAD
            seq_len=2 * self.padded_length,
            n_outputs=self.n_symbols,
            readout="all",
            knobs=("length", "vocab"),
            metric="exact",
            success_metric="test_exact",
            select_metric="val_exact",
        )

    def sequences(self, key: jax.Array, vocab: jax.Array, lengths_N: jax.Array) -> Split:
        """Inputs, targets and weights for examples of the given lengths (one per row)."""
        m, sep, pad = self.padded_length, self.n_symbols, self.n_symbols + 1
        n = lengths_N.shape[0]
        symbols_NxM = jax.random.randint(key, (n, m), 0, vocab, jnp.int32)
        t = jnp.arange(2 * m + 1, dtype=jnp.int32)[None, :]  # positions of the full sequence
        length = lengths_N[:, None]
        source = jnp.where(t < length, t, t - length - 1)  # which symbol sits at t
        source = jnp.clip(source, 0, m - 1)
        full = jnp.take_along_axis(symbols_NxM, jnp.broadcast_to(source, (n, 2 * m + 1)), axis=1)
        full = jnp.where(t == length, sep, full)
        full = jnp.where(t > 2 * length, pad, full)
        # Position j predicts full[j + 1]; the copy is full[l + 1 .. 2l], predicted at j = l .. 2l - 1.
        j = t[:, :-1]
        scored = (j >= length) & (j < 2 * length)
        targets = jnp.where(scored, full[:, 1:], 0)
        return Split(full[:, :-1], targets, scored.astype(jnp.float32))

    def _draw_lengths(self, key, knobs, n, low, high) -> Split:
        key_len, key_sym = jax.random.split(key)
        lengths = jax.random.randint(key_len, (n,), low, high + 1, jnp.int32)
        return self.sequences(key_sym, knobs["vocab"], lengths)

    def draw(self, key, knobs, n):
        return self._draw_lengths(key, knobs, n, self.min_length, knobs["length"])

    def make_data(self, key, knobs):
        data = super().make_data(key, knobs)
        if self.longer_by:
            length, key_long = knobs["length"], jax.random.fold_in(key, 4)
            data["val_long"] = self._draw_lengths(
                key_long, knobs, self.n_eval, length + 1, length + self.longer_by
            )
        return data

    def output_mask(self, knobs):
        return jnp.arange(self.n_symbols) < knobs["vocab"]

    shortcut_name = "unigram guess"

    def shortcut(self, inputs, knobs):
        """Log counts of each symbol in the source (the tokens before SEP), at every position."""
        sep = self.n_symbols
        t = jnp.arange(inputs.shape[1])[None, :]
        source = t < jnp.argmax(inputs == sep, axis=1)[:, None]
        onehot = inputs[:, :, None] == jnp.arange(self.n_symbols)[None, None, :]
        counts = (onehot & source[:, :, None]).sum(1).astype(jnp.float32)
        return jnp.broadcast_to(
            jnp.log(jnp.maximum(counts, 1e-12))[:, None, :], (*inputs.shape, self.n_symbols)
        )

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return int(knobs["length"]) * math.log2(int(knobs["vocab"]))

    def chance(self, knobs: dict[str, Any]) -> float:
        lengths = range(self.min_length, int(knobs["length"]) + 1)
        return sum(float(knobs["vocab"]) ** -length for length in lengths) / len(lengths)

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Copying:
        lengths = [cfg["length"], *knob_grid.get("length", ())]
        vocabs = [cfg["vocab"], *knob_grid.get("vocab", ())]
        return cls(
            **{
                **cfg,
                "max_length": max(max(lengths) + cfg.get("longer_by", 0), cfg.get("max_length", 0)),
                "max_vocab": max(max(vocabs), cfg.get("max_vocab", 0)),
            }
        )

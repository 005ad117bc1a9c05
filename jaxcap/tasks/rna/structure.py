"""RNA secondary structure: per-position dot-bracket classes of random RNA sequences.

Details: docs/design/domains.md#rna-structure.

[1] Lorenz et al. 2011, "ViennaRNA Package 2.0", Algorithms Mol. Biol. 6:26.
[2] Nussinov & Jacobson 1980, PNAS 77:6309.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import Choice, ConfigError, Float, Int, Str, TupleOf
from jaxcap.tasks.contract import Split, Task, TaskSpec
from jaxcap.tasks.rna import fold as rna_fold

FOLDINGS = ("vienna", "nussinov")
POOL, LONG = 0, 1  # rna_fold.dataset parts
SUCCESS_EXACT = 0.9  # "learned": the whole structure is right for 90% of held-out sequences


@dataclasses.dataclass(frozen=True)
class RnaStructure(Task):
    """Dot-bracket class per position of random RNA (L static, `gc` a knob)."""

    length: int = 24
    min_length: int = 0  # 0: every sequence has length L
    gc: float = 0.5
    folding: str = "vienna"
    longer_by: int = 0  # > 0: a val_long split with lengths in [length + 1, length + longer_by]
    data_seed: int = 0
    train_size: int = 2048
    n_eval: int = 512
    cache_dir: str = ""  # '': $JAXCAP_RNA_CACHE or ~/.cache/jaxcap/rna
    gc_levels: tuple[float, ...] = ()  # (): set from the sweep; every gc a member may ask for

    SCHEMA = {
        **Task.SCHEMA,
        "length": Int(5, 512),
        "min_length": Int(0, 512),
        "gc": Float(0.0, 1.0),
        "folding": Choice(FOLDINGS),
        "longer_by": Int(0, 512),
        "data_seed": Int(0),
        "train_size": Int(1, 1 << 20),
        "cache_dir": Str(),
        "gc_levels": TupleOf(Float(0.0, 1.0)),
    }

    def check(self) -> None:
        if self.min_length > self.length:
            raise ConfigError(
                f"config.task.min_length: got {self.min_length}; allowed: at most config.task.length "
                f"({self.length}), or 0 for fixed length"
            )
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (RNA data are a "
                "labelled pool: use train_size)"
            )
        super().check()

    def check_resources(self) -> None:
        if self.folding == "vienna" and not rna_fold.has_vienna():  # imports it: not at construction
            raise ConfigError(
                f"config.task.folding: 'vienna' needs the viennarna package, which is not installed; "
                f"install it with {rna_fold.INSTALL} (or set folding='nussinov': a different target)"
            )

    @property
    def is_stream(self) -> bool:
        return False

    @property
    def padded_length(self) -> int:
        return self.length + self.longer_by

    @property
    def levels(self) -> tuple[float, ...]:
        return self.gc_levels or (self.gc,)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="rna" if self.folding == "vienna" else "rna_nussinov",
            kind="sequence",
            vocab_size=5,  # A, C, G, U, PAD
            seq_len=self.padded_length,
            n_outputs=3,  # '.', '(', ')'
            readout="all",
            knobs=("gc",),
            success_metric="test_exact",
            select_metric="val_exact",
            success_threshold=SUCCESS_EXACT,
        )

    # --- host data -------------------------------------------------------------------------------
    def pool(self, gc: float, part: int = POOL) -> dict[str, np.ndarray]:
        """The labelled sequences of one GC level (tokens, lengths, targets[, probs]), unpadded."""
        if part == POOL:
            low, high, n = self.min_length or self.length, self.length, self.train_size + 2 * self.n_eval
        else:
            low, high, n = self.length + 1, self.length + self.longer_by, self.n_eval
        args = (self.folding, self.data_seed, low, high, float(gc), n, part, self.cache_dir)
        try:
            return rna_fold.dataset(*args)
        except ValueError as error:  # too few distinct sequences for the pool
            raise ConfigError(f"config.task.train_size: {error}") from None

    def _stacked(self, part: int) -> tuple[jax.Array, jax.Array]:
        """[G, N, T] int8 tokens and targets of every GC level, padded to the model's length. int8
        keeps the program's constants small; weights are derived on device (tokens != PAD)."""
        tokens, targets = [], []
        for gc in self.levels:
            d = self.pool(gc, part)
            pad = ((0, 0), (0, self.padded_length - d["tokens"].shape[1]))
            tokens.append(np.pad(d["tokens"], pad, constant_values=rna_fold.PAD).astype(np.int8))
            targets.append(np.pad(d["targets"], pad).astype(np.int8))
        return jnp.asarray(np.stack(tokens)), jnp.asarray(np.stack(targets))

    def _level(self, part: int, gc: jax.Array, rows: jax.Array | None = None) -> Split:
        """The member's GC level of a pool (rows in this order, if given) as int32 / float32."""
        index = jnp.argmin(jnp.abs(jnp.asarray(self.levels, jnp.float32) - gc))
        tokens, targets = (a[index] if rows is None else a[index][rows] for a in self._stacked(part))
        weights = (tokens != rna_fold.PAD).astype(jnp.float32)
        return Split(tokens.astype(jnp.int32), targets.astype(jnp.int32), weights)

    def split_sizes(self) -> tuple[int, int, int]:
        return self.train_size, self.n_eval, self.n_eval

    def pool_order(self, key: jax.Array) -> jax.Array:
        """The member's permutation of the pool: train rows first, then val, then test rows."""
        return jax.random.permutation(key, self.train_size + 2 * self.n_eval)

    def make_data(self, key: jax.Array, knobs: dict[str, jax.Array]) -> dict[str, Split]:
        everything = self._level(POOL, knobs["gc"], self.pool_order(key))
        n, m = self.train_size, self.n_eval
        data = {"train": everything.head(n)}
        data["val"] = jax.tree.map(lambda a: a[n : n + m], everything)
        data["test"] = jax.tree.map(lambda a: a[n + m :], everything)
        if self.longer_by:
            data["val_long"] = self._level(LONG, knobs["gc"])
        return data

    def sample_batch(self, key, data, knobs, batch_size):
        return data["train"].take(jax.random.randint(key, (batch_size,), 0, self.train_size))

    # --- levels ----------------------------------------------------------------------------------
    def _class_counts(self, gc: float) -> tuple[np.ndarray, np.ndarray]:
        """[3, T] class counts per position over the pool, and [T] sequences reaching each position."""
        d = self.pool(gc)
        present = np.arange(d["targets"].shape[1])[None, :] < d["lengths"][:, None]
        counts = np.stack([((d["targets"] == c) & present).sum(0) for c in range(3)])
        return counts, present.sum(0)

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        counts, present = self._class_counts(float(knobs["gc"]))
        p = counts / np.maximum(present, 1)
        entropy = -(p * np.log2(np.where(p > 0, p, 1.0))).sum(0)  # [T] bits
        return float((entropy * present / present[0]).sum())

    def chance(self, knobs: dict[str, Any]) -> float:
        """Exact-match rate on the pool of the better input-blind guess: all '.', or the commonest
        labelled structure (so at least one sequence in the pool)."""
        d = self.pool(float(knobs["gc"]))
        rows = np.concatenate([d["lengths"][:, None], d["targets"]], axis=1)
        _, counts = np.unique(rows, axis=0, return_counts=True)
        return float(max((d["targets"] == 0).all(axis=1).sum(), counts.max()) / len(rows))

    def blind_accuracy(self, knobs: dict[str, Any]) -> float:
        """Per-position accuracy of the best input-blind guess (the commonest class per position)."""
        counts, present = self._class_counts(float(knobs["gc"]))
        return float(counts.max(0).sum() / present.sum())

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> RnaStructure:
        given = [cfg.get("gc", cls.gc), *cfg.get("gc_levels", ()), *knob_grid.get("gc", ())]
        return cls(**{**cfg, "gc_levels": tuple(sorted({float(g) for g in given}))})

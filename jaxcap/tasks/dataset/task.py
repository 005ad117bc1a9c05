"""`dataset`: a task whose examples are the user's own files (npz, Parquet, CSV, JSONL).

Splits are the user's (a split column, or a file per split) or, as for any enumerable task, all
examples permuted by the member's key and cut by train_fraction, so a built-in task exported to
files (`jaxcap.tasks.dataset.export`) trains bit-identically as a dataset. Levels are per-member
knobs that keep every shape, so all levels of a sweep share one program: `train_examples` (batches
from the first n of the train split), `max_difficulty` (examples whose difficulty column is at most
it) and `max_length` (inputs of at most that many tokens); dropped rows get weight 0 and sort last.
seq_len, vocab_size and n_classes are shapes (a program each); 0 infers them from the files when
the task is built from a config, and the inferred values and alphabet are the task's fields, so
members.jsonl records them. Complexity has no closed form: `jaxcap.tasks.complexity.data_bits`
on the train split. Details: docs/tasks.md#a-task-from-your-data-files.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import Choice, ConfigError, Float, Int, Str
from jaxcap.tasks.complexity import MEASURES, data_bits
from jaxcap.tasks.contract import KINDS, SPLITS, Split, Task, TaskSpec
from jaxcap.tasks.dataset import checks, encoding, examples

KNOBS = ("train_examples", "max_difficulty", "max_length")
INPUTS = ("ids", "text", "bytes")


@dataclasses.dataclass(frozen=True)
class Dataset(Task):
    """Examples from files; the fields name the files, the columns and the shapes."""

    path: str = ""  # the examples (or the train split's, with val_path and test_path)
    val_path: str = ""
    test_path: str = ""
    split_column: str = ""  # a column of 'train' / 'val' / 'test' in `path` ('' : none)
    inputs: str = "inputs"  # comma-separated input columns, concatenated in this order
    target: str = "target"  # '' with kind 'sequence': the next token; regress: comma-separated
    kind: str = "classify"
    input: str = "ids"  # ids: token ids; text: characters; bytes: UTF-8 bytes
    alphabet: str = ""  # text: the characters of ids 2, 3, … ('' : inferred)
    pad_id: int = 0  # ids: the id that pads shorter rows (text pads with 0)
    vocab_size: int = 0  # ids: 0 infers the largest id + 1
    seq_len: int = 0  # 0: the longest row
    n_classes: int = 0  # classes (classify, per-position labels) or target values (regress); 0 infers
    difficulty: str = ""  # a numeric column; max_difficulty keeps rows at most the level
    complexity: str = "lookup"  # the data_bits measure
    train_examples: int = 0  # knob: batches from the first n train examples (0: all)
    max_difficulty: float = 0.0  # knob (with a difficulty column)
    max_length: int = 0  # knob: inputs of at most this many tokens (0: all)
    train_fraction: float = 0.5  # without the user's splits

    SCHEMA = {
        **Task.SCHEMA,
        **dict.fromkeys(("path", "val_path", "test_path", "split_column", "inputs", "target"), Str()),
        "kind": Choice(KINDS),
        "input": Choice(INPUTS),
        **dict.fromkeys(("alphabet", "difficulty"), Str()),
        "complexity": Choice((*MEASURES, "none")),
        "pad_id": Int(0),
        "vocab_size": Int(0, 1 << 20),
        "seq_len": Int(0, 1 << 16),
        "n_classes": Int(0, 1 << 20),
        "train_examples": Int(0),
        "max_difficulty": Float(),
        "max_length": Int(0),
    }

    @property
    def input_columns(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in self.inputs.split(",") if c.strip())

    @property
    def causal(self) -> bool:  # next-token prediction needs causal attention (bucket_checks)
        return self.kind == "sequence" and not self.target

    @property
    def is_stream(self) -> bool:
        return False

    def check(self) -> None:
        """The fields alone (the files are read by check_resources)."""
        checks.check_fields(self)

    @property
    def own_splits(self) -> bool:
        return bool(self.val_path or self.split_column)

    def source(self) -> encoding.Source:
        if self.val_path:
            names = (("path", self.path), ("val_path", self.val_path), ("test_path", self.test_path))
            files = tuple((field, path, split) for (field, path), split in zip(names, SPLITS))
        else:
            files = (("path", self.path, ""),)
        return encoding.Source(
            files,
            self.input_columns,
            self.target,
            self.kind,
            self.input,
            self.split_column,
            self.difficulty,
            self.alphabet,
            self.pad_id,
        )

    def pool(self) -> encoding.Pool:
        if not self.path:
            raise ConfigError(
                "config.task.path: got ''; allowed: a .npz, .parquet, .csv or .jsonl file of examples"
            )
        return encoding.load(self.source().stamped())

    @property
    def spec(self) -> TaskSpec:
        vocab = self.vocab_size if self.input == "ids" else encoding.N_SPECIAL + len(self.alphabet)
        vocab = encoding.N_SPECIAL + 256 if self.input == "bytes" else vocab
        n_outputs = vocab if self.causal else self.n_classes
        regress = self.kind == "regress"
        return TaskSpec(
            family="dataset",
            kind=self.kind,
            vocab_size=vocab,
            seq_len=self.seq_len,
            n_outputs=n_outputs,
            readout="all" if self.kind == "sequence" else "last",
            knobs=KNOBS,
            **(examples.REGRESS_SPEC if regress else {}),
        )

    def unresolved(self) -> tuple[str, ...]:
        """The fields still 0 that the files decide ('' alphabet of a text)."""
        out = ["seq_len"] * (self.seq_len == 0)
        out += ["vocab_size"] * (self.input == "ids" and self.vocab_size == 0)
        out += ["n_classes"] * (not self.causal and self.n_classes == 0)
        return tuple(out + ["alphabet"] * (self.input == "text" and not self.alphabet))

    def resolved(self) -> Dataset:
        """The task with its 0 fields inferred from the files."""
        return dataclasses.replace(self, **examples.inferred(self.pool(), self, self.unresolved()))

    def check_resources(self) -> None:
        pool = self.pool()
        if self.unresolved():
            field = self.unresolved()[0]
            raise ConfigError(
                f"config.task.{field}: got {getattr(self, field)!r} (infer), which only tasks.build infers "
                "(Dataset.from_config); allowed: the value, or build the task from its config section"
            )
        checks.check_fits(pool, self)
        checks.check_splits(pool, self)
        if not self.own_splits:
            super().check()  # train_fraction against the count of examples
        checks.check_levels(pool, self, self.default_knobs(), self.host_splits())

    def n_examples(self) -> int:
        return self.pool().size

    def split_sizes(self) -> tuple[int, int, int]:
        if not self.own_splits:
            return super().split_sizes()
        counts = np.bincount(self.pool().split, minlength=3)
        return int(counts[0]), int(counts[1]), int(counts[2])

    def host_splits(self) -> dict[str, np.ndarray]:
        """Each split's example indices on the host: the user's, or a fixed permutation's cut (the
        members' own permutations draw other subsets of the same sizes)."""
        return examples.host_splits(self.pool(), self.split_sizes())

    def make_data(self, key: jax.Array, knobs: dict[str, jax.Array]) -> dict[str, Any]:
        pool, host = self.pool(), examples.host_arrays(self)
        aux = (
            jnp.asarray(pool.lengths),
            jnp.asarray(pool.difficulty if pool.difficulty is not None else pool.lengths),
        )
        everything = (Split(*(jnp.asarray(a) for a in host)), aux)
        if self.own_splits:
            parts = {}
            for i, name in enumerate(SPLITS):
                idx = np.nonzero(pool.split == i)[0]
                part = jax.tree.map(lambda a, idx=idx: a[idx], everything)
                order = jax.random.permutation(jax.random.fold_in(key, i), idx.size)
                parts[name] = jax.tree.map(lambda a, order=order: a[order], part)
        else:  # exactly `Task.make_data`'s permutation and cut
            everything = jax.tree.map(lambda a: a[jax.random.permutation(key, pool.size)], everything)
            n_train, n_val, n_test = self.split_sizes()
            cut = (0, n_train, n_train + n_val, n_train + n_val + n_test)
            parts = {
                name: jax.tree.map(lambda a, lo=cut[i], hi=cut[i + 1]: a[lo:hi], everything)
                for i, name in enumerate(SPLITS)
            }
        out = {}
        for name, (split, (lengths, difficulty)) in parts.items():
            keep = jnp.where(knobs["max_length"] > 0, lengths <= knobs["max_length"], True)
            if pool.difficulty is not None:
                keep &= difficulty <= knobs["max_difficulty"].astype(jnp.float32)
            order = jnp.argsort((~keep).astype(jnp.int32), stable=True)  # kept rows first, in order
            split, keep = split.take(order), keep[order]
            if name == "train":
                n = keep.sum().astype(jnp.int32)
                wanted = knobs["train_examples"].astype(jnp.int32)
                out["n_train"] = jnp.where(wanted > 0, jnp.minimum(wanted, n), n)
                keep = jnp.arange(split.size) < out["n_train"]
            scored = keep.reshape(keep.shape + (1,) * (split.weights.ndim - 1))
            out[name] = split.replace(weights=jnp.where(scored, split.weights, 0.0))
        return out

    def output_mask(self, knobs):
        """Every class, as a per-member (traced) mask: the program is then the one an enumerable
        built-in task with a class mask compiles (modulo's), and the round trip holds to the bit
        (a constant mask, or none, lets XLA fuse the eval's softmax differently: 1-ulp losses)."""
        if self.kind == "regress":
            return None
        return jnp.broadcast_to(knobs["train_examples"] >= 0, (self.spec.n_outputs,))

    def sample_batch(self, key, data, knobs, batch_size):
        """Uniform over the first n_train examples of the train split (the kept ones)."""
        idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(data["n_train"], 1))
        return data["train"].take(idx)

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        """`data_bits` (measure `complexity`) of the train examples at these levels (host numpy);
        0 for complexity 'none' (the only choice for regression)."""
        if self.complexity == "none":
            return 0.0  # regression: the measures count discrete answers (check refuses the others)
        arrays = (a[self.train_indices(knobs)] for a in examples.host_arrays(self))
        # data_bits, with the causal switch: per-position labels read the whole input
        return data_bits(*arrays, self.kind, self.spec.n_outputs, self.complexity, causal=self.causal)

    def chance(self, knobs: dict[str, Any]) -> float:
        """Majority class (classify) or per-position majority (sequence) frequency of the train
        examples; regress: the NMSE on test of predicting the train mean."""
        test = self.host_splits()["test"]
        test = test[checks.keep_mask(self.pool(), knobs)[test]]
        return examples.chance(examples.host_arrays(self), self.train_indices(knobs), test, self.kind)

    def train_indices(self, knobs: dict[str, Any]) -> np.ndarray:
        """The train examples at these levels, in the host split's order (its first train_examples)."""
        idx = self.host_splits()["train"]
        idx = idx[checks.keep_mask(self.pool(), knobs)[idx]]
        n = int(knobs["train_examples"])
        return idx[:n] if n > 0 else idx

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Dataset:
        """The task with its 0 fields inferred from the files; a swept level that keeps no example
        of some split is refused here (the files are read only if either is needed)."""
        task = cls(**cfg)
        if task.path and task.unresolved():
            task = task.resolved()
        levels = [{**task.default_knobs(), k: v} for k in KNOBS[1:] for v in knob_grid.get(k, ())]
        if task.path and levels:
            task.check_resources()
            for knobs in levels:
                checks.check_levels(task.pool(), task, knobs, task.host_splits())
        return task

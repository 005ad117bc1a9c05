"""What a dataset's fields and examples must satisfy before anything trains: one-line `ConfigError`s.

`check_fields` runs at construction and reads the fields only; the pool
(`jaxcap.tasks.dataset.encoding`) has already refused what a single cell shows (NaN, a
negative id, a text where ids belong, a label list of the wrong length). These rules need the
task's fields or several rows at once: rows longer than seq_len, ids outside the vocabulary,
classes outside n_classes, an empty split, the same input in two splits (or twice, where the splits
are cut from a permutation), and a level that keeps no example of some split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxcap.fields import ConfigError
from jaxcap.tasks.complexity import MEASURES
from jaxcap.tasks.dataset.encoding import SPLIT_NAMES, Pool
from jaxcap.tasks.dataset.reading import bad, describe


def check_fields(task: Any) -> None:
    """What the fields allow together, read at construction (no file is opened)."""
    if not task.input_columns:
        raise ConfigError(f"config.task.inputs: got {task.inputs!r}; allowed: comma-separated column names")
    if not task.target and task.kind != "sequence":
        raise ConfigError(
            f"config.task.target: got ''; allowed: a column name (only kind 'sequence' predicts the next "
            f"token without one), for kind {task.kind!r}"
        )
    if bool(task.val_path) != bool(task.test_path):
        raise ConfigError(
            f"config.task.val_path: got {task.val_path!r} with test_path {task.test_path!r}; "
            "allowed: both files or neither"
        )
    if task.val_path and task.split_column:
        raise ConfigError(
            f"config.task.split_column: got {task.split_column!r}; allowed: '' when each split has its "
            "own file (val_path, test_path)"
        )
    if not task.own_splits and task.train_fraction == 0:
        raise ConfigError(
            "config.task.train_fraction: got 0; allowed: a fraction in (0, 1) of the examples to train "
            "on, or the file's own splits (split_column, or val_path and test_path)"
        )
    for name, rule in (
        ("train_size", "0 (train_examples is the per-member training-set size)"),
        ("alphabet", ""),
    ):
        if getattr(task, name) and (name == "train_size" or task.input != "text"):
            raise ConfigError(
                f"config.task.{name}: got {getattr(task, name)!r}; allowed: {rule or 'only with input text'}"
            )
    if (task.kind == "regress") != (task.complexity == "none"):
        allowed = (
            "none (the measures count discrete answers)" if task.kind == "regress" else ", ".join(MEASURES)
        )
        raise ConfigError(
            f"config.task.complexity: got {task.complexity!r}; allowed for kind {task.kind}: {allowed}"
        )
    if task.max_difficulty and not task.difficulty:
        raise ConfigError(
            f"config.task.max_difficulty: got {task.max_difficulty}; allowed: 0 without a difficulty "
            "column (config.task.difficulty names one)"
        )


def check_fits(pool: Pool, task: Any) -> None:
    """Rows within seq_len, ids within the vocabulary, answers within n_classes."""
    columns = ", ".join(task.input_columns)
    too_long = np.nonzero(pool.lengths > task.seq_len)[0]
    if too_long.size:
        i = int(too_long[0])
        path, row = pool.where(i)
        raise bad(
            "seq_len",
            path,
            columns,
            row,
            f"{pool.lengths[i]} tokens, more than seq_len {task.seq_len}",
            f"rows of at most seq_len tokens (config.task.seq_len {pool.lengths.max()}, or 0 to fit)",
        )
    vocab = task.spec.vocab_size
    if task.input == "ids":
        over = np.argwhere(pool.column_max >= vocab)
        if over.size:
            i, c = (int(v) for v in over[0])
            path, row = pool.where(i)
            raise bad(
                "vocab_size",
                path,
                task.input_columns[c],
                row,
                f"token id {pool.column_max[i, c]}",
                f"ids in [0, {vocab})",
            )
        if pool.lengths.min() < task.seq_len and not 0 <= task.pad_id < vocab:
            raise ConfigError(
                f"config.task.pad_id: got {task.pad_id}; allowed: an id in [0, {vocab}) (rows are padded)"
            )
    if task.kind == "regress":
        width = pool.targets.shape[1]
        if width != task.n_classes:
            raise ConfigError(
                f"config.task.n_classes: got {task.n_classes}, but file {pool.paths[0]}, column(s) "
                f"{task.target!r} hold {width} target values per row; allowed: {width} (or 0 to infer)"
            )
    elif pool.targets is not None:
        per_row = pool.targets.reshape(pool.size, -1).max(axis=1)
        over = np.nonzero(per_row >= task.n_classes)[0]
        if over.size:
            path, row = pool.where(int(over[0]))
            raise bad(
                "n_classes",
                path,
                task.target,
                row,
                f"class {per_row[over[0]]}",
                f"classes in [0, {task.n_classes})",
            )


def check_splits(pool: Pool, task: Any) -> None:
    """The user's splits are non-empty and share no input; without them, no input repeats."""
    columns = ", ".join(task.input_columns)
    if pool.split is not None:
        for s, name in enumerate(SPLIT_NAMES):
            if not (pool.split == s).any():
                where = f"file {pool.paths[0]}, column {task.split_column!r}"
                raise ConfigError(
                    f"config.task.split_column: {where}: no {name!r} rows; allowed: at least one example "
                    "in each of train, val and test"
                )
    rows = np.concatenate([pool.inputs, pool.lengths[:, None]], axis=1)
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    repeated = np.nonzero(counts[inverse] > 1)[0]
    if not repeated.size:
        return
    if pool.split is None:
        a = int(repeated[0])
        b = int(next(j for j in repeated if j != a and inverse[j] == inverse[a]))
        (pa, ra), (pb, rb) = pool.where(a), pool.where(b)
        raise bad(
            "inputs",
            pa,
            columns,
            ra,
            f"the same input as file {pb}, row {rb}",
            "distinct inputs (splits are cut from a permutation of the rows, so a repeat could sit in train "
            "and in val or test), or your own splits (config.task.split_column, val_path and test_path)",
        )
    groups = inverse[repeated]
    low = np.full(counts.size, 9, np.int8)
    high = np.full(counts.size, -1, np.int8)
    np.minimum.at(low, groups, pool.split[repeated])
    np.maximum.at(high, groups, pool.split[repeated])
    mixed = np.nonzero(low[inverse] != high[inverse])[0]
    if mixed.size:
        g = inverse[mixed[0]]
        a = int(next(j for j in mixed if inverse[j] == g and pool.split[j] == low[g]))
        b = int(next(j for j in mixed if inverse[j] == g and pool.split[j] == high[g]))
        (pa, ra), (pb, rb) = pool.where(a), pool.where(b)
        raise bad(
            "inputs",
            pa,
            columns,
            ra,
            f"{SPLIT_NAMES[low[g]]} example with the same input as file {pb}, "
            f"row {rb} ({SPLIT_NAMES[high[g]]})",
            "each input in one split only (a val or test input seen in training is not held out)",
        )


def keep_mask(pool: Pool, knobs: dict[str, Any]) -> np.ndarray:
    """[N] bool: the examples a member at these levels keeps (host twin of the device rule)."""
    keep = np.ones(pool.size, bool)
    if pool.difficulty is not None:
        keep &= pool.difficulty <= np.float32(knobs["max_difficulty"])
    cap = int(knobs["max_length"])
    return keep & ((pool.lengths <= cap) if cap > 0 else True)


def check_levels(pool: Pool, task: Any, knobs: dict[str, Any], splits: dict[str, np.ndarray]) -> None:
    """Every split keeps an example at these levels (`splits`: each split's example indices)."""
    keep = keep_mask(pool, knobs)
    for name, idx in splits.items():
        if keep[idx].any():
            continue
        if (
            pool.difficulty is not None
            and not (pool.difficulty[idx] <= np.float32(knobs["max_difficulty"])).any()
        ):
            field, value, column, values = (
                "max_difficulty",
                knobs["max_difficulty"],
                task.difficulty,
                pool.difficulty,
            )
        else:
            field, value, column, values = (
                "max_length",
                knobs["max_length"],
                ", ".join(task.input_columns),
                pool.lengths,
            )
        raise ConfigError(
            f"config.task.{field}: got {value}, which keeps no {name} example (file {pool.paths[0]}, column "
            f"{column!r}: {describe(values[idx])}); allowed: a level keeping examples of train, val and test"
        )

"""Columns to examples: token ids or tokenised text, padded into one host array per file set.

`load(source)` reads every file of a `Source` (the data-defining fields of a dataset task, with
each file's size and modification time, so an edited file is read again) and returns a `Pool`:
inputs [N, L] int32 padded to the longest row (on the left for one answer per example, so the
last position holds the last token; on the right for one answer per position), their lengths,
targets, the user's split and difficulty columns, and where each example came from. Text is
tokenised here: `text` gives characters (ids from 2 on, in the order of the alphabet, inferred as
the sorted distinct characters of every file unless given), `bytes` UTF-8 bytes (ids 2 … 257);
0 pads and 1 separates several input columns. Nothing here depends on vocab_size, seq_len or
n_classes: those are checked against the pool by `jaxcap.tasks.dataset.checks`.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib

import numpy as np

from jaxcap.fields import ConfigError
from jaxcap.tasks.dataset import reading
from jaxcap.tasks.dataset.reading import bad

PAD, SEP = 0, 1  # text and bytes: ids 0 and 1; characters or bytes from 2 on
N_SPECIAL = 2
SPLIT_NAMES = ("train", "val", "test")


@dataclasses.dataclass(frozen=True)
class Source:
    """What a pool is read from: hashable, so one pool is read once per process."""

    files: tuple[tuple[str, str, str], ...]  # (config field, path, split: '' or train/val/test)
    inputs: tuple[str, ...]
    target: str
    kind: str
    input: str
    split_column: str = ""
    difficulty: str = ""
    alphabet: str = ""
    pad_id: int = 0
    stamps: tuple[tuple[int, int], ...] = ()  # (size, mtime_ns) of each file: a new file reads anew

    def stamped(self) -> Source:
        def stamp(path):
            p = pathlib.Path(path)
            return (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, -1)

        return dataclasses.replace(self, stamps=tuple(stamp(path) for _, path, _ in self.files))


@dataclasses.dataclass(frozen=True, eq=False)
class Pool:
    """Every example of the files, on the host."""

    inputs: np.ndarray  # [N, L] int32, padded
    lengths: np.ndarray  # [N] int32: tokens before padding
    targets: (
        np.ndarray | None
    )  # [N] int32 (classify), [N, L] int32 (per position), [N, K] float32; None: next token
    split: np.ndarray | None  # [N] int8 (0 train, 1 val, 2 test), None: cut by permutation
    difficulty: np.ndarray | None  # [N] float32
    column_max: np.ndarray  # [N, n_inputs] int64: the largest id of each input column (-1 if empty)
    file: np.ndarray  # [N] int32: index into `paths`
    row: np.ndarray  # [N] int64: the row within that file
    paths: tuple[str, ...]
    alphabet: str  # text: the characters of ids 2, 3, …

    @property
    def size(self) -> int:
        return len(self.lengths)

    def where(self, i: int) -> tuple[str, int]:
        return self.paths[self.file[i]], int(self.row[i])


def _alphabet(source: Source, texts: list[list[list[str]]], tables) -> str:
    if source.input != "text":
        return ""
    if not source.alphabet:
        return "".join(sorted({ch for per_table in texts for col in per_table for t in col for ch in t}))
    known = set(source.alphabet)
    for table, per_table in zip(tables, texts):
        for name, col in zip(source.inputs, per_table):
            for i, t in enumerate(col):
                missing = set(t) - known
                if missing:
                    raise bad(
                        "alphabet",
                        table.path,
                        name,
                        i,
                        f"character {min(missing)!r} is not in it",
                        "characters of config.task.alphabet",
                    )
    return source.alphabet


def _encode_text(texts: list[str], source: Source, index: dict[str, int]) -> list[np.ndarray]:
    if source.input == "bytes":
        return [np.frombuffer(t.encode("utf-8"), np.uint8).astype(np.int64) + N_SPECIAL for t in texts]
    return [np.asarray([index[ch] for ch in t], np.int64) for t in texts]


def _join(columns: list[list[np.ndarray]], sep: int | None) -> list[np.ndarray]:
    rows = []
    for cells in zip(*columns):
        parts = [cells[0]]
        for c in cells[1:]:
            parts += ([np.asarray([sep], np.int64)] if sep is not None else []) + [c]
        rows.append(np.concatenate(parts))
    return rows


def _targets(source: Source, table, inputs: list[np.ndarray]) -> np.ndarray | list | None:
    if source.kind == "regress":
        names = [t.strip() for t in source.target.split(",")]
        return np.hstack([reading.float_rows("target", table, n) for n in names]).astype(np.float32)
    if not source.target:  # next token: the inputs themselves
        return None
    rows = reading.id_rows("target", table, source.target)
    for i, r in enumerate(rows):
        if (r < 0).any():
            raise bad("target", table.path, source.target, i, f"class {int(r.min())}", "class ids >= 0")
        if source.kind == "classify" and len(r) != 1:
            raise bad("target", table.path, source.target, i, f"{len(r)} values", "one class id per row")
        if source.kind == "sequence" and len(r) != len(inputs[i]):
            raise bad(
                "target",
                table.path,
                source.target,
                i,
                f"{len(r)} labels for {len(inputs[i])} input tokens",
                "one label per input token",
            )
    return np.asarray([r[0] for r in rows], np.int64) if source.kind == "classify" else rows


def _pad(rows: list[np.ndarray], width: int, value: int, left: bool) -> np.ndarray:
    out = np.full((len(rows), width), value, np.int32)
    for i, r in enumerate(rows):
        if len(r) and left:
            out[i, width - len(r) :] = r
        elif len(r):
            out[i, : len(r)] = r
    return out


@functools.lru_cache(maxsize=8)
def load(source: Source) -> Pool:
    """The pool of `source` (call with `source.stamped()`, so an edited file is read again)."""
    tables = [reading.read_table(path, field) for field, path, _ in source.files]
    for table, (field, path, _) in zip(tables, source.files):
        if table.n_rows == 0:
            raise ConfigError(f"config.task.{field}: file {path} has no rows; allowed: at least one example")
    texts = (
        [[reading.text_rows("inputs", t, n) for n in source.inputs] for t in tables]
        if source.input != "ids"
        else []
    )
    alphabet = _alphabet(source, texts, tables)
    index = {ch: i + N_SPECIAL for i, ch in enumerate(alphabet)}
    inputs, targets, split, difficulty, column_max, file, row = [], [], [], [], [], [], []
    for k, (table, (_, path, split_name)) in enumerate(zip(tables, source.files)):
        if source.input == "ids":
            columns = [reading.id_rows("inputs", table, n) for n in source.inputs]
            for name, col in zip(source.inputs, columns):
                for i, r in enumerate(col):
                    if len(r) and r.min() < 0:
                        raise bad(
                            "inputs", path, name, i, f"token id {int(r.min())}", "ids in [0, vocab_size)"
                        )
        else:
            columns = [_encode_text(col, source, index) for col in texts[k]]
        rows = _join(columns, None if source.input == "ids" else SEP)
        column_max.append(np.asarray([[r.max() if len(r) else -1 for r in cells] for cells in zip(*columns)]))
        inputs += rows
        targets.append(_targets(source, table, rows))
        if split_name:
            split.append(np.full(table.n_rows, SPLIT_NAMES.index(split_name), np.int8))
        elif source.split_column:
            split.append(reading.split_labels("split_column", table, source.split_column))
        if source.difficulty:
            d = reading.float_rows("difficulty", table, source.difficulty)
            if d.shape[1] != 1:
                raise bad(
                    "difficulty",
                    path,
                    source.difficulty,
                    None,
                    f"{d.shape[1]} values per row",
                    "one number per row",
                )
            difficulty.append(d[:, 0].astype(np.float32))
        file.append(np.full(table.n_rows, k, np.int32))
        row.append(np.arange(table.n_rows, dtype=np.int64))
    lengths = np.asarray([len(r) for r in inputs], np.int32)
    width = max(int(lengths.max()), 1)
    left = source.kind != "sequence"
    pad = source.pad_id if source.input == "ids" else PAD
    if source.kind == "sequence" and source.target:
        flat_targets = _pad([r for t in targets for r in t], width, 0, left=False)
    elif source.target:
        flat_targets = np.concatenate(targets)
        flat_targets = flat_targets.astype(np.int32) if source.kind == "classify" else flat_targets
    else:
        flat_targets = None
    return Pool(
        inputs=_pad(inputs, width, pad, left),
        lengths=lengths,
        targets=flat_targets,
        split=np.concatenate(split) if split else None,
        difficulty=np.concatenate(difficulty) if difficulty else None,
        column_max=np.concatenate(column_max).astype(np.int64),
        file=np.concatenate(file),
        row=np.concatenate(row),
        paths=tuple(path for _, path, _ in source.files),
        alphabet=alphabet,
    )

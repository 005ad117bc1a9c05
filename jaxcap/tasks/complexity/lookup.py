"""The input columns the answers depend on, found from the examples, and the lookup table over them.

A column is irrelevant if dropping it never merges two observed inputs with different answers
(an input's answer: the set of labels seen with it). Columns are tried once each, in position
order, by greedy backward elimination; a refused column stays needed, since dropping more only
merges more. The result is a minimal consistent set (no single column of it can go), not always
the minimum one, which is NP-hard to find (the MIN-FEATURES problem of FOCUS [1]; [2]); parity's
secret bits are the unique minimum and are found. The table is restricted to those columns and
its entries are numbered in lexicographic order of their values. `lookup_bits` = table rows x
log2(outputs), a row per distinct (entry, label) pair: the bits a memoriser of the observed table
stores (`table_bits` of studies/measures/closed_form.py, but of observed entries, read by whole columns).

[1] Almuallim & Dietterich 1991, "Learning With Many Irrelevant Features", AAAI-91.
[2] Davies & Russell 1994, "NP-Completeness of Searches for Smallest Possible Feature Sets".
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxcap.tasks.complexity.table import Table

HASH_SEED = 0  # the row-hash multipliers: two distinct rows collide with probability ~2^-64


@dataclasses.dataclass(frozen=True)
class Restricted:
    """The table read through `columns` only: entry [M] numbers each row's restricted input in
    lexicographic order of its values (0..entries-1); labels [M] in [0, outputs)."""

    columns: tuple[int, ...]
    searched: int  # the key columns the search chose from
    entry: np.ndarray
    entries: int
    labels: np.ndarray
    outputs: int

    @property
    def rows(self) -> int:
        return int(self.labels.shape[0])


def _odd_words(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def _consistent(hashes: np.ndarray, answers: np.ndarray) -> bool:
    """Whether inputs with equal hashes always have equal answers (one sort, then neighbours)."""
    order = np.argsort(hashes)
    h, a = hashes[order], answers[order]
    return not np.any((h[1:] == h[:-1]) & (a[1:] != a[:-1]))


def relevant_columns(table: Table) -> tuple[int, ...]:
    """The columns kept by greedy backward elimination (module docstring), in position order.

    Each row's key is hashed as a sum over columns of (value x a random odd 64-bit word), mod
    2^64, so dropping a column subtracts its term: one pass over the distinct inputs per column.
    """
    rng = np.random.default_rng(HASH_SEED)
    words, label_words = _odd_words(rng, table.columns), _odd_words(rng, table.outputs)
    with np.errstate(over="ignore"):  # the hash is arithmetic mod 2^64
        terms = table.keys.astype(np.uint64) * words[None, :]
        full = terms.sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(full, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        pairs = np.unique(inverse * table.outputs + table.labels)  # distinct (input, label) pairs
        answers = np.zeros(first.size, np.uint64)  # per input: a hash of the set of its labels
        np.add.at(answers, pairs // table.outputs, label_words[pairs % table.outputs])
        hashes, terms = full[first], terms[first]
        kept = []
        for c in range(table.columns):
            trial = hashes - terms[:, c]
            if _consistent(trial, answers):
                hashes = trial
            else:
                kept.append(c)
    return tuple(kept)


def restrict(table: Table, columns: tuple[int, ...] | None = None) -> Restricted:
    """The table through `columns` (default: the relevant ones), entries in canonical order: the
    distinct restricted rows (by hash) sorted lexicographically by their values."""
    columns = relevant_columns(table) if columns is None else tuple(columns)
    entry = np.zeros(table.rows, np.int64)  # no column: the answer depends on nothing, one entry
    if columns:
        sub = table.keys[:, list(columns)]
        words = _odd_words(np.random.default_rng(HASH_SEED), len(columns))
        with np.errstate(over="ignore"):
            hashes = (sub.astype(np.uint64) * words[None, :]).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        rank = np.empty(first.size, np.int64)
        rank[np.lexsort(sub[first].T[::-1])] = np.arange(first.size)  # first column most significant
        entry = rank[inverse.reshape(-1)]
    return Restricted(columns, table.columns, entry, int(entry.max()) + 1, table.labels, table.outputs)


def table_pairs(r: Restricted) -> np.ndarray:
    """The distinct (entry, label) pairs as entry x outputs + label, ascending: the observed table."""
    return np.unique(r.entry * r.outputs + r.labels)


def lookup_bits(r: Restricted) -> float:
    """Table rows x log2(outputs): each distinct (entry, label) pair of the observed table over the
    relevant columns (one per entry where the answers are a function of the input)."""
    return table_pairs(r).size * math.log2(r.outputs)

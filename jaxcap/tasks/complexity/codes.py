"""Code lengths of a task's labels given its inputs: compressed by LZMA, and prequential.

`compressed_bits`: the observed table's labels (its distinct (entry, label) pairs over the relevant
columns, jaxcap/tasks/complexity/lookup.py; entries in canonical order, labels ascending) packed in
ceil(log2 K)-bit fields, LZMA-compressed, less the compressed length of as many zero labels (the
compressor's fixed floor: a constant answer is 0 bits); as compressed truth tables [1], an upper
bound on the table's information, blind below a few bytes. `prequential_bits`: the online
code length of the labels [2, 3] under a count learner over the relevant columns, plus log2
C(columns searched, columns kept) to name them (the columns are chosen on all the examples).
Examples in a fixed random order, blocks ending at 0.1 %, 0.2 %, ... 50 %, 100 % [3]; the first
block coded uniformly over the K outputs, each later one by a half-half mixture of "each entry's
answer is fixed" and Krichevsky-Trofimov counts [4], fitted on the earlier blocks.
[1] Valle-Perez et al. 2019, arXiv:1805.08522. [2] Blier & Ollivier 2018, arXiv:1802.07044.
[3] Voita & Titov 2020, arXiv:2003.12298. [4] Krichevsky & Trofimov 1981, IEEE Trans. IT 27:199.
"""

from __future__ import annotations

import lzma
import math

import numpy as np
from scipy.special import expit, gammaln

from jaxcap.tasks.complexity.lookup import Restricted, table_pairs

# raw LZMA2 (no container header); a 4 MiB dictionary holds every table up to 2^21 two-byte labels
FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": 1 << 22}]
ORDER_SEED = 0  # the fixed order in which the online code sees the examples
BLOCK_DOUBLINGS = 10  # the first block ends at 2^-10 of the examples (0.1 %), then each doubles
KT_PRIOR = 0.5  # Krichevsky-Trofimov: add 1/2 to every label's count


def label_bytes(labels: np.ndarray, outputs: int) -> bytes:
    """Labels packed as ceil(log2 outputs)-bit fields, most significant bit first (none for 1)."""
    width = (outputs - 1).bit_length()
    bits = (np.asarray(labels, np.int64)[:, None] >> np.arange(width - 1, -1, -1)[None, :]) & 1
    return np.packbits(bits.astype(np.uint8).reshape(-1)).tobytes()


def lzma_bytes(data: bytes) -> int:
    return len(lzma.compress(data, format=lzma.FORMAT_RAW, filters=FILTERS))


def table_labels(r: Restricted) -> np.ndarray:
    """The labels of the distinct (entry, label) pairs, entries in canonical order, labels ascending."""
    return table_pairs(r) % r.outputs


def compressed_bits(r: Restricted) -> float:
    """8 x (LZMA bytes of the table's labels - LZMA bytes of as many zero labels), at least 0."""
    labels = table_labels(r)
    data = label_bytes(labels, r.outputs)
    floor = label_bytes(np.zeros_like(labels), r.outputs)
    return 8.0 * max(0, lzma_bytes(data) - lzma_bytes(floor))


def block_ends(rows: int) -> list[int]:
    """Where each block ends: ceil(rows x 2^-j) for j = BLOCK_DOUBLINGS .. 0, at least 1, distinct."""
    ends = {max(1, math.ceil(rows * 2.0**-j)) for j in range(BLOCK_DOUBLINGS, -1, -1)}
    return sorted(ends)


def column_bits(r: Restricted) -> float:
    """log2 C(searched, kept): which of the searched columns the learner reads."""
    return math.log2(math.comb(r.searched, len(r.columns)))


def block_probabilities(
    pair: np.ndarray, pair_entry: np.ndarray, start: int, stop: int, r: Restricted
) -> np.ndarray:
    """p(label) of rows start..stop-1 given rows 0..start-1: the mixture, each with prior weight
    1/2, of "the entry's answer is fixed" and KT counts; pair [rows]: each row's (entry, label)
    pair, pair_entry [pairs]: each pair's entry."""
    k, entries = r.outputs, r.entries
    count = np.bincount(pair[:start], minlength=pair_entry.size)  # per pair, in the history
    seen = np.bincount(pair_entry, weights=count, minlength=entries)
    distinct = np.bincount(pair_entry, weights=count > 0, minlength=entries)
    log_kt = np.bincount(pair_entry, weights=gammaln(count + KT_PRIOR) - gammaln(KT_PRIOR), minlength=entries)
    log_kt += gammaln(KT_PRIOR * k) - gammaln(seen + KT_PRIOR * k)
    log_fixed = np.where(seen > 0, -math.log(k), 0.0)  # the first label uniform, then certain
    fixed = np.where(distinct <= 1, expit(log_fixed - log_kt), 0.0)  # the posterior weight
    rows, entry = pair[start:stop], pair_entry[pair[start:stop]]
    p_kt = (count[rows] + KT_PRIOR) / (seen[entry] + KT_PRIOR * k)
    p_fixed = np.where(seen[entry] == 0, 1.0 / k, (count[rows] == seen[entry]).astype(float))
    return fixed[entry] * p_fixed + (1.0 - fixed[entry]) * p_kt


def prequential_bits(r: Restricted) -> float:
    """Column bits + sum over blocks of -log2 p(labels | the mixture fitted on the earlier blocks)."""
    order = np.random.default_rng(ORDER_SEED).permutation(r.rows)
    pairs, pair = np.unique(r.entry[order] * r.outputs + r.labels[order], return_inverse=True)
    pair, pair_entry = pair.reshape(-1), pairs // r.outputs
    ends = block_ends(r.rows)
    bits = ends[0] * math.log2(r.outputs)  # the first block: uniform over the K outputs
    for start, stop in zip(ends[:-1], ends[1:]):
        bits += float(-np.log2(block_probabilities(pair, pair_entry, start, stop, r)).sum())
    return bits + column_bits(r)

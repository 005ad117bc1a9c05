"""RNA secondary structure on the host: random sequences, dot-brackets, folding, labelled datasets.

A secondary structure of a sequence s_1 … s_L is a set of non-crossing base pairs (i, j), each
position in at most one pair, written as a dot-bracket string: '(' at i and ')' at j for every
pair, '.' for unpaired positions. Per-position classes: 0 '.', 1 '(', 2 ')'. Nucleotide tokens:
A 0, C 1, G 2, U 3, and PAD 4 beyond a sequence's length.

Details: docs/design/domains.md#rna-labellers.

[1] Lorenz et al. 2011, "ViennaRNA Package 2.0", Algorithms Mol. Biol. 6:26.
[2] McCaskill 1990, "The equilibrium partition function and base pair binding probabilities
    for RNA secondary structure", Biopolymers 29:1105.
[3] Nussinov & Jacobson 1980, "Fast algorithm for predicting the secondary structure of
    single-stranded RNA", PNAS 77:6309.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np

NUCLEOTIDES = "ACGU"
PAD = 4
BRACKETS = ".()"  # class index -> character
MIN_HAIRPIN = 3  # a pair (i, j) needs j - i > MIN_HAIRPIN
CANONICAL = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}
INSTALL = 'pip install -e ".[domains]"'
FORMAT_VERSION = 2  # bump when the content of a cached dataset changes (2: distinct sequences)


def vienna():
    """The ViennaRNA module, or ImportError with one line naming the package and the install."""
    try:
        import RNA
    except ImportError:
        raise ImportError(f"viennarna is not installed (import RNA failed); install it: {INSTALL}") from None
    return RNA


def has_vienna() -> bool:
    try:
        vienna()
    except ImportError:
        return False
    return True


# --- dot-brackets and pairs ---------------------------------------------------------------------
def pairs_from_brackets(brackets: str | np.ndarray) -> set[tuple[int, int]]:
    """The pairs of a dot-bracket (string or class array); an unmatched bracket pairs with nothing,
    so a model's predicted brackets always give a valid pair set (what base-pair F1 scores)."""
    chars = brackets if isinstance(brackets, str) else "".join(BRACKETS[int(c)] for c in brackets)
    stack, pairs = [], set()
    for j, c in enumerate(chars):
        if c == "(":
            stack.append(j)
        elif c == ")" and stack:
            pairs.add((stack.pop(), j))
    return pairs


def brackets_from_pairs(pairs: set[tuple[int, int]], n: int) -> str:
    chars = ["."] * n
    for i, j in pairs:
        chars[i], chars[j] = "(", ")"
    return "".join(chars)


def classes(brackets: str) -> np.ndarray:
    return np.array([BRACKETS.index(c) for c in brackets], np.int32)


def pair_f1(predicted: set, true: set) -> float:
    """Base-pair F1 (harmonic mean of pair precision and recall); 1.0 when both sets are empty."""
    if not predicted and not true:
        return 1.0
    hits = len(predicted & true)
    return 2.0 * hits / (len(predicted) + len(true))


# --- Nussinov base-pair maximization ------------------------------------------------------------
def can_pair(seq: str, i: int, j: int) -> bool:
    return j - i > MIN_HAIRPIN and (seq[i], seq[j]) in CANONICAL


def nussinov(seq: str) -> str:
    """A maximum-pair structure (deterministic tie-breaking, see the module docstring)."""
    n = len(seq)
    best = [[0] * (n + 1) for _ in range(n + 1)]  # best[i][j]: the most pairs in seq[i:j]

    def pair_value(i, j, k):  # pair (k, j - 1) inside seq[i:j]
        return best[i][k] + 1 + best[k + 1][j - 1]

    for span in range(1, n + 1):
        for i in range(n - span + 1):
            j = i + span
            value = best[i][j - 1]
            for k in range(i, j - 1):
                if can_pair(seq, k, j - 1):
                    value = max(value, pair_value(i, j, k))
            best[i][j] = value
    pairs, todo = set(), [(0, n)]
    while todo:
        i, j = todo.pop()
        if j - i < 2:
            continue
        if best[i][j] == best[i][j - 1]:
            todo.append((i, j - 1))
            continue
        k = next(k for k in range(i, j - 1) if can_pair(seq, k, j - 1) and pair_value(i, j, k) == best[i][j])
        pairs.add((k, j - 1))
        todo += [(i, k), (k + 1, j - 1)]
    return brackets_from_pairs(pairs, n)


# --- ViennaRNA ----------------------------------------------------------------------------------
def vienna_fold(seq: str) -> tuple[str, np.ndarray]:
    """(MFE dot-bracket, [L, 3] ensemble probabilities of '.', '(' and ')' per position)."""
    rna = vienna()
    fc = rna.fold_compound(seq)
    structure, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)  # scale the partition function so long sequences do not overflow
    fc.pf()
    bpp = np.asarray(fc.bpp())[1:, 1:]  # 1-indexed upper triangle
    opens, closes = bpp.sum(axis=1), bpp.sum(axis=0)
    probs = np.stack([1.0 - opens - closes, opens, closes], axis=1)
    return structure, np.clip(probs, 0.0, 1.0).astype(np.float32)


# --- datasets -----------------------------------------------------------------------------------
def random_sequences(rng: np.random.Generator, n: int, low: int, high: int, gc: float):
    """n *distinct* sequences of lengths uniform in [low, high]: tokens [n, high] (PAD-padded) and
    lengths. Distinct, so that the train, val and test rows cut from one pool never share a
    sequence (GC-rich short sequences repeat often: at GC 0.9 and 10 nt, 13% of a 1,536-row pool
    drawn i.i.d. were repeats). Raises ValueError when the space has fewer than n sequences."""
    p = np.array([1 - gc, gc, gc, 1 - gc]) / 2.0  # A, C, G, U: G+C has probability gc
    kept_tokens, kept_lengths, seen = [], [], set()
    for _ in range(64):
        m = 2 * (n - len(kept_tokens)) + 16
        lengths = rng.integers(low, high + 1, m)
        tokens = rng.choice(4, size=(m, high), p=p).astype(np.int32)
        for row, length in zip(tokens, lengths):
            key = (int(length), row[:length].tobytes())
            if key not in seen and len(kept_tokens) < n:
                seen.add(key)
                kept_tokens.append(row)
                kept_lengths.append(length)
        if len(kept_tokens) == n:
            tokens, lengths = np.stack(kept_tokens), np.asarray(kept_lengths)
            return np.where(np.arange(high)[None, :] < lengths[:, None], tokens, PAD), lengths.astype(
                np.int32
            )
    raise ValueError(
        f"{n} distinct RNA sequences of lengths {low}-{high} at GC {gc} were not found ({len(seen)} after 64 "
        "rounds); lower train_size / n_eval or raise the length"
    )


def to_string(tokens: np.ndarray, length: int) -> str:
    return "".join(NUCLEOTIDES[t] for t in tokens[:length])


def label(folding: str, tokens_NxT: np.ndarray, lengths: np.ndarray) -> dict[str, np.ndarray]:
    """targets [N, T] classes (0 beyond a sequence), and for vienna probs [N, T, 3] (0 beyond)."""
    n, width = tokens_NxT.shape
    targets = np.zeros((n, width), np.int32)
    probs = np.zeros((n, width, 3), np.float32)
    for r in range(n):
        seq = to_string(tokens_NxT[r], lengths[r])
        if folding == "vienna":
            structure, probs[r, : len(seq)] = vienna_fold(seq)
        else:
            structure = nussinov(seq)
        targets[r, : len(seq)] = classes(structure)
    return {"targets": targets, "probs": probs} if folding == "vienna" else {"targets": targets}


def cache_root(cache_dir: str) -> Path:
    return Path(cache_dir or os.environ.get("JAXCAP_RNA_CACHE", Path.home() / ".cache" / "jaxcap" / "rna"))


@functools.lru_cache(maxsize=32)
def dataset(
    folding: str, data_seed: int, low: int, high: int, gc: float, n: int, part: int, cache_dir: str = ""
) -> dict[str, np.ndarray]:
    """n labelled sequences of lengths in [low, high] with GC content gc, read from the cache or
    computed and cached. The sequences come from np.random.default_rng([data_seed, part,
    round(gc * 1e6), low, high]) (`part` names the pool: 0 train+val, 1 longer lengths)."""
    key = dict(v=FORMAT_VERSION, folding=folding, seed=data_seed, low=low, high=high, gc=gc, n=n, part=part)
    if folding == "vienna":
        key["vienna"] = vienna().__version__
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_root(cache_dir) / f"{folding}-L{low}-{high}-gc{gc:g}-n{n}-{digest}.npz"
    if path.exists():
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    rng = np.random.default_rng([data_seed, part, round(gc * 1e6), low, high])
    tokens, lengths = random_sequences(rng, n, low, high, gc)
    out = {"tokens": tokens, "lengths": lengths, **label(folding, tokens, lengths)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, **out)
    os.replace(tmp, path)  # atomic: a concurrent reader sees a whole file or none
    return out

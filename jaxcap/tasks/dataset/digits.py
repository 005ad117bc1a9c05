"""scikit-learn's handwritten digits written as a `dataset` file: real data no one here made.

The 1,797 8x8 images ship inside scikit-learn (sklearn/datasets/data/digits.csv.gz, the UCI
optical digits' test set [1]: each pixel counts a 4x4 block's inked cells, 0..16), read offline
by `sklearn.datasets.load_digits`, imported only when `export_digits` runs (the `domains` extra).
Columns: `inputs` (64 pixel ids, row by row: vocabulary 17), `target` (the digit), `digit` (the
same, a difficulty column: max_difficulty k - 1 keeps the digits 0 .. k - 1) and `split` (a
permutation drawn from `seed`, cut at 1,197 train / 300 val / 300 test: the same for every run):

    python -c "from jaxcap.tasks.dataset.digits import export_digits; export_digits('runs/digits.npz')"

[1] Alpaydin & Kaynak 1998, "Optical Recognition of Handwritten Digits", UCI ML Repository.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import numpy as np

from jaxcap.fields import ConfigError

INSTALL = 'pip install -e ".[domains]"'
N_PIXELS, N_LEVELS, N_CLASSES = 64, 17, 10  # 8 x 8 pixels, values 0..16, digits 0..9
N_VAL = N_TEST = 300  # held out; the remaining 1,197 train
SEED = 0  # the split permutation's seed (numpy's default_rng)
SPLIT_NAMES = ("train", "val", "test")


def load() -> tuple[np.ndarray, np.ndarray]:
    """(pixels [1797, 64] int32 in 0..16, digits [1797] int32) as scikit-learn holds them."""
    try:
        from sklearn.datasets import load_digits  # the domains extra: imported only here
    except ImportError:
        raise ConfigError(
            f"digits: scikit-learn is not installed (import sklearn failed); allowed: install the "
            f"domains extra: {INSTALL}"
        ) from None
    bunch = load_digits()
    return np.asarray(bunch.data).astype(np.int32), np.asarray(bunch.target).astype(np.int32)


def split_of(n: int, seed: int = SEED) -> np.ndarray:
    """[n] split names: the rows of a permutation drawn from `seed`, cut at n - 600 / 300 / 300."""
    if n <= N_VAL + N_TEST:
        raise ConfigError(f"digits: got {n} examples; allowed: more than {N_VAL + N_TEST} (600 held out)")
    order = np.random.default_rng(seed).permutation(n)
    split = np.empty(n, "<U5")
    split[order[: n - N_VAL - N_TEST]] = "train"
    split[order[n - N_VAL - N_TEST : n - N_TEST]] = "val"
    split[order[n - N_TEST :]] = "test"
    return split


def export_digits(path: str, seed: int = SEED) -> dict[str, Any]:
    """Write the digits to `path` (.npz or .parquet); returns the `dataset` task section reading it."""
    suffix = pathlib.Path(path).suffix.lower()
    if suffix not in (".npz", ".parquet"):
        raise ConfigError(f"digits export path: got {path!r}; allowed: a file ending in .npz or .parquet")
    pixels, digits = load()
    split = split_of(len(digits), seed)
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    # written whole, then renamed: a reader (another process exporting it too) never sees half a file
    tmp = pathlib.Path(path).with_name(f".{pathlib.Path(path).name}.{os.getpid()}.tmp")
    if suffix == ".npz":
        with open(tmp, "wb") as f:  # np.savez would append '.npz' to another name
            np.savez_compressed(f, inputs=pixels, target=digits, digit=digits, split=split)
    else:
        import pandas as pd

        frame = {"inputs": list(pixels), "target": digits, "digit": digits, "split": split}
        pd.DataFrame(frame).to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return task_section(path)


def exported(path: str | pathlib.Path) -> str:
    """`path`, the digits exported there first if no file is (the first config that reads them)."""
    if not pathlib.Path(path).exists():
        export_digits(str(path))
    return str(path)


def task_section(path: str) -> dict[str, Any]:
    """The `dataset` task section that reads an exported digits file (shapes stated, not inferred)."""
    return {
        "name": "dataset",
        "path": str(path),
        "inputs": "inputs",
        "target": "target",
        "split_column": "split",
        "difficulty": "digit",
        "kind": "classify",
        "input": "ids",
        "vocab_size": N_LEVELS,
        "seq_len": N_PIXELS,
        "n_classes": N_CLASSES,
        "max_difficulty": float(N_CLASSES - 1),  # every digit
        "n_eval": N_TEST,
    }

"""PRNG key data computed on the host, bit-identical to `jax.random`'s threefry2x32 keys.

Making a population's member keys with `jax.random.key` and `fold_in` runs four tiny eager
programs (seed, fold-in, dtype conversions), and each is an XLA compile the first time a process
meets it: four of the ~30 programs a small run compiles, paid again by every process and test
worker. The keys only feed the compiled programs as uint32 key data, so they are computed here
with numpy instead: the Threefry-2x32 block cipher with 20 rounds (Salmon et al. 2011, "Parallel
random numbers: as easy as 1, 2, 3", SC'11), laid out as JAX lays it out
(jax/_src/random/threefry2x32.py), and checked against `jax.random` in tests/core/test_keys.py.
"""

from __future__ import annotations

import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Threefry-2x32 hash of the counter words (x1, x2) under `key` (2 uint32 words)."""
    k1, k2 = (np.uint32(k) for k in np.asarray(key, np.uint32))
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x = [np.asarray(x1, np.uint32) + ks[0], np.asarray(x2, np.uint32) + ks[1]]
    with np.errstate(over="ignore"):  # uint32 addition wraps, as in the cipher
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x[0] = x[0] + x[1]
                x[1] = _rotl(x[1], r) ^ x[0]
            x[0] = x[0] + ks[(i + 1) % 3]
            x[1] = x[1] + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x[0], x[1]


def key_data(seed: int) -> np.ndarray:
    """`jax.random.key_data(jax.random.key(seed))` for 0 <= seed < 2**32: [2] uint32."""
    _check(seed)
    return np.asarray([0, seed], np.uint32)


def fold_in(key: np.ndarray, data: int) -> np.ndarray:
    """`jax.random.fold_in` on key data: [2] uint32."""
    _check(data)
    a, b = threefry2x32(key, np.zeros(1, np.uint32), np.asarray([data], np.uint32))
    return np.concatenate([a, b])


def split(key: np.ndarray, num: int) -> np.ndarray:
    """`jax.random.split(key, num)` on key data (partitionable threefry, JAX's default): [num, 2]."""
    a, b = threefry2x32(key, np.zeros(num, np.uint32), np.arange(num, dtype=np.uint32))
    return np.stack([a, b], axis=1)


def _check(value: int) -> None:
    if not 0 <= int(value) < 2**32:
        raise ValueError(f"host PRNG keys: got {value}; allowed: an integer in [0, 2**32)")

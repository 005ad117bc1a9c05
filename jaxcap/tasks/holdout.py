"""Held-out inputs that training never sees, and the measured overlap between splits.

With a small input space, "validation" drawn from the training distribution is mostly inputs the
model trained on. So a sampled task assigns every input to a split by a salted hash of its tokens
(1/8 val, 1/8 test; training samples only the rest, and no held-out input ever contributes a
gradient); enumerable tasks split a permutation instead. `overlap` measures the result.

Details: docs/design/tasks.md#held-out-inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import jax
import jax.numpy as jnp

from jaxcap.tasks.split import Split

DrawFn = Callable[[jax.Array, dict, int], Split]  # a task's `draw(key, knobs, n)`

N_BUCKETS = 8
BUCKET = {"val": 0, "test": 1}  # every other bucket is training's
SALT_TAG = 7  # fold_in tag of the member's data key that gives the hash salt
MAX_ROUNDS = 256  # rejection rounds before giving up on filling a held-out split


def salt(key: jax.Array) -> jax.Array:
    """The member's hash salt (uint32 scalar), derived from its data key."""
    return jax.random.bits(jax.random.fold_in(key, SALT_TAG), (), jnp.uint32)


def _fmix(h: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finalizer: every input bit affects every output bit."""
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def row_hash(inputs: jax.Array, salt_: jax.Array | int = 0) -> jax.Array:
    """[N] uint32 hash of each row of `inputs` ([N, ...] ints or floats), position-dependent."""
    n = inputs.shape[0]
    flat = inputs.reshape(n, -1)
    if jnp.issubdtype(flat.dtype, jnp.floating):
        flat = jax.lax.bitcast_convert_type(flat.astype(jnp.float32), jnp.uint32)
    flat = flat.astype(jnp.uint32)
    position = jnp.arange(flat.shape[1], dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)
    mixed = _fmix(flat + position[None, :] + jnp.uint32(1))
    return _fmix(mixed.sum(axis=1, dtype=jnp.uint32) ^ jnp.asarray(salt_, jnp.uint32))


def bucket(inputs: jax.Array, salt_: jax.Array) -> jax.Array:
    """[N] int32 bucket in [0, N_BUCKETS) of each input: its split under the hold-out."""
    return (row_hash(inputs, salt_) >> jnp.uint32(29)).astype(jnp.int32)


def _wanted(split: str, buckets: jax.Array) -> jax.Array:
    if split == "train":
        return buckets >= len(BUCKET)
    return buckets == BUCKET[split]


def draw_splits(draw: DrawFn, key: jax.Array, knobs: dict, sizes: dict[str, int], salt_: jax.Array) -> dict:
    """{split: n examples of `draw` (a task's `draw`) whose inputs hash into that split's buckets}, for the
    splits and sizes of `sizes` (train, val, test). Rejection sampling in one `lax.while_loop`:
    each round draws max(sizes) candidates and every candidate goes to the split its input
    hashes to. Rows left unfilled after MAX_ROUNDS (an input space too small to reach a bucket)
    keep weight 0, so they are never scored."""
    if not _hashable(draw):  # a task with an unhashable field: traced afresh
        return _draw_splits(draw, key, knobs, tuple(sizes.items()), salt_)
    # one compile per (task, sizes), also when called eagerly (tests, host code)
    return _draw_splits_jit(draw, key, knobs, tuple(sizes.items()), salt_)


def _hashable(value: Hashable) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _draw_splits(draw: DrawFn, key: jax.Array, knobs: dict, sizes: tuple, salt_: jax.Array) -> dict:
    m = max(n for _, n in sizes)
    shapes = jax.eval_shape(lambda k, kn: draw(k, kn, m), key, knobs)
    empty = {
        name: jax.tree.map(lambda s, n=n: jnp.zeros((n,) + s.shape[1:], s.dtype), shapes) for name, n in sizes
    }

    def body(carry):
        i, filled, out = carry
        cand = draw(jax.random.fold_in(key, i), knobs, m)
        buckets = bucket(cand.inputs, salt_)
        new_filled, new_out = {}, {}
        for name, n in sizes:
            ok = _wanted(name, buckets)
            slot = jnp.where(ok, filled[name] + jnp.cumsum(ok) - 1, n)  # n and beyond: dropped
            new_out[name] = jax.tree.map(lambda o, c, s=slot: o.at[s].set(c, mode="drop"), out[name], cand)
            new_filled[name] = jnp.minimum(filled[name] + ok.sum(), n)
        return i + 1, new_filled, new_out

    def cond(carry):
        i, filled, _ = carry
        short = jnp.stack([filled[name] < n for name, n in sizes]).any()
        return short & (i < MAX_ROUNDS)

    start = (jnp.int32(0), {name: jnp.int32(0) for name, _ in sizes}, empty)
    return jax.lax.while_loop(cond, body, start)[2]


_draw_splits_jit = jax.jit(_draw_splits, static_argnums=(0, 3))


def draw_train_batch(draw: DrawFn, key: jax.Array, knobs: dict, n: int, salt_: jax.Array) -> Split:
    """A training batch from the training buckets only: 2n candidates, eligible ones first (stable,
    so the batch is an unbiased sample of the training part); a held-out row that is still among
    the first n (fewer than n of 2n eligible: small batches, rarely) is weighted 0."""
    cand = draw(key, knobs, 2 * n)
    ok = _wanted("train", bucket(cand.inputs, salt_))
    order = jnp.argsort(~ok, stable=True)[:n]
    batch = cand.take(order)
    keep = ok[order].reshape((n,) + (1,) * (batch.weights.ndim - 1))
    return batch.replace(weights=jnp.where(keep, batch.weights, 0.0))


def _active(split: Split) -> jax.Array:
    """[N] bool: rows with at least one scored answer."""
    return split.weights.reshape(split.size, -1).sum(axis=1) > 0


def overlap(train: Split, other: Split) -> jax.Array:
    """Fraction of `other`'s scored rows whose input equals some scored training row's input.

    Rows are matched by hash (sorted + searchsorted), then compared exactly at the first match, so
    a hash collision never counts as an overlap."""
    n = train.size
    h_train = jnp.where(_active(train), row_hash(train.inputs), jnp.uint32(0xFFFFFFFF))
    order = jnp.argsort(h_train)
    h_sorted = h_train[order]
    h_other = row_hash(other.inputs)
    at = jnp.clip(jnp.searchsorted(h_sorted, h_other), 0, n - 1)
    match_rows = train.inputs[order[at]]
    same = jnp.all((match_rows == other.inputs).reshape(other.size, -1), axis=1)
    found = (h_sorted[at] == h_other) & same & _active(train)[order[at]]
    active = _active(other)
    return (found & active).sum() / jnp.maximum(active.sum(), 1)

"""Held-out inputs are never trained on: the hash hold-out of sampled tasks, the permutation split
of enumerable ones, and the overlap measure members.jsonl reports (against brute force)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.tasks import holdout


def _rows(split, weighted=True) -> set[tuple]:
    inputs, weights = np.asarray(split.inputs), np.asarray(split.weights)
    keep = weights.reshape(len(weights), -1).sum(1) > 0 if weighted else np.ones(len(inputs), bool)
    return {tuple(r) for r in inputs[keep].reshape(int(keep.sum()), -1).tolist()}


def test_parity_12_val_and_test_inputs_never_occur_in_training():
    """Full parity of n = 12 bits as a stream (4,096 inputs): before the hold-out, val was drawn
    from the training distribution and every val input was trained on ~31 times."""
    task = tasks.build({"name": "parity", "n": 12, "k": 12, "n_eval": 512})
    knobs = {"k": jnp.int32(12)}
    data = jax.jit(task.make_data)(jax.random.key(0), knobs)
    held = _rows(data["val"]) | _rows(data["test"])
    assert len(_rows(data["val"]) & _rows(data["test"])) == 0
    assert 200 < len(held) < 1024 + 200  # ~1/8 of the space each, sampled with replacement

    @jax.jit
    def batches(key):
        keys = jax.random.split(key, 64)
        return jax.vmap(lambda k: task.sample_batch(k, data, knobs, 256))(keys)

    seen = set()
    for i in range(4):
        b = batches(jax.random.key(i + 1))
        seen |= _rows(jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), b))
    assert not seen & held
    assert len(seen) > 0.7 * 4096  # training covers the rest of the space (~3/4 of it)
    assert len(seen | held) <= 4096


def test_enumerable_splits_partition_every_example():
    task = tasks.build({"name": "parity", "n": 8, "k": 3, "train_fraction": 0.5, "n_eval": 1024})
    data = task.make_data(jax.random.key(0), {"k": jnp.int32(3)})
    n_train, n_val, n_test = task.split_sizes()
    assert (n_train, n_val, n_test) == (128, 64, 64)
    train, val, test = (_rows(data[s]) for s in ("train", "val", "test"))
    assert len(train) == 128 and not (train & val or train & test or val & test)
    assert len(train | val | test) == 256


def test_sampled_finite_splits_are_disjoint():
    """copying at a short length: 6^1 + ... + 6^3 = 258 inputs, so draws collide constantly."""
    task = tasks.build({"name": "copying", "length": 3, "vocab": 6, "train_size": 300, "n_eval": 200})
    data = task.make_data(jax.random.key(1), {"length": jnp.int32(3), "vocab": jnp.int32(6)})
    train, val, test = (_rows(data[s]) for s in ("train", "val", "test"))
    assert train and val and test and not (train & val or train & test or val & test)


def test_a_bucket_that_cannot_be_filled_leaves_unscored_rows():
    """Parity of 2 bits has 4 inputs: a held-out bucket may hold none of them. The rows left
    unfilled are weighted 0 (never scored) instead of looping forever."""
    task = tasks.build({"name": "parity", "n": 2, "k": 2, "n_eval": 16})
    for seed in range(4):
        data = task.make_data(jax.random.key(seed), {"k": jnp.int32(2)})
        for name in ("val", "test"):
            w = np.asarray(data[name].weights)
            assert set(np.unique(w)) <= {0.0, 1.0}
            if w.any():
                assert not _rows(data[name]) & _rows(data["train"])


def _brute_overlap(train_inputs, train_w, other_inputs, other_w) -> float:
    train = {tuple(r) for r, w in zip(train_inputs.tolist(), train_w) if w > 0}
    active = [tuple(r) for r, w in zip(other_inputs.tolist(), other_w) if w > 0]
    return sum(r in train for r in active) / max(len(active), 1)


@pytest.mark.parametrize("seed", range(3))
def test_overlap_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    train = rng.integers(0, 3, (200, 4)).astype(np.int32)  # 81 possible rows: many repeats
    other = rng.integers(0, 3, (150, 4)).astype(np.int32)
    w_train = (rng.random(200) < 0.5).astype(np.float32)  # unscored training rows do not count
    w_other = (rng.random(150) < 0.8).astype(np.float32)
    split = functools.partial(tasks.Split)
    got = holdout.overlap(
        split(jnp.asarray(train), jnp.zeros(200, jnp.int32), jnp.asarray(w_train)),
        split(jnp.asarray(other), jnp.zeros(150, jnp.int32), jnp.asarray(w_other)),
    )
    assert float(got) == pytest.approx(_brute_overlap(train, w_train, other, w_other))
    assert 0 < float(got) < 1


def test_row_hash_depends_on_position_and_salt():
    x = jnp.asarray([[1, 2, 3], [3, 2, 1], [1, 2, 3]], jnp.int32)
    h = np.asarray(holdout.row_hash(x, 0))
    assert h[0] == h[2] and h[0] != h[1]
    assert np.asarray(holdout.row_hash(x, 1))[0] != h[0]

"""The controlled task suite: every generator against a slow Python reference, cross-field
config errors, and each family's `:smoke` experiment end to end through `jaxcap.run.run`. The
smoke configs are sized so that they double as honest learning tests at a tiny size (parity
of 2 of 6 bits on held-out inputs, copies of length 4, recall with two layers but not one,
max-sum retrieval with as many heads as directions); the assertions fail if the model does not
learn."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import run_smoke as _smoke
from helpers import smoke_config
from helpers import success as _success

from jaxcap import tasks
from jaxcap.config.base import validate
from jaxcap.fields import ConfigError


def _draw(cfg, knobs, n=200, key=0, grid=None):
    task = tasks.build(cfg, grid or {})
    split = task.draw(jax.random.key(key), {k: jnp.asarray(v) for k, v in knobs.items()}, n)
    return task, jax.tree.map(np.asarray, split)


@pytest.mark.parametrize("n,k,key", [(6, 1, 0), (6, 3, 1), (7, 7, 0)])
def test_parity_labels_match_python(n, k, key):
    task, split = _draw({"name": "parity", "n": n, "k": 1}, {"k": k}, key=key, grid={"k": [1, k]})
    secret = np.random.default_rng(0).permutation(n)[:k]  # secret_seed 0; the same for every key
    for row, label in zip(split.inputs.tolist(), split.targets.tolist()):
        assert row[n] == 2 and set(row[:n]) <= {0, 1}
        parity = 0
        for i in secret:
            parity ^= row[i]
        assert label == parity
    assert 0.35 < split.targets.mean() < 0.65
    assert task.complexity_bits({"k": k}) == pytest.approx(
        math.log2(sum(math.comb(n, j) for j in range(k + 1)))
    )


def test_parity_enumerates_every_input_and_full_parity_is_n_bits():
    task = tasks.build({"name": "parity", "n": 5, "k": 5, "train_fraction": 0.5})
    split = task.examples({"k": jnp.int32(5)})
    rows = np.asarray(split.inputs).tolist()
    assert sorted(tuple(r[:5]) for r in rows) == list(itertools.product((0, 1), repeat=5))
    assert [sum(r[:5]) % 2 for r in rows] == np.asarray(split.targets).tolist()
    assert task.complexity_bits({"k": 5}) == pytest.approx(5.0)


def test_copying_matches_python():
    cfg = {"name": "copying", "length": 5, "vocab": 4, "min_length": 2, "longer_by": 2}
    task, split = _draw(cfg, {"length": 5, "vocab": 4}, grid={"length": [4, 5]})
    m, sep, pad = task.padded_length, task.n_symbols, task.n_symbols + 1
    assert m == 7 and task.spec.seq_len == 14
    lengths = set()
    for row, target, weight in zip(split.inputs.tolist(), split.targets.tolist(), split.weights.tolist()):
        length = row.index(sep)
        symbols = row[:length]
        lengths.add(length)
        assert all(0 <= s < 4 for s in symbols)
        full = symbols + [sep] + symbols + [pad] * (2 * m - 2 * length)
        assert row == full[:-1]
        assert weight == [1.0 if length <= j < 2 * length else 0.0 for j in range(2 * m)]
        assert [t for t, w in zip(target, weight) if w] == symbols
    assert lengths == {2, 3, 4, 5}
    data = task.make_data(jax.random.key(3), {"length": jnp.int32(5), "vocab": jnp.int32(4)})
    long_lengths = {row.index(sep) for row in np.asarray(data["val_long"].inputs).tolist()}
    assert long_lengths == {6, 7}
    assert task.complexity_bits({"length": 5, "vocab": 4}) == pytest.approx(10.0)
    assert task.chance({"length": 5, "vocab": 4}) == pytest.approx(sum(4.0**-n for n in range(2, 6)) / 4)


def test_recall_matches_python():
    cfg = {"name": "recall", "n_pairs": 3, "vocab": 5}
    task, split = _draw(cfg, {"n_pairs": 3, "vocab": 5}, n=300, grid={"n_pairs": [3, 4], "vocab": [5, 6]})
    s, m = task.n_symbols, task.pairs
    assert (s, m) == (6, 4) and task.spec.seq_len == 9
    asked = set()
    for row, answer in zip(split.inputs.tolist(), split.targets.tolist()):
        slots = [(row[2 * i], row[2 * i + 1]) for i in range(m)]
        live = [(k, v - s) for k, v in slots if k != 2 * s]
        assert slots[3:] == [(2 * s, 2 * s)] * (m - 3) and len(live) == 3  # 3 pairs, then padding
        keys = [k for k, _ in live]
        assert len(set(keys)) == 3 and all(0 <= k < 5 for k in keys)
        assert all(0 <= v < 5 for _, v in live)
        assert row[-1] in keys and answer == dict(live)[row[-1]]
        asked.add(keys.index(row[-1]))
    assert asked == {0, 1, 2}
    assert task.complexity_bits({"n_pairs": 3, "vocab": 5}) == pytest.approx(3 * math.log2(5))
    with pytest.raises(ConfigError, match="config.sweep.task.n_pairs"):
        tasks.build(cfg, {"n_pairs": [3, 6], "vocab": [5, 8]})


def test_maxsum_matches_python():
    cfg = {"name": "maxsum", "k": 2, "n_points": 5, "dim": 4}
    task, split = _draw(cfg, {"k": 2}, n=50, grid={"k": [2, 3]})
    w = np.random.default_rng(0).standard_normal((3, 4))  # direction_seed 0, max_k 3
    w = (w / np.sqrt((w**2).sum(1, keepdims=True))).tolist()
    for x, y in zip(split.inputs.tolist(), split.targets.tolist()):
        terms = [max(sum(w[i][d] * p[d] for d in range(4)) for p in x) for i in range(2)]
        assert y[0] == pytest.approx(sum(terms) / math.sqrt(2), abs=1e-4)
    assert task.complexity_bits({"k": 3}) == pytest.approx(3 * math.log2(5))


def test_triangle_matches_brute_force():
    task, split = _draw({"name": "triangle", "n_points": 6}, {}, n=100)
    assert np.abs(split.inputs).max() <= 1.0
    checked = 0
    for x, y in zip(split.inputs.tolist(), split.targets.tolist()):
        areas = []
        for a, b, c in itertools.combinations(x, 3):
            area = abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])) / 2
            areas.append((area, [(a[i] + b[i] + c[i]) / 3 for i in range(2)]))
        areas.sort(key=lambda t: -t[0])
        if areas[0][0] - areas[1][0] < 1e-5:
            continue  # a near tie: float32 may pick either triangle
        assert y == pytest.approx(areas[0][1], abs=1e-5)
        checked += 1
    assert checked > 90
    assert task.complexity_bits({}) == pytest.approx(math.log2(20))


@pytest.mark.parametrize(
    "spec,override,message",
    [
        ("configs/parity.py", lambda c: c.task.update(k=20), "config.task.k: got 20; allowed: at most"),
        ("configs/parity.py", lambda c: setattr(c.sweep.task, "k", (1, 13)), "config.task.k: got 13"),
        ("configs/parity.py", lambda c: c.task.update(n=30, train_fraction=0.5), "n <= 20"),
        ("configs/copying.py", lambda c: c.task.update(min_length=3), "config.task.min_length: got 3"),
        (
            "configs/recall.py",
            lambda c: setattr(c.sweep.task, "n_pairs", (1, 17)),
            "config.sweep.task.n_pairs",
        ),
        ("configs/retrieval.py", lambda c: c.task.update(train_fraction=0.5), "config.task.train_fraction"),
    ],
)
def test_impossible_configs_are_one_line_errors(spec, override, message):
    config = smoke_config(spec)
    validate(config)  # the config itself is fine
    override(config)
    with pytest.raises(ConfigError, match=message) as error:
        validate(config)
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_parity_smoke_learns_2_of_6_bits_on_inputs_never_trained_on(tmp_path):
    levels = _smoke("configs/parity.py:smoke", tmp_path)
    assert set(levels) == {("", 2), ("", 6)}
    assert min(_success(levels[("", 2)])) >= 0.95, levels[("", 2)][0]["final"]
    for row in (r for rows in levels.values() for r in rows):  # the stream's hash hold-out
        assert row["overlap"] == {"val": 0.0, "test": 0.0, "guaranteed": True}


@pytest.mark.slow
def test_copying_smoke_copies_length_4_and_scores_longer_lengths(tmp_path):
    levels = _smoke("configs/copying.py:smoke", tmp_path)
    rows = levels[("", 4, 8)]
    assert np.median(_success(rows)) > 0.95 and rows[0]["success_metric"] == "test_exact"
    assert all("val_long_exact" in r["final"] and "val_long_accuracy" in r["final"] for r in rows)


@pytest.mark.slow
def test_recall_smoke_two_layers_learn_where_one_fails(tmp_path):
    levels = _smoke("configs/recall.py:smoke", tmp_path)
    one, two = levels[("model.n_layers=1", 2, 8)], levels[("model.n_layers=2", 2, 8)]
    assert np.median(_success(two)) >= 0.95, _success(two)
    assert np.median(_success(one)) <= 0.75, _success(one)


@pytest.mark.slow
def test_retrieval_smoke_maxsum_with_enough_heads(tmp_path):
    levels = _smoke("configs/retrieval.py:smoke", tmp_path)
    rows = levels[("", 2)]  # k = 2 directions, 2 heads
    assert rows[0]["success_metric"] == "test_nmse" and not rows[0]["higher_is_better"]
    assert max(_success(rows)) < 0.2, _success(rows)


@pytest.mark.slow
def test_triangle_smoke_runs_one_bucket_per_n(tmp_path):
    levels = _smoke("configs/retrieval.py:triangle_smoke", tmp_path)
    bits = {label: rows[0]["complexity_bits"] for (label, *_), rows in levels.items()}
    assert bits == {"task.n_points=3": 0.0, "task.n_points=4": 2.0}
    for r in (r for rows in levels.values() for r in rows):  # chance: the train mean, NMSE near 1
        assert r["family"] == "triangle" and r["chance_nominal"] == 1.0 and abs(r["chance"] - 1.0) < 0.2

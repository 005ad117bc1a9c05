"""Chance (the best input-blind predictor, fitted on train only) and the shortcuts of recall and
copying, each checked against a brute-force Python computation on small instances."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.core.baselines import make_baselines


def _knobs(task):
    return {k: jnp.asarray(v) for k, v in task.default_knobs().items()}


def _baselines(task):
    knobs = _knobs(task)
    data = task.make_data(jax.random.key(0), knobs)
    out = jax.jit(make_baselines(task, task.spec.n_outputs, 64))(knobs, data)
    splits = {k: jax.tree.map(np.asarray, v) for k, v in task.eval_splits(data).items()}
    train = jax.tree.map(np.asarray, data["train"])  # the whole split, not the eval subset
    return {k: float(v) for k, v in out.items()}, train, splits


def _mode(values) -> int:
    counts = collections.Counter(values)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)  # ties: the smallest class, as argmax


def test_classify_chance_is_the_train_mode_scored_on_test():
    task = tasks.build(
        {"name": "modulo", "modulus": 7, "base": 3, "digits": 4, "train_fraction": 0.5, "n_eval": 30}
    )
    got, train, splits = _baselines(task)
    mode = _mode(train.targets.tolist())
    for name in ("train", "val", "test"):
        assert got[f"chance_{name}_accuracy"] == pytest.approx((splits[name].targets == mode).mean())
    assert "shortcut_test_accuracy" not in got and got["overlap_val"] == got["overlap_test"] == 0.0


def _sequence_chance(train, split):
    """Brute force: per-position modes, and the commonest whole scored target sequence; the exact
    score of whichever is better on train."""
    targets, scored = train.targets, train.weights > 0
    per_position = np.array(
        [_mode(targets[scored[:, t], t].tolist() or [0]) for t in range(targets.shape[1])]
    )
    patterns = collections.Counter(tuple(np.where(s, y, -1)) for y, s in zip(targets, scored) if s.any())
    top = max(patterns.values())
    joint = [np.array([max(v, 0) for v in p]) for p, c in patterns.items() if c == top]

    def exact(pred, sp):
        ok = [(pred[s] == y[s]).all() for y, s in zip(sp.targets, sp.weights > 0) if s.any()]
        return float(np.mean(ok))

    def accuracy(pred, sp):
        w = sp.weights
        return float(((pred[None, :] == sp.targets) * w).sum() / w.sum())

    best_joint = max(joint, key=lambda p: exact(p, train))
    use_joint = exact(best_joint, train) > exact(per_position, train)
    return accuracy(per_position, split), exact(best_joint if use_joint else per_position, split), use_joint


@pytest.mark.parametrize("seed", range(2))
def test_sequence_chance_per_position_and_commonest_sequence(seed):
    task = tasks.build({"name": "copying", "length": 3 + seed, "vocab": 3, "train_size": 200, "n_eval": 60})
    got, train, splits = _baselines(task)
    for name in ("val", "test"):
        accuracy, exact, _ = _sequence_chance(train, splits[name])
        assert got[f"chance_{name}_accuracy"] == pytest.approx(accuracy, abs=1e-6)
        assert got[f"chance_{name}_exact"] == pytest.approx(exact, abs=1e-6)


def test_recall_shortcut_is_the_commonest_value_shown():
    task = tasks.build({"name": "recall", "n_pairs": 3, "vocab": 4, "train_size": 100, "n_eval": 80})
    got, _, splits = _baselines(task)
    s, test = task.n_symbols, splits["test"]
    right = []
    for x, y in zip(test.inputs, test.targets):
        values = [v - s for v in x[1 : 2 * task.pairs : 2] if v < 2 * s]
        right.append(_mode(values) == y)
    assert got["shortcut_test_accuracy"] == pytest.approx(np.mean(right))
    assert 1 / 3 < got["shortcut_test_accuracy"] < 1  # about 1/n, more with repeated values
    assert got["chance_test_accuracy"] < got["shortcut_test_accuracy"]


def test_copying_shortcut_is_the_unigram_guess():
    task = tasks.build({"name": "copying", "length": 4, "vocab": 3, "train_size": 100, "n_eval": 80})
    got, _, splits = _baselines(task)
    test, sep = splits["test"], task.n_symbols
    hits = total = 0.0
    for x, y, w in zip(test.inputs, test.targets, test.weights):
        guess = _mode(x[: list(x).index(sep)].tolist())
        hits, total = hits + ((y == guess) * w).sum(), total + w.sum()
    assert got["shortcut_test_accuracy"] == pytest.approx(hits / total)


def test_regression_chance_is_the_train_mean():
    task = tasks.build({"name": "maxsum", "k": 2, "n_points": 5, "dim": 3, "train_size": 100, "n_eval": 60})
    got, train, splits = _baselines(task)
    mean, y = train.targets.mean(0), splits["test"].targets
    nmse = ((y - mean) ** 2).mean() / (((y**2).mean(0) - y.mean(0) ** 2).mean())
    assert got["chance_test_nmse"] == pytest.approx(nmse, rel=1e-4)


def test_baselines_inside_the_x64_scope_of_a_float64_run():
    """A float64 run trains inside `jax.enable_x64`: the blind tables are float64 there, and the
    scoring scan (float32 carry) must still add them up (it raised a carry-type error before)."""
    task = tasks.build(
        {"name": "random_tokens", "vocab_size": 16, "seq_len": 8, "dataset_size": 40, "n_eval": 32}
    )
    want, _, _ = _baselines(task)
    with jax.enable_x64(True):
        got, _, _ = _baselines(task)
    assert got == pytest.approx(want, rel=1e-6)

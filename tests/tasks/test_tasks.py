"""Every task: checked as it is built (reading nothing outside its fields), deterministic in its
key, shapes and vocabulary in bounds, labels equal to a slow Python reference."""

import dataclasses
import itertools
import math
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.fields import ConfigError
from jaxcap.tasks import sentiment
from jaxcap.tasks.binop import operation_table
from jaxcap.tasks.dataset import encoding as dataset_encoding
from jaxcap.tasks.dataset.export import export
from jaxcap.tasks.rna import fold as rna_fold
from jaxcap.tasks.vader import real_sentiment
from jaxcap.tasks.vader.resources import write_fixture

SMALL = {
    "modulo": {"name": "modulo", "modulus": 7, "base": 3, "digits": 4, "train_fraction": 0.5, "n_eval": 50},
    "binop": {"name": "binop", "operation": "sub", "p": 7, "train_fraction": 0.5, "n_eval": 50},
    "random_labels": {"name": "random_labels", "vocab_size": 8, "seq_len": 14, "n_classes": 5, "n_eval": 50},
    "random_tokens": {"name": "random_tokens", "vocab_size": 8, "seq_len": 12, "n_eval": 50},
    "parity": {"name": "parity", "n": 5, "k": 3, "train_fraction": 0.5, "n_eval": 50},
    "copying": {"name": "copying", "length": 3, "vocab": 5, "longer_by": 2, "train_size": 40, "n_eval": 50},
    "recall": {"name": "recall", "n_pairs": 3, "vocab": 6, "train_size": 40, "n_eval": 50},
    "maxsum": {"name": "maxsum", "k": 2, "n_points": 5, "dim": 3, "train_size": 40, "n_eval": 50},
    "triangle": {"name": "triangle", "n_points": 5, "train_size": 40, "n_eval": 50},
    "markov": {"name": "markov", "order": 2, "vocab": 4, "length": 12, "train_size": 40, "n_eval": 50},
    "pcfg": {"name": "pcfg", "depth": 3, "vocab": 6, "n_rules": 3, "train_size": 40, "n_eval": 50},
    "hmm": {
        "name": "hmm",
        "states": 2,
        "vocab": 4,
        "length": 12,
        "stickiness": 0.8,
        "train_size": 40,
        "n_eval": 50,
    },
    "shakespeare": {
        "name": "shakespeare",
        "length": 32,
        "train_genres": "roman",
        "eval_genres": "romances",
        "train_size": 40,
        "n_eval": 50,
    },
    "rna": {
        "name": "rna",
        "length": 8,
        "longer_by": 2,
        "folding": "nussinov",
        "train_size": 40,
        "n_eval": 50,
    },
    "arc": {"name": "arc", "level": 14, "size": 3, "min_size": 2, "train_size": 40, "n_eval": 50},
    "sentiment": {"name": "sentiment", "level": 4, "n_words": 16, "train_size": 40, "n_eval": 50},
    "dataset": export(  # the modulo case above, written to a file and read back
        {"name": "modulo", "modulus": 7, "base": 3, "digits": 4, "train_fraction": 0.5, "n_eval": 50},
        tempfile.mkdtemp() + "/modulo.npz",
    ),
    "vader": {  # a tiny synthetic sdist in the real layout, not the real sentences
        "name": "vader",
        "data_dir": write_fixture(tempfile.mkdtemp()),
        "vocab_size": 16,
        "seq_len": 8,
        "val_fraction": 0.25,
        "n_eval": 50,
    },
}


def test_every_registered_task_has_a_small_case():
    assert set(SMALL) == set(tasks.TASKS)


def test_an_impossible_task_is_refused_by_its_constructor():
    """16 numbers, 15 for training: no val or test example is left. The constructor raises the
    field-path error itself, for a derived task too; nothing has to call `check`."""
    cfg = {**SMALL["modulo"], "base": 2, "digits": 4, "modulus": 2}
    message = r"^config.task.train_fraction: got 0.95, which leaves 15 train, 0 val and 1 test examples of 16"
    with pytest.raises(ConfigError, match=message):
        tasks.build({**cfg, "train_fraction": 0.95})
    with pytest.raises(ConfigError, match=message):
        dataclasses.replace(tasks.build(cfg), train_fraction=0.95)


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_building_runs_check_and_reads_no_package_or_data(name, monkeypatch):
    """`Task.__post_init__` runs each task's own `check`, and nothing that loads data or imports
    an optional package: the config schema builds every task with its defaults (e.g. vader without
    its data), and a bucket runs `check_resources` instead."""

    def read(*args, **kwargs):
        raise AssertionError("building a task read a package or data")

    cls = tasks.TASKS[name]
    loaders = ((sentiment, "vocabulary"), (real_sentiment, "dataset"), (rna_fold, "has_vienna"))
    for module, loader in (*loaders, (dataset_encoding, "load")):
        monkeypatch.setattr(module, loader, read)
    monkeypatch.setattr(cls, "check_resources", read)
    task = cls()
    tasks.build(SMALL[name])

    def refuse(self):
        raise ConfigError(f"config.task.name: {type(self).__name__} was checked")

    monkeypatch.setattr(cls, "check", refuse)
    with pytest.raises(ConfigError, match=f"{cls.__name__} was checked"):
        tasks.build(SMALL[name])
    with pytest.raises(ConfigError, match=f"{cls.__name__} was checked"):
        dataclasses.replace(task, n_eval=task.n_eval + 1)


def _knobs(task):
    return {k: jnp.asarray(v) for k, v in task.default_knobs().items()}


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_deterministic_in_key_and_in_bounds(name):
    task = tasks.build(SMALL[name])
    spec = task.spec
    a = task.make_data(jax.random.key(0), _knobs(task))
    b = task.make_data(jax.random.key(0), _knobs(task))
    c = task.make_data(jax.random.key(1), _knobs(task))
    jax.tree.map(np.testing.assert_array_equal, a, b)
    assert not np.array_equal(a["train"].inputs, c["train"].inputs)
    n_train, n_val, n_test = task.split_sizes()
    assert a["train"].size == (n_train or task.n_eval) and a["val"].size == n_val and a["test"].size == n_test
    for split in (v for v in a.values() if isinstance(v, tasks.Split)):
        assert split.inputs.shape[1] == spec.seq_len
        if spec.input_dim:  # float vectors (regression on point sets)
            assert split.inputs.shape[2] == spec.input_dim and np.isfinite(split.inputs).all()
        else:
            assert split.inputs.min() >= 0 and split.inputs.max() < spec.vocab_size
        if spec.kind == "regress":
            assert split.targets.shape == (split.size, spec.n_outputs) and np.isfinite(split.targets).all()
        else:
            assert split.targets.min() >= 0 and split.targets.max() < spec.n_outputs
    batch = task.sample_batch(jax.random.key(2), a, _knobs(task), 8)
    assert batch.inputs.shape[:2] == (8, spec.seq_len)
    if task.n_examples() is not None and task.overlap_guaranteed():  # enumerable: a partition
        rows = {tuple(r) for name in ("train", "val", "test") for r in np.asarray(a[name].inputs)}
        assert len(rows) == n_train + n_val + n_test == task.n_examples()
    assert 0 < task.chance(task.default_knobs()) <= 1
    assert task.complexity_bits(task.default_knobs()) > 0


def _python_digits(x, base, digits):
    out = []
    for _ in range(digits):
        out.append(x % base)
        x //= base
    return out[::-1]


@pytest.mark.parametrize("modulus", [2, 5, 7, 64])
def test_modulo_labels_match_python(modulus):
    task = tasks.build({**SMALL["modulo"], "modulus": modulus, "base": 5, "digits": 3})
    split = task.examples({"modulus": jnp.int32(modulus)})
    for x, (inputs, target) in enumerate(zip(np.asarray(split.inputs), np.asarray(split.targets))):
        assert list(inputs) == _python_digits(x, 5, 3) + [5]
        assert target == x % modulus
    m = 5**3
    assert task.chance({"modulus": modulus}) == pytest.approx(
        max(sum(1 for x in range(m) if x % modulus == r) for r in range(modulus)) / m
    )
    assert task.complexity_bits({"modulus": modulus}) == pytest.approx(math.log2(modulus))


def test_modulo_stream_draws_fresh_labelled_examples():
    task = tasks.build({**SMALL["modulo"], "train_fraction": 0.0})
    assert task.is_stream
    batch = task.sample_batch(jax.random.key(3), {}, {"modulus": jnp.int32(7)}, 64)
    values = [int("".join(map(str, row[:-1])), 3) for row in np.asarray(batch.inputs)]
    assert [v % 7 for v in values] == list(np.asarray(batch.targets))


def test_modulo_output_mask_hides_classes_beyond_n():
    task = tasks.build({**SMALL["modulo"], "modulus": 5}, {"modulus": [5, 11]})
    assert task.spec.n_outputs == 11
    assert list(np.asarray(task.output_mask({"modulus": jnp.int32(5)}))) == [True] * 5 + [False] * 6


def _slow_binop(op, a, b, p):
    if op == "add":
        return (a + b) % p
    if op == "sub":
        return (a - b) % p
    if op == "mul":
        return (a * b) % p
    if b == 0:
        return None
    for c in range(p):  # the c with c * b = a (mod p), by search
        if (c * b) % p == a:
            return c


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binop_table_matches_python(op):
    p = 13
    table = operation_table(op, p, 0)
    for a in range(p):
        for b in range(p):
            expected = _slow_binop(op, a, b, p)
            assert table[a, b] == (-1 if expected is None else expected)


@pytest.mark.parametrize("k", [3, 4])
def test_permutation_composition_matches_python(k):
    perms = list(itertools.permutations(range(k)))
    table = operation_table("perm", 0, k)
    for s, sigma in enumerate(perms):
        for t, tau in enumerate(perms):
            assert perms[table[s, t]] == tuple(sigma[tau[i]] for i in range(k))


def test_binop_examples_are_the_table():
    task = tasks.build({**SMALL["binop"], "operation": "div"})
    split = task.examples({})
    assert split.size == 7 * 6  # b = 0 is not in the domain
    for (a, op, b, eq), y in zip(np.asarray(split.inputs), np.asarray(split.targets)):
        assert (op, eq) == (7, 8) and (y * b) % 7 == a

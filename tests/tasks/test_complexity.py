"""Data-derived complexity against the closed-form bits of built-in tasks, each level measured from
its own training split (`level_bits`): random labels n log2 K by every measure; parity's k secret
bits found, 2^k table bits; x mod N on its digits; copying's sampled prefixes. Where a measure must
differ from the closed form (a learner's cost, a compressor's floor, whole digit columns, a sample
of a huge input space) the test holds the direction the docs state (docs/meta-model.md#bits-from-data)."""

import math

import jax
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.tasks import complexity
from jaxcap.tasks.complexity import codes, lookup, table
from jaxcap.tasks.parity import secret_ranks
from studies.measures import closed_form as measures


def level(cfg: dict, knobs=None):
    """(task, its training split as host arrays, the restricted table of it)."""
    task = tasks.build(cfg)
    values = {k: jax.numpy.asarray(v) for k, v in task.default_knobs().items()}
    train = jax.device_get(task.make_data(jax.random.key(0), values)["train"])
    arrays = [np.asarray(a) for a in (train.inputs, train.targets, train.weights)]
    t = table.build(*arrays, task.spec.kind, task.spec.n_outputs, task.causal)
    return task, arrays, lookup.restrict(t)


def bits_of(r) -> dict:
    return {name: fn(r) for name, fn in complexity.MEASURES.items()}


def test_random_labels_are_n_log2_k_by_every_measure():
    # 1,024 examples drawn, the first n = 512 scored (the rest weight 0 and must not count)
    cfg = {"name": "random_labels", "vocab_size": 16, "seq_len": 16, "n_classes": 16}
    task, _, r = level({**cfg, "dataset_size": 512, "max_dataset_size": 1024})
    n, k = 512, 16
    closed = task.complexity_bits({"dataset_size": n})
    assert closed == n * math.log2(k) and r.rows == n
    bits = bits_of(r)
    # lookup: at most one table row per input; the elimination keeps columns until no two inputs
    # with different labels merge, and a same-label merge is 15x rarer than such a conflict
    assert 0.95 * closed <= bits["lookup"] <= closed
    # prequential: each entry's first label costs exactly log2 K, a repeat less; plus the columns
    assert bits["lookup"] + codes.column_bits(r) <= bits["prequential"] <= closed + codes.column_bits(r)
    # compressed: random labels do not compress (a self-delimiting code beats its entropy by d bits
    # with probability 2^-d, d = 20 here, less the zero floor subtracted), and LZMA2 stores an
    # incompressible chunk raw (3 header bytes per 64 KiB, one end byte)
    floor = codes.lzma_bytes(codes.label_bytes(np.zeros(n, np.int64), k))
    assert closed - 8 * floor - 20 <= bits["compressed"] <= closed + 32
    # and the public entry point reads the same split the same way
    _, arrays, _ = level({**cfg, "dataset_size": 512, "max_dataset_size": 1024})
    assert complexity.data_bits(*arrays, "classify", k, "lookup") == bits["lookup"]


@pytest.mark.parametrize("k", [3, 5])
def test_parity_finds_the_k_secret_bits(k):
    cfg = {"name": "parity", "n": 10, "k": k, "train_fraction": 0.5}
    task, _, r = level(cfg)
    secret = np.flatnonzero(secret_ranks(10, 0) < k)
    assert r.columns == tuple(secret.tolist())  # the '=' column and the other bits dropped
    bits = bits_of(r)
    assert bits["lookup"] == 2**k == measures.table_bits("parity", {"n": 10, "k": k})
    # the learner pays for learning each entry: the prequential code is above the table
    assert bits["prequential"] > bits["lookup"] + codes.column_bits(r)
    # a table of 2^k bits is a few bytes: under the compressor's floor, it reads as (nearly) nothing
    assert bits["compressed"] <= bits["lookup"]
    assert complexity.level_bits(task, {}, jax.random.key(0), "lookup") == bits["lookup"]


@pytest.mark.parametrize("modulus, columns", [(10, (3,)), (100, (2, 3))])
def test_modulo_of_a_power_of_the_base_reads_its_last_digits(modulus, columns):
    cfg = {"name": "modulo", "modulus": modulus, "base": 10, "digits": 4}
    _, _, r = level(cfg)
    assert r.columns == columns
    assert bits_of(r)["lookup"] == pytest.approx(measures.table_bits("modulo", cfg))


def test_modulo_where_whole_digits_overstate_or_a_half_sample_understates_the_table():
    # x mod 5 reads the last digit, whose 10 values fall in 5 residue classes: the column rule
    # keeps whole digits, so its table has twice the closed form's entries
    cfg = {"name": "modulo", "modulus": 5, "base": 10, "digits": 4}
    _, _, r = level(cfg)
    assert r.columns == (3,)
    assert bits_of(r)["lookup"] == pytest.approx(2 * measures.table_bits("modulo", cfg))
    # x mod 97 needs every digit; the training half holds half of the 10^4 entries
    cfg = {**cfg, "modulus": 97}
    task, _, r = level(cfg)
    n_train = task.split_sizes()[0]
    assert r.columns == (0, 1, 2, 3)
    bits = bits_of(r)
    assert bits["lookup"] == pytest.approx(n_train * math.log2(97))
    assert bits["lookup"] == pytest.approx(measures.table_bits("modulo", cfg) / 2, rel=1e-3)
    # in canonical (digit) order consecutive residues step by one: LZMA sees it, the table does not
    assert bits["compressed"] < bits["lookup"]


def test_copying_from_a_sample_memorises_more_than_the_closed_form():
    # the closed form counts the L x log2 V bits of one copy; a lookup over whole columns cannot
    # see "read the symbol l positions back", so it stores the sampled prefixes' answers
    cfg = {"name": "copying", "length": 4, "vocab": 4, "train_size": 256}
    task, _, r = level(cfg)
    closed = task.complexity_bits({"length": 4, "vocab": 4})
    bits = bits_of(r)
    assert closed < bits["lookup"] <= r.rows * math.log2(4)
    assert bits["prequential"] >= bits["lookup"]


def test_the_docs_table_command_measures_a_level():
    from studies import data_bits

    label, cfg = next((lb, c) for lb, c in data_bits.LEVELS if c["name"] == "parity")
    row = data_bits.measure(label, cfg)
    assert row["lookup"] == row["table_bits"] == 2 ** cfg["k"] and row["columns"] == f"{cfg['k']} of 11"
    text = data_bits.markdown([row])
    assert text.splitlines()[0].startswith("| level | answers | columns kept") and label in text

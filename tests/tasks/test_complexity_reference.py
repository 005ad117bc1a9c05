"""Data-derived complexity measures against slow, obvious references on small random tables: the
relevant columns against every subset of columns, the lookup table counted with dicts, the LZMA
code of the sorted table built by string formatting, the prequential code by a loop over examples;
sequence positions read their prefix; a user's own Task is measured; bad input is one line."""

import lzma
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.fields import ConfigError
from jaxcap.tasks import complexity
from jaxcap.tasks.complexity import codes, lookup, table
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets


def brute_rows(inputs, targets, weights, kind, causal=True):
    """[(key tuple, label)] of every scored answer, by the definition."""
    rows = []
    for n in range(inputs.shape[0]):
        if kind == "classify":
            if weights[n] > 0:
                rows.append((tuple(int(v) + 1 for v in inputs[n]), int(targets[n])))
            continue
        for t in range(inputs.shape[1]):
            if weights[n, t] > 0:
                seen = [int(v) + 1 if s <= t or not causal else 0 for s, v in enumerate(inputs[n])]
                rows.append(((t, *seen), int(targets[n, t])))
    return rows


def answers(rows, cols) -> dict:
    """restricted input -> set of labels seen with it."""
    out = {}
    for key, label in rows:
        out.setdefault(tuple(key[c] for c in cols), set()).add(label)
    return out


def consistent(rows, cols) -> bool:
    """No two full inputs with different label sets share a restricted input."""
    full = answers(rows, range(len(rows[0][0])))
    merged = {}
    for key, labels in full.items():
        merged.setdefault(tuple(key[c] for c in cols), set()).add(frozenset(labels))
    return all(len(v) == 1 for v in merged.values())


def minimal_sets(rows) -> set:
    """Every consistent column set none of whose columns can be dropped alone."""
    d = len(rows[0][0])
    subsets = [tuple(c for c in range(d) if m >> c & 1) for m in range(1 << d)]
    good = {s for s in subsets if consistent(rows, s)}
    return {s for s in good if not any(tuple(c for c in s if c != x) in good for x in s)}


def ranks(rows):
    outputs = sorted({label for _, label in rows})
    return [(key, outputs.index(label)) for key, label in rows], len(outputs)


def brute_compressed(rows, cols) -> float:
    rows, k = ranks(rows)
    table_ = answers(rows, cols)
    labels = [label for key in sorted(table_) for label in sorted(table_[key])]
    width = (k - 1).bit_length()

    def packed(values):
        s = "".join(format(v, f"0{width}b") for v in values) if width else ""
        s += "0" * (-len(s) % 8)
        return bytes(int(s[i : i + 8], 2) for i in range(0, len(s), 8))

    size = lambda b: len(lzma.compress(b, format=lzma.FORMAT_RAW, filters=codes.FILTERS))  # noqa: E731
    return 8.0 * max(0, size(packed(labels)) - size(packed([0] * len(labels))))


def brute_prequential(rows, cols) -> float:
    rows, k = ranks(rows)
    searched = len(rows[0][0])
    order = np.random.default_rng(codes.ORDER_SEED).permutation(len(rows))
    rows = [(tuple(rows[i][0][c] for c in cols), rows[i][1]) for i in order]
    ends = sorted({max(1, math.ceil(len(rows) * 2.0**-j)) for j in range(10, -1, -1)})
    bits = ends[0] * math.log2(k)
    for start, stop in zip(ends[:-1], ends[1:]):
        history = {}
        for key, label in rows[:start]:
            history.setdefault(key, []).append(label)
        for key, label in rows[start:stop]:
            h = history.get(key, [])
            counts = [h.count(y) for y in range(k)]
            log_kt = sum(math.lgamma(c + 0.5) - math.lgamma(0.5) for c in counts)
            log_kt += math.lgamma(k / 2) - math.lgamma(len(h) + k / 2)
            fixed_ok = len(set(h)) <= 1
            log_fixed = -math.log(k) if h else 0.0
            w = 1 / (1 + math.exp(log_kt - log_fixed)) if fixed_ok else 0.0
            p_fixed = 1 / k if not h else float(counts[label] == len(h))
            p = w * p_fixed + (1 - w) * (counts[label] + 0.5) / (len(h) + k / 2)
            bits -= math.log2(p)
    return bits + math.log2(math.comb(searched, len(cols)))  # which columns are read


def random_case(seed):
    """A small table: answers a function of 1-2 of 5 columns, or noisy, with unscored rows."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, (int(rng.integers(20, 80)), 5))
    a, b = rng.choice(5, 2, replace=False)
    y = [x[:, a] % 2, (x[:, a] + x[:, b]) % 3, rng.integers(0, 4, len(x)), 0 * x[:, 0]][seed % 4]
    w = (rng.random(len(x)) < 0.9).astype(np.float32)
    w[0] = 1.0
    return x, y.astype(np.int64), w


@pytest.mark.parametrize("seed", range(12))
def test_every_measure_equals_its_slow_reference(seed):
    x, y, w = random_case(seed)
    rows = brute_rows(x, y, w, "classify")
    t = table.build(x, y, w, "classify", 4)
    cols = lookup.relevant_columns(t)
    assert cols in minimal_sets(rows)  # consistent, and no single column of it can be dropped
    r = lookup.restrict(t)
    brute = answers(ranks(rows)[0], cols)
    assert r.entries == len(brute)
    k = len({label for _, label in rows})
    assert complexity.MEASURES["lookup"](r) == pytest.approx(sum(map(len, brute.values())) * math.log2(k))
    assert codes.compressed_bits(r) == brute_compressed(rows, cols)
    assert codes.prequential_bits(r) == pytest.approx(brute_prequential(rows, cols), rel=1e-9, abs=1e-9)
    # every first sight of a table row costs at least log2 K: prequential >= lookup + the column names
    assert codes.prequential_bits(r) >= lookup.lookup_bits(r) + codes.column_bits(r) - 1e-9


def test_sequence_positions_read_their_prefix():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (7, 5))
    y = np.concatenate([x[:, 1:], np.zeros((7, 1), np.int64)], axis=1)  # next token
    w = np.ones((7, 5), np.float32)
    w[:, -1] = 0
    for causal in (True, False):
        rows = brute_rows(x, y, w, "sequence", causal)
        t = table.build(x, y, w, "sequence", 3, causal)
        assert sorted(zip(map(tuple, t.keys.tolist()), t.labels.tolist())) == sorted(ranks(rows)[0])
        assert lookup.relevant_columns(t) in minimal_sets(rows)
        r = lookup.restrict(t)
        assert codes.prequential_bits(r) == pytest.approx(brute_prequential(rows, r.columns), rel=1e-9)
    # data_bits reads a next-token task causally: no key holds the token its position predicts
    keys = table.build(x, y, w, "sequence", 3).keys
    assert np.all(keys[np.arange(len(keys)), keys[:, 0] + 2] == 0)


class FirstToken(Task):
    """A user's task, outside the registry: the answer is the first of 4 tokens over 5 symbols."""

    train_fraction: float = 0.5

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec("first_token", "classify", 5, 4, 5, "last")

    def n_examples(self) -> int:
        return 5**4

    def examples(self, knobs):
        x = jnp.arange(5**4)
        inputs = (x[:, None] // 5 ** jnp.arange(3, -1, -1)[None, :]) % 5
        return Split(inputs, inputs[:, 0], ones_like_targets(inputs[:, 0]))

    def complexity_bits(self, knobs):
        return math.log2(5)

    def chance(self, knobs):
        return 0.2


def test_a_users_task_is_measured_from_its_examples():
    task = FirstToken(train_fraction=0.5)
    bits = {m: complexity.level_bits(task, {}, jax.random.key(0), m) for m in complexity.MEASURES}
    assert bits["lookup"] == pytest.approx(5 * math.log2(5))  # one column, its 5 values
    assert bits["prequential"] >= bits["lookup"]


GOOD = dict(inputs=np.zeros((3, 2), np.int64), targets=np.zeros(3, np.int64), weights=np.ones(3))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": "regress"}, "complexity.kind: got 'regress'; allowed: classify, sequence"),
        ({"inputs": np.zeros((3, 2, 4), np.float32)}, "complexity.inputs: got shape (3, 2, 4) float32"),
        ({"targets": np.zeros(4, np.int64)}, "complexity.targets: got shape (4,) int64; allowed: [N]"),
        ({"weights": np.ones((3, 2))}, "complexity.weights: got shape (3, 2)"),
        ({"weights": np.zeros(3)}, "complexity.weights: got no weight > 0"),
        ({"targets": np.array([0, 9, 0])}, "complexity.targets: got label 9 in row 1; allowed: 0 <= label"),
        ({"n_outputs": 0}, "complexity.n_outputs: got 0; allowed: an integer >= 1"),
        ({"measure": "gzip"}, "complexity.measure: got 'gzip'; allowed: lookup, compressed, prequential"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(change, message):
    args = {**GOOD, "kind": "classify", "n_outputs": 2, **change}
    with pytest.raises(ConfigError) as info:
        complexity.data_bits(**args)
    assert str(info.value).startswith(message) and "\n" not in str(info.value), str(info.value)

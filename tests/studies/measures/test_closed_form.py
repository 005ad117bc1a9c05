"""Difficulty measures against brute force: for every calibrate family, small levels enumerated
input by input through the task's own ground truth, the relevant inputs of each answer found by
flipping input tokens, the table counted and compressed by a naive Lempel-Ziv parser; then
`with_measure` round trips and the `studies.measures.score` command on a simulated table."""

import dataclasses
import itertools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.meta.data import build_table, save_table
from jaxcap.meta.simulate import Truth, simulate_rows
from jaxcap.tasks.parity import secret_ranks
from studies.measures import closed_form, score


def naive_lz76(s) -> int:
    """Phrases by the definition: extend the phrase while it occurs starting earlier."""
    i = count = 0
    while i < len(s):
        n = 1
        while i + n <= len(s) and any(s[j : j + n] == s[i : i + n] for j in range(i)):
            n += 1
        count, i = count + 1, i + n
    return count


def naive_bits(answers) -> float:
    a = [int(x) for x in answers]
    return math.log2(len(a)) * (naive_lz76(a) + naive_lz76(a[::-1])) / 2


def test_lz76_is_the_exhaustive_history_parsing():
    assert closed_form.lz76_phrases("0001101001000101") == 6  # 0.001.10.100.1000.101 (Kaspar & Schuster)
    rng = np.random.default_rng(0)
    for _ in range(200):
        k, n = int(rng.integers(1, 5)), int(rng.integers(1, 120))
        s = [int(v) for v in rng.integers(0, k, n)]
        if rng.random() < 0.3:  # periodic strings: long, overlapping matches
            s = (s[: int(rng.integers(1, 6))] * n)[:n]
        assert closed_form.lz76_phrases("".join(map(chr, s))) == naive_lz76(s), s


def _table(entries: dict) -> tuple[int, list[int]]:
    """(entries, answers in the canonical order: sorted relevant-input keys)."""
    return len(entries), [entries[k] for k in sorted(entries)]


def modulo_brute(fields):
    task = closed_form.build_task("modulo", fields)
    n, base = fields["modulus"], fields["base"]
    truth = np.asarray(task.examples({"modulus": jnp.asarray(n)}).targets)
    weights = [base**i % n for i in range(fields["digits"])]
    m = task.digit_classes(n)
    entries = {}
    for x in range(base ** fields["digits"]):
        residues = [(x // base**i % base) % m[i] for i in range(fields["digits"])]
        groups = dict.fromkeys(weights)  # groups in the order of their first digit (last digit first)
        key = tuple(tuple(sorted(r for r, w in zip(residues, weights) if w == g)) for g in groups)
        assert entries.setdefault(key, int(truth[x])) == truth[x]  # the answer is a function of the key
    return (*_table(entries), n)


def parity_brute(fields):
    task = closed_form.build_task("parity", fields)
    split = task.examples({"k": jnp.asarray(fields["k"])})
    bits, truth = np.asarray(split.inputs)[:, :-1], np.asarray(split.targets)
    answer = {tuple(b): int(t) for b, t in zip(bits, truth)}
    sensitive = {
        p for b in answer for p in range(len(b)) if answer[b[:p] + (1 - b[p],) + b[p + 1 :]] != answer[b]
    }
    secret = np.flatnonzero(secret_ranks(fields["n"], fields["secret_seed"]) < fields["k"])
    assert sensitive == set(secret.tolist())  # the flips that change the answer: the secret bits
    entries = {}
    for b, t in answer.items():
        assert entries.setdefault(tuple(b[p] for p in sorted(sensitive)), t) == t
    return (*_table(entries), 2)


def random_labels_brute(fields):
    task = closed_form.build_task("random_labels", fields)
    n = fields["dataset_size"]
    split = task.draw(jax.random.key(closed_form.LABEL_KEY), {"dataset_size": n}, n)
    inputs, labels = np.asarray(split.inputs), np.asarray(split.targets)
    assert len({tuple(x) for x in inputs}) == n  # n distinct stored items, in the order drawn
    return n, labels.tolist(), fields["n_classes"]


def in_context_brute(answer_fn, layouts, offset: int, v: int):
    """Flip every symbol token an answer may read to every other symbol (tokens offset .. offset
    + v - 1); its relevant input must be one token; count (its slot, its symbol). `layouts`
    yields (inputs, [(answer position j, candidate positions, slot of a position)])."""
    entries = {}
    for x, answers in layouts:
        for j, candidates, slot_of in answers:
            a = answer_fn(x, j)
            moved = {
                p
                for p in candidates
                for t in range(offset, offset + v)
                if t != x[p] and answer_fn(x[:p] + [t] + x[p + 1 :], j) != a
            }
            (p,) = moved  # one relevant symbol token
            assert entries.setdefault((slot_of(p), x[p] - offset), a) == a
    return (*_table(entries), v)


def copying_brute(fields):
    task = closed_form.build_task("copying", fields)
    length, v, sep, pad = fields["length"], fields["vocab"], task.n_symbols, task.n_symbols + 1
    answer_fn = lambda x, j: x[j - x.index(sep)]  # noqa: E731  (position j predicts copy symbol j - l)
    knobs = {"length": jnp.asarray(length), "vocab": jnp.asarray(v)}
    split = task.draw(jax.random.key(1), knobs, 256)  # the reference against the task's targets
    for x, y, w in zip(*(np.asarray(a).tolist() for a in (split.inputs, split.targets, split.weights))):
        scored = [j for j in range(len(w)) if w[j]]
        assert scored == list(range(x.index(sep), 2 * x.index(sep)))
        assert all(y[j] == answer_fn(x, j) for j in scored)

    def layouts():
        for n in range(fields["min_length"], length + 1):
            for src in itertools.product(range(v), repeat=n):
                x = ([*src, sep, *src] + [pad] * (2 * length))[: 2 * length]
                # causal: the answer at j sees the symbols at positions <= j
                yield x, [(j, [p for p in range(j + 1) if x[p] < v], lambda p: p) for j in range(n, 2 * n)]

    return in_context_brute(answer_fn, layouts(), 0, v)


def recall_brute(fields):
    task = closed_form.build_task("recall", fields)
    n, v, s = fields["n_pairs"], fields["vocab"], task.n_symbols
    answer_fn = lambda x, j: x[2 * x[0 : 2 * n : 2].index(x[-1]) + 1] - s  # noqa: E731
    split = task.draw(jax.random.key(1), {"n_pairs": jnp.asarray(n), "vocab": jnp.asarray(v)}, 256)
    for x, y in zip(np.asarray(split.inputs).tolist(), np.asarray(split.targets).tolist()):
        assert y == answer_fn(x, None)

    def layouts():
        values_at = list(range(1, 2 * n, 2))
        for keys in itertools.permutations(range(v), n):
            for values in itertools.product(range(s, s + v), repeat=n):
                for q in keys:
                    x = [t for kv in zip(keys, values) for t in kv] + [q]
                    yield x, [(None, values_at, lambda p: p // 2)]

    return in_context_brute(answer_fn, layouts(), s, v)


BRUTE = {
    "random_labels": (
        random_labels_brute,
        "dataset_size",
        (2, 5, 40),
        dict(vocab_size=16, seq_len=8, n_classes=3),
    ),
    "modulo": (modulo_brute, "modulus", (2, 3, 4, 7, 8, 12, 20, 25, 40, 125), dict(base=10, digits=3)),
    "parity": (parity_brute, "k", (1, 2, 3, 5, 6), dict(n=6, secret_seed=3, train_fraction=0.5)),
    "copying": (copying_brute, "length", (1, 2, 4), dict(vocab=3, min_length=1)),
    "recall": (recall_brute, "n_pairs", (1, 2, 3), dict(vocab=4)),
}


@pytest.mark.parametrize("family", list(BRUTE))
def test_every_measure_of_every_family_against_brute_force(family):
    brute, field, values, fixed = BRUTE[family]
    for value in values:
        fields = {**fixed, field: value}
        entries, answers, outputs = brute(fields)
        assert closed_form.table_bits(family, fields) == pytest.approx(entries * math.log2(outputs)), value
        assert closed_form.input_bits(family, fields) == pytest.approx(math.log2(entries)), value
        assert closed_form.compressed_bits(family, fields) == pytest.approx(naive_bits(answers)), value


def test_copying_slots_start_at_the_first_copy_whatever_the_shortest_length():
    fields = dict(vocab=2, length=4, min_length=3)
    entries, answers, _ = copying_brute(fields)
    assert entries == 4 * 2 and closed_form.input_bits("copying", fields) == pytest.approx(3.0)


GRIDS = {  # calibrate's families: every measure must grow with each knob that makes a level harder
    "random_labels": (dict(vocab_size=64, seq_len=8, n_classes=16), "dataset_size", (32, 91, 362, 1448)),
    "parity": (dict(n=16), "k", tuple(range(1, 17))),
    "copying": (dict(vocab=8, min_length=1), "length", tuple(range(3, 17))),
    "recall": (dict(vocab=32), "n_pairs", (1, 2, 3, 4, 5, 6, 8, 10, 12)),
}


@pytest.mark.parametrize("family", list(GRIDS))
def test_measures_grow_with_the_knob_that_makes_a_level_harder(family):
    fixed, field, values = GRIDS[family]
    for name, fn in closed_form.MEASURES.items():
        bits = [fn(family, {**fixed, field: v}) for v in values]
        assert all(b > 0 for b in bits) and np.all(np.diff(bits) > 0), (name, bits)


# small calibrate-like levels per family: (fixed fields, level field, values, log θ of the truth)
LEVELS = {
    "random_labels": (dict(vocab_size=64, seq_len=8, n_classes=16), "dataset_size", (32, 256, 1024, 4096)),
    "modulo": (dict(base=10, digits=4), "modulus", (2, 20, 12, 127)),
    "parity": (dict(n=16), "k", (1, 2, 3, 8)),
    "copying": (dict(vocab=8, min_length=1), "length", (3, 6, 12, 16)),
    "recall": (dict(vocab=32), "n_pairs", (1, 2, 4, 8)),
}


def simulated_table(seeds: int = 2):
    """A table of the five families' real levels, outcomes simulated from the meta-model with the
    boundary of each family inside its levels (nominal bits)."""
    fields = {f: [{**fixed, k: v} for v in values] for f, (fixed, k, values) in LEVELS.items()}
    bits = {f: [closed_form.nominal(f, x) for x in xs] for f, xs in fields.items()}
    log_c = math.log(1000.0)
    log_theta = [log_c - float(np.mean(np.log(b[1:3]))) for b in bits.values()]
    log_theta = [t - log_theta[0] for t in log_theta]  # random labels is the reference, θ = 1
    truth = Truth((log_c,), tuple(log_theta), (4.0,) * 5, 0.2, tuple(tuple(b) for b in bits.values()), 0.2)
    rows, _ = simulate_rows(truth, seeds, np.random.default_rng(0))
    out = []
    for r in rows:
        family = list(LEVELS)[int(r.family[3:])]
        level = fields[family][bits[family].index(r.task["bits"])]
        task = closed_form.build_task(family, level)
        nominal = task.complexity_bits({k: getattr(task, k) for k in task.spec.knobs})
        out.append(
            dataclasses.replace(r, family=family, task={"name": family, **level}, complexity_bits=nominal)
        )
    return build_table(out)


def test_with_measure_swaps_the_covariate_and_round_trips():
    table = simulated_table()
    before = json.dumps(table.to_json(), sort_keys=True)
    for name in closed_form.MEASURES:
        t = closed_form.with_measure(table, name)
        assert t.rows == table.rows and t.families == table.families and t.archs == table.archs
        for lv, old in zip(t.levels, table.levels):
            family = table.families[lv.family]
            assert lv.bits == pytest.approx(closed_form.MEASURES[name](family, lv.fields))
            assert dataclasses.replace(lv, bits=old.bits, covariate=old.covariate) == old
            assert lv.covariate == (old.covariate if name == "nominal" else name)
        back = type(t).from_json(json.loads(json.dumps(t.to_json())))
        assert back.levels == t.levels and back.fingerprint == t.fingerprint
        assert closed_form.with_measure(t, "nominal").to_json() == table.to_json()
    assert json.dumps(table.to_json(), sort_keys=True) == before  # the input is not changed


def test_bad_measures_and_families_are_one_line_errors(capsys):
    table = simulated_table(seeds=1)
    with pytest.raises(ValueError, match="allowed: nominal, table_bits, compressed_bits, input_bits"):
        closed_form.with_measure(table, "tabel_bits")
    sim = build_table(
        simulate_rows(Truth((1.0,), (0.0,), (4.0,), bits=((2.0, 4.0),)), 1, np.random.default_rng(0))[0]
    )
    with pytest.raises(ValueError, match="'sim0': not a registered task"):
        closed_form.with_measure(sim, "table_bits")
    with pytest.raises(ValueError, match="config.task.k"):
        closed_form.table_bits("parity", dict(n=4, k=5))
    with pytest.raises(ValueError, match="allowed: levels whose measure is > 0"):
        one = dataclasses.replace(
            table,
            levels=[dataclasses.replace(lv, fields={**lv.fields, "dataset_size": 1}) for lv in table.levels],
        )
        closed_form.with_measure(one, "input_bits")
    with pytest.raises(SystemExit) as info:  # a usage error: exit status 2, one line on stderr
        score.main(["runs/nowhere", "--measures", "nominal,bits"])
    assert info.value.code == 2 and "allowed: nominal, table_bits" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="table.json: missing"):
        score.main(["runs/nowhere"])


@pytest.mark.slow
def test_measure_scores_fits_and_scores_held_out_families(tmp_path, capsys):
    table = simulated_table()
    save_table(table, tmp_path / "table.json")
    args = [str(tmp_path), "--measures", "nominal,input_bits", "--warmup", "40", "--samples", "40"]
    assert score.main([*args, "--chains", "2", "--json"]) == 0
    (measured,) = json.loads(capsys.readouterr().out).values()
    assert [s["measure"] for s in measured] == ["nominal", "input_bits"]
    for s in measured:
        assert set(s["lofo"]) == set(LEVELS) and not s["refused"]
        for brier in s["lofo"].values():
            assert brier["rows"] == 4 * 2 and 0 <= brier["meta_model"] <= 1 and 0 <= brier["base_rate"] <= 1
        assert s["theta"]["random_labels"]["median"] == 1.0  # the reference
        assert 0 < s["sigma_theta"]["lo90"] <= s["sigma_theta"]["median"] <= s["sigma_theta"]["hi90"]
        assert s["fit_diagnostics"]["transitions"] == 2 * 40 and s["lofo_diagnostics"]["fits"] == 5
        assert set(s["lofo_folds"]) == set(LEVELS)
        assert {c["family"] for c in s["monotone"]} == set(LEVELS)
    assert measured[1]["bits"]["parity"] == [1.0, 2.0, 3.0, 8.0]  # input_bits: k

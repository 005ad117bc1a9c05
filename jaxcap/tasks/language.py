"""Controlled languages whose next-token distribution is known exactly: Markov chains and PCFGs.

A sequence is `BOS x_1 … x_{T-1}` and the model predicts x_{t+1} at every position t (causal
LM, teacher forcing). The true process gives -log p(x_t | x_<t) for every sampled token (the
split's `optimum`), so the evaluation reports `excess_bits` = the model's cross-entropy minus
the true one, in bits per token: an unbiased estimate of KL(true || model) per token, with the
token noise paired out. Success: val excess <= `threshold` bits per token (lower is better).

Details: docs/design/languages.md#description-length-at-the-thresholds-resolution.

[1] Shannon 1951, "Prediction and entropy of printed English", Bell Syst. Tech. J. 30.
[2] Edelman, Edelman, Goel, Malach, Tsilivis 2024, "The Evolution of Statistical Induction
    Heads: In-Context Learning Markov Chains", arXiv:2402.11004.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Float, Int
from jaxcap.tasks import pcfg
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets

UNIFORM_MIX = 1e-3


def bits_per_probability(probs: np.ndarray, threshold_bits: float) -> float:
    """log2(1 + W / Δ), W the spread of log(probs), Δ = sqrt(24 ε ln 2): see the docstring."""
    spread = float(np.log(probs.max() / probs.min()))
    return math.log2(1.0 + spread / math.sqrt(24.0 * threshold_bits * math.log(2.0)))


def entropy_bits(p: np.ndarray) -> np.ndarray:
    return -(p * np.log2(np.where(p > 0, p, 1.0))).sum(-1)  # 0 log 0 = 0


@dataclasses.dataclass(frozen=True)
class Language(Task):
    """Shared by the controlled languages: `draw_tokens` gives tokens and their true losses."""

    causal: ClassVar[bool] = True  # next-token prediction: needs model.attention = causal

    vocab: int = 8
    length: int = 64
    concentration: float = 1.0
    process_seed: int = 0
    threshold: float = 0.05  # success: val excess <= this many bits per token

    SCHEMA = {
        **Task.SCHEMA,
        "vocab": Int(2, 4096),
        "length": Int(2, 4096),
        "concentration": Float(1e-3, 1e3),
        "process_seed": Int(0),
        "threshold": Float(1e-4, 10.0),
    }
    KNOB = ""  # the per-member difficulty knob

    def check(self) -> None:
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (languages are "
                "sampled: use train_size for a finite train set)"
            )
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family=self.FAMILY,
            kind="sequence",
            vocab_size=self.vocab + 1,  # symbols and BOS
            seq_len=self.length,
            n_outputs=self.vocab,
            readout="all",
            knobs=(self.KNOB,),
            metric="excess_bits",
            higher_is_better=False,
            step_threshold=self.threshold,
            success_metric="test_excess_bits",
            select_metric="val_excess_bits",
            success_threshold=self.threshold,
        )

    @abc.abstractmethod
    def draw_tokens(self, key: jax.Array, knob: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
        """[n, length] tokens of the process and the true loss (nats) of each one."""

    def draw(self, key, knobs, n):
        tokens, nll = self.draw_tokens(key, knobs[self.KNOB], n)
        bos = jnp.full((n, 1), self.vocab, jnp.int32)
        inputs = jnp.concatenate([bos, tokens[:, :-1]], axis=1)
        return Split(inputs, tokens, ones_like_targets(tokens), nll)


@functools.cache
def chain_table(vocab: int, order: int, concentration: float, seed: int) -> np.ndarray:
    """[V^order, V]; rows are drawn in order from one generator, so they are prefix-stable:
    the first V^k rows are the same for any larger order."""
    g = np.random.default_rng(seed).gamma(concentration, size=(vocab**order, vocab))
    return (1 - UNIFORM_MIX) * g / g.sum(1, keepdims=True) + UNIFORM_MIX / vocab


@functools.cache
def chain_stationary(vocab: int, order: int, concentration: float, seed: int) -> np.ndarray:
    """Stationary distribution over the V^order contexts (power iteration)."""
    table = chain_table(vocab, order, concentration, seed)
    n = vocab**order
    nxt = np.arange(vocab)[None, :] + vocab * (np.arange(n)[:, None] % (n // vocab))  # c -> c'
    pi = np.full(n, 1.0 / n)
    for _ in range(2000):
        new = np.bincount(nxt.ravel(), (pi[:, None] * table).ravel(), minlength=n)
        if np.abs(new - pi).sum() < 1e-12:
            break
        pi = new
    return new


@dataclasses.dataclass(frozen=True)
class MarkovLanguage(Language):
    """An order-k Markov chain over `vocab` symbols (`order` a knob)."""

    order: int = 1
    max_order: int = 0  # 0: set from the sweep; the table holds V^max_order contexts

    SCHEMA = {**Language.SCHEMA, "order": Int(1, 16), "max_order": Int(0, 16)}
    FAMILY, KNOB = "markov", "order"

    def check(self) -> None:
        if self.vocab**self.top_order > 1 << 20:
            raise ConfigError(
                f"config.task.order: {self.top_order} over {self.vocab} symbols has {self.vocab}^"
                f"{self.top_order} contexts; allowed: at most 2^20 contexts"
            )
        super().check()

    @property
    def top_order(self) -> int:
        return max(self.order, self.max_order)

    def table(self, order: int | None = None) -> np.ndarray:
        return chain_table(self.vocab, order or self.top_order, self.concentration, self.process_seed)

    def draw_tokens(self, key, order, n):
        v, k_max = self.vocab, self.top_order
        log_table = jnp.log(jnp.asarray(self.table(), jnp.float32))
        # digit i of the context is the symbol i + 1 steps back; digits >= order read as 0
        weights = jnp.where(jnp.arange(k_max) < order, v ** jnp.arange(k_max), 0)

        def step(history, key_t):
            logp = log_table[(history * weights[None, :]).sum(1)]
            x = jax.random.categorical(key_t, logp).astype(jnp.int32)
            nll = -jnp.take_along_axis(logp, x[:, None], 1)[:, 0]
            return jnp.concatenate([x[:, None], history[:, :-1]], axis=1), (x, nll)

        history = jnp.zeros((n, k_max), jnp.int32)
        _, (tokens, nll) = jax.lax.scan(step, history, jax.random.split(key, self.length))
        return tokens.T, nll.T

    def entropy_rate(self, order: int) -> float:
        pi = chain_stationary(self.vocab, order, self.concentration, self.process_seed)
        return float((pi * entropy_bits(self.table(order))).sum())

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        table = self.table(int(knobs["order"]))
        return table.shape[0] * (self.vocab - 1) * bits_per_probability(table, self.threshold)

    def chance(self, knobs: dict[str, Any]) -> float:
        order = int(knobs["order"])
        pi = chain_stationary(self.vocab, order, self.concentration, self.process_seed)
        return float(entropy_bits(pi @ self.table(order))) - self.entropy_rate(order)

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> MarkovLanguage:
        orders = [cfg["order"], *knob_grid.get("order", ())]
        return cls(**{**cfg, "max_order": max(*orders, cfg.get("max_order", 0))})


@dataclasses.dataclass(frozen=True)
class PCFGLanguage(Language):
    """Sentences of a random LL(1) PCFG, concatenated (`depth` a knob)."""

    depth: int = 3
    max_depth: int = 0  # 0: set from the sweep; the levels of the generated grammar
    n_rules: int = 4  # rules per nonterminal (each starts with its own terminal)
    width: int = 2  # nonterminals per level
    branching: int = 2  # the most nonterminals in a rule body

    SCHEMA = {
        **Language.SCHEMA,
        "depth": Int(1, 64),
        "max_depth": Int(0, 64),
        "n_rules": Int(1, 4096),
        "width": Int(1, 64),
        "branching": Int(1, 8),
    }
    FAMILY, KNOB = "pcfg", "depth"

    def check(self) -> None:
        if self.n_rules > self.vocab:
            raise ConfigError(
                f"config.task.n_rules: got {self.n_rules}; allowed: at most config.task.vocab ({self.vocab}),"
                " since the rules of a nonterminal start with distinct terminals"
            )
        super().check()

    @property
    def grammar(self) -> pcfg.Grammar:
        return pcfg.make_grammar(
            self.vocab,
            self.n_rules,
            self.width,
            max(self.depth, self.max_depth),
            self.branching,
            float(self.concentration),
            self.process_seed,
        )

    def draw_tokens(self, key, depth, n):
        return pcfg.sample(self.grammar, key, depth, n, self.length)

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        g, depth = self.grammar, int(knobs["depth"])
        used = pcfg.reachable(g, depth)
        per_prob = bits_per_probability(g.probs[used], self.threshold)
        return len(used) * (self.n_rules - 1) * per_prob + pcfg.structure_bits(g, depth, self.vocab)

    def chance(self, knobs: dict[str, Any]) -> float:
        g, depth = self.grammar, int(knobs["depth"])
        return float(entropy_bits(pcfg.unigram(g, depth, self.vocab))) - pcfg.entropy_rate(g, depth)

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> PCFGLanguage:
        depths = [cfg["depth"], *knob_grid.get("depth", ())]
        return cls(**{**cfg, "max_depth": max(*depths, cfg.get("max_depth", 0))})

"""Random probabilistic context-free grammars in LL(1) form: sampler and exact quantities.

Details: docs/design/languages.md#random-ll1-grammars.

[1] Chi 1999, "Statistical properties of probabilistic context-free grammars", Comput. Ling.
[2] Allen-Zhu & Li 2023, "Physics of Language Models: Part 1, Learning Hierarchical Language
    Structures", arXiv:2305.13673 (synthetic CFGs as a probe of what Transformers learn).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

UNIFORM_MIX = 1e-3


class Grammar(NamedTuple):
    """Host (numpy) tables of an LL(1) grammar with `n` nonterminals and R rules each."""

    probs: np.ndarray  # [n, R] rule probabilities
    term: np.ndarray  # [n, R] first terminal of each rule, distinct within a row
    body: np.ndarray  # [n, R, B] nonterminals after the terminal, -1 past body_len
    body_len: np.ndarray  # [n, R]
    level: np.ndarray  # [n]


@functools.cache
def make_grammar(
    vocab: int, n_rules: int, width: int, max_depth: int, branching: int, concentration: float, seed: int
) -> Grammar:
    """The grammar of `seed`; each nonterminal has its own generator, so a larger max_depth
    only adds levels and leaves the shallower ones unchanged."""
    n = 1 + (max_depth - 1) * width
    level = np.array([0] + [1 + (a - 1) // width for a in range(1, n)], np.int32)
    probs = np.zeros((n, n_rules))
    term = np.zeros((n, n_rules), np.int32)
    body = np.full((n, n_rules, branching), -1, np.int32)
    body_len = np.zeros((n, n_rules), np.int32)
    for a in range(n):
        rng = np.random.default_rng([seed, a])
        g = rng.gamma(concentration, size=n_rules)
        probs[a] = (1 - UNIFORM_MIX) * g / g.sum() + UNIFORM_MIX / n_rules
        term[a] = rng.permutation(vocab)[:n_rules]
        body_len[a] = rng.integers(0, branching + 1, size=n_rules)
        body_len[a, 0] = max(body_len[a, 0], 1)  # every level is reachable: depth d nests d levels
        first_child = 1 + level[a] * width  # ids of the next level (may lie past max_depth: never pushed)
        for r in range(n_rules):
            body[a, r, : body_len[a, r]] = first_child + rng.integers(0, width, size=body_len[a, r])
    return Grammar(probs, term, body, body_len, level)


def effective_lengths(g: Grammar, depth: int) -> np.ndarray:
    """[n, R] body lengths after dropping nonterminals of level >= depth."""
    return np.where(g.level[:, None] + 1 < depth, g.body_len, 0)


def expansions(g: Grammar, depth: int) -> np.ndarray:
    """[n] expected expansions of each nonterminal per sentence, n = e_S (I - M)^-1."""
    n, n_rules, _ = g.body.shape
    lengths = effective_lengths(g, depth)
    m = np.zeros((n, n))
    for a in range(n):
        for r in range(n_rules):
            for b in g.body[a, r, : lengths[a, r]]:
                m[a, b] += g.probs[a, r]
    start = np.zeros(n)
    start[0] = 1.0
    return np.linalg.solve((np.eye(n) - m).T, start)


def entropy_rate(g: Grammar, depth: int) -> float:
    """Bits per token of the sentence stream (exact; see the module docstring)."""
    counts = expansions(g, depth)
    rule_entropy = -(g.probs * np.log2(g.probs)).sum(1)
    return float((counts * rule_entropy).sum() / counts.sum())


def unigram(g: Grammar, depth: int, vocab: int) -> np.ndarray:
    """[vocab] long-run token frequencies."""
    counts = expansions(g, depth)
    freq = np.zeros(vocab)
    np.add.at(freq, g.term, counts[:, None] * g.probs)
    return freq / counts.sum()


def reachable(g: Grammar, depth: int) -> list[int]:
    """Nonterminals that occur in some derivation of S at this depth."""
    lengths, seen, todo = effective_lengths(g, depth), {0}, [0]
    while todo:
        a = todo.pop()
        for r in range(g.probs.shape[1]):
            for b in g.body[a, r, : lengths[a, r]].tolist():
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
    return sorted(seen)


def structure_bits(g: Grammar, depth: int, vocab: int) -> float:
    """Bits that name the rules (not their probabilities) of the reachable nonterminals: each
    nonterminal's ordered terminals (log2 V!/(V-R)!) and, above the last level, each body
    (a length in 0..B and one of `width` nonterminals per slot)."""
    n_rules, branching = g.body.shape[1], g.body.shape[2]
    width = int((g.level == 1).sum()) if g.level.size > 1 else 1
    terminals = math.log2(math.perm(vocab, n_rules))
    bodies = n_rules * math.log2(sum(width**m for m in range(branching + 1)))
    return sum(terminals + (bodies if g.level[a] + 1 < depth else 0.0) for a in reachable(g, depth))


def sample(g: Grammar, key: jax.Array, depth: jax.Array, n: int, length: int) -> tuple[jax.Array, jax.Array]:
    """n token streams of `length` and the true loss (nats) of each token, on device.

    Each row keeps its own stack (a fixed array, `sp` the fill) inside a `lax.scan` over
    positions; an empty stack restarts S.
    """
    probs, term, body = jnp.asarray(g.probs, jnp.float32), jnp.asarray(g.term), jnp.asarray(g.body)
    lengths, level = jnp.asarray(g.body_len), jnp.asarray(g.level)
    branching = g.body.shape[2]
    size = (int(g.level.max()) + 2) * branching + 1  # stack bound: B - 1 waiting per level, + slack
    rows, slots = jnp.arange(n), jnp.arange(branching)

    def step(carry, key_t):
        stack, sp = carry
        empty = sp == 0  # a new sentence: S (= 0) goes back into slot 0
        stack = stack.at[:, 0].set(jnp.where(empty, 0, stack[:, 0]))
        sp = jnp.where(empty, 1, sp)
        top = stack[rows, sp - 1]
        sp = sp - 1
        logp = jnp.log(probs[top])
        rule = jax.random.categorical(key_t, logp)
        token, nll = term[top, rule], -logp[rows, rule]
        m = jnp.where(level[top] + 1 < depth, lengths[top, rule], 0)
        children = body[top, rule]  # [n, B]; pushed last-first so the first child is on top
        vals = jnp.take_along_axis(children, jnp.clip(m[:, None] - 1 - slots[None, :], 0, branching - 1), 1)
        idx = sp[:, None] + slots[None, :]
        old = jnp.take_along_axis(stack, idx, 1)
        stack = stack.at[rows[:, None], idx].set(jnp.where(slots[None, :] < m[:, None], vals, old))
        return (stack, sp + m), (token, nll)

    stack0 = jnp.zeros((n, size + branching), jnp.int32)
    keys = jax.random.split(key, length)
    _, (tokens, nll) = jax.lax.scan(step, (stack0, jnp.zeros((n,), jnp.int32)), keys)
    return tokens.T.astype(jnp.int32), nll.T

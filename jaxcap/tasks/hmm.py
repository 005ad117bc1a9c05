"""Hidden Markov model languages: the exact next-token distribution by the forward algorithm.

Details: docs/design/languages.md#hidden-markov-models.

[1] Rabiner 1989, "A tutorial on hidden Markov models and selected applications in speech
    recognition", Proc. IEEE 77(2).
[2] Blackwell 1957, "The entropy of functions of finite-state Markov chains".
[3] Fox, Sudderth, Jordan, Willsky 2011, "A sticky HDP-HMM with application to speaker
    diarization", Ann. Appl. Stat. 5(2A).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Float, Int
from jaxcap.tasks.language import UNIFORM_MIX, Language, bits_per_probability


def _stationary(a: np.ndarray) -> np.ndarray:
    pi = np.full(a.shape[0], 1.0 / a.shape[0])
    for _ in range(10_000):
        new = pi @ a
        if np.abs(new - pi).sum() < 1e-13:
            break
        pi = new
    return new / new.sum()


@functools.cache
def hmm_tables(vocab: int, max_states: int, concentration: float, emission: float, stay: float, seed: int):
    """(init [K, K], trans [K, K, K], emit [K, K, V]): entry k - 1 is the k-state HMM, zero-padded."""
    init = np.zeros((max_states, max_states))
    trans = np.zeros((max_states, max_states, max_states))
    emit = np.zeros((max_states, max_states, vocab))
    rows = [
        np.random.default_rng([seed, i, 0]).gamma(concentration, size=max_states) for i in range(max_states)
    ]
    for i in range(max_states):
        g = np.random.default_rng([seed, i, 1]).gamma(emission, size=vocab)
        emit[:, i] = (1 - UNIFORM_MIX) * g / g.sum() + UNIFORM_MIX / vocab
    for k in range(1, max_states + 1):
        a = np.stack([row[:k] for row in rows[:k]])
        a = (1 - UNIFORM_MIX) * a / a.sum(1, keepdims=True) + UNIFORM_MIX / k
        a = stay * np.eye(k) + (1 - stay) * a
        trans[k - 1, :k, :k] = a
        init[k - 1, :k] = _stationary(a)
        emit[k - 1, k:] = 0.0
    return init, trans, emit


def forward(init_K: jax.Array, trans_KxK: jax.Array, emit_KxV: jax.Array, tokens_NxT: jax.Array) -> jax.Array:
    """[N, T, V] p(x_t = v | x_<t) by the scaled forward algorithm (Rabiner 1989)."""

    def step(belief_NxK, x_N):
        predictive = belief_NxK @ emit_KxV
        posterior = belief_NxK * emit_KxV[:, x_N].T
        posterior = posterior / posterior.sum(1, keepdims=True)
        return posterior @ trans_KxK, predictive

    belief = jnp.broadcast_to(init_K, (tokens_NxT.shape[0], init_K.shape[0]))
    _, predictive_TxNxV = jax.lax.scan(step, belief, tokens_NxT.T)
    return predictive_TxNxV.transpose(1, 0, 2)


@dataclasses.dataclass(frozen=True)
class HMMLanguage(Language):
    """Tokens of a K-state hidden Markov model over `vocab` symbols (`states` a knob)."""

    states: int = 2
    max_states: int = 0  # 0: set from the sweep; the tables hold every K up to this
    emission_concentration: float = 0.5
    stickiness: float = 0.5  # extra self-transition probability: states persist, so they matter

    SCHEMA = {
        **Language.SCHEMA,
        "states": Int(1, 256),
        "max_states": Int(0, 256),
        "emission_concentration": Float(1e-3, 1e3),
        "stickiness": Float(0.0, 1.0, open_high=True),
    }
    FAMILY, KNOB = "hmm", "states"

    def check(self) -> None:
        if self.max_states and self.states > self.max_states:
            raise ConfigError(
                f"config.task.states: got {self.states}; allowed: at most config.task.max_states "
                f"({self.max_states})"
            )
        super().check()

    @property
    def top_states(self) -> int:
        return max(self.states, self.max_states)

    def tables(self):
        args = (self.vocab, self.top_states, float(self.concentration), float(self.emission_concentration))
        return hmm_tables(*args, float(self.stickiness), self.process_seed)

    def draw_tokens(self, key, states, n):
        init, trans, emit = (jnp.asarray(t, jnp.float32)[states - 1] for t in self.tables())
        key_start, key_path = jax.random.split(key)

        def pick(key, probs_NxK, top):  # inverse CDF: the same draw whatever the padding
            u = jax.random.uniform(key, probs_NxK.shape[:1])
            return jnp.minimum((u[:, None] >= jnp.cumsum(probs_NxK, 1)).sum(1), top).astype(jnp.int32)

        def step(z_N, key_t):
            key_x, key_z = jax.random.split(key_t)
            return pick(key_z, trans[z_N], states - 1), pick(key_x, emit[z_N], self.vocab - 1)

        z = pick(key_start, jnp.broadcast_to(init, (n, init.shape[0])), states - 1)
        _, tokens_TxN = jax.lax.scan(step, z, jax.random.split(key_path, self.length))
        tokens = tokens_TxN.T
        predictive = forward(init, trans, emit, tokens)
        return tokens, -jnp.log(jnp.take_along_axis(predictive, tokens[..., None], 2)[..., 0])

    def model(self, states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(π, A, B) of the `states`-state HMM, unpadded."""
        init, trans, emit = (t[states - 1] for t in self.tables())
        return init[:states], trans[:states, :states], emit[:states]

    def optimum_bits(self, states: int) -> float:
        """Monte Carlo estimate of the expected optimum (bits per token) at this length, in numpy."""
        return _monte_carlo_bits(self, states)[0]

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        k = int(knobs["states"])
        _, a, b = self.model(k)
        probs = np.concatenate([a.ravel(), b.ravel()])
        return (k * (k - 1) + k * (self.vocab - 1)) * bits_per_probability(probs, self.threshold)

    def chance(self, knobs: dict[str, Any]) -> float:
        k = int(knobs["states"])
        optimum, unigram = _monte_carlo_bits(self, k)
        return unigram - optimum

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> HMMLanguage:
        states = [cfg.get("states", cls.states), *knob_grid.get("states", ())]
        return cls(**{**cfg, "max_states": max(*states, cfg.get("max_states", 0))})


@functools.cache
def _monte_carlo_bits(task: HMMLanguage, states: int, n: int = 2048, seed: int = 0) -> tuple[float, float]:
    """(optimum, stationary-unigram loss) in bits per token, paired on the same n sampled sequences."""
    pi, a, b = task.model(states)
    unigram = pi @ b
    rng = np.random.default_rng(seed)
    z = (rng.random(n)[:, None] > np.cumsum(pi)).sum(1).clip(0, states - 1)
    belief, optimum, baseline = np.tile(pi, (n, 1)), 0.0, 0.0
    for _ in range(task.length):
        x = (rng.random(n)[:, None] > np.cumsum(b[z], 1)).sum(1).clip(0, task.vocab - 1)
        optimum -= np.log2((belief @ b)[np.arange(n), x]).sum()
        baseline -= np.log2(unigram[x]).sum()
        belief = belief * b[:, x].T
        belief = (belief / belief.sum(1, keepdims=True)) @ a
        z = (rng.random(n)[:, None] > np.cumsum(a[z], 1)).sum(1).clip(0, states - 1)
    return optimum / (n * task.length), baseline / (n * task.length)

"""HMM language (jaxcap/tasks/hmm.py): forward-algorithm predictive distributions against a
brute-force sum over hidden paths (K = 2, length 4), the per-token and per-sequence optimum of
sampled tokens against it, sampled sequence frequencies, nesting of the state counts, the
Monte Carlo optimum, and a tiny learning test (2 states, within 0.1 bits of the optimum)."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ROOT

from jaxcap import tasks
from jaxcap.config.base import load_config
from jaxcap.tasks.hmm import HMMLanguage, forward

CFG = {
    "vocab": 3,
    "states": 2,
    "length": 4,
    "concentration": 1.0,
    "emission_concentration": 0.5,
    "stickiness": 0.6,
}


def build(cfg, grid=None):
    return HMMLanguage.from_config(cfg, grid or {})


def brute_force_probability(pi, a, b, xs):
    """p(x_1 .. x_t) as the sum over every hidden path z_1 .. z_t."""
    total = 0.0
    for path in itertools.product(range(len(pi)), repeat=len(xs)):
        p = pi[path[0]] * b[path[0], xs[0]]
        for prev, z, x in zip(path, path[1:], xs[1:]):
            p *= a[prev, z] * b[z, x]
        total += p
    return total


def brute_force_next(pi, a, b, prefix, vocab):
    norm = brute_force_probability(pi, a, b, prefix) if prefix else 1.0
    return [brute_force_probability(pi, a, b, [*prefix, v]) / norm for v in range(vocab)]


def test_forward_matches_brute_force_over_hidden_paths():
    task = build(CFG)
    pi, a, b = task.model(2)
    assert np.allclose(a.sum(1), 1) and np.allclose(b.sum(1), 1) and np.allclose(pi @ a, pi)
    sequences = np.array(list(itertools.product(range(3), repeat=4)), np.int32)
    init, trans, emit = (jnp.asarray(t[1], jnp.float32) for t in task.tables())
    got = np.asarray(forward(init, trans, emit, jnp.asarray(sequences)))
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    for xs, predictive in zip(sequences.tolist(), got):
        for t in range(4):
            np.testing.assert_allclose(
                predictive[t], brute_force_next(pi, a, b, xs[:t], 3), rtol=1e-5, atol=1e-7
            )
    total = sum(brute_force_probability(pi, a, b, xs) for xs in sequences.tolist())
    assert total == pytest.approx(1.0, abs=1e-12)


def test_sampled_optimum_and_frequencies_match_brute_force():
    task, n = build(CFG), 6000
    pi, a, b = task.model(2)
    split = jax.tree.map(np.asarray, task.draw(jax.random.key(0), {"states": jnp.int32(2)}, n))
    assert (split.inputs[:, 0] == 3).all() and (split.inputs[:, 1:] == split.targets[:, :-1]).all()
    counts = {}
    for xs, nll in zip(split.targets.tolist(), split.optimum):
        for t in range(4):
            assert nll[t] == pytest.approx(-math.log(brute_force_next(pi, a, b, xs[:t], 3)[xs[t]]), rel=1e-4)
        # the sequence's optimum (mean bits per token) is -log2 p(sequence) / length
        assert nll.sum() / math.log(2) / 4 == pytest.approx(
            -math.log2(brute_force_probability(pi, a, b, xs)) / 4, rel=1e-4
        )
        counts[tuple(xs)] = counts.get(tuple(xs), 0) + 1
    for xs in itertools.product(range(3), repeat=4):
        p = brute_force_probability(pi, a, b, list(xs))
        assert abs(counts.get(xs, 0) / n - p) < 4.5 * math.sqrt(p * (1 - p) / n) + 1e-3, (xs, p)


def test_states_are_nested_and_the_monte_carlo_optimum_agrees():
    cfg = {**CFG, "vocab": 6, "length": 32}
    swept, alone = build(cfg, {"states": [2, 4, 8]}), build(cfg)
    assert swept.top_states == 8 and alone.top_states == 2
    for s, g in zip(alone.model(2), swept.model(2)):  # read from tables of 2 and of 8 states
        np.testing.assert_allclose(g, s, rtol=1e-12)
    knobs = {"states": jnp.int32(2)}
    np.testing.assert_array_equal(
        swept.draw(jax.random.key(3), knobs, 20).targets, alone.draw(jax.random.key(3), knobs, 20).targets
    )
    for k in (1, 4, 8):
        split = swept.draw(jax.random.key(k), {"states": jnp.int32(k)}, 1024)
        assert (np.asarray(split.targets) < 6).all()
        sampled = float(np.asarray(split.optimum).mean()) / math.log(2)
        assert sampled == pytest.approx(swept.optimum_bits(k), abs=0.05)
        assert swept.chance({"states": k}) > 0.01 if k > 1 else swept.chance({"states": k}) == 0.0
    bits = [swept.complexity_bits({"states": k}) for k in (1, 2, 4, 8)]
    assert bits == sorted(bits) and bits[0] > 0


def test_bad_config_is_a_one_line_error():
    with pytest.raises(tasks.contract.ConfigError, match="config.task.states: got 5"):
        HMMLanguage(**{**CFG, "states": 5, "max_states": 4})


def _language_config(variant):
    return load_config(f"{ROOT / 'configs' / 'language.py'}:{variant}")


@pytest.mark.slow
def test_hmm_smoke_reaches_the_optimum(tmp_path):
    from jaxcap.results.store import Store
    from jaxcap.run import run

    config = _language_config("hmm_smoke")
    config.runtime.progress = False
    run(config, str(tmp_path))
    rows = Store(tmp_path).member_rows()
    assert rows and all(r["family"] == "hmm" for r in rows)
    for r in rows:
        assert r["final"]["val_excess_bits"] <= 0.1, r["final"]

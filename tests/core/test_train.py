"""The population engine: member i equals a solo run, per-member hparams act, divergence is
isolated, and everything stays finite and on the population axis."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.core import train
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.train import TrainSettings, eval_budget, make_optimizer, make_population

HP = {**DEFAULT_HPARAMS, "learning_rate": 3e-3}


def _members(*overrides, seeds=None):
    seeds = seeds or [0] * len(overrides)
    return [
        Member(index=i, seed=s, hparams={**HP, **o}, knobs={})
        for i, (o, s) in enumerate(zip(overrides, seeds))
    ]


def _train(tiny, members, chunks=2):
    task, model, settings = tiny
    program = make_population(settings, task, model)
    keys, hp = stack(members, base_seed=0)
    state, data = program.init(keys, hp), program.data(keys, hp)
    initial, stats = jax.tree.map(np.asarray, state.params), None
    for _ in range(chunks):
        state, stats = program.chunk(state, hp, data)
    metrics = program.evaluate(state, hp, data)
    return initial, jax.device_get(state), jax.device_get(stats), jax.device_get(metrics)


def _member(tree, i):
    return jax.tree.map(lambda a: np.asarray(a)[i], tree)


def test_member_equals_solo_run(tiny):
    members = _members(
        {"learning_rate": 1e-3},
        {"learning_rate": 3e-3, "dropout": 0.1},
        {"weight_decay": 0.5},
        seeds=[0, 1, 2],
    )
    _, pop, pop_stats, pop_metrics = _train(tiny, members)
    for i in (1, 2):
        solo_member = dataclasses.replace(members[i], index=0)
        _, solo, solo_stats, solo_metrics = _train(tiny, [solo_member])
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6),
            _member(pop.params, i),
            _member(solo.params, 0),
        )
        np.testing.assert_allclose(pop_stats.loss[i], solo_stats.loss[0], rtol=1e-5)
        for k in pop_metrics:
            np.testing.assert_allclose(pop_metrics[k][i], solo_metrics[k][0], rtol=1e-5, atol=1e-6)


def test_learning_rate_zero_does_not_move_and_lr_orders_progress(tiny):
    members = _members({"learning_rate": 0.0}, {"learning_rate": 1e-4}, {"learning_rate": 3e-3})
    initial, state, stats, _ = _train(tiny, members)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[0], b[0]), initial, state.params)
    moved = [
        sum(
            float(np.abs(a[i] - b[i]).sum())
            for a, b in zip(jax.tree.leaves(initial), jax.tree.leaves(state.params))
        )
        for i in range(3)
    ]
    assert moved[0] == 0.0 < moved[1] < moved[2]
    assert stats.loss[2] < stats.loss[1] <= stats.loss[0] + 1e-6


def test_seeds_differ_and_hparams_are_per_member(tiny):
    members = _members({}, {}, {"init_scale": 0.1}, seeds=[0, 1, 0])
    initial, _, _, _ = _train(tiny, members, chunks=0)
    kernel = initial["blocks"][0]["attn"]["q"]["kernel"]
    assert not np.allclose(kernel[0], kernel[1])  # different seeds, different inits
    np.testing.assert_allclose(kernel[2], 0.1 * kernel[0], rtol=1e-6)  # same seed, init scale 0.1


def test_diverging_member_is_flagged_and_isolated(tiny):
    good = _members({}, {"learning_rate": 1e-3}, {"learning_rate": 2e-3}, seeds=[0, 1, 2])
    bad = list(good)
    bad[1] = dataclasses.replace(good[1], hparams={**good[1].hparams, "learning_rate": 1e35})
    _, ref, ref_stats, ref_metrics = _train(tiny, good)
    _, out, out_stats, out_metrics = _train(tiny, bad)
    assert list(out.diverged) == [False, True, False] and not ref.diverged.any()
    for i in (0, 2):
        for a, b in zip(jax.tree.leaves(ref.params), jax.tree.leaves(out.params)):
            np.testing.assert_array_equal(a[i], b[i])
        for k in ref_metrics:
            np.testing.assert_array_equal(ref_metrics[k][i], out_metrics[k][i])
    # the diverged member keeps its last finite parameters, and its optimizer state stays finite
    # (the guard zeroes its gradients and learning rate instead of selecting every parameter)
    assert all(np.isfinite(leaf[1]).all() for leaf in jax.tree.leaves(out.params))
    assert all(np.isfinite(leaf[1]).all() for leaf in jax.tree.leaves(out.opt_state))
    assert np.isfinite(out_stats.loss).all()


def test_frozen_member_stops_updating(tiny):
    task, model, settings = tiny
    program = make_population(settings, task, model)
    keys, hp = stack(_members({}, {}), base_seed=0)
    state, data = program.init(keys, hp), program.data(keys, hp)
    state = state.replace(frozen=jnp.asarray([False, True]))
    before = jax.tree.map(np.asarray, state.params)
    state, _ = program.chunk(state, hp, data)
    after = jax.device_get(state.params)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[1], b[1]), before, after)
    assert not np.allclose(before["head"]["kernel"][0], after["head"]["kernel"][0])


def test_weight_decay_acts_on_matrices_only():
    tx = make_optimizer(TrainSettings())
    params = {"w": jnp.ones((2, 2)), "b": jnp.ones(2)}
    state = tx.init(params)
    hyper = dict(state.hyperparams, learning_rate=jnp.float32(0.1), weight_decay=jnp.float32(0.5))
    updates, _ = tx.update(jax.tree.map(jnp.zeros_like, params), state._replace(hyperparams=hyper), params)
    np.testing.assert_allclose(updates["w"], -0.05)  # decoupled decay: lr x wd x w
    np.testing.assert_array_equal(updates["b"], 0.0)


def test_per_member_weight_decay_and_b2_change_training(tiny):
    members = _members({}, {"weight_decay": 1.0}, {"b2": 0.5})
    _, state, _, _ = _train(tiny, members)
    kernel = state.params["head"]["kernel"]
    assert not np.allclose(kernel[0], kernel[1]) and not np.allclose(kernel[0], kernel[2])
    assert np.abs(kernel[1]).sum() < np.abs(kernel[0]).sum()  # decay shrinks


def test_bfloat16_parameters_keep_their_dtype_through_training(tiny):
    """float32 hyperparameters must not promote bf16 moments: the scan carry would change type."""
    task, model, settings = tiny
    bf16 = dataclasses.replace(model, param_dtype="bfloat16", compute_dtype="bfloat16")
    _, state, stats, metrics = _train((task, bf16, settings), _members({}, {"learning_rate": 1e-2}))
    for leaf in jax.tree.leaves(state.params) + jax.tree.leaves(state.opt_state.inner_state):
        assert leaf.dtype in (jnp.bfloat16, jnp.int32), leaf.dtype
    assert np.isfinite(np.asarray(stats.loss, np.float32)).all() and not state.diverged.any()


def test_eval_scores_a_fixed_sample_sized_by_the_training_work(tiny, monkeypatch):
    # eval <= 10% of a chunk's compute: 0.1/0.9 x 3 x 100 steps x 128 examples
    assert eval_budget(TrainSettings(chunk_steps=100, batch_size=128)) == 4266
    assert eval_budget(TrainSettings(eval_share=0.0)) is None  # whole splits (up to n_eval)
    task, model, settings = tiny
    monkeypatch.setattr(train, "EVAL_MIN_ROWS", 8)
    sampled = make_population(dataclasses.replace(settings, eval_share=1e-3), task, model)  # 8 rows
    whole = make_population(dataclasses.replace(settings, eval_share=0.0), task, model)
    keys, hp = stack(_members({}, {"learning_rate": 1e-2}), base_seed=0)
    state, data = sampled.init(keys, hp), sampled.data(keys, hp)
    state, _ = sampled.chunk(state, hp, data)
    got = jax.device_get(sampled.evaluate(state, hp, data))
    head = jax.tree.map(lambda a: a[:, :8], data)  # the first 8 examples of every split
    want = jax.device_get(whole.evaluate(state, hp, head))
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    assert not np.allclose(got["val_loss"], jax.device_get(whole.evaluate(state, hp, data))["val_loss"])


def test_few_run_programs_take_their_level_from_the_environment(monkeypatch):
    """$JAXCAP_XLA_FEW_LEVEL sets LLVM's level of data, baselines and evaluate on the CPU (the
    tests set 0); unset, XLA's default; anything else is a one-line error naming the variable."""
    from jaxcap.core import runtime
    from jaxcap.fields import ConfigError

    assert runtime.few_options() == {"xla_backend_optimization_level": 0}  # conftest.py
    monkeypatch.delenv(runtime.FEW_LEVEL_ENV)
    assert runtime.few_options() is None
    monkeypatch.setenv(runtime.FEW_LEVEL_ENV, "fast")
    with pytest.raises(ConfigError, match=r"^\$JAXCAP_XLA_FEW_LEVEL: got 'fast'; allowed: 0, 1, 2 or 3"):
        runtime.few_options()


@pytest.mark.slow  # the -O3 reference compile alone takes 10-25 s
def test_init_compiles_to_the_same_bits(tiny, monkeypatch):
    """init is compiled at LLVM -O1 on the CPU (`train.init_options`, for its compile time): what
    it returns must be bit for bit what XLA's default -O3 gives, so the option changes no number
    in any table."""
    task, model, settings = tiny
    members = _members({}, {"init_scale": 0.5}, seeds=[0, 3])
    keys, hp = stack(members, base_seed=0)

    def outputs():
        program = make_population(settings, task, model)
        state = program.init(keys, hp)
        return jax.device_get((state.params, state.opt_state, state.key))

    assert train.init_options() == {"xla_backend_optimization_level": 1}  # the tests run on a CPU
    fast = outputs()
    monkeypatch.setattr(train, "init_options", lambda: {"xla_backend_optimization_level": 3})
    jax.tree.map(np.testing.assert_array_equal, fast, outputs())


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_a_decay_never_reached_trains_exactly_as_the_constant_rate(tiny, schedule):
    """Capacity's constant-rate run decays on the annealed runs' schedule with a horizon of NEVER
    steps, to share their program: every number must be the constant-rate run's, bit for bit."""
    from jaxcap.experiments.capacity.populations import NEVER

    task, model, settings = tiny
    members = _members({"warmup_steps": 5.0}, {"learning_rate": 1e-2}, seeds=[0, 1])
    _, constant, constant_stats, _ = _train(tiny, members)
    decaying = [dataclasses.replace(m, hparams={**m.hparams, "decay_steps": NEVER}) for m in members]
    tiny_decay = (task, model, dataclasses.replace(settings, schedule=schedule))
    _, never, never_stats, _ = _train(tiny_decay, decaying)
    jax.tree.map(np.testing.assert_array_equal, never.params, constant.params)
    np.testing.assert_array_equal(never_stats.loss, constant_stats.loss)

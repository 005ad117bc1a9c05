"""Bits stored: hand-computed cases, honest memorization of a tiny dataset (equal to its entropy
within 1 %) and a plateau far beyond a tiny model; saturation, plateau, budgets and the fits;
configs/capacity.py:smoke's config errors (its runs end to end: test_capacity_runs.py)."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ROOT, capacity_row

from jaxcap import tasks
from jaxcap.config.base import load_config
from jaxcap.core.population import DEFAULT_HPARAMS, grid_members, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.experiments.capacity import across_architectures as capacity_fit
from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.experiments.capacity import sizes as capacity
from jaxcap.models import ModelConfig
from jaxcap.results import capacity_curves, capacity_reading
from jaxcap.results.records import Cursor


def _bits(logits, targets, weights=None):
    weights = jnp.ones(targets.shape, jnp.float32) if weights is None else weights
    return {k: np.asarray(v, np.float64) for k, v in capacity.item_scores(logits, targets, weights).items()}


def test_hand_computed_bits():
    n, k = 12, 8
    targets = jnp.arange(n, dtype=jnp.int32) % k
    perfect = 100.0 * jax.nn.one_hot(targets, k)
    assert _bits(perfect, targets)["bits"].sum() == pytest.approx(n * math.log2(k), rel=1e-6)
    assert _bits(perfect, targets)["exact"].sum() == n
    assert _bits(jnp.zeros((n, k)), targets)["bits"].sum() == pytest.approx(0.0, abs=1e-5)
    # half the entropy: probability 1/sqrt(8) on the answer costs 1.5 of log2 8 = 3 bits
    half = jnp.where(jax.nn.one_hot(targets, k) > 0, math.log(k - 1) - math.log(math.sqrt(k) - 1), 0.0)
    got = _bits(half, targets)
    np.testing.assert_allclose(got["ce_bits"], 1.5, rtol=1e-5)
    assert got["bits"].sum() == pytest.approx(n * 1.5, rel=1e-5)
    # worse than uniform stores nothing (clipped), and counts against the net bits
    wrong = -100.0 * jax.nn.one_hot(targets, k)
    assert _bits(wrong, targets)["bits"].sum() == 0.0 and _bits(wrong, targets)["net_bits"].sum() < 0
    # unscored items store nothing; a class mask makes K the number of valid classes
    assert _bits(perfect, targets, jnp.zeros((n,)))["bits"].sum() == 0.0
    four = targets % 4
    masked = capacity.item_scores(100.0 * jax.nn.one_hot(four, k), four, jnp.ones((n,)), jnp.arange(k) < 4)
    assert float(masked["bits"].sum()) == pytest.approx(n * 2.0, rel=1e-6)


def test_sequence_items_are_clipped_as_a_whole():
    v = 4  # two scored tokens per item: one perfect (+2 bits), one at 1/8 (-1 bit) -> 1 bit
    targets = jnp.array([[1, 2, 0]], jnp.int32)
    weights = jnp.array([[1.0, 1.0, 0.0]])
    good = 100.0 * jax.nn.one_hot(targets[:, :1], v)
    p = 1.0 / 8.0  # logits giving probability p to class 2 among 4
    bad = jnp.log(jnp.array([(1 - p) / 3, (1 - p) / 3, p, (1 - p) / 3]))[None, None]
    logits = jnp.concatenate([good, bad, jnp.zeros((1, 1, v))], axis=1)
    got = _bits(logits, targets, weights)
    assert got["bits"][0] == pytest.approx(1.0, abs=1e-4) and got["ce_bits"][0] == pytest.approx(
        3.0, abs=1e-4
    )
    assert got["exact"][0] == 0.0


def test_totals_sum_in_float64_over_the_first_n_items():
    scores = {name: np.full((2, 5000), 0.1, np.float32) for name in ("bits", "net_bits", "ce_bits", "exact")}
    out = capacity.totals(scores, [5000, 10])
    assert out[0]["bits_stored"] == pytest.approx(500.0, rel=1e-7)  # 5000 x float32(0.1), summed exactly
    assert out[1]["bits_stored"] == pytest.approx(1.0, rel=1e-6)


def test_budgets_of_the_seed_baseline():
    model = {"n_heads": 8, "d_head": 32, "param_dtype": "float32"}
    got = capacity_reading.budgets(model, 1_000_000)
    assert got["head_budget_bits"] == 8192 and got["storage_budget_bits"] == 32_000_000


def test_saturation_plateau_and_growth():
    rising = np.array([[0, 100], [50, 101], [90, 101], [120, 101.5]], np.float64)  # [eval, member]
    ceiling = np.array([1000.0, 1000.0])
    np.testing.assert_array_equal(capacity_curves.saturated(rising, 2, 0.02, 1.0, ceiling), [False, True])
    assert not capacity_curves.saturated(rising[:3], 2, 0.02, 1.0, ceiling).any()  # too short to judge
    full = capacity_curves.saturated(rising[:1], 2, 0.02, 1.0, np.array([1.0, 101.0]))
    np.testing.assert_array_equal(full, [False, True])  # at its dataset bits: nothing left to gain
    assert capacity.sizes_for((0.5, 1.0, 1.01), 1000, 60.0) == [8, 17]
    sizes, data = [10, 20, 40], [100.0, 200.0, 400.0]
    assert capacity_curves.plateaued(sizes, [100.0, 150.0, 152.0], data, 0.05)
    assert not capacity_curves.plateaued(sizes, [100.0, 150.0, 200.0], data, 0.05)  # still growing
    stored_all = [100.0, 200.0, 205.0]
    assert not capacity_curves.plateaued(sizes, [100.0, 200.0, 204.0], stored_all, 0.05)  # all stored
    assert capacity.next_sizes([16, 32, 64], 2.0, 2) == [128, 256]


def test_exposure_record_interpolates_in_log_exposures_and_resumes_exactly():
    sizes, batch, budgets = [16, 32], 8, [10.0, 20.0, 40.0]  # member 0: 0.5 exposures/step, 1: 0.25
    evals = {30: [1.0, 10.0], 60: [3.0, 30.0], 90: [4.0, 40.0], 160: [5.0, 50.0]}
    stop = capacity_curve.make_stop_fn(sizes, batch, budgets)

    def step_eval(cursor: Cursor, step: int) -> tuple[Cursor, bool]:
        last = {m: [v * (1 + j) for v in evals[step]] for j, m in enumerate(capacity_curve.RECORDED)}
        cursor = dataclasses.replace(cursor, step=step, last=last)  # as the host loop does
        before = cursor.extra.get("exposure")
        stopped = stop(cursor)
        assert before is None or before is not cursor.extra["exposure"]  # a new record every eval
        return cursor, stopped

    cursor, stops = Cursor.fresh(2), []
    for s in evals:
        cursor, stopped = step_eval(cursor, s)
        stops.append(stopped)
    assert stops == [False, False, False, True]  # 40 x 32 / 8 = 160
    w40, w80 = math.log(40 / 30) / math.log(60 / 30), math.log(80 / 60) / math.log(90 / 60)
    exposure = cursor.extra["exposure"]
    bits = exposure["at"]["bits_stored"]
    # member 0 passed 10 exposures at step 20, before the first eval: unresolved, not extrapolated
    assert bits[0] == [None, pytest.approx(1.0 + w40 * 2.0), pytest.approx(3.0 + w80 * 1.0)]
    assert bits[1] == [pytest.approx(10.0 + w40 * 20.0), pytest.approx(30.0 + w80 * 10.0), 50.0]
    assert exposure["at"]["net_bits"][1][2] == 100.0  # every RECORDED metric
    # resumed from a checkpoint after step 60 (the cursor went through JSON): the same record
    resumed = step_eval(step_eval(Cursor.fresh(2), 30)[0], 60)[0]
    resumed = Cursor.from_json(json.loads(json.dumps(resumed.to_json())))
    resumed, stopped_90 = step_eval(resumed, 90)
    resumed, stopped_160 = step_eval(resumed, 160)
    assert (stopped_90, stopped_160) == (False, True)
    assert resumed.extra["exposure"] == exposure


def _rows(bits_at, seeds=(0, 1), sizes=(10, 20), **extra):
    """capacity.jsonl-like rows: bits_at[size][seed] over the budgets (10, 20, 40, 80)."""
    rows = []
    for i, size in enumerate(sizes):
        for j, seed in enumerate(seeds):
            series = bits_at[i][j]
            rows.append(
                capacity_row(
                    seed=seed,
                    dataset_size=size,
                    exposures=[10.0, 20.0, 40.0, 80.0],
                    bits_at=series,
                    bits_stored=series[-1],
                    **extra,
                )
            )
    return rows


def test_curve_takes_the_best_size_per_seed_and_judges_the_last_doubling():
    small = [[None, 50.0, 80.0, 90.0], [None, 40.0, 70.0, 80.0]]  # [seed][budget], 10 items
    large = [[20.0, 60.0, 100.0, 104.0], [10.0, 30.0, 60.0, 70.0]]
    points = capacity_curves.curve(_rows([small, large]), n_params=100)
    assert [p["bits"] for p in points] == [[20.0, 10.0], [60.0, 40.0], [100.0, 70.0], [104.0, 80.0]]
    assert [p["best_size"] for p in points][-1] == [20, 10]
    assert points[0]["sizes"] == [20] and points[-1]["bits_per_param"] == pytest.approx(0.92)
    flat = capacity_curves.flatness(points, tol=0.05)  # median 92 at 80 vs 85 at 40: +7.6 %
    assert (
        not flat["flat"] and flat["gain"] == pytest.approx(7 / 92) and (flat["from"], flat["to"]) == (40, 80)
    )
    assert capacity_curves.flatness(points, tol=0.08)["flat"]
    assert capacity_curves.flatness(points[:1], tol=0.5) == {
        "flat": False,
        "gain": None,
        "from": None,
        "to": 10.0,
        "tol": 0.5,
    }
    diverged = _rows([small, large])
    diverged[2] = dataclasses.replace(
        diverged[2], diverged=True
    )  # size 20, seed 0: its seed falls back to size 10
    assert capacity_curves.curve(diverged, 100)[-1]["bits"] == [90.0, 80.0]
    budgets = [10.0, 20.0, 40.0, 80.0]
    assert capacity_curves.member_saturated(budgets, [1.0, 2.0, 3.0, 3.1], 100.0, 0.05)
    assert not capacity_curves.member_saturated(budgets, [1.0, 2.0, 3.0, 3.5], 100.0, 0.05)
    assert capacity_curves.member_saturated(budgets, [None, 50.0, 90.0, 96.0], 100.0, 0.05)  # stored all
    assert capacity_curve.exposures(100, 8, 16) == 50.0 and capacity_curve.steps_to(50.0, 16, 8) == 100
    assert capacity_curve.steps_to(10.0, 3, 8) == 4  # 3.75 steps: the 4th passes it


def test_fits_recover_known_laws():
    p = np.array([1e3, 3e3, 1e4, 3e4, 1e5])
    assert capacity_fit.slope(p, 2.0 * p) == pytest.approx(2.0)
    theta = capacity_fit.power_law_fit(p, 5.0 * p**0.8)
    assert np.exp(theta[0]) == pytest.approx(5.0) and theta[1] == pytest.approx(0.8)
    held = capacity_fit.held_out(
        capacity_fit.power_law_fit, capacity_fit.power_law_predict, p[:, None], 5 * p**0.8
    )
    assert capacity_fit.mape(held, 5 * p**0.8) < 1e-6
    h = np.array([1, 2, 4, 8, 1, 2, 4, 8, 2, 4])
    n = np.array([8, 8, 8, 8, 32, 32, 32, 32, 16, 16])
    b = np.array([16, 32, 64, 128, 32, 64, 16, 64, 128, 32])
    truth = np.array([40.0, 0.1, -0.5, 1.0, 2.0, 3.0, 10.0])
    c = capacity_fit.ecm_predict(truth, h, n, b)
    fitted = capacity_fit.ecm_fit(h, n, b, c)
    assert capacity_fit.mape(capacity_fit.ecm_predict(fitted, h, n, b), c) < 1.0


def _memorize(n_sizes, d_model, steps):
    task = tasks.build(
        {"name": "random_labels", "vocab_size": 32, "seq_len": 9, "n_classes": 16},  # 45 bits: 4,096 distinct
        {"dataset_size": list(n_sizes)},
    )
    model = ModelConfig.for_task(
        task.spec, n_layers=1, d_model=d_model, n_heads=2, d_head=8, d_ff=4 * d_model
    )
    settings = TrainSettings(
        steps=steps, chunk_steps=steps // 2, batch_size=64, eval_batch_size=1024, dropout=False
    )
    hp = {**DEFAULT_HPARAMS, "learning_rate": 1e-2}
    members = grid_members(hp, {}, {"dataset_size": 0}, {"dataset_size": tuple(n_sizes)}, seeds=1)
    program = make_population(settings, task, model)
    keys, hparams = stack(members, 0)
    state, data = program.init(keys, hparams), program.data(keys, hparams)
    for _ in range(2):
        state, _ = program.chunk(state, hparams, data)
    scores = jax.device_get(capacity.make_scores(task, model, 1024)(state.params, hparams, data))
    metrics = jax.device_get(program.evaluate(state, hparams, data))
    sizes = list(n_sizes)
    return task, capacity.totals(scores, sizes), metrics


@pytest.mark.slow
def test_tiny_dataset_is_memorized_and_a_huge_one_plateaus():
    """One population: 48 items (192 bits) fit exactly; 4,096 items (16,384 bits) cannot fit in
    ~2.5k parameters, and the fresh val set stays at chance (nothing generalizes)."""
    task, (small, big), metrics = _memorize((48, 4096), d_model=16, steps=600)
    entropy = task.complexity_bits({"dataset_size": 48})
    assert small["exact_fraction"] == 1.0, small
    assert abs(small["bits_stored"] - entropy) <= 0.01 * entropy, (small, entropy)
    big_entropy = task.complexity_bits({"dataset_size": 4096})
    assert big["bits_stored"] < 0.5 * big_entropy, big
    assert big["bits_stored"] > small["bits_stored"]  # it did store more than the small set holds
    assert (np.abs(metrics["val_accuracy"] - 1 / 16) < 0.06).all(), metrics["val_accuracy"]


def _smoke_config():
    return load_config(f"{ROOT / 'configs' / 'capacity.py'}:smoke")


def test_config_errors_name_the_field():
    from jaxcap.config.base import validate
    from jaxcap.fields import ConfigError

    config = _smoke_config()
    validate(config)
    validate(config)  # the capacity section too
    config.capacity.growth = 0.5
    with pytest.raises(ConfigError, match=r"config\.capacity\.growth: got 0\.5"):
        validate(config)
    config = _smoke_config()
    config.model.attention = "bidirectional"
    with pytest.raises(ConfigError, match="config.model.attention: got 'bidirectional'; allowed .*causal"):
        validate(config)  # the capacity section too
    for field, value, message in [
        (
            "exposures",
            (10.0, 5.0),
            r"config.capacity.exposures: got \(10.0, 5.0\); allowed: a non-empty ascending",
        ),
        ("exposures", (), r"config.capacity.exposures: got \(\); allowed"),
        (
            "exposures",
            (10.0, 400.0),
            r"config.train.steps: got 400; allowed: >= 800 \(400 exposures of n = 16",
        ),
    ]:
        config = _smoke_config()
        config.capacity[field] = value
        with pytest.raises(ConfigError, match=message):
            validate(config)  # the capacity section too
    config = _smoke_config()
    config.train.schedule = "cosine"
    with pytest.raises(ConfigError, match="config.train.schedule: got 'cosine'; allowed: constant"):
        validate(config)  # the capacity section too
    config = _smoke_config()
    config.train.chunk_steps = 200  # n = 4 passes 100 exposures at step 50, before the first eval
    with pytest.raises(ConfigError, match=r"config.train.chunk_steps: got 200; allowed: at most 50"):
        validate(config)  # the capacity section too
    config = _smoke_config()
    config.capacity.update(max_rounds=16, extend=2)  # sizes 64 * 2^30: random labels could not stay distinct
    config.task.name = "random_labels"
    config.task.n_classes = 4
    with pytest.raises(ConfigError, match="config.task.seq_len"):
        validate(config)  # the capacity section too

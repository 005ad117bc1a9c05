"""The memorization recipe: schedules that end at each member's own horizon, ablation
switches that change only what they name, the bits formula against the plain implementation's,
bad recipe configs, and an annealed + searched capacity run that resumes to the same bytes."""

import json
import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ENV, ROOT, bucket_killer, capacity_row
from helpers import launch as launch_cmd

from jaxcap.config.base import load_config, validate
from jaxcap.core.train import TrainSettings, unit_schedule
from jaxcap.experiments.capacity import recipe
from jaxcap.experiments.capacity import sizes as capacity
from jaxcap.fields import ConfigError
from jaxcap.models import ModelConfig
from jaxcap.models.transformer import init_params, make_apply
from jaxcap.results import capacity_reading
from jaxcap.results.records import CapacityRow
from studies import capacity_ablation as ablation
from studies import plain_reference as plain


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_decay_reaches_zero_at_each_members_horizon(schedule):
    settings = TrainSettings(steps=1000, schedule=schedule)
    unit = lambda step, decay: float(unit_schedule(jnp.asarray(step), jnp.asarray(0.0), settings, decay))  # noqa: E731
    assert unit(0, 100.0) == 1.0 and unit(50, 100.0) == pytest.approx(0.5, abs=1e-6)
    assert unit(100, 100.0) == pytest.approx(0.0, abs=1e-7) and unit(400, 100.0) == pytest.approx(
        0.0, abs=1e-7
    )
    assert unit(500, 0.0) == pytest.approx(0.5, abs=1e-6)  # 0: the horizon is train.steps
    constant = TrainSettings(steps=1000)
    assert float(unit_schedule(jnp.asarray(900), jnp.asarray(0.0), constant, 100.0)) == 1.0


def _model(**fields):
    base = dict(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32, attention="causal", readout="all")
    return ModelConfig(vocab_size=16, seq_len=8, n_outputs=16, **{**base, **fields})


def test_embedding_switches_change_only_the_token_table():
    key, tokens = jax.random.key(0), jax.random.randint(jax.random.key(1), (4, 8), 0, 16)
    base = init_params(_model(), key)
    flat = dict(jax.tree_util.tree_flatten_with_path(base)[0])
    for fields in (dict(embed_std=0.02), dict(embed_sqrt_d=False), dict(embed_std=0.02, embed_sqrt_d=False)):
        other = dict(jax.tree_util.tree_flatten_with_path(init_params(_model(**fields), key))[0])
        changed = {jax.tree_util.keystr(k) for k in flat if not np.array_equal(flat[k], other[k])}
        assert changed == {"['embed']['embedding']"}, (fields, changed)
    # without the multiplier, an N(0, 1) table read as it is computes what N(0, 1/d) x sqrt(d)
    # does: the same function at init, only Adam's step on the table differs
    unscaled = init_params(_model(embed_sqrt_d=False), key)
    a = make_apply(_model())(base, tokens)
    b = make_apply(_model(embed_sqrt_d=False))(unscaled, tokens)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def _flat(config, prefix=""):
    out = {}
    for k, v in config.items():
        if hasattr(v, "items"):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


@pytest.mark.parametrize("row", [r for r in ablation.ROWS if r[0] != "baseline"], ids=lambda r: r[0])
def test_each_ablation_row_changes_only_what_it_names(row):
    name, _, _, overrides = row
    base, other = _flat(ablation.config_for({}, 3)), _flat(ablation.config_for(overrides, 3))
    changed = {k for k in base if base[k] != other[k]}
    assert changed and changed <= set(overrides), (name, changed)
    validate(ablation.config_for(overrides, 3))


def test_ablation_launch_flags_spell_the_rows_config():
    """Each row runs as its own launch: its flags (tuples, booleans, strings, floats) parse, in
    the launcher's own parser, to exactly the config the row names."""
    _, _, _, overrides = ablation.ROWS[-1]
    script = (
        "import json, sys\n"
        "from absl import flags\n"
        "from jaxcap.main import launch\n"
        "launch._parse(sys.argv)\n"
        "print(json.dumps(flags.FLAGS.config.to_dict()))\n"
    )
    argv = ["launch", *ablation.flags(overrides, 3)]
    out = subprocess.run(
        [sys.executable, "-c", script, *argv[1:]], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    parsed = json.loads(out.stdout.strip().splitlines()[-1])
    want = json.loads(json.dumps(ablation.config_for(overrides, 3).to_dict()))
    assert _flat(parsed) == _flat(want)


def test_bits_formula_agrees_with_the_plain_implementation():
    """jaxcap's item_scores on the padded sequence (last position unscored) against the plain
    implementation's code length of the 15 next tokens, on the same logits: random, with the
    right token boosted in half the items (those code below 60 bits, the others above)."""
    case = plain.Case(n=12)
    x = jax.random.randint(jax.random.key(4), (case.n, case.seq_len), 0, case.vocab)
    noise = jax.random.normal(jax.random.key(3), (case.n, case.seq_len, case.vocab))
    boost = (
        4.0 * (jnp.arange(case.n) % 2)[:, None, None] * jax.nn.one_hot(jnp.roll(x, -1, axis=1), case.vocab)
    )
    logits = noise + boost  # position t predicts token t + 1; the last position is not scored
    want = np.maximum(0.0, 60.0 - np.asarray(plain.logits_code_bits(logits[:, :-1], x), np.float64))
    targets = jnp.concatenate([x[:, 1:], jnp.zeros((case.n, 1), x.dtype)], axis=1)
    weights = jnp.broadcast_to((jnp.arange(case.seq_len) < case.seq_len - 1).astype(jnp.float32), x.shape)
    got = np.asarray(capacity.item_scores(logits, targets, weights)["bits"], np.float64)
    np.testing.assert_allclose(got, want, atol=1e-3)
    assert 0 < want.sum() < 60 * case.n


def test_best_recipe_is_the_highest_median_and_diverged_members_store_nothing():
    rows = [capacity_row(recipe={"learning_rate": 0.01}, bits_stored=b) for b in (10.0, 30.0, 20.0)] + [
        capacity_row(recipe={"learning_rate": 0.1}, bits_stored=b, diverged=d)
        for b, d in ((90.0, True), (25.0, False), (26.0, True))
    ]
    assert recipe.best_recipe(rows) == {"learning_rate": 0.01}
    table = recipe.search_table(rows)
    assert [p["median"] for p in table] == [20.0, 0.0] and table[1]["diverged"] == 2


def _recipe_smoke():
    config = load_config(f"{ROOT / 'configs' / 'capacity.py'}:smoke")
    config.sweep.buckets = ("model.d_model=8,model.n_heads=1,model.d_ff=16",)
    config.capacity.update(max_rounds=1, annealed=(50.0, 100.0), search_exposures=50.0)
    config.sweep.hparams.update(learning_rate=(1e-2, 2e-2), b2=(0.98, 0.999))
    return config


def test_bad_recipe_configs_are_one_line_errors_before_anything_compiles():
    validate(_recipe_smoke())  # the capacity section too
    for edit, message in [
        (
            lambda c: c.capacity.update(annealed=(100.0, 50.0)),
            r"config.capacity.annealed: got \(100.0, 50.0\)",
        ),
        (
            lambda c: c.capacity.update(annealed=(50.0, 500.0)),
            r"config.train.steps: got 400; allowed: >= 500 \(500 exposures of n = 8",
        ),
        (
            lambda c: c.capacity.update(anneal_schedule="constant"),
            "config.capacity.anneal_schedule: got 'constant'",
        ),
        (
            lambda c: c.sweep.hparams.update(learning_rate=(0.0,)),
            "config.sweep.hparams.learning_rate: got \\(0.0,\\); allowed: at least one value > 0",
        ),
        (
            lambda c: c.sweep.hparams.update(learning_rate=(), b2=()),
            "config.capacity.search_exposures: got 50 with an empty config.sweep.hparams",
        ),
    ]:
        config = _recipe_smoke()
        edit(config)
        with pytest.raises(ConfigError, match=message):
            validate(config)  # the capacity section too
    config = _recipe_smoke()
    config.hparams.decay_steps = 10.0  # a decay under the constant-rate protocol: refused
    with pytest.raises(ConfigError, match="config.hparams.decay_steps: got 10 with config.train.schedule"):
        validate(config)


RECIPE_ARGS = [
    "--config",
    "configs/capacity.py:smoke",
    "--config.sweep.buckets=('model.d_model=8,model.n_heads=1,model.d_ff=16',)",
    "--config.capacity.max_rounds=1",
    "--config.capacity.annealed=(50.0,100.0)",
    "--config.capacity.search_exposures=100.0",
    "--config.sweep.hparams.learning_rate=(0.01,0.02)",
    "--config.sweep.hparams.b2=(0.98,0.999)",
]


def _launch(workdir, bucket: str = "", appends: int = 0) -> subprocess.CompletedProcess:
    """A launch of RECIPE_ARGS; with `appends`, killed after that many evals of `bucket`, having
    checkpointed after every eval (the kill needs a checkpoint inside the bucket)."""
    kill = ["--config.runtime.checkpoint_every=1"] if appends else []
    code = bucket_killer(bucket, appends) if appends else ""
    args = [*RECIPE_ARGS, *kill, "--workdir", workdir]
    return launch_cmd(*args, killer_code=code, check=False, timeout=900)


@pytest.mark.slow
def test_search_and_annealed_budgets_resume_to_the_same_bytes(tmp_path):
    """Straight, then one workdir killed twice and rerun: inside the search (after its 4th of 5
    evals, so its step-40 checkpoint is on disk for certain: Orbax starts a save once the previous
    one committed), then, by the rerun that resumed the search, inside an annealed budget
    (b0n8a100 after 4 of its 5 evals, every earlier population measured); the last rerun ends
    with the same capacity.jsonl, members.jsonl and evals.jsonl as the straight run."""
    straight = tmp_path / "straight"
    out = _launch(straight)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = (straight / "capacity.jsonl").read_text().splitlines()
    rows = [CapacityRow.from_json(json.loads(line)) for line in lines]
    assert [json.dumps(r.to_json(), sort_keys=True) for r in rows] == lines  # written as read
    search = [r for r in rows if r.schedule == "search"]
    assert len(search) == 2 * 2 * 2  # lr x β2 x seeds
    best = recipe.best_recipe(search)
    for r in rows:
        if r.schedule != "search":
            assert r.recipe == best, r.bucket
        if r.schedule == "annealed":  # stopped at the first eval past its horizon
            horizon = math.ceil(r.anneal_budget * r.dataset_size / 8)
            assert r.steps - 20 < horizon <= r.steps and r.exposures == [r.anneal_budget]
    assert {r.bucket for r in rows} == {
        "b0search",
        "b0n4",
        "b0n4a50",
        "b0n4a100",
        "b0n8",
        "b0n8a50",
        "b0n8a100",
    }
    [summary] = capacity_reading.summarize([r for r in rows], 0.05)
    assert summary.verdict_schedule == "annealed" and summary.flat.to == 100.0
    assert "annealed budget" in out.stdout and "recipe of" in out.stdout
    dead = tmp_path / "killed"
    for bucket, resumed_from in (("b0search", None), ("b0n8a100", "b0search"), ("", "b0n8a100")):
        run = _launch(dead, bucket, 4 if bucket else 0)
        assert run.returncode == (137 if bucket else 0), run.stderr[-3000:]
        if resumed_from:
            assert f"[{resumed_from}] resuming from step" in run.stdout, bucket
    assert "[b0n4a50 " not in run.stdout  # measured before the second kill: read back, not retrained
    for name in ("capacity.jsonl", "members.jsonl", "evals.jsonl"):
        assert (dead / name).read_bytes() == (straight / name).read_bytes(), name


def test_multiplier_interval_recovers_a_known_ratio_at_its_stated_coverage():
    """Simulated paired seeds with C_variant = 0.92 x C_first x lognormal noise (σ 0.05): the
    90 % interval holds 0.92 in about 90 % of 400 simulated runs of 3 seeds, and 40 seeds pin
    it within 3 %."""
    from types import SimpleNamespace

    from jaxcap.experiments.capacity.compare import multiplier

    rng = np.random.default_rng(0)
    summary = SimpleNamespace  # the two `CapacitySummary` fields `multiplier` reads

    def entries(n):
        first = rng.uniform(1000, 2000, n)
        variant = 0.92 * first * np.exp(rng.normal(0.0, 0.05, n))
        ids = list(range(n))
        return summary(c_mem_seeds=list(first), c_mem_seed_ids=ids), summary(
            c_mem_seeds=list(variant), c_mem_seed_ids=ids
        )

    hits = [(m := multiplier(*entries(3)))["low"] <= 0.92 <= m["high"] for _ in range(400)]
    assert 0.86 <= np.mean(hits) <= 0.94, np.mean(hits)
    wide = multiplier(*entries(40))
    assert abs(wide["median"] / 0.92 - 1) < 0.03 and wide["high"] / wide["low"] < 1.05
    assert (
        multiplier(
            summary(c_mem_seeds=[1.0], c_mem_seed_ids=[0]), summary(c_mem_seeds=[1.0], c_mem_seed_ids=[0])
        )
        is None
    )

"""Typed derivations of a bucket: each equals the bucket its edited config would build, a bucket
refuses what a run could not do as it is built, and experiment sections carry no config."""

import dataclasses

import ml_collections
import pytest
from helpers import ROOT

from jaxcap.config.base import base_config, build_plan, derived_config, load_config
from jaxcap.config.plan import build_bucket, variant_configs
from jaxcap.experiments.capacity import recipe as capacity_recipe
from jaxcap.fields import ConfigError


def _modulo():
    c = base_config("modulo")
    c.task.update(digits=2, modulus=7)
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    c.sweep.seeds = 2
    c.sweep.task.modulus = (5, 7)
    c.sweep.hparams.learning_rate = (1e-3, 3e-3)
    return c


def test_derived_buckets_equal_the_buckets_their_configs_build():
    c = _modulo()
    [bucket] = build_plan(c).buckets
    derived = (
        bucket.with_model(d_model=32, n_heads=4)
        .with_knobs(modulus=(3,))
        .with_hparams({"weight_decay": 0.5}, sweep=False)
        .with_settings(schedule="linear")
        .with_hparams({"decay_steps": 40.0})
    )
    edited = derived_config(
        c,
        {
            "model.d_model": 32,
            "model.n_heads": 4,
            "sweep.task.modulus": (3,),
            "hparams.weight_decay": 0.5,
            "hparams.decay_steps": 40.0,
            "sweep.hparams": {k: () for k in c.sweep.hparams},
            "train.schedule": "linear",
        },
    )
    assert derived == build_bucket(edited, "b0", "")
    assert [m.knobs["modulus"] for m in derived.members] == [3, 3]  # 2 seeds, no hparam grid


def test_capacity_sizes_equal_the_buckets_of_their_configs():
    """Each size's population (typed derivations of its architecture's bucket) is the one the
    config copy that used to define it builds: same task, model, settings, members and order."""
    c = load_config(f"{ROOT / 'configs' / 'capacity.py'}:smoke")
    run = build_plan(c).section
    label = c.sweep.buckets[1]
    sizes = run.first_sizes(label)
    size, budget, recipe = sizes[0], run.settings.exposures[-1], {"learning_rate": 0.003}
    bucket = run.size_bucket(1, label, sizes, size, budget, recipe)
    top = max(*sizes, run.largest_size(label))
    horizon = capacity_recipe.horizon(budget, size, c.train.batch_size)
    edited = derived_config(
        c,
        {
            "sweep.buckets": (label,),
            "sweep.task.dataset_size": (size,),
            "task.dataset_size": top,
            "task.max_dataset_size": top,
            "hparams.learning_rate": 0.003,
            "sweep.hparams": {k: () for k in c.sweep.hparams},
            "train.schedule": run.settings.anneal_schedule,
            "hparams.decay_steps": float(horizon),
        },
    )
    [(_, variant)] = variant_configs(edited)
    expected = dataclasses.replace(build_bucket(variant, "b0", label), name=bucket.name)
    assert bucket == expected
    assert bucket.name == f"b1n{size}a{budget:g}" and {m.knobs["dataset_size"] for m in bucket.members} == {
        size
    }


def test_a_bucket_refuses_what_a_run_could_not_do_as_it_is_built():
    [bucket] = build_plan(_modulo()).buckets
    with pytest.raises(ConfigError, match="config.train.steps: got 45; allowed: a multiple of"):
        bucket.with_settings(steps=45)
    with pytest.raises(ConfigError, match="config.model.d_model: got 15; allowed: even with sinusoidal"):
        bucket.with_model(d_model=15)
    with pytest.raises(ConfigError, match="config.hparams.decay_steps: got 9 with config.train.schedule"):
        bucket.with_hparams({"decay_steps": 9.0})


def _holds_config(value) -> bool:
    if isinstance(value, ml_collections.ConfigDict):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_holds_config(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return any(_holds_config(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_config(v) for v in value.values())
    return False


@pytest.mark.parametrize("name", ["capacity", "modmod_hpo"])
def test_experiment_sections_are_typed_and_hold_no_config(name):
    plan = build_plan(load_config(f"{ROOT / 'configs' / name}.py:smoke"))
    assert dataclasses.is_dataclass(plan.section) and not _holds_config(plan)

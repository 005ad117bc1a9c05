"""A family is one typed object: parsed once, its passes derived from its buckets. Each pass's
plan is the one its own config.json builds (so a family workdir reopens as what it trained),
and the records are the configs the family entry always described."""

import dataclasses
import json

import pytest
from helpers import ROOT

from jaxcap.config.base import build_plan, load_config, recorded_config
from jaxcap.config.family import parse_family
from jaxcap.fields import ConfigError, to_section
from jaxcap.results.store import clean


def _plan(spec: str):
    return build_plan(load_config(f"{ROOT / 'configs' / spec}"))


def _rebuilt(run, runtime):
    record = json.loads(json.dumps(clean(run.record)))  # as config.json holds it
    return build_plan(recorded_config({**record, "runtime": to_section(runtime)}))


@pytest.mark.parametrize("spec", ["calibrate.py:smoke", "enhance.py:smoke", "calibrate.py"])
def test_every_pass_is_the_plan_its_config_json_builds(spec):
    cal = _plan(spec).section
    for family in cal.families.values():
        values = family.values
        for levels, seeds in ((values, None), (values[-2:], 1), (values[:1], 3)):
            [run] = family.runs(levels, seeds)
            again = _rebuilt(run, family.runtime)
            assert again.buckets == run.plan.buckets, (family.name, levels, seeds)
            assert run.record["sweep"]["seeds"] == (seeds or family.grid.seeds)


def _copying_family():
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.calibrate.families = {
        "copying": dict(
            task=dict(name="copying", vocab=4, n_eval=64),
            levels=dict(length=(2, 3, 6)),
            overrides="model.attention=causal",
        )
    }
    return parse_family(c, "copying", c.calibrate.families.copying)


def test_a_knob_pass_sizes_its_task_from_every_candidate():
    """copying's length is a knob: a pass over lengths (2, 3) trains on the task all three
    candidates size (max_length 6), so every pass of the family runs the same programs; its
    config.json builds that same bucket."""
    family = _copying_family()
    [bucket] = family.level_buckets((2, 3), seeds=1)
    assert bucket.task.max_length == 6 and bucket.task.length == 2
    assert sorted({m.knobs["length"] for m in bucket.members}) == [2, 3]
    assert bucket == _rebuilt(family.runs((2, 3), 1)[0], family.runtime).buckets[0]
    [other] = family.level_buckets((6,), seeds=1)
    assert other.task == bucket.task and other.model == bucket.model


def test_a_pass_splits_into_populations_of_a_rounds_size():
    """levels = 1: the grid (2, 3, 6) is three populations of one level each, the size of a
    boundary round's, on one task: one program set; its config.json plans the same three."""
    family = _copying_family()
    buckets = family.level_buckets((2, 3, 6), seeds=2, levels=1)
    assert [b.name for b in buckets] == ["b0", "b1", "b2"]
    assert [sorted({m.knobs["length"] for m in b.members}) for b in buckets] == [[2], [3], [6]]
    [round_] = family.level_buckets((3,), seeds=2, levels=1)
    programs = {(b.settings, b.task, b.model, len(b.members)) for b in [*buckets, round_]}
    assert len(programs) == 1  # the key of jaxcap.training.loop.population_program's cache
    [run] = family.runs((2, 3, 6), 2, levels=1)
    assert run.record["sweep"]["levels_per_population"] == 1
    assert _rebuilt(run, family.runtime).buckets == tuple(buckets)
    [b01, b2] = family.level_buckets((2, 3, 6), seeds=2, levels=2)  # the last holds fewer
    assert len(b01.members) == 4 and len(b2.members) == 2


def test_levels_per_population_refuses_two_swept_knobs():
    c = load_config(f"{ROOT / 'configs' / 'copying.py'}:smoke")
    c.sweep.task = {"length": (2, 3), "vocab": (3, 4)}
    c.sweep.levels_per_population = 1
    with pytest.raises(ConfigError, match=r"config.sweep.levels_per_population: got 1; allowed: 0 when"):
        build_plan(c)


def test_a_static_level_is_a_bucket_per_value_and_architecture():
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.calibrate.architectures = ("", "model.d_model=32")
    entry = dict(task=dict(name="triangle", n_eval=64), levels=dict(n_points=(4, 5)), overrides="")
    family = parse_family(c, "triangle", entry)
    labels = [b.label for b in family.level_buckets((5,), architectures=("model.d_model=32",))]
    assert labels == ["model.d_model=32,task.n_points=5"]
    [b] = family.level_buckets((5,), architectures=("model.d_model=32",))
    assert b.model.d_model == 32 and b.task.n_points == 5 and b.name == "b0"
    with pytest.raises(ConfigError, match="config.calibrate.architectures: got 'model.d_model=64'"):
        family.level_buckets((5,), architectures=("model.d_model=64",))


def test_experiment_sections_of_families_hold_no_config():
    from test_bucket_derivations import _holds_config

    for spec in ("calibrate.py:smoke", "pilot.py:smoke", "enhance.py:smoke"):
        plan = _plan(spec)
        assert dataclasses.is_dataclass(plan.section) and not _holds_config(plan), spec

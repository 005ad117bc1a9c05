"""Each config section is defined once, by the dataclass that owns it: a new field is one
`jaxcap.fields.setting` line there, and base_config, the schema and the typed objects follow."""

from __future__ import annotations

import dataclasses
import importlib

import jax
import pytest
from helpers import ROOT

from jaxcap.config import base
from jaxcap.core.population import DEFAULT_HPARAMS, HPARAM_RULES, HParams
from jaxcap.core.runtime import Runtime
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import ConfigError, Int, defaults, rules, setting
from jaxcap.models import MODEL_FIELDS, ModelConfig
from jaxcap.run import run

SECTIONS = {"model": ModelConfig, "train": TrainSettings, "eval": EvalSettings, "runtime": Runtime}


def test_sections_are_their_dataclasses():
    c = base.base_config("modulo")
    schema = base.schema(c)
    for section, cls in SECTIONS.items():
        assert sorted(c[section]) == sorted(rules(cls)) == sorted(schema[section]), section
    assert c.model.to_dict() == defaults(ModelConfig) and sorted(c.model) == sorted(MODEL_FIELDS)
    assert c.model.readout == "auto" and ModelConfig(1, 1, 1).readout == "last"  # config_default
    assert c.hparams.to_dict() == DEFAULT_HPARAMS == defaults(HParams)
    assert schema["hparams"] == HPARAM_RULES == rules(HParams)


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_a_new_field_is_one_line(monkeypatch, section):
    """A subclass with one more `setting` stands in for a new field: it appears in base_config
    with its default, and a bad value is one ConfigError naming config.<section>.<field>."""
    cls = SECTIONS[section]
    extra = dataclasses.make_dataclass(
        f"Extra{cls.__name__}", [("extra_knob", int, setting(3, Int(1)))], bases=(cls,), frozen=True
    )
    monkeypatch.setattr(base, cls.__name__, extra)
    c = base.base_config("modulo")
    assert c[section].extra_knob == 3
    base.validate(c)
    c[section].extra_knob = 0
    with pytest.raises(ConfigError, match=rf"^config\.{section}\.extra_knob: got 0; allowed: >= 1$"):
        base.validate(c)


def test_rule_between_fields_said_once():
    c = base.base_config("modulo")
    c.model.n_kv_heads = 3
    with pytest.raises(
        ConfigError, match=r"^config\.model\.n_kv_heads: got 3; allowed: 0 or a divisor of n_heads \(8\)$"
    ):
        base.validate(c)
    with pytest.raises(ConfigError, match="config.model.n_kv_heads"):
        ModelConfig(1, 1, 1, n_kv_heads=3)


def test_a_new_train_field_reaches_the_plan(monkeypatch):
    """From the one line to the typed object the trainer reads: the plan's TrainSettings."""
    from jaxcap.config import plan

    extra = dataclasses.make_dataclass(
        "ExtraTrainSettings", [("extra_knob", int, setting(3, Int(1)))], bases=(TrainSettings,), frozen=True
    )
    monkeypatch.setattr(base, "TrainSettings", extra)
    monkeypatch.setattr(plan, "TrainSettings", extra)
    c = base.base_config("modulo")
    c.train.extra_knob = 5
    (bucket,) = base.validate(c).buckets
    assert bucket.settings.extra_knob == 5


# The sections an experiment owns (jaxcap.config.registry): where each dataclass is declared (the
# registry and the config files read it from there), where the check builds its typed object, the
# smoke config, and the typed object in the checked plan's section.
def _study(section):
    return section.study


def _settings(section):
    return section.settings


EXPERIMENT_SECTIONS = {
    "study": (
        "StudySettings",
        ("jaxcap.experiments.hpo.search_space", "jaxcap.experiments.hpo.study"),
        "modmod_hpo",
        _study,
    ),
    "capacity": ("CapacitySettings", ("jaxcap.experiments.capacity.populations",), "capacity", _settings),
    "calibrate": (
        "CalibrateSettings",
        ("jaxcap.experiments.calibrate.settings",),
        "calibrate",
        _settings,
    ),
}


def _smoke(name: str):
    c = base.load_config(f"{ROOT / 'configs' / name}.py:smoke")
    c.runtime.progress = False
    return c


@pytest.mark.parametrize("section", sorted(EXPERIMENT_SECTIONS))
def test_a_new_experiment_field_is_one_line(monkeypatch, section):
    """An experiment's section is its dataclass too: one more `setting` there appears in the
    config with its default, reaches the typed section the experiment reads (`plan.section`),
    and a bad value is one ConfigError naming config.<section>.<field>."""
    name, modules, config, typed = EXPERIMENT_SECTIONS[section]
    cls = getattr(importlib.import_module(modules[0]), name)
    extra = dataclasses.make_dataclass(
        f"Extra{name}", [("extra_knob", int, setting(3, Int(1)))], bases=(cls,), frozen=True
    )
    for module in modules:
        monkeypatch.setattr(importlib.import_module(module), name, extra)
    c = _smoke(config)
    assert c[section].extra_knob == 3
    c[section].extra_knob = 5
    assert typed(base.checked_plan(c).section).extra_knob == 5
    c[section].extra_knob = 0
    with pytest.raises(ConfigError, match=rf"^config\.{section}\.extra_knob: got 0; allowed: >= 1$"):
        base.checked_plan(c)


@pytest.mark.parametrize(
    "config, field, value, message",
    [
        ("modmod_hpo", "study.n_trials", 0, "got 0; allowed: in [1, 10000]"),
        ("modmod_hpo", "study.sampler", "bayes", "got 'bayes'; allowed: tpe, gp, random, qmc, nsga2"),
        ("capacity", "capacity.growth", 1.0, "got 1.0; allowed: in [1.01, 16.0]"),
        ("capacity", "capacity.anneal_schedule", "step", "got 'step'; allowed: constant, cosine, linear"),
        ("calibrate", "calibrate.search", "bayes", "got 'bayes'; allowed: grid, optuna"),
        ("calibrate", "calibrate.nuts.chains", 0, "got 0; allowed: in [1, 64]"),
        ("calibrate", "calibrate.design.per_round", 0, "got 0; allowed: in [1, 100]"),
    ],
)
def test_a_bad_experiment_value_is_one_line_before_any_write(tmp_path, config, field, value, message):
    jax.devices()  # JAX has started: calibrate's set-up hook cannot change this process's devices
    c = _smoke(config)
    *path, leaf = field.split(".")
    node = c
    for part in path:
        node = node[part]
    node[leaf] = value
    with pytest.raises(ConfigError) as raised:
        run(c, str(tmp_path / "w"))
    assert str(raised.value) == f"config.{field}: {message}"
    assert not (tmp_path / "w").exists()

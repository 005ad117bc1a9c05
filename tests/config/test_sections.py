"""Each config section is defined once, by the dataclass that owns it: a new field is one
`jaxcap.fields.setting` line there, and base_config, the schema and the typed objects follow."""

from __future__ import annotations

import dataclasses

import pytest

from jaxcap.config import base
from jaxcap.core.population import DEFAULT_HPARAMS, HPARAM_RULES, HParams
from jaxcap.core.runtime import Runtime
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import ConfigError, Int, defaults, rules, setting
from jaxcap.models import MODEL_FIELDS, ModelConfig

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

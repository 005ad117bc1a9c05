"""Buckets from config overrides, the experiment registry, and their validation."""

import dataclasses

import pytest

from jaxcap.config.base import base_config, validate
from jaxcap.config.plan import Bucket, Plan, parse_overrides, variant_configs
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.fields import ConfigError, rules
from jaxcap.tasks.binop import BinaryOp


def _config(*buckets):
    c = base_config("binop")
    c.task.p = 7
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    c.sweep.seeds = 2
    c.sweep.hparams.learning_rate = (1e-3, 3e-3)
    c.sweep.buckets = buckets
    return c


def test_every_registered_name_resolves():
    """The registry holds dotted names (imported on use): each must point at what it says."""
    for name, experiment in EXPERIMENTS.items():
        assert callable(resolve(experiment.run)) and callable(resolve(experiment.report)), name
        for section, schema in experiment.sections:
            assert dataclasses.is_dataclass(resolve(schema)) and rules(resolve(schema)), (name, section)
        assert not experiment.setup or callable(resolve(experiment.setup)), name


def test_parse_overrides():
    assert parse_overrides("model.d_model=32, task.operation=sub,hparams.dropout=0.1") == [
        (["model", "d_model"], 32),
        (["task", "operation"], "sub"),
        (["hparams", "dropout"], 0.1),
    ]


def test_buckets_apply_their_overrides_and_keep_the_grid():
    c = _config("model.d_model=16", "model.d_model=32,task.operation=sub,hparams.weight_decay=1")
    buckets = validate(c).buckets  # the plan, built once by validate
    assert [b.name for b in buckets] == ["b0", "b1"]
    assert [b.model.d_model for b in buckets] == [16, 32]
    assert buckets[1].task.operation == "sub" and buckets[0].task.operation == "add"
    assert all(len(b.members) == 4 for b in buckets)  # 2 learning rates x 2 seeds each
    assert {m.hparams["weight_decay"] for m in buckets[1].members} == {1.0}
    assert c.model.d_model == 16  # the base config is untouched


def test_no_buckets_is_one_bucket():
    assert [label for label, _ in variant_configs(_config())] == [""]


@pytest.mark.parametrize(
    "bucket,message",
    [
        ("model.d_model=15", r"config.sweep.buckets\[0\] \(model.d_model=15\): config.model.d_model: got 15"),
        ("model.dmodel=32", r"config.sweep.buckets\[0\]: model.dmodel is not a config field"),
        ("sweep.seeds=3", r"cannot vary sweep.seeds; allowed sections: task, model, hparams, train, eval"),
        ("model.norm=layer", r"config.model.norm: got 'layer'; allowed: pre, post, none"),
        ("d_model", r"config.sweep.buckets: got 'd_model'; allowed: section.field=value"),
    ],
)
def test_bad_buckets_are_one_line_errors(bucket, message):
    with pytest.raises(ConfigError, match=message):
        validate(_config(bucket))


def test_validate_hands_down_a_frozen_typed_plan():
    """The plan is the only thing the training path reads: typed, frozen, no config inside."""
    c = _config("model.d_model=16")
    c.seed, c.eval.val_threshold, c.train.matmul_precision = 7, 0.5, "highest"
    p = validate(c)
    assert isinstance(p, Plan) and p.experiment == "population" and p.seed == 7 and p.devices == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.seed = 1
    (bucket,) = p.buckets
    assert "config" not in {f.name for f in dataclasses.fields(Bucket)}
    assert bucket.seed == 7 and bucket.eval.val_threshold == 0.5 and isinstance(bucket.members, tuple)
    assert bucket.settings.matmul_precision == "highest" and bucket.model.d_model == 16


def test_an_impossible_swept_knob_value_names_its_sweep_entry():
    """Each swept value is built as a task of its own; its constructor's error gets the entry's path."""
    c = base_config("modulo")
    c.task.update(digits=1, modulus=7)
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    c.train.batch_size = 16  # within reach of the 5 train examples of 10
    c.sweep.task.modulus = (5, 20)
    with pytest.raises(
        ConfigError, match=r"^config.sweep.task.modulus\[1\]: 20: config.task.modulus: got 20;"
    ):
        validate(c)


def test_a_bucket_checks_what_its_task_reads(monkeypatch):
    """Packages and data are not read by a task's constructor; building the bucket checks them."""

    def missing(self):
        raise ConfigError("config.task.p: the data are missing")

    monkeypatch.setattr(BinaryOp, "check_resources", missing)
    with pytest.raises(
        ConfigError, match=r"^config.sweep.buckets\[0\] \(model.d_model=16\): config.task.p: the"
    ):
        validate(_config("model.d_model=16"))

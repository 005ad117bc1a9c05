"""A study carries the config its trials are trained with (jaxcap/experiments/hpo/fingerprint.py):
a worker of another config is refused in one line naming the fields, before it trains; what a
worker sets for itself (runtime, budget, batch, the searched values) joins freely, and another
study name is a new study."""

import pytest
from helpers import hpo_smoke_config

from jaxcap.config.base import validate
from jaxcap.experiments.hpo import fingerprint
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.fields import ConfigError


def _config(storage, **overrides):
    c = hpo_smoke_config(storage)
    c.sweep.task.modulus = (5,)
    c.study.update(n_trials=2, batch_trials=1)
    for key, value in overrides.items():
        section, field = key.split("__")
        c[section][field] = value
    validate(c)
    return c


def _open(c, tmp_path):
    return study_lib.open_studies(validate(c).section, tmp_path, "modulo", True)


def test_a_worker_of_another_config_is_refused_naming_the_fields(tmp_path):
    storage = str(tmp_path / "shared.log")
    [study] = _open(_config(storage), tmp_path)
    assert study.user_attrs[fingerprint.ATTR]["train.steps"] == _config(storage).train.steps
    other = _config(storage, train__steps=20, model__d_model=32, model__d_head=16)
    with pytest.raises(ConfigError) as refused:
        _open(other, tmp_path)
    message = str(refused.value)
    assert "\n" not in message and "study modulo/modulus=5 holds trials of another config" in message
    for field in (
        "config.model.d_head",
        "config.model.d_model",
        "config.train.steps (40 in the study, 20 here)",
    ):
        assert field in message, message
    assert "--config.study.name=NEW" in message
    assert len(study.get_trials(deepcopy=False)) == 2  # nothing queued by the refused worker
    other.study.name = "small"  # a new study on the same storage: its own fingerprint
    [small] = _open(other, tmp_path)
    assert small.study_name == "small/modulus=5" and small.user_attrs[fingerprint.ATTR]["train.steps"] == 20


def test_what_a_worker_sets_for_itself_joins_the_study(tmp_path):
    _open(_config(str(tmp_path / "shared.log")), tmp_path)
    c = _config(
        str(tmp_path / "." / "shared.log"),  # the same file, spelled another way
        runtime__worker_grace_minutes=0.2,
        runtime__progress=False,
        study__batch_trials=2,
        study__n_trials=3,  # a larger budget extends the study's
        hparams__learning_rate=0.005,  # searched: only the creator's baseline trial reads it
    )
    c.note = "another worker"
    [study] = _open(c, tmp_path)
    assert study.user_attrs["budget"] == 3


def test_the_fingerprint_leaves_out_searched_values_and_worker_settings():
    fp = fingerprint.fingerprint(hpo_smoke_config(""))
    assert {
        "train.steps",
        "model.d_model",
        "search.learning_rate",
        "hparams.decay_steps",
        "study.sampler",
    } <= set(fp)
    assert not any(k.startswith(("runtime.", "note")) for k in fp)
    assert {"hparams.learning_rate", "study.n_trials", "study.batch_trials", "study.storage"}.isdisjoint(fp)

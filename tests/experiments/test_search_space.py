"""The search space as config data: suggestions within their distributions, storages, and one-line
errors for every bad entry before anything is compiled."""

import optuna
import pytest

from jaxcap.config.base import base_config, validate
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo.search_space import add_study, baseline_params, parse_space, suggest
from jaxcap.fields import ConfigError


def _config(**search):
    c = add_study(base_config("modulo"))
    c.task.update(digits=2, modulus=10, train_fraction=0.5)
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    c.search.update(learning_rate=("float", 1e-4, 1e-2, True), **search)
    return c


def test_suggestions_follow_the_space_and_repeat_for_the_same_trial():
    c = _config(
        warmup_steps=("int", 0, 100),
        dropout=("float", 0.0, 0.3),
        pos_encoding=("categorical", "sinusoidal", "learned"),
        d_model=("categorical", 16, 32),
    )
    validate(c)
    space = parse_space(c.search)
    assert [p.name for p in space] == ["d_model", "dropout", "learning_rate", "pos_encoding", "warmup_steps"]
    study = optuna.create_study()
    for _ in range(20):
        trial = study.ask()
        hparams, model = suggest(trial, space)
        assert set(hparams) == {"learning_rate", "warmup_steps", "dropout"}
        assert set(model) == {"pos_encoding", "d_model"}
        assert 1e-4 <= hparams["learning_rate"] <= 1e-2 and 0 <= hparams["dropout"] <= 0.3
        assert hparams["warmup_steps"] == int(hparams["warmup_steps"]) and isinstance(
            hparams["warmup_steps"], float
        )
        assert model["pos_encoding"] in ("sinusoidal", "learned") and model["d_model"] in (16, 32)
        assert suggest(optuna.Trial(study, trial._trial_id), space) == (hparams, model)
        study.tell(trial, hparams["learning_rate"])
    assert baseline_params(c, space) == {
        "d_model": 16,
        "dropout": 0.0,
        "learning_rate": 1e-3,
        "pos_encoding": "sinusoidal",
        "warmup_steps": 0.0,
    }


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(learnig_rate=("float", 1e-4, 1e-2)), r"config.search.learnig_rate: unknown parameter"),
        (dict(dropout=("uniform", 0.0, 0.3)), r"config.search.dropout: got kind 'uniform'; allowed: float"),
        (dict(dropout=("float", 0.3, 0.1)), r"config.search.dropout: got low 0.3 >= high 0.1"),
        (
            dict(weight_decay=("float", 0.0, 1.0, True)),
            r"config.search.weight_decay: got low 0.0 with log=True",
        ),
        (dict(dropout=("float", 0.0, 1.0)), r"config.search.dropout value: got 1.0; allowed: below 1.0"),
        (dict(dropout=("float", 0.1, 0.3)), r"baseline value config.hparams.dropout = 0.0 is outside"),
        (
            dict(d_model=("categorical", 16, 15)),
            r"config.search.d_model: choice 15: config.model.d_model: got 15",
        ),
        (
            dict(d_model=("float", 16.0, 32.0)),
            r"config.search.d_model: a model field; allowed kinds: int, categorical",
        ),
        (
            dict(norm=("categorical", "pre", "layer")),
            r"config.search.norm value: got 'layer'; allowed: pre, post",
        ),
        (dict(n_layers=2), r"config.search.n_layers: got 2; allowed: a tuple"),
    ],
)
def test_bad_search_entries_are_one_line_errors(change, message):
    c = _config()
    c.search.update(change)
    with pytest.raises(ConfigError, match=message):
        validate(c)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("objective", "multi", r"config.study.pruner: got 'median'; Optuna cannot prune multi-objective"),
        ("sampler", "cmaes", r"config.study.sampler: got 'cmaes'; allowed: tpe, gp, random, qmc, nsga2"),
        ("storage", "mystudy", r"config.study.storage: got 'mystudy'; allowed: ''"),
        ("n_trials", 0, r"config.study.n_trials: got 0; allowed: in \[1, 10000\]"),
    ],
)
def test_bad_study_fields_are_one_line_errors(field, value, message):
    c = _config()
    c.study[field] = value
    with pytest.raises(ConfigError, match=message):
        validate(c)


def test_gp_without_torch_and_grids_in_an_hpo_config_are_refused():
    c = _config()
    c.study.sampler = "gp"
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"config.study.sampler: got 'gp', which needs torch"):
            validate(c)
    c = _config()
    c.sweep.hparams.learning_rate = (1e-3, 3e-3)
    with pytest.raises(ConfigError, match=r"config.sweep.hparams.learning_rate: .* searches config.search"):
        validate(c)
    c = base_config("modulo")
    c.experiment = "hpo"
    with pytest.raises(ConfigError, match=r"config.study: missing; .*add_study"):
        validate(c)


@pytest.mark.parametrize(
    "spec,kind", [("", "RDBStorage"), ("journal", "JournalStorage"), ("x/s.log", "JournalStorage")]
)
def test_storages(tmp_path, monkeypatch, spec, kind):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    storage = study_lib.make_storage(spec, tmp_path / "w")
    assert type(storage).__name__ == kind
    optuna.create_study(study_name="s", storage=storage)
    expected = {"": "w/study.db", "journal": "w/study.log", "x/s.log": "x/s.log"}[spec]
    assert (tmp_path / expected).exists()

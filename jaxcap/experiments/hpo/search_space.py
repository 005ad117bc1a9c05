"""The search space of an Optuna study as config data, and the `study` section that drives it.

Details: docs/design/hpo.md#the-search-space.

[1] Akiba et al. 2019, "Optuna: A Next-generation Hyperparameter Optimization Framework",
    arXiv:1907.10902.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import ml_collections

from jaxcap.core.population import HPARAM_NAMES
from jaxcap.experiments.hpo.storage import check_storage_location, check_url, storage_ok
from jaxcap.fields import Bool, Choice, ConfigError, Float, Int, Str, defaults, setting
from jaxcap.models.config import MODEL_FIELDS

SAMPLERS = ("tpe", "gp", "random", "qmc", "nsga2")
PRUNERS = ("none", "median", "halving", "hyperband")
OBJECTIVES = ("penalized", "val", "multi")
KINDS = ("float", "int", "categorical")

MAX_TRIALS = 10_000


@dataclasses.dataclass(frozen=True)
class StudySettings:
    """The `study` section of an hpo config, declared once: each `setting` is the field's default
    and rule, and `config.study` (`add_study`) and its schema are generated from them."""

    # the budget of each study (one study per task level), queued trial by trial when a study is
    # created (milliseconds each): bounded so that a typo cannot queue for minutes
    n_trials: int = setting(16, Int(1, MAX_TRIALS))
    batch_trials: int = setting(8, Int(1))  # trials asked per study per round: B x seeds members
    sampler: str = setting("tpe", Choice(SAMPLERS))
    n_startup_trials: int = setting(8, Int(0))  # random trials before TPE / GP model the objective
    pruner: str = setting("median", Choice(PRUNERS))
    prune_startup_trials: int = setting(4, Int(0))  # median pruner: finished trials before it prunes
    prune_warmup_steps: int = setting(0, Int(0))  # median pruner: no pruning before this training step
    objective: str = setting("penalized", Choice(OBJECTIVES))
    gap_penalty: float = setting(0.5, Float(0.0))  # penalized: val metric - gap_penalty * max(gap, 0)
    # '' = sqlite study.db in the workdir; 'journal'; an RDB URL; a .log/.db path
    storage: str = setting("", Str())
    name: str = setting("", Str())  # study name prefix ('' = the task family)
    baseline: bool = setting(True, Bool())  # enqueue the config's own hyperparameters as the first trial


def study_defaults() -> ml_collections.ConfigDict:
    """The `study` section every HPO config starts from (override fields, never copy it)."""
    return ml_collections.ConfigDict(defaults(StudySettings))


def add_study(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """Turn a base config into an `hpo` one: `study` defaults and an empty search space."""
    config.experiment = "hpo"
    config.study = study_defaults()
    config.search = ml_collections.ConfigDict({name: () for name in HPARAM_NAMES})
    return config


def add_level_search(config: ml_collections.ConfigDict, smoke: bool) -> ml_collections.ConfigDict:
    """One Optuna study per difficulty level over lr, weight decay and warmup (the modmod_hpo
    space), for the experiments that search per level (calibrate, enhance); keeps `experiment`."""
    experiment = config.experiment
    add_study(config)
    config.experiment = experiment
    config.calibrate.search = "optuna"
    config.search.update(
        learning_rate=("float", 3e-4, 1e-2, True),
        weight_decay=("float", 1e-3, 1.0, True),
        warmup_steps=("float", 0.0, 300.0),
    )
    config.study.update(n_trials=8, batch_trials=4, n_startup_trials=4, pruner="none")
    if smoke:
        config.study.update(n_trials=2, batch_trials=2, n_startup_trials=2)
        config.search.warmup_steps = ()
    return config


@dataclasses.dataclass(frozen=True)
class Param:
    """One searched parameter: where it goes (hparams or model) and its distribution."""

    name: str
    kind: str
    low: Any = None
    high: Any = None
    log: bool = False
    choices: tuple = ()

    @property
    def target(self) -> str:
        return "hparams" if self.name in HPARAM_NAMES else "model"

    def suggest(self, trial) -> Any:
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.kind == "int":
            return trial.suggest_int(self.name, self.low, self.high, log=self.log)
        return trial.suggest_categorical(self.name, self.choices)

    def contains(self, value: Any) -> bool:
        if self.kind == "categorical":
            return value in self.choices
        return self.low <= value <= self.high


def _param(path: str, name: str, entry: tuple) -> Param:
    kind, *rest = entry
    if kind not in KINDS:
        raise ConfigError(f"{path}: got kind {kind!r}; allowed: {', '.join(KINDS)} (or () for not searched)")
    if kind == "categorical":
        if not rest:
            raise ConfigError(f"{path}: got no choices; allowed: ('categorical', a, b, ...)")
        return Param(name, kind, choices=tuple(rest))
    if len(rest) not in (2, 3) or (len(rest) == 3 and not isinstance(rest[2], bool)):
        raise ConfigError(
            f"{path}: got {entry!r}; allowed: ({kind!r}, low, high) or ({kind!r}, low, high, log)"
        )
    low, high, log = (*rest, False)[:3]
    number = Int() if kind == "int" else Float()
    number(f"{path} low", low)
    number(f"{path} high", high)
    if not low < high:
        raise ConfigError(f"{path}: got low {low!r} >= high {high!r}; allowed: low < high")
    if log and low <= 0:
        raise ConfigError(f"{path}: got low {low!r} with log=True; allowed: low > 0 on a log scale")
    return Param(name, kind, low, high, log)


def parse_space(search: Any) -> list[Param]:
    """The searched parameters of `config.search`, in a fixed order (entries () are skipped)."""
    space = []
    for name in sorted(search):
        entry, path = search[name], f"config.search.{name}"
        if name not in HPARAM_NAMES and name not in MODEL_FIELDS:
            raise ConfigError(
                f"{path}: unknown parameter; allowed: hyperparameters ({', '.join(HPARAM_NAMES)}) "
                f"or model fields ({', '.join(MODEL_FIELDS)})"
            )
        if not isinstance(entry, (tuple, list)):
            raise ConfigError(f"{path}: got {entry!r}; allowed: a tuple (kind, low, high, log) or ()")
        if len(entry):
            space.append(_param(path, name, tuple(entry)))
    return space


class SearchSpace:
    """Schema checker of the `search` section (its names vary by config)."""

    def __call__(self, path: str, value: Any) -> None:
        if not hasattr(value, "keys"):
            raise ConfigError(f"{path}: got {value!r}; allowed: a section of name = (kind, low, high, log)")
        parse_space(value)


def suggest(trial, space: list[Param]) -> tuple[dict[str, float], dict[str, Any]]:
    """(hparam values, model field values) of one trial; repeated calls return the same values."""
    hparams, model = {}, {}
    for param in space:
        value = param.suggest(trial)
        if param.target == "hparams":
            hparams[param.name] = float(value)
        else:
            model[param.name] = value
    return hparams, model


def baseline_params(config: Any, space: list[Param]) -> dict[str, Any]:
    """The config's own values of the searched parameters (the enqueued baseline trial)."""
    return {p.name: config[p.target][p.name] for p in space}


def check_search(config: Any, rules: dict) -> list[tuple[str, Any]]:
    """Check `config.search` and `config.study` together; return one (model field, choice) per
    shape-changing choice, for the caller to build each one's bucket (`Bucket.with_model`)."""
    study, space = config.study, parse_space(config.search)
    if not storage_ok(study.storage):
        raise ConfigError(
            f"config.study.storage: got {study.storage!r}; allowed: '' (study.db in the workdir), "
            "'journal' (study.log there), an RDB URL, or a path ending in .db or .log"
        )
    if "://" in study.storage:
        check_url(study.storage)
    check_storage_location(study.storage)
    if not space:
        raise ConfigError("config.search: nothing is searched; allowed: at least one (kind, low, high) entry")
    if study.sampler == "gp" and importlib.util.find_spec("torch") is None:
        raise ConfigError(
            "config.study.sampler: got 'gp', which needs torch (pip install torch); "
            "allowed: tpe, random, qmc, nsga2"
        )
    if study.objective == "multi" and study.pruner != "none":
        raise ConfigError(
            f"config.study.pruner: got {study.pruner!r}; Optuna cannot prune multi-objective "
            "studies; allowed: none"
        )
    for name, grid in config.sweep.hparams.items():
        if len(grid):
            raise ConfigError(
                f"config.sweep.hparams.{name}: got {grid!r}; the hpo experiment searches "
                "config.search; allowed: ()"
            )
    if config.sweep.buckets:
        raise ConfigError(
            "config.sweep.buckets: the hpo experiment makes its buckets from config.search; allowed: ()"
        )
    variants = []
    for param in space:
        rule, path = rules[param.target][param.name], f"config.search.{param.name}"
        if param.kind == "float" and param.target == "model":
            raise ConfigError(f"{path}: a model field; allowed kinds: int, categorical")
        values = param.choices if param.kind == "categorical" else (param.low, param.high)
        if param.kind == "int" and param.target == "model":
            if param.high - param.low > 256:
                raise ConfigError(
                    f"{path}: got a range of {param.high - param.low + 1} sizes; "
                    "allowed: up to 257 (or categorical)"
                )
            values = tuple(range(param.low, param.high + 1))  # every size must build a model
        for value in values:
            rule(f"{path} value", value)
        if study.baseline and not param.contains(config[param.target][param.name]):
            raise ConfigError(
                f"{path}: the baseline value config.{param.target}.{param.name} = "
                f"{config[param.target][param.name]!r} is outside the searched range; allowed: a range "
                "that contains it, or config.study.baseline=False"
            )
        if param.target == "model":
            variants += [(param.name, value) for value in values]
    return variants

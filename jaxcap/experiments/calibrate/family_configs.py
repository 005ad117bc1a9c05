"""Config of the `calibrate` experiment: its section, declared once (`CalibrateSettings`), and one
population config per family, validated into the plans the experiment trains (`check`).

A family entry is data: its task, `levels` (one task field and its candidate values: a
per-member knob is swept inside one program, any other field becomes one bucket per value) and
bucket-style `overrides`; model, hparams, train and seeds come from the top-level config. The
level search (`SEARCHES[config.calibrate.search]`: "grid" or "optuna") is the seam for
hyperparameter optimisation.

Details: docs/design.md#jaxcapexperimentscalibratefamily_configspy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_collections

from jaxcap import tasks
from jaxcap.config import base as config_lib
from jaxcap.config.plan import Plan, parse_overrides, variant_configs
from jaxcap.experiments.hpo.search_space import add_study
from jaxcap.experiments.population_experiment import identity, population_experiment
from jaxcap.fields import Choice, ConfigError, Str, TupleOf, from_section, setting, subsection
from jaxcap.meta.design import Design
from jaxcap.meta.difficulty import covariate
from jaxcap.meta.fit import NutsSettings
from jaxcap.meta.validation import ValidationSettings
from jaxcap.results.store import Store


def grid_search(plan: Plan, store: Store) -> None:
    """Train every member of the family's grid (resumable), print its per-level table, report."""
    population_experiment(plan, store)


def optuna_search(plan: Plan, store: Store) -> None:
    """One Optuna study per level (resumable), then best_trials.jsonl and the HPO report."""
    from jaxcap.experiments.hpo.sweep import hpo_experiment  # imports optuna: only when asked for

    hpo_experiment(plan, store)


SEARCHES: dict[str, Callable[[Plan, Store], None]] = {
    "grid": grid_search,
    "optuna": optuna_search,
}
ENTRY_FIELDS = ("task", "levels", "overrides")


def family_config(top: ml_collections.ConfigDict, name: str, entry) -> ml_collections.ConfigDict:
    """The population config of one family: the top-level model/hparams/train/sweep, its task."""
    path = f"config.calibrate.families.{name}"
    for key in entry:
        if key not in ENTRY_FIELDS:
            raise ConfigError(f"{path}.{key}: unknown field; fields of {path}: {', '.join(ENTRY_FIELDS)}")
    task_name = entry.get("task", {}).get("name")
    if task_name not in tasks.TASKS:
        raise ConfigError(f"{path}.task.name: got {task_name!r}; allowed: {', '.join(tasks.TASKS)}")
    levels = dict(entry.get("levels", {}))
    if len(levels) != 1 or not all(isinstance(v, (tuple, list)) and v for v in levels.values()):
        raise ConfigError(f"{path}.levels: got {levels!r}; allowed: one task field with a tuple of values")
    shared = {section: top[section].to_dict() for section in ("model", "hparams", "train", "runtime")}
    c = config_lib.derived_config(
        config_lib.base_config(task_name),
        {
            **shared,
            "eval.batch_size": top.eval.batch_size,  # the thresholds stay the family's own
            "seed": top.seed,
            "note": f"calibrate family {name}",
            "sweep.seeds": top.sweep.seeds,
            "sweep.hparams": top.sweep.hparams.to_dict(),
        },
    )
    for key, value in entry["task"].items():
        if key not in c.task:
            raise ConfigError(f"{path}.task.{key}: not a field of task {task_name}")
        try:
            c.task[key] = value
        except TypeError:
            raise ConfigError(
                f"{path}.task.{key}: got {value!r}; allowed: a {type(c.task[key]).__name__}"
            ) from None
    (field, values), knobs = next(iter(levels.items())), tasks.TASKS[task_name]().spec.knobs
    if field not in c.task:
        raise ConfigError(f"{path}.levels.{field}: not a field of task {task_name}")
    static = [f"task.{field}={v}" for v in values] if field not in knobs else [""]
    if field in knobs:  # the task's own value is a level too (it sizes shared heads and buffers)
        c.task[field], c.sweep.task[field] = values[0], tuple(values)
    buckets = [",".join(filter(None, (arch, lv))) for arch in top.calibrate.architectures for lv in static]
    c.sweep.buckets = tuple(buckets) if len(buckets) > 1 or buckets[0] else ()
    for keys, value in parse_overrides(entry.get("overrides", "")):
        node = c
        for part in keys[:-1]:
            node = node[part]
        if keys[-1] not in node:
            raise ConfigError(f"{path}.overrides: {'.'.join(keys)} is not a config field")
        node[keys[-1]] = float(value) if isinstance(node[keys[-1]], float) else value
    return c


@dataclasses.dataclass(frozen=True)
class Families:
    """Checker of config.calibrate.families: each entry builds a valid population config."""

    def __call__(self, path: str, value) -> None:
        if not hasattr(value, "keys") or not len(value):
            raise ConfigError(f"{path}: got {value!r}; allowed: a section name -> dict(task=..., levels=...)")


@dataclasses.dataclass(frozen=True)
class CapacityWorkdir:
    """Checker of config.calibrate.capacity_workdir: "" or a capacity run's workdir."""

    def __call__(self, path: str, value) -> None:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: got {value!r}; allowed: '' or a capacity run's workdir")
        if value and not (Path(value) / "capacity.jsonl").is_file():
            raise ConfigError(
                f"{path}: got {value!r}, which holds no capacity.jsonl; allowed: '' or the workdir "
                "of a finished `python -m jaxcap.launch --config configs/capacity.py...` run"
            )


@dataclasses.dataclass(frozen=True)
class CalibrateSettings:
    """config.calibrate: each `setting` is a field's default and rule (nested sections: their own
    dataclasses'), and the config section and its schema are generated from them."""

    families: Any = setting(None, Families())  # name -> dict(task=..., levels=..., overrides=...)
    architectures: tuple[str, ...] = setting(("",), TupleOf(Str()))  # bucket-style; "" is config.model
    workdirs: tuple[str, ...] = setting((), TupleOf(Str()))  # finished workdirs whose rows join the table
    search: str = setting("grid", Choice(tuple(SEARCHES)))
    reference: str = setting("random_labels", Str())  # the family whose theta is fixed to 1
    # a capacity run of the same architecture: C in bits at saturation
    capacity_workdir: str = setting("", CapacityWorkdir())
    nuts: NutsSettings = subsection(NutsSettings)
    validation: ValidationSettings = subsection(ValidationSettings)
    design: Design = subsection(Design)


@dataclasses.dataclass(frozen=True)
class FamilyRun:
    """One training pass of a family: its sub-workdir, its checked plan and its config.json."""

    part: str  # '' or the bucket's sub-workdir b<i> (an Optuna search per bucket)
    plan: Plan
    record: dict  # what config.json records: `identity` of the family's derived config


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The calibrate (and enhance) experiment's checked section, `plan.section`."""

    settings: CalibrateSettings
    families: dict[str, list[FamilyRun]]  # every family's runs at its listed levels
    config: ml_collections.ConfigDict  # the validated top-level config (see the module docstring)

    def runs(self, name: str, values: list) -> list[FamilyRun]:
        """A family's runs at the level `values` a design pass chose."""
        return family_configs(self.config, {name: values})[name]

    def candidate_bits(self, name: str) -> tuple[list, list[float]]:
        return candidate_bits(self.config, name)


def check(config: ml_collections.ConfigDict, plan: Plan | None = None) -> Calibration:
    """The calibrate experiment's registry check: every family validates; its `Calibration`."""
    settings = from_section(CalibrateSettings, config.calibrate)
    settings = dataclasses.replace(settings, families=config.calibrate.families.to_dict())
    return Calibration(settings, family_configs(config), config)


def study_configs(top: ml_collections.ConfigDict, derived: ml_collections.ConfigDict) -> list:
    """(sub-workdir, hpo config) per bucket of a family's population config: the top-level
    `study` and `search` sections, one study per knob level, no hparam grid (Optuna chooses)."""
    variants = variant_configs(derived)
    out = []
    for i, (_, variant) in enumerate(variants):
        add_study(variant)
        variant.sweep.buckets = ()
        for name in variant.sweep.hparams:
            variant.sweep.hparams[name] = ()
        variant.study, variant.search = top.study.to_dict(), top.search.to_dict()
        out.append((f"b{i}" if len(variants) > 1 else "", variant))
    return out


def family_configs(
    config: ml_collections.ConfigDict, levels: dict[str, tuple] | None = None
) -> dict[str, list[FamilyRun]]:
    """Every family's runs to train, each validated and checked as a run of its own (one-line
    errors name the field): its population config, or with search='optuna' one hpo config per
    bucket. `levels[name]`, when given, replaces the family's level values (one design pass)."""
    if config.calibrate.search == "optuna" and ("study" not in config or "search" not in config):
        raise ConfigError(
            "config.study: missing; config.calibrate.search='optuna' needs the study and search "
            "sections (configs/calibrate.py:hpo adds them)"
        )
    out = {}
    for name, entry in config.calibrate.families.items():
        if levels is not None and name not in levels:
            continue
        try:
            if levels is not None:
                field = next(iter(entry["levels"]))
                entry = {**entry, "levels": {field: tuple(levels[name])}}
            derived = family_config(config, name, entry)
            runs = [("", derived)] if config.calibrate.search == "grid" else study_configs(config, derived)
            runs = [FamilyRun(part, config_lib.build_plan(run), identity(run)) for part, run in runs]
        except ConfigError as e:
            message = str(e)
            raise ConfigError(
                message
                if message.startswith("config.calibrate")
                else f"config.calibrate.families.{name}: {e}"
            ) from None
        out[name] = runs
    return out


def candidate_bits(config: ml_collections.ConfigDict, name: str) -> tuple[list, list[float]]:
    """A family's candidate level values and each one's difficulty covariate (as the table will
    compute it from the rows of that level: jaxcap/meta/difficulty.py)."""
    entry = config.calibrate.families[name]
    field, values = next(iter(dict(entry["levels"]).items()))
    derived = family_config(config, name, entry)
    out = []
    for v in values:
        cfg = {**derived.task.to_dict(), field: v}
        task = tasks.build(cfg)
        knobs = {k: cfg[k] for k in task.spec.knobs}
        fields = {**dataclasses.asdict(task), **knobs}
        out.append(covariate(task.spec.family, fields, task.complexity_bits(knobs))[1])
    return list(values), out

"""A task family as one typed object, parsed once: the calibrate, pilot and enhance experiments'
unit of work, and what a user's own task travels as.

A family entry of a config (`config.calibrate.families.<name>`, `config.pilot.family`) is data:
its task, `levels` (one task field and its candidate values) and bucket-style `overrides`; the
model, hparams, train, eval and seeds come from the config that holds it. `parse_family` builds
it once, checking every candidate level and architecture as a run of its own (one-line errors
name the field), into a `Family`: its buckets at the full candidate list, its typed grid and
settings, the level field and values. A design round's runs (some values, a seed count, one
architecture) then derive from those buckets (`Family.runs`), never from a copied config, and
the config.json a family workdir records is written from the typed parts (`Family.record`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import ml_collections

from jaxcap import tasks
from jaxcap.config.base import base_config, build_plan, derived_config, recorded_config
from jaxcap.config.plan import Bucket, Grid, Plan, parse_overrides, split_levels
from jaxcap.core.runtime import Runtime
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import ConfigError, from_section, kind_of, to_section

ENTRY_FIELDS = ("task", "levels", "overrides")
SEARCHES = ("grid", "optuna")  # the level search: one population per pass, or an Optuna study per level


@dataclasses.dataclass(frozen=True)
class FamilyRun:
    """One training pass of a family: its sub-workdir, its plan and its config.json."""

    part: str  # '' or the bucket's sub-workdir b<i> (an Optuna search per bucket)
    plan: Plan
    record: dict  # what config.json records


@dataclasses.dataclass(frozen=True)
class Family:
    """A task family, typed: every candidate level and architecture built and checked once."""

    name: str
    field: str  # the level field (a per-member knob: one program for all levels; else a bucket each)
    values: tuple  # its candidate values
    task: Mapping[str, Any]  # the task section as configured (name + fields, overrides applied)
    model: Mapping[str, Any]  # the config.model section as configured (what config.json records)
    grid: Grid  # hparams, hparam grid, the knob grid without the level field, seeds
    settings: TrainSettings
    eval: EvalSettings
    seed: int
    runtime: Runtime
    architectures: tuple[str, ...]  # bucket-style overrides; '' is config.model
    buckets: tuple[Bucket, ...]  # architecture x static level at every candidate, label order
    search: str = "grid"
    study: Mapping[str, Any] | None = None  # config.study and config.search (search = "optuna")
    bits: tuple[float, ...] = ()  # each candidate's difficulty covariate (set by the experiment)

    @property
    def knob(self) -> bool:
        return self.field in self.buckets[0].task.spec.knobs

    @property
    def note(self) -> str:
        return f"calibrate family {self.name}"

    def labels(self, values, architectures) -> list[str]:
        """The bucket labels of a pass: architecture x static level, as config.sweep.buckets."""
        static = [""] if self.knob else [f"task.{self.field}={v}" for v in values]
        return [",".join(filter(None, (arch, lv))) for arch in architectures for lv in static]

    def level_buckets(
        self, values, seeds: int | None = None, architectures=None, levels: int = 0
    ) -> list[Bucket]:
        """The buckets of a pass over level `values` (in order) with `seeds` seeds a level, on
        `architectures` (each one of the family's), derived from the parsed buckets: a static
        level's bucket as parsed; a knob family's on the task every candidate sizes, so that all
        its passes share programs, split into populations of `levels` levels (0: one a pass)."""
        archs = self.architectures if architectures is None else tuple(architectures)
        out = []
        for a in archs:
            if a not in self.architectures:
                raise ConfigError(
                    f"config.calibrate.architectures: got {a!r}; allowed: one of {self.architectures}"
                )
            first, labels = self.architectures.index(a), self.labels(values, (a,))
            if self.knob:
                whole = self.buckets[first].with_knobs(**{self.field: tuple(values)})
                out += [(b, labels[0]) for b in split_levels(whole, levels)]
            else:
                at = [self.buckets[first * len(self.values) + self.values.index(v)] for v in values]
                out += list(zip(at, labels))
        if seeds is not None:
            out = [(b.with_seeds(seeds), label) for b, label in out]
        return [dataclasses.replace(b, name=f"b{i}", label=label) for i, (b, label) in enumerate(out)]

    def record(self, values, seeds: int | None = None, architectures=None, levels: int = 0) -> dict:
        """config.json of a grid pass: the family's config with the pass's levels and seeds (a
        knob family's task with the sizes every candidate sets, as its buckets have them)."""
        archs = self.architectures if architectures is None else tuple(architectures)
        labels = self.labels(values, archs)
        task, knob_grid = dict(self.task), dict(self.grid.knob_grid)
        if self.knob:
            built = self.buckets[0].task
            sizes = {k: getattr(built, k) for k in task if k.startswith("max_") and k != self.field}
            task, knob_grid[self.field] = {**task, **sizes}, tuple(values)
        return {
            "eval": to_section(self.eval),
            "experiment": "population",
            "hparams": dict(self.grid.hparams),
            "model": dict(self.model),
            "note": self.note,
            "seed": self.seed,
            "sweep": {
                "buckets": tuple(labels) if len(labels) > 1 or labels[0] else (),
                "hparams": dict(self.grid.hparam_grid),
                "levels_per_population": levels if self.knob else 0,
                "seeds": self.grid.seeds if seeds is None else seeds,
                "task": knob_grid,
            },
            "task": task,
            "train": to_section(self.settings),
        }

    def runs(
        self, values=None, seeds: int | None = None, architectures=None, levels: int = 0
    ) -> list[FamilyRun]:
        """The runs of a pass (default: every candidate, the config's seeds and architectures):
        one population per `levels` levels (grid search; 0: one), or one Optuna study per bucket."""
        values = self.values if values is None else tuple(values)
        levels = levels if self.search == "grid" else 0
        record = self.record(values, seeds, architectures, levels)
        buckets = self.level_buckets(values, seeds, architectures, levels)
        if self.search == "grid":
            return [FamilyRun("", Plan("population", self.seed, tuple(buckets), self.runtime), record)]
        out = []
        for i, bucket in enumerate(buckets):
            study = study_record(record, bucket.label, self.study)
            config = recorded_config({**study, "runtime": to_section(self.runtime)})
            out.append(FamilyRun(f"b{i}" if len(buckets) > 1 else "", build_plan(config), study))
        return out


def study_record(record: dict, label: str, study: Mapping[str, Any]) -> dict:
    """config.json of one bucket's Optuna search: its overrides applied, no bucket list, no hparam
    grid (Optuna chooses), the config's study and search sections."""
    out = {**record, "experiment": "hpo", "task": dict(record["task"]), "model": dict(record["model"])}
    for (section, name), value in ((tuple(p), v) for p, v in parse_overrides(label)):
        old = out[section][name]
        out[section][name] = float(value) if isinstance(old, float) and isinstance(value, int) else value
    sweep = record["sweep"]
    out["sweep"] = {**sweep, "buckets": (), "hparams": {k: () for k in sweep["hparams"]}}
    return {**out, "study": dict(study["study"]), "search": dict(study["search"])}


def family_config(
    top: ml_collections.ConfigDict, name: str, entry, architectures
) -> ml_collections.ConfigDict:
    """The population config of one family on `architectures`: the top-level model, hparams,
    train and sweep, its task and levels, its overrides."""
    path = f"config.calibrate.families.{name}"
    for key in entry:
        if key not in ENTRY_FIELDS:
            raise ConfigError(f"{path}.{key}: unknown field; fields of {path}: {', '.join(ENTRY_FIELDS)}")
    task_name = entry.get("task", {}).get("name")
    try:  # a built-in name, "package.module:Class" or "path/to/file.py:Class" (jaxcap.tasks.loader)
        cls = tasks.task_class(task_name)
    except ConfigError as e:
        raise ConfigError(f"{path}.task.name: {str(e).removeprefix('config.task.name: ')}") from None
    levels = dict(entry.get("levels", {}))
    if len(levels) != 1 or not all(isinstance(v, (tuple, list)) and v for v in levels.values()):
        raise ConfigError(f"{path}.levels: got {levels!r}; allowed: one task field with a tuple of values")
    shared = {section: top[section].to_dict() for section in ("model", "hparams", "train", "runtime")}
    c = derived_config(
        base_config(task_name),
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
            raise ConfigError(f"{path}.task.{key}: got {value!r}; allowed: {kind_of(c.task[key])}") from None
    (field, values), knobs = next(iter(levels.items())), cls().spec.knobs
    if field not in c.task:
        raise ConfigError(f"{path}.levels.{field}: not a field of task {task_name}")
    _check_types(f"{path}.levels.{field}", c.task[field], values, f"task {task_name}'s field {field}")
    static = [f"task.{field}={v}" for v in values] if field not in knobs else [""]
    if field in knobs:  # the task's own value is a level too (it sizes shared heads and buffers)
        c.task[field], c.sweep.task[field] = values[0], tuple(values)
    buckets = [",".join(filter(None, (arch, lv))) for arch in architectures for lv in static]
    c.sweep.buckets = tuple(buckets) if len(buckets) > 1 or buckets[0] else ()
    for keys, value in parse_overrides(entry.get("overrides", "")):
        node = c
        for part in keys[:-1]:
            node = node[part]
        if keys[-1] not in node:
            raise ConfigError(f"{path}.overrides: {'.'.join(keys)} is not a config field")
        node[keys[-1]] = float(value) if isinstance(node[keys[-1]], float) else value
    return c


def _check_types(path: str, like, values, what: str) -> None:
    """Each level value of the type the task's field holds, as ml_collections casts them (an
    integer level of a float field is allowed), else one line naming the value."""
    probe = ml_collections.ConfigDict({"value": like})
    for i, value in enumerate(values):
        try:
            probe.value = value
        except TypeError:
            raise ConfigError(
                f"{path}[{i}]: got {value!r}; allowed: {kind_of(like)}, the type of {what}"
            ) from None


def parse_family(top: ml_collections.ConfigDict, name: str, entry) -> Family:
    """The `Family` of `top`'s family entry `entry` (its calibrate section names the
    architectures and the search), every candidate level and architecture checked as a run of
    its own: one ConfigError line naming `config.calibrate.families.<name>...` otherwise."""
    search, architectures = top.calibrate.search, tuple(top.calibrate.architectures)
    if search == "optuna" and ("study" not in top or "search" not in top):
        raise ConfigError(
            "config.study: missing; config.calibrate.search='optuna' needs the study and search "
            "sections (configs/calibrate.py:hpo adds them)"
        )
    try:
        c = family_config(top, name, entry, architectures)
        field, values = next(iter(dict(entry["levels"]).items()))
        knob_grid = c.sweep.task.to_dict()
        family = Family(
            name=name,
            field=field,
            values=tuple(values),
            task=c.task.to_dict(),
            model=c.model.to_dict(),
            grid=Grid(c.hparams.to_dict(), c.sweep.hparams.to_dict(), knob_grid, c.sweep.seeds),
            settings=_settings(c),
            eval=from_section(EvalSettings, c.eval),
            seed=c.seed,
            runtime=from_section(Runtime, c.runtime),
            architectures=architectures,
            buckets=build_plan(c).buckets,
            search=search,
            study=_study(top) if search == "optuna" else None,
        )
        if search == "optuna":
            family.runs()  # every bucket's study builds (its search space against its model)
    except ConfigError as e:
        message = str(e)
        prefix = "" if message.startswith("config.calibrate") else f"config.calibrate.families.{name}: "
        raise ConfigError(prefix + message) from None
    return family


def _settings(c: ml_collections.ConfigDict) -> TrainSettings:
    """The family's training settings as its config.train section holds them (a bucket's own
    add what its members need: dropout)."""
    eval_ = c.eval
    return from_section(TrainSettings, c.train, eval_batch_size=eval_.batch_size, eval_share=eval_.time_share)


def _study(top: ml_collections.ConfigDict) -> dict:
    return {"study": top.study.to_dict(), "search": top.search.to_dict()}

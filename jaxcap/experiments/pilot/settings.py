"""The `pilot` experiment's config section (`PilotSettings`) and its check: a new task family,
validated against the calibrated posterior it will join, before anything trains.

The family is data, exactly like one entry of `config.calibrate.families`
(jaxcap/experiments/calibrate/settings.py):

    pilot.family = dict(task=dict(name="binop", operation="add", train_fraction=0.9),
                        levels=dict(p=(3, 5, 7, 11, 17)), overrides="")

Its pilot runs are calibrate's family runs built from the posterior workdir's own config.json
(model, train, hparams, sweep, search), so a pilot trains what the posterior was fitted on;
`pilot.arch` names the fitted architecture, matched field by field against the posterior's.
With `pilot.posterior = ""` the pilot config is itself a calibrate config (configs/pilot.py)
whose fit the experiment runs first, into <workdir>/base. Errors name `config.pilot.*` fields.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import ml_collections

from jaxcap import tasks
from jaxcap.config.base import nested_run, recorded_config
from jaxcap.config.family import Family, FamilyRun, family_config, parse_family
from jaxcap.config.plan import Plan
from jaxcap.experiments.families import level_fields, with_bits
from jaxcap.fields import ConfigError, Float, Int, Str, TupleOf, from_section, setting
from jaxcap.meta.data import FAMILY_FIELDS, is_level_field
from jaxcap.meta.posterior import read_meta
from jaxcap.meta.records import PosteriorMeta
from jaxcap.results.store import clean

KEY = "pilot"  # the family's name in the calibrate config its runs derive from
FAMILY = "config.pilot.family"


@dataclasses.dataclass(frozen=True)
class BaseWorkdir:
    """Checker of config.pilot.posterior: '' or a finished calibrate workdir."""

    def __call__(self, path: str, value) -> None:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: got {value!r}; allowed: a calibrate workdir, or ''")
        if value and not all((Path(value) / f).is_file() for f in ("posterior.nc", "config.json")):
            raise ConfigError(
                f"{path}: got {value!r}, which holds no posterior.nc and config.json; allowed: the "
                "workdir of a finished `python -m jaxcap.launch --config configs/calibrate.py` run"
            )


@dataclasses.dataclass(frozen=True)
class FamilyEntry:
    """Checker of config.pilot.family's shape (its contents: `check`)."""

    def __call__(self, path: str, value) -> None:
        if not hasattr(value, "keys") or "task" not in value or "levels" not in value:
            raise ConfigError(
                f"{path}: got {value!r}; allowed: dict(task=dict(name=..., ...), levels={{field: "
                "(values, ...)}}, overrides='')"
            )


@dataclasses.dataclass(frozen=True)
class SeedOptions:
    """Checker of config.pilot.seeds: the seed counts a pilot level may get, at least one."""

    def __call__(self, path: str, value) -> None:
        TupleOf(Int(1, 1000))(path, value)
        if not value:
            raise ConfigError(
                f"{path}: got {tuple(value)!r}; allowed: one or more seed counts, e.g. (1, 2, 4)"
            )


@dataclasses.dataclass(frozen=True)
class PilotSettings:
    """config.pilot: each `setting` is a field's default and its config rule."""

    posterior: str = setting("", BaseWorkdir())  # a calibrate workdir; '': fit the config's calibrate first
    family: Any = setting(None, FamilyEntry())  # dict(task=..., levels=..., overrides=...)
    name: str = setting("", Str())  # the family's name in the table (binop's: binop:<operation>)
    k: int = setting(3, Int(1, 100))  # at most this many pilot levels
    seeds: tuple[int, ...] = setting((1, 2, 4), SeedOptions())  # seed counts a pilot level may get
    stop_factor: float = setting(2.0, Float(1.0))  # stop once b*'s 90 % interval has hi / lo <= this
    arch: str = setting("a0", Str())  # the posterior's fitted architecture the pilots train
    seed: int = setting(0, Int(0))  # of the prior particles, the design and the appended draws


@dataclasses.dataclass(frozen=True)
class PilotPlan:
    """The pilot experiment's checked section (`plan.section`): the new family, parsed once on
    the posterior's recorded model, budget and search (or on this config's own calibration)."""

    settings: PilotSettings
    family: Family  # the new family, every candidate level built and checked, with its covariates
    base: Plan | None  # posterior='': the calibrate run (its plan) fitted first into <workdir>/base
    base_record: dict | None  # that calibration's config.json
    base_dir: Path | None  # the posterior's workdir; None: fit `base` first
    arch: int  # the fitted architecture's index
    level_fields: tuple[dict, ...]  # each candidate's level fields, as the table will record them

    @property
    def field(self) -> str:
        return self.family.field

    @property
    def values(self) -> tuple:
        return self.family.values

    @property
    def bits(self) -> tuple[float, ...]:
        return self.family.bits

    def runs(self, value, seeds: int, architecture: str) -> list[FamilyRun]:
        """The runs of one pilot level with `seeds` seeds on the bucket-style `architecture`."""
        return self.family.runs([value], seeds, (architecture,))

    def architecture(self, meta: PosteriorMeta) -> str:
        """The entry of the base config's calibrate.architectures whose model is the posterior's
        fitted architecture `arch` (ConfigError if none is)."""
        wanted = meta.archs[self.arch]
        for candidate in self.family.architectures:
            [bucket] = self.family.level_buckets(self.values[:1], 1, (candidate,))
            if bucket.model.arch_fields() == wanted:
                return candidate
        raise ConfigError(
            f"config.pilot.arch: got {self.settings.arch!r} ({meta.arch_labels[self.arch]}), which no "
            "entry of the posterior config's calibrate.architectures builds for this family; allowed: a "
            "fitted architecture the family's overrides leave unchanged"
        )

    def check_posterior(self, meta: PosteriorMeta) -> str:
        """The family and architecture against a posterior's labels; the architecture's entry."""
        labels = [f"a{i}" for i in range(len(meta.archs))]
        if self.settings.arch not in labels:
            raise ConfigError(f"config.pilot.arch: got {self.settings.arch!r}; allowed: {', '.join(labels)}")
        _not_fitted(self.settings.name, meta.families)
        return self.architecture(meta)


# what a pilot config keeps its own once config.pilot.posterior names a calibration
OWN_FIELDS = ("pilot", "runtime", "experiment", "note")


def unused_fields(config: ml_collections.ConfigDict) -> tuple[tuple[str, ...], str] | None:
    """With config.pilot.posterior set, the pilots train the model, budget, search and seed that
    calibration recorded (its config.json, `recorded_config_of`): every top-level field but
    OWN_FIELDS is unused, so the launcher refuses a command-line change to one (it would be
    listed in the note as applied and change nothing). (those fields, the reason and what is
    allowed), or None."""
    posterior = config.pilot.get("posterior", "") if "pilot" in config else ""
    if not posterior:
        return None
    why = (
        f"config.pilot.posterior={posterior!r} gives the pilots' model, training, search and seed (that "
        "calibration's config.json), so this config's own value is unused; allowed: changes to "
        "config.pilot and config.runtime, or config.pilot.posterior='' to calibrate this config first"
    )
    return tuple(k for k in config if k not in OWN_FIELDS), why


def recorded_config_of(workdir: Path, runtime) -> ml_collections.ConfigDict:
    """The calibrate config a posterior workdir recorded (config.json), with `runtime`."""
    recorded = json.loads((workdir / "config.json").read_text())
    if "calibrate" not in recorded:
        raise ConfigError(
            f"config.pilot.posterior: got {str(workdir)!r}, whose config.json is a "
            f"{recorded.get('experiment')!r} run; allowed: a calibrate workdir"
        )
    return recorded_config({**recorded, "runtime": runtime.to_dict()})


def posterior_meta(workdir: Path) -> PosteriorMeta:
    """The labels of the posterior in `workdir` (one line if it does not read)."""
    try:
        return read_meta(workdir / "posterior.nc")
    except Exception as e:  # h5py / netCDF / JSON: a damaged or foreign file, said in one line
        raise ConfigError(
            f"config.pilot.posterior: {str(workdir)!r} holds no readable meta-model posterior.nc "
            f"({type(e).__name__}); allowed: a finished calibrate workdir"
        ) from None


def own_base(config) -> tuple[Plan, dict]:
    """posterior='': the calibration this pilot config carries (fitted into <workdir>/base), and
    its config.json."""
    if "calibrate" not in config:
        raise ConfigError(
            "config.pilot.posterior: got ''; allowed: a calibrate workdir, or '' in a config that "
            "carries a config.calibrate section to fit first (configs/pilot.py)"
        )
    return nested_run(config, "calibrate", drop=("pilot",))


def _not_fitted(name: str, fitted: list[str]) -> None:
    if name in fitted:
        raise ConfigError(
            f"config.pilot.name: got {name!r}, which the posterior already fits ({', '.join(fitted)}); "
            "allowed: a family outside the fit"
        )


def _renamed(e: ConfigError) -> str:
    return (
        str(e)
        .replace(f"config.calibrate.families.{KEY}: ", "")
        .replace(f"config.calibrate.families.{KEY}", FAMILY)
    )


def pilot_family(base: ml_collections.ConfigDict, entry: dict) -> Family:
    """The new family parsed on `base` (a calibrate config), every candidate level a valid run
    with a positive covariate (ConfigError naming the first that is not, as config.pilot.family)."""
    try:  # the task, the level field, the fixed fields and the overrides, before any level
        family_config(base, KEY, entry, tuple(base.calibrate.architectures))
    except ConfigError as e:
        raise ConfigError(_renamed(e)) from None
    try:
        family = parse_family(base, KEY, entry)
    except ConfigError as e:
        field, values = next(iter(dict(entry["levels"]).items()))
        for i, value in enumerate(values):  # name the candidate that does not build
            try:
                parse_family(base, KEY, {**entry, "levels": {field: (value,)}})
            except ConfigError as one:
                raise ConfigError(f"{FAMILY}.levels.{field}[{i}]: {value!r}: {_renamed(one)}") from None
        raise ConfigError(_renamed(e)) from None
    family = with_bits(family)
    for i, b in enumerate(family.bits):
        if not b > 0:
            raise ConfigError(
                f"{FAMILY}.levels.{family.field}[{i}]: {family.values[i]!r} has a covariate of {b:g} bits; "
                "allowed: levels of positive difficulty (the meta-model reads log bits)"
            )
    return family


def candidate_fields(family: Family) -> tuple[tuple[dict, ...], str]:
    """(level fields of each candidate as the table will record them, the table's family name)."""
    fields, names = [], set()
    for value in family.values:
        [bucket] = family.level_buckets([value], 1, family.architectures[:1])
        task = level_fields(bucket)  # what a row records
        family_name = bucket.task.spec.family
        level = {k: v for k, v in sorted(task.items()) if is_level_field(family_name, k)}
        # a task from outside jaxcap: its path, as its rows record it (jaxcap.meta.data.level_fields),
        # so the appended family_info rebuilds it with nothing registered
        fields.append(
            level | ({} if tasks.is_builtin(family.task["name"]) else {"task_name": family.task["name"]})
        )
        names.add(":".join([family_name, *(str(task[f]) for f in FAMILY_FIELDS.get(family_name, ()))]))
    return tuple(json.loads(json.dumps(clean(fields)))), names.pop()


def check(config: ml_collections.ConfigDict, plan=None) -> PilotPlan:
    """The pilot experiment's registry check: its `PilotPlan`, or one ConfigError line."""
    settings = from_section(PilotSettings, config.pilot)
    settings = dataclasses.replace(settings, family=config.pilot.family.to_dict())
    base_plan = base_record = None
    if settings.posterior:
        base_dir = Path(settings.posterior).resolve()
        base, meta = recorded_config_of(base_dir, config.runtime), posterior_meta(base_dir)
        fitted, n_archs = meta.families, len(meta.archs)
    else:  # the calibration this config carries: every family checked, fitted first
        base_dir, meta, base = None, None, config
        base_plan, base_record = own_base(config)
        fitted, n_archs = list(base_plan.section.families), len(base_plan.section.settings.architectures)
    labels = [f"a{i}" for i in range(n_archs)]
    if settings.arch not in labels:
        raise ConfigError(f"config.pilot.arch: got {settings.arch!r}; allowed: {', '.join(labels)}")
    _not_fitted(settings.name, fitted)
    family = pilot_family(base, settings.family)
    fields, name = candidate_fields(family)
    if settings.name != name:
        raise ConfigError(
            f"config.pilot.name: got {settings.name!r}; allowed: {name!r}, the name the table gives "
            "this family's runs (the task's family; binop's operation too)"
        )
    plan = PilotPlan(settings, family, base_plan, base_record, base_dir, int(settings.arch[1:]), fields)
    if meta is not None:
        plan.architecture(meta)  # the fitted architecture is one this family's runs build
    return plan

"""The `pilot` experiment's config section (`PilotSettings`) and its check: a new task family,
validated against the calibrated posterior it will join, before anything trains.

The family is data, exactly like one entry of `config.calibrate.families`
(jaxcap/experiments/calibrate/family_configs.py):

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

from jaxcap.config.base import derived_config, recorded_config
from jaxcap.experiments.calibrate.family_configs import (
    FamilyRun,
    candidate_bits,
    family_config,
    family_configs,
)
from jaxcap.experiments.calibrate.family_configs import check as calibrate_check
from jaxcap.fields import ConfigError, Float, Int, Str, TupleOf, from_section, setting
from jaxcap.meta.data import FAMILY_FIELDS, IGNORED_TASK_FIELDS
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
    """The pilot experiment's checked section (`plan.section`)."""

    settings: PilotSettings
    base: ml_collections.ConfigDict  # the calibrate config pilots derive from, with this run's runtime
    base_dir: Path | None  # the posterior's workdir; None: fit `base` first into <workdir>/base
    arch: int  # the fitted architecture's index
    field: str  # the level field
    values: tuple  # its candidate values
    bits: tuple[float, ...]  # each candidate's difficulty covariate
    level_fields: tuple[dict, ...]  # each candidate's level fields, as the table will record them

    def runs(self, value, seeds: int, architecture: str) -> list[FamilyRun]:
        """The runs of one pilot level with `seeds` seeds on the bucket-style `architecture`."""
        config = derived(self.base, self.settings.family, seeds, architecture)
        return family_configs(config, {KEY: [value]})[KEY]

    def architecture(self, meta: PosteriorMeta) -> str:
        """The entry of the base config's calibrate.architectures whose model is the posterior's
        fitted architecture `arch` (ConfigError if none is)."""
        wanted = meta.archs[self.arch]
        for candidate in self.base.calibrate.architectures:
            plan = self.runs(self.values[0], 1, candidate)[0].plan
            if plan.buckets[0].model.arch_fields() == wanted:
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


def derived(base, family: dict, seeds: int, architecture: str | None = None) -> ml_collections.ConfigDict:
    """The calibrate config of the pilot family alone, `seeds` seeds a level."""
    changes = {"calibrate.families": {KEY: family}, "sweep.seeds": seeds}
    if architecture is not None:
        changes["calibrate.architectures"] = (architecture,)
    return derived_config(base, changes)


def recorded_config_of(workdir: Path, runtime) -> ml_collections.ConfigDict:
    """The calibrate config a posterior workdir recorded (config.json), with `runtime`."""
    recorded = json.loads((workdir / "config.json").read_text())
    if "calibrate" not in recorded:
        raise ConfigError(
            f"config.pilot.posterior: got {str(workdir)!r}, whose config.json is a "
            f"{recorded.get('experiment')!r} run; allowed: a calibrate workdir"
        )
    return derived_config(recorded_config(recorded), {"runtime": runtime.to_dict()})


def posterior_meta(workdir: Path) -> PosteriorMeta:
    """The labels of the posterior in `workdir` (one line if it does not read)."""
    try:
        return read_meta(workdir / "posterior.nc")
    except Exception as e:  # h5py / netCDF / JSON: a damaged or foreign file, said in one line
        raise ConfigError(
            f"config.pilot.posterior: {str(workdir)!r} holds no readable meta-model posterior.nc "
            f"({type(e).__name__}); allowed: a finished calibrate workdir"
        ) from None


def own_base(config) -> ml_collections.ConfigDict:
    """posterior='': the calibrate config this pilot config carries (fitted into <workdir>/base)."""
    if "calibrate" not in config:
        raise ConfigError(
            "config.pilot.posterior: got ''; allowed: a calibrate workdir, or '' in a config that "
            "carries a config.calibrate section to fit first (configs/pilot.py)"
        )
    return derived_config(config, {"experiment": "calibrate"}, drop=("pilot",))


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


def candidates(base, family: dict) -> tuple[str, tuple, tuple, tuple, str]:
    """(level field, values, covariate bits, level fields, the table's family name) of a family
    whose every candidate level builds a valid run (ConfigError naming the first that does not)."""
    c = derived(base, family, 1)
    try:
        family_config(c, KEY, c.calibrate.families[KEY])  # task, level field, fixed fields, overrides
    except ConfigError as e:
        raise ConfigError(_renamed(e)) from None
    field, values = next(iter(dict(family["levels"]).items()))
    fields, names = [], set()
    for i, value in enumerate(values):
        try:
            run = family_configs(c, {KEY: [value]})[KEY][0]
        except ConfigError as e:
            raise ConfigError(f"{FAMILY}.levels.{field}[{i}]: {value!r}: {_renamed(e)}") from None
        bucket = run.plan.buckets[0]
        task = {**dataclasses.asdict(bucket.task), **bucket.members[0].knobs}  # what a row records
        fields.append(
            {
                k: v
                for k, v in sorted(task.items())
                if k not in IGNORED_TASK_FIELDS and not k.startswith("max_")
            }
        )
        family_name = bucket.task.spec.family
        names.add(":".join([family_name, *(str(task[f]) for f in FAMILY_FIELDS.get(family_name, ()))]))
    values, bits = candidate_bits(c, KEY)
    for i, b in enumerate(bits):
        if not b > 0:
            raise ConfigError(
                f"{FAMILY}.levels.{field}[{i}]: {values[i]!r} has a covariate of {b:g} bits; allowed: "
                "levels of positive difficulty (the meta-model reads log bits)"
            )
    return field, tuple(values), tuple(bits), tuple(json.loads(json.dumps(clean(fields)))), names.pop()


def check(config: ml_collections.ConfigDict, plan=None) -> PilotPlan:
    """The pilot experiment's registry check: its `PilotPlan`, or one ConfigError line."""
    settings = from_section(PilotSettings, config.pilot)
    settings = dataclasses.replace(settings, family=config.pilot.family.to_dict())
    if settings.posterior:
        base_dir = Path(settings.posterior).resolve()
        base, meta = recorded_config_of(base_dir, config.runtime), posterior_meta(base_dir)
        fitted, n_archs = meta.families, len(meta.archs)
    else:
        base_dir, base, meta = None, own_base(config), None
        calibrate_check(base)  # the calibration it runs first: every family validates
        fitted, n_archs = list(base.calibrate.families), len(base.calibrate.architectures)
    labels = [f"a{i}" for i in range(n_archs)]
    if settings.arch not in labels:
        raise ConfigError(f"config.pilot.arch: got {settings.arch!r}; allowed: {', '.join(labels)}")
    _not_fitted(settings.name, fitted)
    field, values, bits, fields, name = candidates(base, settings.family)
    if settings.name != name:
        raise ConfigError(
            f"config.pilot.name: got {settings.name!r}; allowed: {name!r}, the name the table gives "
            "this family's runs (the task's family; binop's operation too)"
        )
    plan = PilotPlan(settings, base, base_dir, int(settings.arch[1:]), field, values, bits, fields)
    if meta is not None:
        plan.architecture(meta)  # the fitted architecture is one this family's runs build
    return plan

"""The `calibrate` experiment's config section, declared once (`CalibrateSettings`), and its
registry check: every family entry parsed into a typed `Family` (jaxcap/config/family.py), with
its candidates' difficulty covariates, into the `Calibration` the experiment is handed.

A family entry is data: its task, `levels` (one task field and its candidate values: a
per-member knob is swept inside one program, any other field becomes one bucket per value) and
bucket-style `overrides`; model, hparams, train and seeds come from the top-level config. The
level search (`config.calibrate.search`: "grid" or "optuna") is the seam for hyperparameter
optimisation. The enhance experiment is a calibrate run (its check returns a `Calibration`) and
the pilot parses its new family with `parse_family` too: a change here reaches both.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import ml_collections

from jaxcap.config.family import SEARCHES, Family, parse_family
from jaxcap.experiments.families import with_bits
from jaxcap.fields import Choice, ConfigError, Str, TupleOf, from_section, setting, subsection
from jaxcap.meta.data import read_rows
from jaxcap.meta.design import Design
from jaxcap.meta.fit import NutsSettings
from jaxcap.meta.validate import ValidationSettings
from jaxcap.results.lock import WorkdirError


@dataclasses.dataclass(frozen=True)
class Families:
    """Checker of config.calibrate.families' shape (each entry: `parse_family`)."""

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
class FinishedWorkdir:
    """Checker of each of config.calibrate.workdirs: its rows read as the table will read them
    (jaxcap.results.told), so a study storage out of reach is one line before anything trains."""

    def __call__(self, path: str, value) -> None:
        Str()(path, value)
        try:
            read_rows(value)
        except WorkdirError as e:
            raise ConfigError(f"{path}: {e}") from None


@dataclasses.dataclass(frozen=True)
class CalibrateSettings:
    """config.calibrate: each `setting` is a field's default and rule (nested sections: their own
    dataclasses'), and the config section and its schema are generated from them."""

    families: Any = setting(None, Families())  # name -> dict(task=..., levels=..., overrides=...)
    architectures: tuple[str, ...] = setting(("",), TupleOf(Str()))  # bucket-style; "" is config.model
    workdirs: tuple[str, ...] = setting((), TupleOf(FinishedWorkdir()))  # whose rows join the table
    search: str = setting("grid", Choice(SEARCHES))
    reference: str = setting("random_labels", Str())  # the family whose theta is fixed to 1
    # a capacity run of the same architecture: C in bits at saturation
    capacity_workdir: str = setting("", CapacityWorkdir())
    nuts: NutsSettings = subsection(NutsSettings)
    validation: ValidationSettings = subsection(ValidationSettings)
    design: Design = subsection(Design)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The calibrate (and enhance) experiment's checked section, `plan.section`: its settings and
    every family, typed; a design pass's runs are `families[name].runs(values)`."""

    settings: CalibrateSettings
    families: dict[str, Family]


def parse_families(config: ml_collections.ConfigDict) -> dict[str, Family]:
    """Every family of `config.calibrate.families`, parsed and checked, with its covariates."""
    return {
        name: with_bits(parse_family(config, name, entry))
        for name, entry in config.calibrate.families.items()
    }


def check(config: ml_collections.ConfigDict, plan=None) -> Calibration:
    """The calibrate experiment's registry check: every family parsed; its `Calibration`."""
    settings = from_section(CalibrateSettings, config.calibrate)
    settings = dataclasses.replace(settings, families=config.calibrate.families.to_dict())
    return Calibration(settings, parse_families(config))

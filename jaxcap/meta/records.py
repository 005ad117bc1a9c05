"""The posterior's metadata records: what a fitted posterior knows about its table and its fit
(the JSON `jaxcap` attribute of posterior.nc), and the fit diagnostics every NUTS fit reports.

The metadata was a dict read by key in many modules; a renamed key broke a reader at the end of
a run. It is now a frozen record (cf. jaxcap/results/records.py) with typed parts, one reader
`from_json` and one writer `to_json`; everything else reads attributes. The JSON is unchanged:
`to_json` writes the keys in the order the dicts had (optional ones, unset, are left out, as
they were), so posterior.nc's bytes are too; `from_json` reads what earlier versions wrote and
keeps keys it does not know in `extra`, written back as they were.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]


def read_fields(cls, data: Mapping[str, Any], **parsed: Any):
    """`cls` from `data`: its own fields (parsed ones replaced), the other keys in `extra`."""
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    given = {k: v for k, v in data.items() if k in names}
    extra = {k: v for k, v in data.items() if k not in names}
    return cls(**{**given, **{k: v for k, v in parsed.items() if k in given}}, extra=extra)


def write_fields(record, keep_none: bool | tuple[str, ...] = False, **written: Any) -> Json:
    """The record's JSON in field order (parts replaced by `written`); None fields are left out
    (they were absent keys) unless `keep_none` (True: every field; a tuple: those fields)."""
    out = {}
    for f in dataclasses.fields(record):
        value = written.get(f.name, getattr(record, f.name))
        kept = keep_none is True or (isinstance(keep_none, tuple) and f.name in keep_none)
        if f.name != "extra" and (kept or value is not None):
            out[f.name] = value
    return {**out, **getattr(record, "extra", {})}


@dataclasses.dataclass(frozen=True)
class LevelInfo:
    """One level of the fit: its family, difficulty (nominal bits and the model's covariate),
    task fields and label; `design` says how it was chosen (grid, boundary or pilot)."""

    family: int
    complexity_bits: float | None = None
    bits: float | None = None  # the model's difficulty covariate (jaxcap/meta/difficulty.py)
    covariate: str | None = None  # its name; None: a level from before covariates (complexity_bits)
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    label: str | None = None
    design: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LevelInfo:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        return write_fields(self)


@dataclasses.dataclass(frozen=True)
class FamilyInfo:
    """What predict needs to query a family by level value (jaxcap/meta/difficulty.family_info):
    its task, level field and fixed fields, and the covariate range the task can reach."""

    task: str | None = None
    field: str | None = None
    fixed: dict[str, Any] = dataclasses.field(default_factory=dict)
    bits_range: list[float] | None = None
    values_range: list[int] | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FamilyInfo:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        return write_fields(self, keep_none=True)  # an unqueryable family's ranges are written as null


@dataclasses.dataclass(frozen=True)
class NutsRecord:
    """The sampler settings of the fit (jaxcap.meta.fit.NutsSettings) and how chains ran."""

    warmup: int
    samples: int
    chains: int
    target_accept: float | None = None
    seed: int | None = None
    chain_method: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NutsRecord:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        return write_fields(self)


@dataclasses.dataclass(frozen=True)
class FitDiagnostics:
    """A NUTS fit's diagnostics (jaxcap.meta.fit.diagnose): worst R-hat and smallest ESS, overall
    and per site (None: left out, as a pilot fold's are), divergences out of transitions, the
    warnings they raise and the mean leapfrog steps. R-hat is NaN (null) with one chain."""

    max_rhat: float | None
    min_ess: float | None
    divergences: int
    transitions: int | None = None
    rhat: dict[str, float] | None = None
    ess: dict[str, float] | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    mean_steps: float | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FitDiagnostics:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        return write_fields(self, keep_none=("max_rhat", "min_ess"))  # NaN in memory, null on disk


@dataclasses.dataclass(frozen=True)
class PilotRecord:
    """What a family appended by pilot runs rests on (jaxcap/experiments/pilot/experiment.py:record)."""

    family: str
    pilots: int | None = None
    runs: int | None = None
    ess: float | None = None
    boundary: dict[str, float] | None = None  # lo, median, hi, mass, factor
    stopped: str | None = None
    base: str | None = None  # the base posterior's workdir
    arch: int | None = None
    arch_label: str | None = None
    field: str | None = None
    candidates: list[dict[str, Any]] | None = None  # value, bits
    settings: dict[str, Any] | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PilotRecord:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        return write_fields(self)


@dataclasses.dataclass(frozen=True)
class PosteriorMeta:
    """The labels of a fit (architectures, families, levels, the reference family), what predict
    needs (budgets, family info, covariate centre), the table's fingerprint, and how it was fitted
    (NUTS settings, seconds, diagnostics); set after the fit: the capacity anchor
    (jaxcap/meta/anchor.py), the stamp a rerun compares, a pilot family's record."""

    archs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    arch_labels: list[str] = dataclasses.field(default_factory=list)
    budgets: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    families: list[str] = dataclasses.field(default_factory=list)
    family_info: list[FamilyInfo] = dataclasses.field(default_factory=list)
    levels: list[LevelInfo] = dataclasses.field(default_factory=list)
    reference: int | None = None
    arch_covariates: list[str] = dataclasses.field(default_factory=list)
    arch_center: list[float] = dataclasses.field(default_factory=list)
    fingerprint: str | None = None
    n_rows: int | None = None
    nuts: NutsRecord | None = None
    seconds: float | None = None
    diagnostics: FitDiagnostics | None = None
    anchor: dict[str, Any] | None = None  # jaxcap.meta.anchor.anchor_draws's record
    stamp: dict[str, Any] | None = None  # what the fit depends on: a different stamp refits
    pilot: PilotRecord | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PosteriorMeta:
        one = {"nuts": NutsRecord, "diagnostics": FitDiagnostics, "pilot": PilotRecord}
        return read_fields(
            cls,
            data,
            family_info=[FamilyInfo.from_json(i) for i in data.get("family_info", [])],
            levels=[LevelInfo.from_json(lv) for lv in data.get("levels", [])],
            **{k: part.from_json(data[k]) for k, part in one.items() if data.get(k) is not None},
        )

    def to_json(self) -> Json:
        parts = {k: getattr(self, k) for k in ("nuts", "diagnostics", "pilot")}
        return write_fields(
            self,
            family_info=[i.to_json() for i in self.family_info],
            levels=[lv.to_json() for lv in self.levels],
            **{k: v.to_json() for k, v in parts.items() if v is not None},
        )

    def family_index(self, name: str) -> int | None:
        return self.families.index(name) if name in self.families else None

    def family_levels(self, f: int | None) -> list[tuple[int, LevelInfo]]:
        """(index, level) of family `f`'s levels."""
        return [(i, lv) for i, lv in enumerate(self.levels) if lv.family == f]

    def level_name(self, i: int) -> str:
        """Level `i` in words: its family and label."""
        return f"{self.families[self.levels[i].family]} {self.levels[i].label}"

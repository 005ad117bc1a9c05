"""The held-out validation's result, typed: what `validate.validate` returns and validation.json holds.

`Validation`: the settings it ran under, every held-out run's predictions (`HeldoutRow`), each
fitted fold with its NUTS diagnostics and scored cells (`FoldResult`, `HeldoutCell`), the scores
per design (`DesignScores` of `MethodScores`), the refused folds, the seconds and calibrate's
stamp. Each record has one `from_json` and one `to_json`; the JSON is the dict validation.json
has always held, key for key and in its order, so an existing workdir reads and a rerun writes
the same bytes. Readers read attributes (tests/test_record_reads.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxcap.fields import Bool, Choice, Int, TupleOf, setting
from jaxcap.meta.records import FitDiagnostics, read_fields, write_fields
from jaxcap.meta.splits import DEV_SEED

Json = dict[str, Any]
DESIGNS = ("levels", "top", "families", "archs")
MASSES = (50, 90)  # a cell's credible intervals and the meta-model's PIT coverage, in percent


@dataclasses.dataclass(frozen=True)
class ValidationSettings:
    """config.calibrate.validation: each `setting` is a field's default and its config rule."""

    folds: int = setting(4, Int(0, 100))  # K of the levels design; 0 = no levels design
    # fold seeds of the levels design (0 is development: splits.DEV_SEED); one by default:
    # replicates come from independent data seeds (python -m jaxcap.main.replicates)
    seeds: tuple[int, ...] = setting((1,), TupleOf(Int(1)))
    designs: tuple[str, ...] = setting(DESIGNS, TupleOf(Choice(DESIGNS)))
    development: bool = setting(False, Bool())  # score the development split (fold seed 0) only

    def __post_init__(self):
        if not self.development and DEV_SEED in self.seeds:
            raise ValueError(
                f"validation.seeds: got {self.seeds}; allowed: seeds other than the development "
                f"seed {DEV_SEED} (set validation.development to score it)"
            )
        unknown = set(self.designs) - set(DESIGNS)
        if unknown:
            raise ValueError(f"validation.designs: got {sorted(unknown)}; allowed: {', '.join(DESIGNS)}")

    @property
    def fold_seeds(self) -> tuple[int, ...]:
        return (DEV_SEED,) if self.development else self.seeds

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ValidationSettings:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ReliabilityBin:
    """One probability bin of a reliability table: its range, runs, mean predicted, observed rate."""

    lo: float
    hi: float
    n: int
    predicted: float
    observed: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReliabilityBin:
        return cls(**data)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Decomposition:
    """Murphy's Brier decomposition: REL − RES + UNC = Brier."""

    reliability: float
    resolution: float
    uncertainty: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decomposition:
        return cls(**data)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class MethodScores:
    """One method's scores over held-out runs; the PIT coverage and median interval width per mass
    are the meta-model's only (None, and absent in JSON, for a baseline)."""

    brier: float
    log_loss: float
    auc: float | None = None
    auc_within_family: dict[Any, float | None] = dataclasses.field(default_factory=dict)  # by family
    auc_within_mean: float | None = None
    decomposition: Decomposition | None = None
    reliability: list[ReliabilityBin] = dataclasses.field(default_factory=list)
    pit_coverage50: float | None = None
    median_width50: float | None = None
    pit_coverage90: float | None = None
    median_width90: float | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # keys this version does not know

    def coverage(self, mass: int) -> float | None:
        return getattr(self, f"pit_coverage{mass}")

    def width(self, mass: int) -> float | None:
        return getattr(self, f"median_width{mass}")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MethodScores:
        d = data.get("decomposition")
        return read_fields(
            cls,
            data,
            decomposition=None if d is None else Decomposition.from_json(d),
            reliability=[ReliabilityBin.from_json(b) for b in data.get("reliability", [])],
        )

    def to_json(self) -> Json:
        core = tuple(f.name for f in dataclasses.fields(self) if not f.name.startswith(("pit_", "median_")))
        d = self.decomposition
        return write_fields(
            self,
            keep_none=core,
            decomposition=None if d is None else d.to_json(),
            reliability=[b.to_json() for b in self.reliability],
        )


@dataclasses.dataclass(frozen=True)
class DesignScores:
    """Every method's scores on one design's held-out runs, with how many runs and cells and the
    replicate floor. `success_rate` (the runs' success rate) is written under the key "base_rate",
    which the base_rate method's scores then take (as validation.json always had it), so read back
    beside that method it is None."""

    methods: dict[str, MethodScores]
    n_rows: int = 0
    n_cells: int = 0
    floor: float | None = None
    success_rate: float | None = None

    @property
    def meta_model(self) -> MethodScores:
        return self.methods["meta_model"]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DesignScores:
        methods = {k: MethodScores.from_json(v) for k, v in data.items() if isinstance(v, Mapping)}
        rate = data.get("base_rate")
        scalars = {k: data[k] for k in ("n_rows", "n_cells", "floor") if k in data}
        return cls(methods, **scalars, success_rate=None if isinstance(rate, Mapping) else rate)

    def to_json(self) -> Json:
        out = {
            "n_rows": self.n_rows,
            "n_cells": self.n_cells,
            "base_rate": self.success_rate,
            "floor": self.floor,
        }
        return out | {m: s.to_json() for m, s in self.methods.items()}


@dataclasses.dataclass(frozen=True)
class HeldoutCell:
    """One held-out cell (arch, family, level: its index, or out of grid its label): its runs and
    successes, the mean predicted P, the randomized PIT of its count, per mass the interval of
    P(success) and whether the PIT lies in it; the fold and design that held it out; other keys
    (out of grid: bits, covariate) in `extra`, written after."""

    arch: int
    family: int
    level: int | str
    trials: int
    successes: int
    p_mean: float
    pit: float
    p_lo50: float
    p_hi50: float
    pit_covered50: bool
    p_lo90: float
    p_hi90: float
    pit_covered90: bool
    fold: str | None = None
    design: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def interval(self, mass: int) -> tuple[float, float]:
        return getattr(self, f"p_lo{mass}"), getattr(self, f"p_hi{mass}")

    def covered(self, mass: int) -> bool:
        return getattr(self, f"pit_covered{mass}")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeldoutCell:
        return read_fields(cls, data)

    def to_json(self) -> Json:
        always = tuple(f.name for f in dataclasses.fields(self) if f.name not in ("fold", "design"))
        return write_fields(self, keep_none=always)


@dataclasses.dataclass(frozen=True)
class HeldoutRow:
    """One held-out run: its cell, success, fold and design, and each method's P(success)."""

    arch: int
    family: int
    level: int
    y: int
    fold: str
    design: str | None = None
    p: dict[str, float] = dataclasses.field(default_factory=dict)  # by method, flat in JSON

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeldoutRow:
        names = {f.name for f in dataclasses.fields(cls)} - {"p"}
        return cls(
            **{k: data[k] for k in names if k in data}, p={k: v for k, v in data.items() if k not in names}
        )

    def to_json(self) -> Json:
        return write_fields(self, keep_none=("arch", "family", "level", "y", "fold"), p=None) | self.p


@dataclasses.dataclass(frozen=True)
class FoldResult:
    """One fitted fold: its kind, name and fold seed, how many cells it held out, the reference
    family of its fit, the architectures and families new to it, its NUTS diagnostics, its cells."""

    kind: str
    name: str
    seed: int | None
    held_cells: int
    reference: str
    new_archs: list[int]
    new_families: list[int]
    diagnostics: FitDiagnostics
    cells: list[HeldoutCell]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FoldResult:
        diagnostics = FitDiagnostics.from_json(data["diagnostics"])
        cells = [HeldoutCell.from_json(c) for c in data["cells"]]
        return cls(**{**data, "diagnostics": diagnostics, "cells": cells})

    def to_json(self) -> Json:
        cells = [c.to_json() for c in self.cells]
        return write_fields(self, keep_none=True, diagnostics=self.diagnostics.to_json(), cells=cells)


@dataclasses.dataclass(frozen=True)
class Validation:
    """The held-out validation of one fit (empty: no validation in this run)."""

    settings: ValidationSettings = dataclasses.field(default_factory=ValidationSettings)
    predictions: list[HeldoutRow] = dataclasses.field(default_factory=list)
    folds: list[FoldResult] = dataclasses.field(default_factory=list)
    scores: dict[str, DesignScores] = dataclasses.field(default_factory=dict)  # by design
    refused: dict[str, str] = dataclasses.field(default_factory=dict)  # fold -> why it was not fitted
    nuts_seconds: float | None = None  # None: no fold was fitted
    seconds: float | None = None
    stamp: dict[str, Any] | None = None  # calibrate's: what it depends on (a different stamp reruns it)

    def cells(self, kind: str) -> list[HeldoutCell]:
        """The held-out cells of every fold of `kind`."""
        return [c for f in self.folds if f.kind == kind for c in f.cells]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Validation:
        return cls(
            settings=ValidationSettings.from_json(data.get("settings", {})),
            predictions=[HeldoutRow.from_json(r) for r in data.get("predictions", [])],
            folds=[FoldResult.from_json(f) for f in data.get("folds", [])],
            scores={k: DesignScores.from_json(s) for k, s in data.get("scores", {}).items()},
            refused=dict(data.get("refused", {})),
            **{k: data[k] for k in ("nuts_seconds", "seconds", "stamp") if k in data},
        )

    def to_json(self) -> Json:
        out = {
            "settings": self.settings.to_json(),
            "predictions": [r.to_json() for r in self.predictions],
            "folds": [f.to_json() for f in self.folds],
            "scores": {k: s.to_json() for k, s in self.scores.items()},
            "refused": dict(self.refused),
        }
        if self.nuts_seconds is not None:
            out["nuts_seconds"] = self.nuts_seconds
        out["seconds"] = self.seconds
        return out if self.stamp is None else out | {"stamp": self.stamp}

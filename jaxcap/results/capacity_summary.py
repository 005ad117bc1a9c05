"""The capacity experiment's per-architecture summary, typed: what `capacity_reading.summarize`
finds for one architecture and what report/capacity.json holds (`CapacityReport`).

It was a dict read by key in the capacity report, figures, fits and trend, the enhance
experiment, calibrate's anchor and the device page; now one frozen record (cf. records.py) with
typed parts (a point of a curve, the flatness verdict), one reader `from_json` and one writer
`to_json`, read by attribute everywhere else. `to_json` gives the keys in the order the dicts had,
so capacity.json's bytes are unchanged; the measures are defined beside it, in
capacity_curves.py (the curves and verdicts) and capacity_reading.py (the summary, the budgets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxcap.models.config import ModelConfig

Json = dict[str, Any]


def _read(cls, data: Mapping[str, Any], **parsed: Any):
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names}, **parsed)


@dataclasses.dataclass(frozen=True)
class SizePoint:
    """One dataset size of a curve: the bits each seed stored with its best learning rate."""

    size: int
    dataset_bits: float
    seeds: list[int]
    bits: list[float]
    median: float | None
    min: float | None
    max: float | None
    exact: float | None  # median fraction of items recalled exactly
    best_lr: list[float]
    saturated: int  # members whose own curve was flat
    members: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SizePoint:
        return _read(cls, data)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class BudgetPoint:
    """One exposure budget of a curve: the bits each seed stored at it (its best size)."""

    exposures: float
    seeds: list[int]
    bits: list[float]
    median: float | None
    min: float | None
    max: float | None
    bits_per_param: float | None
    best_size: list[int]
    sizes: list[int]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetPoint:
        return _read(cls, data)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Flatness:
    """Whether C(E) had flattened at its last budget: the gain over the last doubling, from
    budget `start` to `to`, against the tolerance."""

    flat: bool
    gain: float | None
    start: float | None  # "from" on disk
    to: float | None
    tol: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Flatness | None:
        if data is None:
            return None
        return cls(data["flat"], data["gain"], data["from"], data["to"], data["tol"])

    def to_json(self) -> Json:
        return {"flat": self.flat, "gain": self.gain, "from": self.start, "to": self.to, "tol": self.tol}


MODEL_FIELDS = (*ModelConfig.SHAPE_FIELDS, "seq_len")  # copied to the top


@dataclasses.dataclass(frozen=True)
class CapacitySummary:
    """One architecture: its model, its curve over sizes, C_mem over seeds and per parameter, the
    flatness and plateau verdicts, and C against the two budgets (capacity_reading.summarize)."""

    arch: int
    label: str
    family: str
    n_layers: int
    d_model: int
    n_heads: int
    d_head: int
    d_ff: int
    seq_len: int
    n_params: int
    model: dict[str, Any]
    curve: list[SizePoint]
    c_mem_seeds: list[float]
    c_mem_seed_ids: list[int]
    c_mem: float | None  # median over seeds; None (NaN in memory) read back from a run without one
    c_min: float | None
    c_max: float | None
    bits_per_param: float | None
    n_embedding_params: int
    n_head_params: int
    bits_per_body_param: float | None
    c_net: float | None
    plateau: bool
    exposure_curve: list[BudgetPoint]
    annealed_curve: list[BudgetPoint]
    verdict_schedule: str  # "annealed" or "constant": the runs the verdict reads
    recipe: dict[str, float]
    searched: bool
    flat: Flatness | None
    is_capacity: bool
    rounds: int
    unsaturated: int
    members: int
    precision_bits: float
    head_budget_bits: float
    storage_budget_bits: float
    head_utilization: float | None
    storage_utilization: float | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacitySummary:
        return _read(
            cls,
            {k: v for k, v in data.items() if k not in ("curve", "exposure_curve", "annealed_curve", "flat")},
            curve=[SizePoint.from_json(p) for p in data["curve"]],
            exposure_curve=[BudgetPoint.from_json(p) for p in data["exposure_curve"]],
            annealed_curve=[BudgetPoint.from_json(p) for p in data["annealed_curve"]],
            flat=Flatness.from_json(data["flat"]),
        )

    def to_json(self) -> Json:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {
            **out,
            "curve": [p.to_json() for p in self.curve],
            "exposure_curve": [p.to_json() for p in self.exposure_curve],
            "annealed_curve": [p.to_json() for p in self.annealed_curve],
            "flat": None if self.flat is None else self.flat.to_json(),
        }

    @property
    def flattened(self) -> bool:
        """C(E) flattened at the last budget (False where no budget curve was measured)."""
        return bool(self.flat and self.flat.flat)


def name(a: CapacitySummary) -> str:
    """A short architecture name: layers, d_model, heads x d_head, d_ff and N, then the numerics
    where they are not float32 (the `:precision` variants differ only there)."""
    model = a.model
    numerics = [
        f"{model[k]} {k.split('_')[0]}"
        for k in ("param_dtype", "compute_dtype")
        if model.get(k, "float32") != "float32"
    ] + ([f"int{model['qat_bits']} QAT"] if model.get("qat_bits") else [])
    return f"{a.n_layers}L d{a.d_model} {a.n_heads}x{a.d_head} ff{a.d_ff} N{a.seq_len}" + (
        f" ({', '.join(numerics)})" if numerics else ""
    )


@dataclasses.dataclass(frozen=True)
class CapacityReport:
    """report/capacity.json: every architecture's summary, the fits over them, the wall time."""

    architectures: list[CapacitySummary]
    fits: dict[str, Any]
    wall_s: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityReport:
        archs = [CapacitySummary.from_json(a) for a in data.get("architectures", [])]
        return cls(archs, data.get("fits", {}), data.get("wall_s", 0.0))

    def to_json(self) -> Json:
        return {
            "architectures": [a.to_json() for a in self.architectures],
            "fits": self.fits,
            "wall_s": self.wall_s,
        }

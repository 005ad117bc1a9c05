"""A query of the meta-model's posterior: P(learned) of a family at new levels, for an architecture.

The command `python -m jaxcap.predict` (jaxcap/main/predict.py) parses and prints; this module
resolves the query (a level of the family's level field, or a difficulty in bits of its
covariate; a family in or out of the fit) and computes P(learned) per point, with the posterior
median and 50% / 90% credible intervals, and every fitted family's boundary b* = C/θ. A query
outside the fitted range is flagged as an extrapolation. The answer is a `Prediction` record
(`to_json` is what `--json` prints). Details: docs/design/meta-model.md#prediction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxcap.meta.arch_query import QueryError, parse_value
from jaxcap.meta.covariates import COVARIATES, covariate_name
from jaxcap.meta.difficulty import checked_level_bits, nominal_level_bits
from jaxcap.meta.model import boundary_bits, new_arch_log_c, success_probability
from jaxcap.meta.posterior import Posterior, load_posterior, summarize
from jaxcap.meta.records import PosteriorMeta
from jaxcap.meta.splits import MIN_FAMILIES


@dataclasses.dataclass(frozen=True)
class QueryPoint:
    """One query of a family: its covariate's bits, its nominal bits (None: not set by the
    covariate alone), the fitted level it is (None: a new level) and its label."""

    bits: float
    nominal_bits: float | None
    level: int | None
    label: str


@dataclasses.dataclass(frozen=True)
class Interval:
    """Median and 50% / 90% central intervals of draws (posterior.summarize; None: not finite)."""

    median: float | None
    lo50: float | None
    hi50: float | None
    lo90: float | None
    hi90: float | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Interval:
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PointPrediction:
    """P(learned) at one query point: the posterior median `p` (= `median`) and mean, the 50% /
    90% intervals, whether the level was fitted, and the extrapolation warning (None: inside)."""

    covariate: str
    bits: float
    nominal_bits: float | None
    level: str  # the query point's label
    seen_level: bool
    p: float
    mean: float
    median: float | None
    lo50: float | None
    hi50: float | None
    lo90: float | None
    hi90: float | None
    extrapolation: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PointPrediction:
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PilotBasis:
    """What a pilot-appended family's prediction rests on: pilot levels, runs, ESS, the base fit."""

    pilots: int | None
    runs: int | None
    ess: float | None
    base: str | None


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One architecture's answer for one family: P(learned) per point, the covariate range the
    family was fitted on (None: not in the fit), every fitted family's boundary b* and, for a
    pilot-appended family, its basis."""

    arch: str
    family: str
    family_in_fit: bool
    points: list[PointPrediction]
    fitted_range: list[float] | None
    boundaries: dict[str, Interval]  # by family
    pilot: PilotBasis | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Prediction:
        pilot = data["pilot"]
        return cls(
            **{k: data[k] for k in ("arch", "family", "family_in_fit", "fitted_range")},
            points=[PointPrediction.from_json(pt) for pt in data["points"]],
            boundaries={k: Interval.from_json(b) for k, b in data["boundaries"].items()},
            pilot=None if pilot is None else PilotBasis(**pilot),
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # the parts are flat records: asdict is their to_json


def resolve_levels(
    posterior: Posterior, family: str, values: list[str], bits: list[float]
) -> list[QueryPoint]:
    """The query points of one family: level values of its level field, then covariate bits."""
    meta, f = posterior.meta, posterior.family_index(family)
    info = meta.family_info[f] if f is not None else None
    levels = [(i, lv) for i, lv in enumerate(meta.levels) if lv.family == f]
    points = []
    for text in values:
        if info is None or info.field is None:
            raise QueryError(
                f"--level: {family} is not a fitted family with one level field; use --complexity"
            )
        field = info.field
        like = levels[0][1].fields[field]
        try:
            value = parse_value(text, like)
        except QueryError as e:  # the type of the fitted levels' values (parity's k: an integer)
            raise QueryError(f"--level {field}: {e}, the type of {family}'s level field {field}") from None
        try:
            b = checked_level_bits(family, info.fixed, field, value)
        except ValueError as e:
            raise QueryError(f"--level {field}={text}: {e}") from None
        seen = [i for i, lv in levels if lv.fields[field] == value]
        nominal = nominal_level_bits(family, info.fixed, field, value)
        points.append(QueryPoint(b, nominal, seen[0] if seen else None, f"{field}={value}"))
    for b in bits:
        rng = info.bits_range if info else None
        if rng and not rng[0] * (1 - 1e-9) <= b <= rng[1] * (1 + 1e-9):
            raise QueryError(
                f"--complexity {b:g}: outside what {family} can be with its fixed fields "
                f"({info.field} in [{info.values_range[0]}, {info.values_range[1]}]): "
                f"allowed: {rng[0]:.4g} to {rng[1]:.4g} bits"
            )
        seen = [i for i, lv in levels if np.isclose(lv.bits, b, rtol=1e-9)]
        label = meta.levels[seen[0]].label if len(seen) == 1 else f"{b:g} bits"
        # the nominal bits of a complexity: known for a fitted level, or where they are the covariate
        nominal = meta.levels[seen[0]].complexity_bits if len(seen) == 1 else None
        if nominal is None and family not in COVARIATES:
            nominal = b
        points.append(QueryPoint(b, nominal, seen[0] if len(seen) == 1 else None, label))
    return points


def resolve_family(posterior: Posterior, task: str) -> str:
    """The family `--task` names: a family name as given, or a task's import path (a task from
    outside jaxcap, "path/to/file.py:Class" or "package.module:Class"), resolved to the family
    whose levels record that path (`task_name`), else to the family name its spec gives."""
    meta = posterior.meta
    where = task.split(":")[0]
    if task in meta.families or ":" not in task or not ("/" in where or "." in where):
        return task  # a family name (binop:add is one: its operation, not a path)
    for lv in meta.levels:  # the path as the family's rows recorded it
        if lv.fields.get("task_name") == task:
            return meta.families[lv.family]
    from jaxcap.tasks import task_class

    try:
        return task_class(task)().spec.family
    except Exception as e:  # the user's file: one line naming what did not load
        raise QueryError(f"--task {task}: not a fitted family, and the task does not load: {e}") from None


def covariate_note(posterior: Posterior, family: str) -> str:
    """What a family's covariate is, in words (the unit of its --complexity and its boundary)."""
    f = posterior.family_index(family)
    name = next((lv.covariate for lv in posterior.meta.levels if lv.family == f), None) or covariate_name(
        family
    )
    if name != "complexity_bits":
        return f"{name} (a structural difficulty; nominal bits beside it)"
    info = posterior.meta.family_info[f] if f is not None else None
    measure = info.fixed.get("complexity") if info is not None else None
    if isinstance(measure, str):  # a dataset task: bits measured from its examples
        return f"complexity_bits, measured from the data by the {measure!r} measure"
    return "complexity_bits (the task's nominal bits)"


def fitted_range(posterior: Posterior, family: str) -> tuple[str, list[float] | None]:
    """(covariate name, [min, max] of the covariate over the family's fitted levels, or None)."""
    f = posterior.family_index(family)
    levels = [lv for lv in posterior.meta.levels if lv.family == f]
    if not levels:
        return covariate_name(family), None
    bits = [lv.bits for lv in levels]
    return levels[0].covariate or "complexity_bits", [min(bits), max(bits)]


def check_family(posterior: Posterior, family: str, new_family: bool = True) -> None:
    """A family outside the fit must be asked for as one (`--new_family`: a typo is not a new
    family), and is refused while the fit has too few families to say anything about it."""
    fitted = posterior.meta.families
    if family not in fitted and not new_family:
        raise QueryError(
            f"--task {family}: not a fitted family; allowed: {', '.join(fitted)}, or --new_family to "
            "predict an unseen family from the family population"
        )
    if family not in fitted and len(fitted) < MIN_FAMILIES:
        raise QueryError(
            f"--task {family}: not a fitted family ({', '.join(fitted)}); a new family is predicted "
            f"from the family population, which needs >= {MIN_FAMILIES} fitted families (this fit "
            f"has {len(fitted)})"
        )


def predict(
    posterior: Posterior, family: str, points: list[QueryPoint], arch: dict, seed: int = 0
) -> Prediction:
    """P(learned) per point and every family's boundary, for one architecture and family."""
    check_family(posterior, family)
    rng = np.random.default_rng(seed)
    d, meta = posterior.draws, posterior.meta
    f = posterior.family_index(family)
    bits = np.array([pt.bits for pt in points])
    levels = [pt.level for pt in points]
    # a new level's P: its level effect integrated out (the rate on a typical level of those bits)
    p = success_probability(
        d, np.log(bits), rng, arch=arch["index"], family=f, levels=levels, arch_x=arch.get("x"), marginal=True
    )
    name, span = fitted_range(posterior, family)
    if arch["index"] is not None:
        bstar = boundary_bits(d)[:, arch["index"], :]
    else:
        log_c = new_arch_log_c(d, np.asarray(arch["x"]), len(meta.archs), rng)
        bstar = np.exp(log_c[:, None] - d["log_theta"])
    return Prediction(
        arch=arch["label"],
        family=family,
        family_in_fit=f is not None,
        points=[
            PointPrediction(
                covariate=name,
                bits=pt.bits,
                nominal_bits=pt.nominal_bits,
                level=pt.label,
                seen_level=pt.level is not None,
                p=float(np.median(p[:, i])),  # the headline: the posterior median
                mean=float(p[:, i].mean()),
                **summarize(p[:, i]),
                extrapolation=_extrapolation(name, pt.bits, span),
            )
            for i, pt in enumerate(points)
        ],
        fitted_range=span,
        boundaries={name: Interval(**summarize(bstar[:, g])) for g, name in enumerate(meta.families)},
        pilot=pilot_basis(meta, family),
    )


def pilot_basis(meta: PosteriorMeta, family: str) -> PilotBasis | None:
    """A pilot-appended family's basis (jaxcap/experiments/pilot): its pilot levels, runs, base fit."""
    pilot = meta.pilot
    if pilot is None or pilot.family != family:
        return None
    return PilotBasis(pilots=pilot.pilots, runs=pilot.runs, ess=pilot.ess, base=pilot.base)


def _extrapolation(name: str, bits: float, span: list[float] | None) -> str | None:
    """A warning when a query lies outside the covariate range the family was fitted on."""
    if span is None or span[0] * (1 - 1e-9) <= bits <= span[1] * (1 + 1e-9):
        return None
    return (
        f"extrapolating: {name} {bits:.4g} bits is outside the fitted range "
        f"{span[0]:.4g}-{span[1]:.4g} bits; the curve there rests on the model's form alone"
    )


def read_posterior(path: str) -> Posterior:
    """load_posterior, with a missing or unreadable file as one QueryError line."""
    try:
        return load_posterior(path)
    except FileNotFoundError:
        raise QueryError(
            f"--posterior {path}: no posterior.nc there (run configs/calibrate.py first)"
        ) from None
    except Exception as e:  # h5py / netCDF / JSON: a damaged or foreign file, said in one line
        raise QueryError(
            f"--posterior {path}: not a readable meta-model posterior ({type(e).__name__})"
        ) from None

"""The hpo level table, typed: per level (one Optuna study), its trial counts and the baseline's
and the best trial's results, as `jaxcap.experiments.hpo.report.summarize` finds them.

A list of dicts read by key in the report, the figures and the sweep until now; one frozen record
per level (cf. jaxcap/results/records.py) with one reader `from_json` and one writer `to_json`
(the same keys the dicts had), read by attribute everywhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class TrialResult:
    """One trial of a study: its state, objective values and parameters, and its seeds' test
    metric (None: the trial did not complete) with their median."""

    trial: int | None = None
    state: str | None = None  # "complete", "pruned", "fail", ...
    values: list[float] | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    seeds: list[float] | None = None
    median: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TrialResult | None:
        return None if data is None else cls(**data)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class HpoLevel:
    """One level of the sweep: its study, task knobs and difficulty, the success metric, the
    trial counts per state, and the baseline's and the best trial's results (None: none yet)."""

    study: str = ""
    knobs: dict[str, Any] = dataclasses.field(default_factory=dict)
    complexity_bits: float = 0.0
    chance: float | None = None
    metric: str = ""
    higher_is_better: bool = True
    counts: dict[str, int] = dataclasses.field(default_factory=dict)  # trials per state, lower case
    baseline: TrialResult | None = None
    best: TrialResult | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HpoLevel:
        trials = {k: TrialResult.from_json(data[k]) for k in ("baseline", "best") if k in data}
        return cls(**{**data, **trials})

    def to_json(self) -> Json:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {**out, **{k: None if out[k] is None else out[k].to_json() for k in ("baseline", "best")}}

    def complete(self) -> int:
        """Complete trials of the study."""
        return self.counts.get("complete", 0)

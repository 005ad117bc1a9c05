"""The host-side records of a run, typed: a member's row, the host loop's cursor, a level's summary,
and a row of the capacity experiment.

These were string-keyed dicts read in many modules (`row["status"]`, `cursor["step"]`), so a
misspelled key was a KeyError at the end of a run and a renamed key broke readers silently. Each
is now a frozen dataclass (plain host data, not a pytree; cf. levanter's `EvalResult`, evosax's
`State`) with ONE reader, `from_json`, and ONE writer, `to_json`; everything else reads attributes.

Details: docs/design/results.md#typed-records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxcap.results.spread import StepsSpread, spread

Json = dict[str, Any]


def _split(cls, data: Mapping[str, Any]) -> tuple[Json, Json]:
    """(the fields of `cls` present in `data`, the other keys of `data`)."""
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    return {k: v for k, v in data.items() if k in names}, {k: v for k, v in data.items() if k not in names}


def _missing(cls, given: Json, kind: str) -> None:
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    absent = [n for n in required if n not in given]
    if absent:
        raise ValueError(f"{kind}: missing key(s) {', '.join(absent)}; present: {', '.join(sorted(given))}")


@dataclasses.dataclass(frozen=True)
class MemberRow:
    """One line of members.jsonl: what a member was, how it ended, what it reached, and what it is
    compared with. Written once per member by `jaxcap.training.loop.member_rows`."""

    bucket: str
    member: int
    seed: int
    status: str  # "ok", "diverged", or "pruned" (frozen by an on_eval hook)
    family: str
    knobs: dict[str, Any]  # the level's task knobs
    hparams: dict[str, Any]  # numbers, and hparams.decay by its name
    complexity_bits: float
    success_metric: str
    success_threshold: float
    higher_is_better: bool
    success: bool  # THE success rule (jaxcap.results.outcomes.member_success)
    final: dict[str, float | None]  # every host metric at the last eval
    n_params: int
    model: dict[str, Any]
    steps: int | None = None  # None: not recorded (a simulated row, jaxcap.meta.simulate)
    best_val: float | None = None
    steps_to_train_threshold: int | None = None
    steps_to_val_threshold: int | None = None
    trial: int | None = None
    bucket_label: str = ""
    task: dict[str, Any] = dataclasses.field(default_factory=dict)  # every difficulty knob
    select_metric: str | None = None  # None: a row from before the test split (see `selects`)
    metric: str | None = None  # the task's primary metric
    chance: float | None = None
    chance_nominal: float | None = None
    shortcut: float | None = None
    shortcut_name: str | None = None
    baselines: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    overlap: dict[str, Any] = dataclasses.field(default_factory=dict)
    study: str | None = None  # a sweep's Optuna study; written only when set
    # a task from outside jaxcap: its config.task.name (import path, as given); written only when set
    task_name: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # keys this version does not know

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemberRow:
        given, extra = _split(cls, data)
        _missing(cls, given, "members.jsonl row")
        return cls(**given, extra=extra)

    def to_json(self) -> Json:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        for name in ("study", "task_name"):  # absent until set, as in the rows before
            if out[name] is None:
                del out[name]
        return {**out, **self.extra}

    @property
    def selects(self) -> str:
        """The metric selection reads; rows written before the test split selected on their only
        held-out metric, the success metric."""
        return self.select_metric or self.success_metric

    @property
    def value(self) -> float | None:
        """The final value of the success metric (None when not recorded)."""
        return self.final.get(self.success_metric)


@dataclasses.dataclass(frozen=True)
class Cursor:
    """The host loop's position in one bucket, checkpointed with the population so that a resumed
    run continues its thresholds, best values and hook decisions where they were.

    Replaced, never changed, between evals (`dataclasses.replace`); the one exception is `extra`,
    a hook's own record (capacity's exposure record under "exposure"), which a `stop_fn` may set
    and which is checkpointed with the rest.
    """

    step: int
    n_evals: int
    first_train: list[int | None]  # per member: the first step at the train threshold
    first_val: list[int | None]
    best_val: list[float | None]  # per member: the best val value of the primary metric
    last: dict[str, list[float]]  # every host metric of the last eval, per member
    frozen: list[bool] | None = None  # set by an on_eval hook (pruned members); None: never asked
    stopped: bool | None = None  # a stop_fn's decision; None before the first eval
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def fresh(cls, n: int) -> Cursor:
        return cls(0, 0, [None] * n, [None] * n, [None] * n, {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cursor:
        given, extra = _split(cls, data)
        _missing(cls, given, "checkpoint cursor")
        return cls(**given, extra=dict(extra))

    def to_json(self) -> Json:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        for name in ("frozen", "stopped"):  # absent until set, as in the checkpoints before
            if out[name] is None:
                del out[name]
        return {**out, **self.extra}

    def is_frozen(self, n: int) -> list[bool]:
        """The frozen mask of `n` members (none frozen when no hook froze any)."""
        return list(self.frozen) if self.frozen is not None else [False] * n


@dataclasses.dataclass(frozen=True)
class LevelSummary:
    """One level of a run's table (`jaxcap.reports.level_summary.levels`): the level, its best setting
    (chosen on val), and that setting's outcome over seeds (read on test)."""

    bucket: str  # the bucket's label, or its name where it has none
    bucket_label: str
    family: str
    knobs: dict[str, Any]
    complexity_bits: float
    metric: str  # the success metric
    select_metric: str
    threshold: float
    best: dict[str, float]  # the swept hyperparameters of the best setting
    values: list[float]  # the success metric of its seeds that did not diverge
    median: float | None
    min: float | None
    max: float | None
    val: float | None  # median selection (val) value
    chance: float | None
    shortcut: float | None
    shortcut_name: str | None
    steps_to_val: float | None  # median over the seeds that reached the val threshold
    n_reached: int
    n: int  # seeds of the best setting (pruned left out)
    n_success: int
    entropy: float | None
    diverged: int
    diverged_all: int  # over every setting of the level
    n_all: int
    higher_is_better: bool
    learned: bool
    # per seed of the best setting: its first step at the val threshold (None: never reached);
    # empty in a summary written before it was recorded
    val_steps: list[int | None] | None = dataclasses.field(default_factory=list)

    @property
    def steps_spread(self) -> StepsSpread:
        """The spread of `val_steps` over the seeds (jaxcap.results.spread)."""
        return spread(self.val_steps or [])

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LevelSummary:
        given, _ = _split(cls, data)
        _missing(cls, given, "level summary")
        return cls(**given)

    def to_json(self) -> Json:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class CapacityRow:
    """One line of capacity.jsonl: a member of one dataset size of one architecture, with the bits
    it stored at every exposure budget. Written once per member by
    `jaxcap.experiments.capacity.experiment.measure` (sorted keys, `clean`ed: NaN reads
    back as None);
    jaxcap/experiments/capacity/sizes.py defines the measures."""

    bucket: str  # the population: "b{arch}n{size}", "...a{budget}" annealed, "b{arch}search"
    arch: int  # the architecture's index in config.sweep.buckets
    arch_label: str  # its bucket label ("" for the base model)
    round: int  # the round of dataset sizes that added this size (0: the first grid)
    member: int  # the member's index in its population
    seed: int
    learning_rate: float
    dataset_size: int  # n, the random training items
    dataset_bits: float  # their entropy: what a perfect memorizer stores
    bits_stored: float | None  # at the last budget, clipped per item: C_mem's measure
    net_bits: float | None  # the same unclipped (entropy minus code length): a lower bound
    exact_fraction: float | None  # of items recalled exactly, at the last budget
    saturated: bool  # the member's own curve was flat over its last doubling (or stored all)
    diverged: bool
    n_params: int
    family: str
    model: dict[str, Any]  # the ModelConfig's fields
    ce_bits_per_item: float | None = None  # mean cross-entropy per item at the final eval
    steps: int | None = None  # trained steps (None: not recorded)
    batch_size: int | None = None
    exposures: list[float] | None = None  # the budgets (None: a row of the step-capped protocol)
    bits_at: list[float | None] | None = None  # bits stored at each budget (None: passed unseen)
    net_bits_at: list[float | None] | None = None
    exact_at: list[float | None] | None = None
    final_exposures: float | None = None  # exposures per item at the last step
    recipe: dict[str, float] | None = None  # the recipe's hyperparameters (None: before recipes)
    schedule: str = "constant"  # "constant", "annealed" (to anneal_budget) or "search"
    anneal_budget: float | None = None  # the one budget of an annealed or search run
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # keys this version does not know

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityRow:
        given, extra = _split(cls, data)
        _missing(cls, given, "capacity.jsonl row")
        return cls(**given, extra=extra)

    def to_json(self) -> Json:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**out, **self.extra}

    @property
    def trained_recipe(self) -> dict[str, float]:
        """The recipe, or for a row from before recipes its learning rate alone."""
        return self.recipe if self.recipe is not None else {"learning_rate": self.learning_rate}

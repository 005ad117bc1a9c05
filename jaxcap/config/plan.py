"""From a config to its plan: the buckets (what is static, one compile each, and who the members
are), typed and frozen, so that the training path never reads the raw config.

A config trains one bucket unless `config.sweep.buckets` lists variants, each a string of
comma-separated `section.field=value` overrides, e.g. ("model.d_model=32",
"model.d_model=64,model.n_layers=1"). Each variant is its own population (its own compile,
curves and checkpoints); inside a bucket the members are the grid task knobs x hparams x seeds.
`config.sweep.levels_per_population` = k > 0 trains a bucket's swept knob levels as populations
of k levels each, one after another on the same task and so on the same compiled programs
(`split_levels`: calibrate's grid and boundary rounds share one program set this way).
A `Bucket` checks itself when it is built (one-line `ConfigError`s naming the config field), and
experiments derive their populations from it with `with_task`, `with_model`, `with_hparams`,
`with_knobs`, `with_settings` and `with_members`, never from a copied config.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any, Generic, TypeVar

import ml_collections

from jaxcap import tasks
from jaxcap.config import bucket_checks
from jaxcap.core.population import Member, grid_members
from jaxcap.core.runtime import Runtime, numerics
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import ConfigError, from_section, kind_of
from jaxcap.models import ModelConfig
from jaxcap.models.config import MODEL_FIELDS
from jaxcap.tasks import Task

BUCKET_SECTIONS = ("task", "model", "hparams", "train", "eval")


@dataclasses.dataclass(frozen=True)
class Grid:
    """Who a grid population's members are: task knobs x hparams x seeds (config.hparams and
    config.sweep), ordered in that nesting (jaxcap.core.population.grid_members)."""

    hparams: dict[str, float]  # every member's values where the hparam grid does not sweep
    hparam_grid: dict[str, tuple]  # config.sweep.hparams (empty: not swept)
    knob_grid: dict[str, tuple]  # config.sweep.task (empty: the task's own value)
    seeds: int

    def members(self, task: Task) -> tuple[Member, ...]:
        return tuple(
            grid_members(self.hparams, self.hparam_grid, task.default_knobs(), self.knob_grid, self.seeds)
        )

    def decays(self) -> list[float]:
        return [self.hparams["decay_steps"], *self.hparam_grid.get("decay_steps", ())]


@dataclasses.dataclass(frozen=True)
class Bucket:
    """Everything static about one population: one bucket = one compile. Typed and frozen: the
    training path (jaxcap.training.loop) reads these fields, never the config they came from.
    Building one checks it (`bucket_checks.check`); a derivation (`with_*`) builds a new one."""

    name: str
    label: str  # the overrides that define it ('' for a single-bucket run)
    task: Task
    model: ModelConfig
    settings: TrainSettings
    eval: EvalSettings
    seed: int  # config.seed: every member's key derives from it (jaxcap.core.population.member_key)
    members: tuple[Member, ...]
    grid: Grid | None = None  # None: members chosen one by one (an hpo round's trials)

    def __post_init__(self):
        bucket_checks.check(self)

    def numerics(self):
        """Its numerics scope: config.train.matmul_precision, and x64 for a float64 model."""
        m = self.model
        return numerics(self.settings.matmul_precision, "float64" in (m.param_dtype, m.compute_dtype))

    def with_task(self, **fields: Any) -> Bucket:
        """The same population on a task with `fields` replaced (e.g. a larger dataset); the model
        follows the task's vocabulary, length and outputs."""
        task = dataclasses.replace(self.task, **fields)
        spec = task.spec
        model = dataclasses.replace(
            self.model, vocab_size=spec.vocab_size, seq_len=spec.seq_len, n_outputs=spec.n_outputs
        )
        return self._regrid(task=task, model=model)

    def with_model(self, **fields: Any) -> Bucket:
        """The same population on a model with `fields` (config.model names) replaced."""
        model = {name: getattr(self.model, name) for name in MODEL_FIELDS}
        return dataclasses.replace(self, model=build_model(self.task, {**model, **fields}))

    def with_hparams(self, values: dict[str, float], sweep: bool = True) -> Bucket:
        """Every member with `values` for those hyperparameters; `sweep=False` also drops the
        hparam grid (one member per knob level and seed)."""
        grid = self.grid
        hparam_grid = grid.hparam_grid if sweep else {k: () for k in grid.hparam_grid}
        return self._regrid(
            grid=dataclasses.replace(grid, hparams={**grid.hparams, **values}, hparam_grid=hparam_grid)
        )

    def with_knobs(self, **grid: tuple) -> Bucket:
        """The members at these task-knob levels (a knob's grid replaced)."""
        return self._regrid(grid=dataclasses.replace(self.grid, knob_grid={**self.grid.knob_grid, **grid}))

    def on_task(self, task: Task, **grid: tuple) -> Bucket:
        """The same population on `task` (one built for these knob levels, so that its shared
        sizes follow them) at those levels; the model follows the task's vocabulary and outputs."""
        spec = task.spec
        model = dataclasses.replace(
            self.model, vocab_size=spec.vocab_size, seq_len=spec.seq_len, n_outputs=spec.n_outputs
        )
        grid = dataclasses.replace(self.grid, knob_grid={**self.grid.knob_grid, **grid})
        return self._regrid(task=task, model=model, grid=grid)

    def with_seeds(self, seeds: int) -> Bucket:
        """The same grid with `seeds` members per setting and level."""
        return self._regrid(grid=dataclasses.replace(self.grid, seeds=seeds))

    def with_settings(self, **fields: Any) -> Bucket:
        """The same population with training settings replaced (e.g. the schedule)."""
        return dataclasses.replace(self, settings=dataclasses.replace(self.settings, **fields))

    def with_members(self, members: list[Member], dropout: bool = False) -> Bucket:
        """These members instead of the grid's; `dropout` keeps the dropout path in the program
        even when no member uses it now (a searched rate: one compile for every round)."""
        members = tuple(members)
        settings = dataclasses.replace(self.settings, dropout=dropout or _dropout(members))
        return dataclasses.replace(self, members=members, settings=settings, grid=None)

    def _regrid(self, task: Task | None = None, model: ModelConfig | None = None, grid: Grid | None = None):
        task, grid = task or self.task, grid or self.grid
        members = grid.members(task)
        settings = dataclasses.replace(self.settings, dropout=_dropout(members))
        return dataclasses.replace(
            self, task=task, model=model or self.model, grid=grid, members=members, settings=settings
        )


def _dropout(members) -> bool:
    return any(m.hparams["dropout"] > 0 for m in members)


S = TypeVar("S")  # an experiment's typed section


@dataclasses.dataclass(frozen=True)
class Plan(Generic[S]):
    """A config as the typed objects a run needs (jaxcap.config.base.build_plan), built once
    before the first write and handed down: `run(config, workdir)` passes it to the experiment.
    `Plan[Calibration]` is a calibrate run's plan: the section's type is the experiment's."""

    experiment: str
    seed: int
    buckets: tuple[Bucket, ...]
    runtime: Runtime
    # the experiment's own sections, typed: what its registry `check` builds (hpo: a Sweep,
    # capacity: a CapacityRun, calibrate and enhance: a Calibration, pilot: a PilotPlan); None
    # where it has none
    section: S | None = None

    @property
    def devices(self) -> int:
        """The devices each population is split over (config.runtime.devices; 0: automatic)."""
        return self.runtime.devices

    def bucket(self, label: str) -> Bucket:
        """The bucket of one `config.sweep.buckets` entry ('' for a single-bucket run)."""
        return next(b for b in self.buckets if b.label == label)


def parse_overrides(spec: str) -> list[tuple[list[str], object]]:
    """'model.d_model=32,task.operation=sub' -> [(['model', 'd_model'], 32), ...]."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        path, eq, text = item.partition("=")
        if not eq or "." not in path:
            raise ConfigError(f"config.sweep.buckets: got {item!r}; allowed: section.field=value")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a bare string such as task.operation=sub
        out.append((path.split("."), value))
    return out


def variant_configs(config: ml_collections.ConfigDict) -> list[tuple[str, ml_collections.ConfigDict]]:
    """(label, config with the overrides applied) per bucket; one ('', config) by default."""
    if not config.sweep.buckets:
        return [("", config)]
    out = []
    for i, spec in enumerate(config.sweep.buckets):
        variant = ml_collections.ConfigDict(config.to_dict())
        for path, value in parse_overrides(spec):
            node = variant
            if path[0] not in BUCKET_SECTIONS:
                raise ConfigError(
                    f"config.sweep.buckets[{i}]: cannot vary {'.'.join(path)}; "
                    f"allowed sections: {', '.join(BUCKET_SECTIONS)}"
                )
            for part in path[:-1]:
                node = node[part]
            if path[-1] not in node:
                raise ConfigError(f"config.sweep.buckets[{i}]: {'.'.join(path)} is not a config field")
            old = node[path[-1]]
            if isinstance(old, float) and isinstance(value, int):
                value = float(value)
            try:
                node[path[-1]] = value
            except TypeError:  # ml_collections keeps each field's type
                raise ConfigError(
                    f"config.sweep.buckets[{i}]: {'.'.join(path)}: got {value!r} ({type(value).__name__}); "
                    f"allowed: {kind_of(old)} like the field's {old!r}"
                ) from None
        out.append((spec, variant))
    return out


def build_model(task: Task, fields: dict[str, Any]) -> ModelConfig:
    """The frozen model of a bucket from config.model's fields; `angular_n = 0` takes N from the
    task (angular embeddings)."""
    fields = dict(fields)
    if fields["angular"] != "none" and not fields["angular_n"]:
        fields["angular_n"] = bucket_checks.angular_n(task, fields["angular_n"])
    return ModelConfig.for_task(task.spec, **fields)


def split_levels(bucket: Bucket, levels: int) -> list[Bucket]:
    """`bucket` as populations of at most `levels` levels of its swept task knob each (0: one
    population), in the grid's order and on the bucket's task, whose sizes follow every level: each
    piece runs the same compiled programs as the others of as many members."""
    swept = {k: tuple(v) for k, v in bucket.grid.knob_grid.items() if len(v)} if bucket.grid else {}
    if len(swept) > 1 and levels:
        raise ConfigError(
            f"config.sweep.levels_per_population: got {levels}; allowed: 0 when more than one task "
            f"knob is swept (config.sweep.task sweeps {', '.join(swept)})"
        )
    if not levels or not swept or len(next(iter(swept.values()))) <= levels:
        return [bucket]
    ((knob, values),) = swept.items()
    return [bucket.with_knobs(**{knob: values[i : i + levels]}) for i in range(0, len(values), levels)]


def build_bucket(config: ml_collections.ConfigDict, name: str, label: str) -> Bucket:
    """The typed bucket of one variant config (its overrides applied): task, model, settings and
    members, each built once and checked as it is built."""
    task = tasks.build(config.task.to_dict(), config.sweep.task.to_dict())
    grid = Grid(
        hparams=config.hparams.to_dict(),
        hparam_grid=config.sweep.hparams.to_dict(),
        knob_grid=config.sweep.task.to_dict(),
        seeds=config.sweep.seeds,
    )
    members = grid.members(task)
    bucket = Bucket(
        name=name,
        label=label,
        task=task,
        model=build_model(task, {name: config.model[name] for name in MODEL_FIELDS}),
        settings=from_section(
            TrainSettings,
            config.train,
            eval_batch_size=config.eval.batch_size,
            eval_share=config.eval.time_share,
            dropout=_dropout(members),
        ),
        eval=from_section(EvalSettings, config.eval),
        seed=config.seed,
        members=members,
        grid=grid,
    )
    for knob, values in config.sweep.task.items():  # each swept value is a task of its own
        for i, value in enumerate(values):
            try:
                tasks.build({**config.task.to_dict(), knob: value})
            except ConfigError as e:
                raise ConfigError(f"config.sweep.task.{knob}[{i}]: {value!r}: {e}") from None
    return bucket

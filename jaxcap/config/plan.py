"""From a config to its plan: the buckets (what is static, one compile each, and who the members
are), typed and frozen, so that the training path never reads the raw config.

A config trains one bucket unless `config.sweep.buckets` lists variants, each a string of
comma-separated `section.field=value` overrides, e.g. ("model.d_model=32",
"model.d_model=64,model.n_layers=1"). Each variant is its own population (its own compile,
curves and checkpoints); inside a bucket the members are the grid task knobs x hparams x seeds.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

import ml_collections

from jaxcap import tasks
from jaxcap.core.population import Member, grid_members
from jaxcap.core.runtime import Runtime, numerics
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import ConfigError, from_section
from jaxcap.models import ModelConfig
from jaxcap.models.config import MODEL_FIELDS
from jaxcap.models.embeddings import task_numbers
from jaxcap.tasks import Task

BUCKET_SECTIONS = ("task", "model", "hparams", "train", "eval")


@dataclasses.dataclass(frozen=True)
class Bucket:
    """Everything static about one population: one bucket = one compile. Typed and frozen: the
    training path (jaxcap.training.loop) reads these fields, never the config they came from."""

    name: str
    label: str  # the overrides that define it ('' for a single-bucket run)
    task: Task
    model: ModelConfig
    settings: TrainSettings
    eval: EvalSettings
    seed: int  # config.seed: every member's key derives from it (jaxcap.core.population.member_key)
    members: tuple[Member, ...]

    def numerics(self):
        """Its numerics scope: config.train.matmul_precision, and x64 for a float64 model."""
        m = self.model
        return numerics(self.settings.matmul_precision, "float64" in (m.param_dtype, m.compute_dtype))


@dataclasses.dataclass(frozen=True)
class Plan:
    """A checked config as the typed objects a run needs (jaxcap.config.base.validate), built once
    before the first write and handed down: `run(config, workdir)` passes it to the experiment."""

    experiment: str
    seed: int
    buckets: tuple[Bucket, ...]
    runtime: Runtime
    # the experiment's own sections, typed: what its registry `check` returns (hpo: a Sweep,
    # capacity: a CapacityRun, calibrate and enhance: a Calibration); None where it has no check.
    # An experiment that derives configs of its own (a round's shapes, a dataset size, a family)
    # finds the validated config it derives them from there, in one named field with its reason.
    section: Any = None

    @property
    def devices(self) -> int:
        """The devices each population is split over (config.runtime.devices; 0: automatic)."""
        return self.runtime.devices


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
                    f"allowed: a {type(old).__name__} like the field's {old!r}"
                ) from None
        out.append((spec, variant))
    return out


def model_config(
    model: ml_collections.ConfigDict, spec: tasks.TaskSpec, task: Task | None = None
) -> ModelConfig:
    """The frozen model of a bucket; `angular_n = 0` takes N from the task (angular embeddings)."""
    fields = {name: model[name] for name in MODEL_FIELDS}
    if fields["angular"] != "none" and not fields["angular_n"] and task is not None:
        fields["angular_n"] = task_numbers(task)
    return ModelConfig.for_task(spec, **fields)


def train_settings(config: ml_collections.ConfigDict, members: list[Member]) -> TrainSettings:
    """The bucket's static training choices: config.train, the eval batch and share, and whether
    any member uses dropout."""
    return from_section(
        TrainSettings,
        config.train,
        eval_batch_size=config.eval.batch_size,
        eval_share=config.eval.time_share,
        dropout=any(m.hparams["dropout"] > 0 for m in members),
    )


def make_bucket(
    config: ml_collections.ConfigDict,
    name: str,
    label: str,
    task: Task,
    members: list[Member],
    settings: TrainSettings | None = None,
) -> Bucket:
    """The typed bucket of one variant config (with its overrides applied) and its members."""
    return Bucket(
        name=name,
        label=label,
        task=task,
        model=model_config(config.model, task.spec, task),
        settings=settings or train_settings(config, members),
        eval=from_section(EvalSettings, config.eval),
        seed=config.seed,
        members=tuple(members),
    )


def make_buckets(config: ml_collections.ConfigDict) -> tuple[Bucket, ...]:
    """The buckets of a config, each with its grid of members (not validated: experiments call
    this on configs they derive from a validated one; a run's own are `validate(config).buckets`)."""
    buckets = []
    for i, (label, variant) in enumerate(variant_configs(config)):
        task = tasks.build(variant.task.to_dict(), variant.sweep.task.to_dict())
        members = grid_members(
            variant.hparams.to_dict(),
            variant.sweep.hparams.to_dict(),
            task.default_knobs(),
            variant.sweep.task.to_dict(),
            variant.sweep.seeds,
        )
        buckets.append(make_bucket(variant, f"b{i}", label, task, members))
    return tuple(buckets)


def make_plan(config: ml_collections.ConfigDict, section: Any = None) -> Plan:
    """The plan of a validated config (`jaxcap.config.base.validate` calls this)."""
    return Plan(
        experiment=config.experiment,
        seed=config.seed,
        buckets=make_buckets(config),
        runtime=from_section(Runtime, config.runtime),
        section=section,
    )

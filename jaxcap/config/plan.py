"""From a config to buckets: what is static (one compile each) and who the members are.

A config trains one bucket unless `config.sweep.buckets` lists variants, each a string of
comma-separated `section.field=value` overrides, e.g. ("model.d_model=32",
"model.d_model=64,model.n_layers=1"). Each variant is its own population (its own compile,
curves and checkpoints); inside a bucket the members are the grid task knobs x hparams x seeds.
"""

from __future__ import annotations

import ast
import dataclasses

import ml_collections

from jaxcap import tasks
from jaxcap.core.population import Member, grid_members
from jaxcap.core.train import TrainSettings
from jaxcap.fields import ConfigError
from jaxcap.models import ModelConfig
from jaxcap.models.config import MODEL_FIELDS
from jaxcap.models.embeddings import task_numbers
from jaxcap.tasks import Task

BUCKET_SECTIONS = ("task", "model", "hparams", "train", "eval")


@dataclasses.dataclass
class Bucket:
    """Everything static about one population: one bucket = one compile."""

    name: str
    label: str  # the overrides that define it ('' for a single-bucket run)
    config: ml_collections.ConfigDict  # the run's config with this bucket's overrides applied
    task: Task
    model: ModelConfig
    settings: TrainSettings
    members: list[Member]


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


def bucket_configs(config: ml_collections.ConfigDict) -> list[tuple[str, ml_collections.ConfigDict]]:
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
    t = config.train
    return TrainSettings(
        steps=t.steps,
        chunk_steps=t.chunk_steps,
        batch_size=t.batch_size,
        schedule=t.schedule,
        b1=t.b1,
        eps=t.eps,
        clip_norm=t.clip_norm,
        loss_scale=t.loss_scale,
        eval_batch_size=config.eval.batch_size,
        eval_share=config.eval.time_share,
        dropout=any(m.hparams["dropout"] > 0 for m in members),
    )


def plan(config: ml_collections.ConfigDict) -> list[Bucket]:
    """The buckets of a config, each with its grid of members."""
    buckets = []
    for i, (label, variant) in enumerate(bucket_configs(config)):
        task = tasks.build(variant.task.to_dict(), variant.sweep.task.to_dict())
        members = grid_members(
            variant.hparams.to_dict(),
            variant.sweep.hparams.to_dict(),
            task.default_knobs(),
            variant.sweep.task.to_dict(),
            variant.sweep.seeds,
        )
        model = model_config(variant.model, task.spec, task)
        settings = train_settings(variant, members)
        buckets.append(Bucket(f"b{i}", label, variant, task, model, settings, members))
    return buckets

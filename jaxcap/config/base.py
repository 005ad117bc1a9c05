"""The base config every experiment starts from, its schema, and the variant helper.

Configs are Python files `configs/<experiment>.py` with `get_config(arg)` (big_vision style);
they call `base_config(task)` and override fields, never copy it. `build_plan` parses a whole
config, against `schema(config)`, into the typed `Plan` a run is handed, before any compile.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import ml_collections

from jaxcap import fields as checks
from jaxcap import tasks
from jaxcap.config import registry
from jaxcap.config.plan import Plan, build_bucket, split_levels, variant_configs
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.core.population import DEFAULT_HPARAMS, HPARAM_NAMES, HPARAM_RULES
from jaxcap.core.runtime import Runtime
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import Choice, ConfigError, Int, Str, TupleOf, check_tree, defaults, from_section, rules
from jaxcap.models import ModelConfig


def parse_arg(arg: str | None, variants: tuple[str, ...] = ("smoke", "full")) -> str:
    """The variant named after ':' in `--config configs/x.py:variant` ('default' when absent; a ':'
    with nothing after it is refused, not read as the default: it is a variant name left out)."""
    if arg is None:
        return "default"
    if arg == "":
        raise ConfigError(
            f"config variant: got '' (nothing after ':'); allowed: {', '.join(variants)}, "
            "or no ':' for the default"
        )
    if arg not in variants:
        raise ConfigError(f"config variant: got {arg!r}; allowed: {', '.join(variants)} (or none)")
    return arg


def load_config(spec: str | Path) -> ml_collections.ConfigDict:
    """The config `--config path/x.py[:variant]` names, unlocked and not yet validated: what the
    launcher, the tests and the notebook all read (ml_collections' loader, minus its flags)."""
    path, colon, arg = str(spec).partition(":")
    if not Path(path).is_file():
        raise ConfigError(f"--config: no such file {path!r}")
    module_spec = importlib.util.spec_from_file_location(f"_jaxcap_config_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(arg if colon else None)  # `x.py:` is an empty variant, not none


def derived_config(
    config: ml_collections.ConfigDict, changes: dict[str, Any], drop: tuple[str, ...] = ()
) -> ml_collections.ConfigDict:
    """A new config from `config` with dotted fields replaced (`{"sweep.seeds": 2}`; a dict value
    becomes a section) and top-level sections dropped: the config of a run an experiment starts
    of its own (a pilot's calibration, a family's population), which records it in its workdir.
    Populations of one run derive from its typed buckets instead (`Bucket.with_*`)."""
    out = ml_collections.ConfigDict({k: v for k, v in config.to_dict().items() if k not in drop})
    for path, value in changes.items():
        *parents, name = path.split(".")
        node = out
        for part in parents:
            node = node[part]
        node[name] = value
    return out


def nested_run(
    config: ml_collections.ConfigDict, experiment: str, drop: tuple[str, ...] = ()
) -> tuple[Plan, dict]:
    """A run that `config` carries inside it (a pilot config's own calibration): `config` as an
    `experiment` config without the `drop` sections, parsed into its plan, and what its
    config.json records (the runtime aside, which may change on resume)."""
    inner = derived_config(config, {"experiment": experiment}, drop=drop)
    record = inner.to_dict()
    record.pop("runtime")
    return build_plan(inner), record


def recorded_config(record: dict, defaults: bool = False) -> ml_collections.ConfigDict:
    """The config a workdir's config.json records, JSON lists back to the tuples a config holds;
    with `defaults`, over today's defaults, so a workdir written before a field existed still plans."""
    if defaults:
        merged = base_config(record["task"]["name"]).to_dict()
        _merge(merged, record)
        record = merged
    return ml_collections.ConfigDict(_tuples(record))


def _merge(into: dict, new: dict) -> None:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _tuples(value):
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def base_config(task: str) -> ml_collections.ConfigDict:
    """Defaults for every field; the model defaults are the seed baseline."""
    c = ml_collections.ConfigDict()
    c.experiment = "population"
    c.seed = 0
    c.note = ""  # printed at start: e.g. why this run uses a smaller model than the baseline
    c.task = ml_collections.ConfigDict(tasks.default_config(task))
    # model, hparams, train, eval and runtime: generated from the dataclass that owns each section
    # (a field is one `jaxcap.fields.setting` line there: its default and its rule)
    c.model = ml_collections.ConfigDict(defaults(ModelConfig))
    c.hparams = ml_collections.ConfigDict(DEFAULT_HPARAMS)
    spec = tasks.task_class(task)().spec
    c.sweep = ml_collections.ConfigDict(
        dict(
            seeds=1,
            hparams={n: () for n in HPARAM_NAMES},
            task={k: () for k in spec.knobs},
            buckets=(),
            # > 0: a bucket's swept knob levels train as populations of this many levels, one
            # after another on one program set (jaxcap.config.plan.split_levels)
            levels_per_population=0,
        )
    )
    c.train = ml_collections.ConfigDict(defaults(TrainSettings))
    # steps-to-threshold on the task's primary metric (accuracy 0.99; lower is better for NMSE)
    thr = spec.step_threshold
    c.eval = ml_collections.ConfigDict(defaults(EvalSettings, train_threshold=thr, val_threshold=thr))
    c.runtime = ml_collections.ConfigDict(defaults(Runtime))
    return c


def schema(config) -> dict:
    """The schema of this config (the task section depends on config.task.name)."""
    name = config.task.get("name") if hasattr(config, "task") else None
    task_cls = tasks.task_class(name)  # a built-in name or a Task subclass's path; else one line
    task_schema = {"name": Str(), **task_cls.SCHEMA}
    out = {
        "experiment": Choice(EXPERIMENTS),
        "seed": Int(0, 2**32 - 1),  # jax.random.key honours 32 bits: a larger seed aliases a smaller one
        "note": Str(),
        "task": task_schema,
        "model": rules(ModelConfig),
        "hparams": dict(HPARAM_RULES),
        "sweep": {
            "seeds": Int(1, 100_000),
            "buckets": TupleOf(Str()),
            "levels_per_population": Int(0, 100_000),
            "hparams": {n: TupleOf(rule) for n, rule in HPARAM_RULES.items()},
            "task": {k: TupleOf(task_cls.SCHEMA[k]) for k in task_cls().spec.knobs},
        },
        "train": rules(TrainSettings),
        "eval": rules(EvalSettings),
        "runtime": rules(Runtime),
    }
    # the sections an experiment owns (jaxcap.config.registry), each generated from its dataclass
    for name, experiment in EXPERIMENTS.items():
        for section, owner in experiment.sections:
            if config.get("experiment") == name or section in config:
                if section == "study" and ("study" not in config or "search" not in config):
                    raise ConfigError(
                        "config.study: missing; hpo configs add it with "
                        "jaxcap.experiments.hpo.search_space.add_study"
                    )
                out[section] = rules(resolve(owner))
                if section == "study":
                    out["search"] = resolve("jaxcap.experiments.hpo.search_space:SearchSpace")()
    return out


def build_plan(config: ml_collections.ConfigDict) -> Plan:
    """The config parsed once into the typed `Plan` a run is handed: every bucket (task, model,
    settings, members) and the experiment's own section, each built once by a constructor that
    raises `ConfigError` (one line naming the field) for anything a run could not do."""
    check_tree("config", config, schema(config))
    checks.check_runtime(config.runtime)
    buckets = []
    for i, (label, variant) in enumerate(variant_configs(config)):
        try:
            if label:
                check_tree("config", variant, schema(variant))
            bucket = build_bucket(variant, f"b{i}", label)
            buckets += split_levels(bucket, variant.sweep.get("levels_per_population", 0))
        except ConfigError as e:
            raise ConfigError(f"config.sweep.buckets[{i}] ({label}): {e}" if label else str(e)) from None
    if len(buckets) > len(config.sweep.buckets or [""]):  # populations of a split bucket: b0, b1, ...
        buckets = [dataclasses.replace(b, name=f"b{j}") for j, b in enumerate(buckets)]
    plan = Plan(
        experiment=config.experiment,
        seed=config.seed,
        buckets=tuple(buckets),
        runtime=from_section(Runtime, config.runtime),
    )
    return dataclasses.replace(plan, section=registry.section(config, plan))


# Names kept for callers that read better with them: both are the one parse, `build_plan`.
validate = checked_plan = build_plan

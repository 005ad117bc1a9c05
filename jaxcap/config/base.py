"""The base config every experiment starts from, its schema, and the variant helper.

Configs are Python files `configs/<experiment>.py` with `get_config(arg)` (big_vision style);
they call `base_config(task)` and override fields, never copy it. `validate` checks a whole
config against `schema(config)` before any compile.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import ml_collections

from jaxcap import fields as checks
from jaxcap import tasks
from jaxcap.config.registry import EXPERIMENTS, check, resolve
from jaxcap.core.population import DEFAULT_HPARAMS, HPARAM_NAMES, HPARAM_RULES
from jaxcap.core.runtime import Runtime
from jaxcap.core.train import EvalSettings, TrainSettings
from jaxcap.fields import Choice, ConfigError, Int, Str, TupleOf, check_tree, defaults, rules
from jaxcap.models import ModelConfig

if TYPE_CHECKING:
    from jaxcap.config.plan import Plan


def parse_arg(arg: str | None, variants: tuple[str, ...] = ("smoke", "full")) -> str:
    """The variant named after ':' in `--config configs/x.py:variant` ('default' when absent)."""
    if not arg:
        return "default"
    if arg not in variants:
        raise ConfigError(f"config variant: got {arg!r}; allowed: {', '.join(variants)} (or none)")
    return arg


def load_config(spec: str | Path) -> ml_collections.ConfigDict:
    """The config `--config path/x.py[:variant]` names, unlocked and not yet validated: what the
    launcher, the tests and the notebook all read (ml_collections' loader, minus its flags)."""
    path, _, arg = str(spec).partition(":")
    if not Path(path).is_file():
        raise ConfigError(f"--config: no such file {path!r}")
    module_spec = importlib.util.spec_from_file_location(f"_jaxcap_config_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(arg or None)


def base_config(task: str) -> ml_collections.ConfigDict:
    """Defaults for every field; the model defaults are the seed baseline."""
    c = ml_collections.ConfigDict()
    c.experiment = "population"
    c.seed = 0
    c.note = ""  # printed at start: e.g. why this run uses a smaller model than the baseline
    c.task = tasks.default_config(task)
    # model, hparams, train, eval and runtime: generated from the dataclass that owns each section
    # (a field is one `jaxcap.fields.setting` line there: its default and its rule)
    c.model = ml_collections.ConfigDict(defaults(ModelConfig))
    c.hparams = ml_collections.ConfigDict(DEFAULT_HPARAMS)
    spec = tasks.TASKS[task]().spec
    c.sweep = ml_collections.ConfigDict(
        dict(seeds=1, hparams={n: () for n in HPARAM_NAMES}, task={k: () for k in spec.knobs}, buckets=())
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
    if name not in tasks.TASKS:
        raise ConfigError(f"config.task.name: got {name!r}; allowed: {', '.join(tasks.TASKS)}")
    task_cls = tasks.TASKS[name]
    task_schema = {"name": Choice(tuple(tasks.TASKS)), **task_cls.SCHEMA}
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
                        "config.study: missing; hpo configs add it with jaxcap.config.search_space.add_study"
                    )
                out[section] = rules(resolve(owner))
                if section == "study":
                    out["search"] = resolve("jaxcap.config.search_space:SearchSpace")()
    return out


def _check_variant(config) -> None:
    """Cross-field checks of one bucket's config."""
    from jaxcap.config.plan import model_config

    if config.train.steps % config.train.chunk_steps:
        raise ConfigError(
            f"config.train.steps: got {config.train.steps}; allowed: a multiple of "
            f"config.train.chunk_steps ({config.train.chunk_steps})"
        )
    decays = [config.hparams.decay_steps, *config.sweep.hparams.decay_steps]
    if config.train.schedule == "constant" and any(decays):
        raise ConfigError(
            f"config.hparams.decay_steps: got {max(decays):g} with config.train.schedule 'constant'; "
            "allowed: 0, or a decaying schedule (config.train.schedule = 'linear' or 'cosine')"
        )
    if config.model.pos_encoding == "sinusoidal" and config.model.d_model % 2:
        raise ConfigError(
            f"config.model.d_model: got {config.model.d_model}; allowed: even with sinusoidal positions"
        )
    task = tasks.build(config.task.to_dict(), config.sweep.task.to_dict())
    task.check()
    _check_model_variants(config.model, task)
    model_config(config.model, task.spec, task)  # ModelConfig's own rules between fields (n_kv_heads)
    checks.check_sizes(config, task)
    for knob, values in config.sweep.task.items():
        for i, value in enumerate(values):
            try:
                tasks.build({**config.task.to_dict(), knob: value}).check()
            except ConfigError as e:
                raise ConfigError(f"config.sweep.task.{knob}[{i}]: {value!r}: {e}") from None
    readouts = {"sequence": ("auto", "all")}.get(task.spec.kind, ("auto", "last", "mean"))
    if config.model.readout not in readouts:
        raise ConfigError(
            f"config.model.readout: got {config.model.readout!r}; allowed for task "
            f"{task.spec.family} ({task.spec.kind}): {', '.join(readouts)}"
        )


def _check_model_variants(m, task) -> None:
    """Cross-field checks of the model's variant switches that need the task (jaxcap/models); the
    model's own rules between fields are ModelConfig's (checked when the plan builds it)."""
    from jaxcap.models.embeddings import task_numbers

    if m.pos_encoding == "rotary" and m.d_head % 2:
        raise ConfigError(f"config.model.d_head: got {m.d_head}; allowed: even with rotary positions")
    if task.causal and m.attention != "causal":
        raise ConfigError(
            f"config.model.attention: got {m.attention!r}; allowed for task {task.spec.family} "
            "(next-token prediction): causal"
        )
    if m.qat_activations and not m.qat_bits:
        raise ConfigError("config.model.qat_activations: got True; allowed: only with qat_bits > 0")
    if m.angular == "none":
        return
    n = m.angular_n or task_numbers(task)
    if not n:
        raise ConfigError(
            f"config.model.angular_n: got 0, and task {task.spec.family} exposes no numeric tokens; "
            "allowed: N > 0 (the modulus of the numbers)"
        )
    tokens = m.angular_tokens or n
    if m.angular in ("input", "both") and (task.spec.input_dim or tokens > task.spec.vocab_size):
        raise ConfigError(
            f"config.model.angular_tokens: got {tokens}; allowed: at most the task's vocabulary "
            f"({task.spec.vocab_size}), on a token task"
        )
    if m.angular in ("output", "both") and task.spec.kind == "regress":
        raise ConfigError(f"config.model.angular: got {m.angular!r}; allowed: none or input for regression")


def validate(config) -> Plan:
    """Raise ConfigError (one line naming the field) for anything a run could not do; else the
    config's `Plan`: its buckets and settings as typed, frozen objects, built once and handed
    down (the experiment's own checks are `jaxcap.config.registry.check`: `checked_plan`)."""
    from jaxcap.config.plan import make_plan, variant_configs  # plan builds tasks; keep `config` light

    check_tree("config", config, schema(config))
    checks.check_runtime(config.runtime)
    for i, (label, variant) in enumerate(variant_configs(config)):
        try:
            if label:
                check_tree("config", variant, schema(variant))
            _check_variant(variant)
        except ConfigError as e:
            raise ConfigError(f"config.sweep.buckets[{i}] ({label}): {e}" if label else str(e)) from None
    if "study" in config:
        from jaxcap.config.search_space import check_search

        for name, value, variant in check_search(config, schema(config)):
            try:
                _check_variant(variant)
            except ConfigError as e:
                raise ConfigError(f"config.search.{name}: choice {value!r}: {e}") from None
    return make_plan(config)


def checked_plan(config) -> Plan:
    """`validate`, then the experiment's own check (`jaxcap.config.registry.check`): the plan an
    experiment is handed, whose `section` is its typed view of the config sections it owns."""
    return dataclasses.replace(validate(config), section=check(config))

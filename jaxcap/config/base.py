"""The base config every experiment starts from, its schema, and the variant helper.

Configs are Python files `configs/<experiment>.py` with `get_config(arg)` (big_vision style);
they call `base_config(task)` and override fields, never copy it. `validate` checks a whole
config against `schema(config)` before any compile.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_collections

from jaxcap import fields as checks
from jaxcap import tasks
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.core.population import DEFAULT_HPARAMS, HPARAM_NAMES
from jaxcap.core.runtime import MATMUL_PRECISIONS
from jaxcap.core.train import SCHEDULES
from jaxcap.fields import Bool, Choice, ConfigError, Float, Int, Str, TupleOf, check_tree
from jaxcap.models import config as model_config

HPARAM_RULES = {
    "learning_rate": Float(0.0),
    "weight_decay": Float(0.0),
    "dropout": Float(0.0, 1.0, open_high=True),
    "warmup_steps": Float(0.0),
    "b2": Float(0.0, 1.0, open_high=True),
    "init_scale": Float(0.0),
    "label_smoothing": Float(0.0, 1.0, open_high=True),
    "decay_steps": Float(0.0),
}


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
    c.model = ml_collections.ConfigDict(
        dict(
            n_layers=2,
            d_model=256,
            n_heads=8,
            d_head=32,
            d_ff=1024,
            activation="gelu",
            norm="pre",
            pos_encoding="sinusoidal",
            attention="bidirectional",
            readout="auto",
            param_dtype="float32",
            compute_dtype="float32",
            # variant switches, all off (jaxcap/models/{norms,embeddings,residual,quantize}.py)
            norm_type="layer",
            qk_norm=False,
            n_kv_heads=0,
            mlp=True,
            residual="standard",
            qat_bits=0,
            qat_activations=False,
            angular="none",
            angular_n=0,
            angular_tokens=0,
            embed_std=1.0,  # token/position tables at init (jaxcap/models/config.py)
            embed_sqrt_d=True,
        )
    )
    c.hparams = ml_collections.ConfigDict(DEFAULT_HPARAMS)
    spec = tasks.TASKS[task]().spec
    c.sweep = ml_collections.ConfigDict(
        dict(seeds=1, hparams={n: () for n in HPARAM_NAMES}, task={k: () for k in spec.knobs}, buckets=())
    )
    c.train = ml_collections.ConfigDict(
        dict(
            steps=1000,
            chunk_steps=100,
            batch_size=128,
            schedule="constant",
            b1=0.9,
            eps=1e-8,
            clip_norm=0.0,
            loss_scale=1.0,
            # 'default': the backend's (true float32 on a CPU, TF32 on recent GPUs); 'highest'
            # asks for true float32 everywhere, at 0.61x the speed on an H100
            matmul_precision="default",
        )
    )
    # steps-to-threshold on the task's primary metric (accuracy 0.99; lower is better for NMSE)
    thr = spec.step_threshold
    # time_share: the most of a run spent evaluating; it sizes the fixed eval sample (jaxcap/core/train.py)
    c.eval = ml_collections.ConfigDict(
        dict(batch_size=1024, train_threshold=thr, val_threshold=thr, time_share=0.1)
    )
    c.runtime = ml_collections.ConfigDict(
        dict(
            # a checkpoint every checkpoint_minutes of wall time, every checkpoint_every chunks
            # (0: never by count), and at the end
            checkpoint_every=0,
            checkpoint_minutes=10.0,
            progress=True,
            tensorboard=False,  # event files in <workdir>/tensorboard (pip install 'jaxcap[tracking]')
            wandb="",  # a W&B project name logs the run there ('': off; pip install 'jaxcap[wandb]')
            compilation_cache="default",
            devices=0,  # devices the population is split over; 0: automatic (jaxcap/core/sharding.py)
            coordinator="",  # several processes: 'host:port' of process 0, or 'auto' (TPU pod, Slurm)
            num_processes=1,
            process_id=0,
            # a sweep worker silent this long is dead: its trials go to the others (hpo/claims.py)
            worker_grace_minutes=10.0,
        )
    )
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
        "model": {
            "n_layers": Int(1, 64),
            "d_model": Int(1),
            "n_heads": Int(1),
            "d_head": Int(1),
            "d_ff": Int(1),
            "activation": Choice(model_config.ACTIVATIONS),
            "norm": Choice(model_config.NORMS),
            "pos_encoding": Choice(model_config.POSITIONS),
            "attention": Choice(model_config.ATTENTIONS),
            "readout": Choice(("auto", *model_config.READOUTS)),
            "param_dtype": Choice(tuple(model_config.DTYPES)),
            "compute_dtype": Choice(tuple(model_config.DTYPES)),
            "norm_type": Choice(model_config.NORM_TYPES),
            "qk_norm": Bool(),
            "n_kv_heads": Int(0),
            "mlp": Bool(),
            "residual": Choice(model_config.RESIDUALS),
            "qat_bits": Choice(model_config.QAT_BITS),
            "qat_activations": Bool(),
            "angular": Choice(model_config.ANGULAR),
            "angular_n": Int(0),
            "angular_tokens": Int(0),
            "embed_std": Float(1e-6, 1e3),
            "embed_sqrt_d": Bool(),
        },
        "hparams": dict(HPARAM_RULES),
        "sweep": {
            "seeds": Int(1, 100_000),
            "buckets": TupleOf(Str()),
            "hparams": {n: TupleOf(rule) for n, rule in HPARAM_RULES.items()},
            "task": {k: TupleOf(task_cls.SCHEMA[k]) for k in task_cls().spec.knobs},
        },
        "train": {
            "steps": Int(1),
            "chunk_steps": Int(1),
            "batch_size": Int(1),
            "schedule": Choice(SCHEDULES),
            "b1": Float(0.0, 1.0, open_high=True),
            "eps": Float(0.0),
            "clip_norm": Float(0.0),
            "loss_scale": Float(1e-8),
            "matmul_precision": Choice(MATMUL_PRECISIONS),
        },
        "eval": {
            "batch_size": Int(1),
            "train_threshold": Float(0.0),
            "val_threshold": Float(0.0),
            "time_share": Float(0.0, 1.0, open_high=True),
        },
        "runtime": {
            "checkpoint_every": Int(0),
            "checkpoint_minutes": Float(0.0),
            "progress": Bool(),
            "tensorboard": Bool(),
            "wandb": Str(),
            "compilation_cache": Str(),
            "devices": Int(0),
            "coordinator": Str(),
            "num_processes": Int(1),
            "process_id": Int(0),
            "worker_grace_minutes": Float(0.01),
        },
    }
    for name, experiment in EXPERIMENTS.items():  # the sections an experiment owns (jaxcap.config.registry)
        for section, schema in experiment.sections:
            if config.get("experiment") == name or section in config:
                if section == "study" and ("study" not in config or "search" not in config):
                    raise ConfigError(
                        "config.study: missing; hpo configs add it with jaxcap.config.search_space.add_study"
                    )
                out[section] = dict(resolve(schema))
                if section == "study":
                    out["search"] = resolve("jaxcap.config.search_space:SearchSpace")()
    return out


def _check_variant(config) -> None:
    """Cross-field checks of one bucket's config."""
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
    """Cross-field checks of the model's variant switches (jaxcap/models)."""
    from jaxcap.models.embeddings import task_numbers

    if m.n_kv_heads and m.n_heads % m.n_kv_heads:
        raise ConfigError(
            f"config.model.n_kv_heads: got {m.n_kv_heads}; allowed: 0 or a divisor of n_heads ({m.n_heads})"
        )
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


def validate(config) -> None:
    """Raise ConfigError (one line naming the field) for anything a run could not do."""
    from jaxcap.config.plan import bucket_configs  # plan imports the trainer; keep `config` light

    check_tree("config", config, schema(config))
    checks.check_runtime(config.runtime)
    for i, (label, variant) in enumerate(bucket_configs(config)):
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

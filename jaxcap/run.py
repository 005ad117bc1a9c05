"""The host loop: build a population, train it chunk by chunk, evaluate, store, checkpoint.

`run(config, workdir)` is the whole experiment; `launch.py` is only flags around it, so tests
and notebooks call the same function. Between chunks (never inside one) the loop pulls the
eval metrics to the host, appends them to the results store, checkpoints the population with
the host cursor, and advances the progress bar. Rerunning on the same workdir resumes from
the newest checkpoint; a finished run says so and only prints its summary again.
"""

from __future__ import annotations

import dataclasses
import math
import time

import jax
import ml_collections
import numpy as np
from tqdm import tqdm

from jaxcap import summary, tasks
from jaxcap.checkpoint import PopulationCheckpoints
from jaxcap.config import validate
from jaxcap.models import ModelConfig, param_count
from jaxcap.models.config import MODEL_FIELDS
from jaxcap.population import HPARAM_NAMES, Member, grid_members, stack
from jaxcap.runtime import describe_devices, enable_compilation_cache, numerics
from jaxcap.store import Store
from jaxcap.tasks import Task
from jaxcap.train import PopulationProgram, TrainSettings, make_population


@dataclasses.dataclass
class Bucket:
    """Everything static about one population: one bucket = one compile."""

    name: str
    task: Task
    model: ModelConfig
    settings: TrainSettings
    members: list[Member]


def model_config(model: ml_collections.ConfigDict, spec: tasks.TaskSpec) -> ModelConfig:
    return ModelConfig.for_task(spec, **{name: model[name] for name in MODEL_FIELDS})


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
        dropout=any(m.hparams["dropout"] > 0 for m in members),
    )


def plan(config: ml_collections.ConfigDict) -> list[Bucket]:
    """The buckets of a config: here one, the grid of task knobs x hparams x seeds."""
    task = tasks.build(config.task.to_dict(), config.sweep.task.to_dict())
    members = grid_members(
        config.hparams.to_dict(),
        config.sweep.hparams.to_dict(),
        task.default_knobs(),
        config.sweep.task.to_dict(),
        config.sweep.seeds,
    )
    return [
        Bucket("b0", task, model_config(config.model, task.spec), train_settings(config, members), members)
    ]


def _fresh_cursor(n: int) -> dict:
    return {
        "step": 0,
        "n_evals": 0,
        "first_train": [None] * n,
        "first_val": [None] * n,
        "best_val": [0.0] * n,
        "last": {},
    }


def _update_cursor(cursor: dict, step: int, host: dict[str, np.ndarray], eval_cfg) -> None:
    for i in range(len(cursor["first_train"])):
        if cursor["first_train"][i] is None and host["train_accuracy"][i] >= eval_cfg.train_threshold:
            cursor["first_train"][i] = step
        if cursor["first_val"][i] is None and host["val_accuracy"][i] >= eval_cfg.val_threshold:
            cursor["first_val"][i] = step
        cursor["best_val"][i] = max(cursor["best_val"][i], float(host["val_accuracy"][i]))
    cursor["last"] = {k: [float(x) for x in v] for k, v in host.items()}
    cursor["step"], cursor["n_evals"] = step, cursor["n_evals"] + 1


def member_rows(bucket: Bucket, cursor: dict) -> list[dict]:
    """The final members.jsonl rows: what each member was, how it ended, what it reached."""
    spec, rows = bucket.task.spec, []
    n_params = param_count(bucket.model)
    for i, member in enumerate(bucket.members):
        final = {k: v[i] for k, v in cursor["last"].items()}
        status = "diverged" if final.get("diverged") else "ok"
        value = final.get(spec.success_metric)
        rows.append(
            {
                "bucket": bucket.name,
                "member": i,
                "seed": member.seed,
                "trial": member.trial,
                "status": status,
                "family": spec.family,
                "knobs": member.knobs,
                "hparams": member.hparams,
                "complexity_bits": bucket.task.complexity_bits(member.knobs),
                "chance": bucket.task.chance(member.knobs),
                "success_metric": spec.success_metric,
                "success_threshold": spec.success_threshold,
                "success": bool(status == "ok" and value is not None and value >= spec.success_threshold),
                "final": final,
                "best_val_accuracy": cursor["best_val"][i],
                "steps_to_train_threshold": cursor["first_train"][i],
                "steps_to_val_threshold": cursor["first_val"][i],
                "steps": cursor["step"],
                "n_params": n_params,
                "model": dataclasses.asdict(bucket.model),
            }
        )
    return rows


def host_metrics(program: PopulationProgram, state, stats, hparams, data) -> dict[str, np.ndarray]:
    metrics = program.evaluate(state, hparams, data)
    metrics = {**metrics, "chunk_loss": stats.loss, "grad_norm": stats.grad_norm, "diverged": state.diverged}
    host = {k: np.asarray(v, np.float64) for k, v in jax.device_get(metrics).items()}
    host["gap"] = host["train_accuracy"] - host["val_accuracy"]
    return host


def train_bucket(bucket: Bucket, config: ml_collections.ConfigDict, store: Store) -> list[dict]:
    """Train one bucket's population to the end (resuming if a checkpoint exists)."""
    settings, members = bucket.settings, bucket.members
    program = make_population(settings, bucket.task, bucket.model)
    keys, hparams = stack(members, config.seed)
    abstract = jax.eval_shape(program.init, keys, hparams)
    state_mb = sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(abstract)) / 2**20
    print(
        f"[{bucket.name}] {len(members)} members x {param_count(bucket.model):,} params "
        f"({bucket.model.describe()}); population state {state_mb:.1f} MiB",
        flush=True,
    )

    ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
    restored = ckpts.restore(abstract)
    if restored is None:
        state, cursor = program.init(keys, hparams), _fresh_cursor(len(members))
    else:
        state, cursor = restored
        print(f"[{bucket.name}] resuming from step {cursor['step']}", flush=True)
    store.truncate(bucket.name, cursor["n_evals"])
    data = program.data(keys, hparams)

    n_chunks = settings.steps // settings.chunk_steps
    bar = tqdm(
        total=settings.steps,
        initial=cursor["step"],
        unit="step",
        desc=bucket.name,
        disable=not config.runtime.progress,
        dynamic_ncols=True,
    )
    for chunk in range(cursor["step"] // settings.chunk_steps, n_chunks):
        state, stats = program.chunk(state, hparams, data)
        host = host_metrics(program, state, stats, hparams, data)
        step = (chunk + 1) * settings.chunk_steps
        _update_cursor(cursor, step, host, config.eval)
        store.append_evals(bucket.name, step, host)
        if (chunk + 1) % config.runtime.checkpoint_every == 0 or chunk + 1 == n_chunks:
            ckpts.save(step, state, cursor)
        bar.update(settings.chunk_steps)
        bar.set_postfix(
            val_acc=f"{np.median(host['val_accuracy']):.3f}", diverged=int(host["diverged"].sum())
        )
        if host["diverged"].all():
            ckpts.close()
            raise RuntimeError(f"every member diverged by step {step}; lower config.hparams.learning_rate")
    bar.close()
    ckpts.close()
    rows = member_rows(bucket, cursor)
    store.add_member_rows(rows)
    return rows


def identity(config: ml_collections.ConfigDict) -> dict:
    """The part of a config that defines the run (runtime options may change on resume)."""
    out = config.to_dict()
    out.pop("runtime")
    return out


def run(config: ml_collections.ConfigDict, workdir: str) -> list[dict]:
    """Run (or resume) the experiment of `config` in `workdir`; returns the members' rows."""
    validate(config)
    store = Store(workdir)
    store.write_config(identity(config))
    if config.runtime.compilation_cache != "off":
        enable_compilation_cache(
            None if config.runtime.compilation_cache == "default" else config.runtime.compilation_cache
        )
    print(f"jaxcap: {describe_devices()}; workdir {store.root}", flush=True)
    if config.note:
        print(f"note: {config.note}", flush=True)
    needs_x64 = "float64" in (config.model.param_dtype, config.model.compute_dtype)
    start = time.time()
    with numerics(config.train.matmul_precision, needs_x64):
        buckets = plan(config)
        finished = store.finished_buckets()
        if all(b.name in finished for b in buckets):
            print(f"finished: {store.root} already holds this run's results", flush=True)
        for bucket in buckets:
            if bucket.name not in finished:
                train_bucket(bucket, config, store)
    rows = store.member_rows()
    print(summary.format_table(summary.levels(rows, HPARAM_NAMES)), flush=True)
    figure = summary.plot_levels(rows, store.root / "accuracy_vs_complexity.png")
    print(
        f"wrote {store.members_path.name}, {store.evals_path.name}, {store.curves_path.name}, "
        f"{figure.name} in {store.root} ({time.time() - start:.0f} s)",
        flush=True,
    )
    return rows

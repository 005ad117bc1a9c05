"""The host loop of one population: build it, train it chunk by chunk, evaluate, store, checkpoint.

`train_bucket` is what every experiment calls per population (jaxcap.experiments). Between
chunks (never inside one) the loop pulls the eval metrics to the host, appends them to the
results store (and any metric writer, jaxcap.training.writers), checkpoints the population with
the host cursor, and advances the progress bar. Rerunning resumes from the newest checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable

import jax
import numpy as np

from jaxcap import tasks
from jaxcap.config.plan import Bucket
from jaxcap.core import compiles, flops, sharding
from jaxcap.core.checkpoint import PopulationCheckpoints
from jaxcap.core.population import stack
from jaxcap.core.progress import tqdm
from jaxcap.core.runtime import PhaseClock, Runtime
from jaxcap.core.train import EvalSettings, PopulationProgram, make_population
from jaxcap.fields import ConfigError
from jaxcap.models import param_count
from jaxcap.results import tables
from jaxcap.results.outcomes import member_success
from jaxcap.results.records import Cursor, MemberRow
from jaxcap.results.store import Store
from jaxcap.tasks import holdout
from jaxcap.tasks.contract import SPLITS, Task
from jaxcap.training import writers


class AllDiverged(RuntimeError):
    """Every member of a population diverged (said in one line by the launcher)."""


StopFn = Callable[[Cursor], bool]
# (cursor, host metrics) -> bool mask [P] of members frozen from now on, or None (no change)
OnEvalFn = Callable[[Cursor, dict], "np.ndarray | None"]
# (state_P, hparams_P, data_P) -> more host metrics [P] for the same eval (capacity: bits stored)
ExtraMetricsFn = Callable[..., "dict[str, np.ndarray]"]


def _update_cursor(
    cursor: Cursor, step: int, host: dict[str, np.ndarray], spec, eval_cfg: EvalSettings
) -> Cursor:
    """Record thresholds crossed and the best validation value of the task's primary metric."""
    train, val = host[f"train_{spec.metric}"], host[f"val_{spec.metric}"]
    first_train, first_val, best_val = list(cursor.first_train), list(cursor.first_val), list(cursor.best_val)
    for i in range(len(first_train)):
        if first_train[i] is None and spec.reached(float(train[i]), eval_cfg.train_threshold):
            first_train[i] = step
        if first_val[i] is None and spec.reached(float(val[i]), eval_cfg.val_threshold):
            first_val[i] = step
        best = best_val[i]
        if np.isfinite(val[i]) and (best is None or spec.reached(float(val[i]), best)):
            best_val[i] = float(val[i])
    return dataclasses.replace(
        cursor,
        step=step,
        n_evals=cursor.n_evals + 1,
        first_train=first_train,
        first_val=first_val,
        best_val=best_val,
        last={k: [float(x) for x in v] for k, v in host.items()},
    )


def _baseline_fields(task, i: int, baselines: dict[str, np.ndarray], knobs: dict) -> dict:
    """A member's chance, shortcut and split-overlap fields (jaxcap.core.baselines), for the metrics a
    reader compares: the success and selection metrics and the primary metric on every split."""
    spec = task.spec
    wanted = {spec.success_metric, spec.select_metric, *(f"{s}_{spec.metric}" for s in SPLITS)}
    pick = lambda prefix: {
        m: float(baselines[f"{prefix}_{m}"][i]) for m in wanted if f"{prefix}_{m}" in baselines
    }
    chance, shortcut = pick("chance"), pick("shortcut")
    return {
        "chance": chance.get(spec.success_metric),
        "chance_nominal": task.chance(knobs),  # the same quantity from the task's definition
        "shortcut": shortcut.get(spec.success_metric),
        "shortcut_name": task.shortcut_name or None,
        "baselines": {"chance": chance, **({"shortcut": shortcut} if shortcut else {})},
        "overlap": {
            "val": float(baselines["overlap_val"][i]),
            "test": float(baselines["overlap_test"][i]),
            "guaranteed": task.overlap_guaranteed(),
        },
    }


def _task_name(task: Task) -> str | None:
    """A task from outside jaxcap: the path it was loaded by (None for a built-in task)."""
    name = tasks.task_name(task)
    return None if tasks.is_builtin(name) else name


def member_rows(bucket: Bucket, cursor: Cursor, baselines: dict[str, np.ndarray]) -> list[MemberRow]:
    """The final members.jsonl rows: what each member was, how it ended, what it reached, and
    what it is compared with (chance, shortcut, train/val/test overlap)."""
    spec, rows = bucket.task.spec, []
    n_params = param_count(bucket.model)
    frozen = cursor.is_frozen(len(bucket.members))
    for i, member in enumerate(bucket.members):
        final = {k: v[i] for k, v in cursor.last.items()}
        status = "diverged" if final.get("diverged") else "ok"
        if status == "ok" and frozen[i]:
            status = "pruned"  # frozen by an on_eval hook (a pruned Optuna trial)
        value = final.get(spec.success_metric)
        rows.append(
            MemberRow(
                bucket=bucket.name,
                bucket_label=bucket.label,
                member=i,
                seed=member.seed,
                trial=member.trial,
                study=member.study,
                status=status,
                family=spec.family,
                task_name=_task_name(bucket.task),
                knobs=member.knobs,
                task={**dataclasses.asdict(bucket.task), **member.knobs},  # every difficulty knob
                hparams=member.hparams,
                complexity_bits=bucket.task.complexity_bits(member.knobs),
                **_baseline_fields(bucket.task, i, baselines, member.knobs),
                success_metric=spec.success_metric,
                select_metric=spec.select_metric,
                success_threshold=spec.success_threshold,
                higher_is_better=spec.higher_is_better,
                success=member_success(status, value, spec.success_threshold, spec.higher_is_better),
                final=final,
                metric=spec.metric,
                best_val=cursor.best_val[i],
                steps_to_train_threshold=cursor.first_train[i],
                steps_to_val_threshold=cursor.first_val[i],
                steps=cursor.step,
                n_params=n_params,
                model=dataclasses.asdict(bucket.model),
            )
        )
    return rows


def check_held_out(bucket: Bucket, data: dict) -> None:
    """A val or test split with no scored example is a config error, not a silent 0: a sampled
    task whose input space is too small to reach the hold-out's hash buckets (jaxcap.tasks.holdout)."""
    for name in ("val", "test"):
        weights = np.asarray(sharding.to_host(data[name].weights))
        scored = (weights.reshape(weights.shape[0], weights.shape[1], -1).sum(-1) > 0).sum(1)
        if (scored == 0).any():
            i = int(np.flatnonzero(scored == 0)[0])
            raise ConfigError(
                f"config.task: the {name} split of member {i} ({bucket.task.spec.family} "
                f"{bucket.members[i].knobs}) holds no example: its input space is too small for a "
                f"hashed hold-out (1/{holdout.N_BUCKETS} of the inputs each for val and test); allowed: a "
                "larger input space, or train_fraction > 0 where the task enumerates its inputs"
            )


def _checkpoint_due(runtime: Runtime, chunk: int, saved_at: float) -> bool:
    """Every `checkpoint_every` chunks (0: never by count) or `checkpoint_minutes` after the last
    save (0: never by time); the loop also saves at the end. A kill loses what came after."""
    every, minutes = runtime.checkpoint_every, runtime.checkpoint_minutes
    return bool(every and chunk % every == 0) or bool(minutes and time.monotonic() - saved_at >= 60 * minutes)


@functools.lru_cache(maxsize=8)
def _cached_program(settings, task, model, mesh) -> PopulationProgram:
    return make_population(settings, task, model, mesh)


def population_program(settings, task, model, mesh=None) -> PopulationProgram:
    """One set of jitted functions per static shape, so buckets of the same shape (the rounds of
    an Optuna sweep) reuse its compiled programs instead of tracing and compiling again."""
    try:
        return _cached_program(settings, task, model, mesh)
    except TypeError:  # a task with an unhashable field: build it afresh
        return make_population(settings, task, model, mesh)


def host_metrics(program: PopulationProgram, state, stats, hparams, data, spec) -> dict[str, np.ndarray]:
    metrics = program.evaluate(state, hparams, data)
    metrics = {**metrics, "chunk_loss": stats.loss, "grad_norm": stats.grad_norm, "diverged": state.diverged}
    host = {
        k: np.asarray(v, np.float64) for k, v in sharding.to_host({**metrics, "frozen": state.frozen}).items()
    }
    # A diverged or frozen member trains no more: its chunk statistics are missing (null in
    # evals.jsonl, NaN in curves.zarr), never a 0.0 that reads as a perfect loss.
    idle = (host["diverged"] > 0) | (host.pop("frozen") > 0)
    for name in ("chunk_loss", "grad_norm"):
        host[name] = np.where(idle, np.nan, host[name])
    # generalization gap: how much better the primary metric is on train than on val
    gap = host[f"train_{spec.metric}"] - host[f"val_{spec.metric}"]
    host["gap"] = gap if spec.higher_is_better else -gap
    return host


def train_bucket(
    bucket: Bucket,
    store: Store,
    runtime: Runtime,
    stop_fn: StopFn | None = None,
    on_eval: OnEvalFn | None = None,
    extra_metrics: ExtraMetricsFn | None = None,
) -> list[MemberRow]:
    """Train one bucket's population to the end, resuming if a checkpoint exists.

    `stop_fn(cursor)` is asked after every eval; True ends training early (e.g. once a curve has
    flattened). The decision is checkpointed, so a resumed run stops at the same point.
    `on_eval(cursor, host)` is asked first and may return a mask of members to freeze
    (`MemberState.frozen`, e.g. pruned trials): their parameters stop changing, their rows end
    with status 'pruned', and all members diverging ends the bucket instead of raising.
    `extra_metrics(state, hparams, data)` adds host metrics to every eval (stored, and seen by
    both hooks in `cursor.last`).
    """
    with compiles.counting() as compiled:
        return _train_bucket(bucket, store, runtime, stop_fn, on_eval, extra_metrics, compiled)


def _train_bucket(bucket, store, runtime, stop_fn, on_eval, extra_metrics, compiled) -> list[MemberRow]:
    settings, members = bucket.settings, bucket.members
    spec = bucket.task.spec
    mesh = sharding.population_mesh(len(members), runtime.devices)
    program = population_program(settings, bucket.task, bucket.model, mesh)
    keys, hparams = sharding.put(stack(members, bucket.seed), mesh)
    abstract = jax.eval_shape(program.init, keys, hparams)
    state_mb = sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(abstract)) / 2**20
    label = f" {bucket.label}" if bucket.label else ""
    where = f" over {mesh.size} devices" if mesh.size > 1 else ""
    print(
        f"[{bucket.name}{label}] {len(members)} members x {param_count(bucket.model):,} params "
        f"({bucket.model.describe()}); population state {state_mb:.1f} MiB{where}",
        flush=True,
    )

    ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
    restored = ckpts.restore(sharding.abstract(abstract, mesh))
    if restored is None:
        state, cursor = program.init(keys, hparams), Cursor.fresh(len(members))
    else:
        state, cursor = restored[0], Cursor.from_json(restored[1])
        print(f"[{bucket.name}] resuming from step {cursor.step}", flush=True)
    store.truncate(bucket.name, cursor.n_evals)
    data = program.data(keys, hparams)
    check_held_out(bucket, data)

    n_chunks = settings.steps // settings.chunk_steps
    bar = tqdm(
        total=settings.steps,
        initial=cursor.step,
        unit="step",
        desc=bucket.name,
        disable=not runtime.progress,
        dynamic_ncols=True,
    )
    chunk = cursor.step // settings.chunk_steps
    runs = writers.member_runs(bucket.name, members, bucket.label, bucket.task.spec.family)
    bits = [bucket.task.complexity_bits(m.knobs) for m in members]
    coords = tables.member_coords(members, bucket.label, bits)  # curves.zarr's; level, seed in evals
    fields = tuple(tables.eval_fields(coords, tuple(members[0].hparams)))
    clock, saved_at = PhaseClock(), time.monotonic()
    while chunk < n_chunks and not cursor.stopped:
        first = not clock.count["compile"]  # the first chunk and eval compile their programs
        with clock("compile" if first else "train"):
            state, stats = program.chunk(state, hparams, data)
            jax.block_until_ready(stats)  # so that eval is timed apart (one dispatch latency)
        with clock("compile" if first else "eval"):
            host = host_metrics(program, state, stats, hparams, data, spec)
            if extra_metrics is not None:
                host.update(extra_metrics(state, hparams, data))
        chunk, step = chunk + 1, (chunk + 1) * settings.chunk_steps
        cursor = _update_cursor(cursor, step, host, spec, bucket.eval)
        frozen = on_eval(cursor, host) if on_eval is not None else None
        if frozen is not None:
            cursor = dataclasses.replace(cursor, frozen=[bool(f) for f in frozen])
            state = state.replace(frozen=sharding.put(np.asarray(cursor.frozen), mesh))
        cursor = dataclasses.replace(cursor, stopped=bool(stop_fn and stop_fn(cursor)))
        due = _checkpoint_due(runtime, chunk, saved_at) or chunk == n_chunks or cursor.stopped
        with clock("store"):  # curves.zarr's consolidated metadata walks every bucket: at saves only
            store.append_evals(bucket.name, step, host, coords, fields, consolidate=due)
            writers.active().write_eval(step, host, runs)  # TensorBoard / W&B, if on
        if due:
            with clock("checkpoint"):
                ckpts.save(step, state, cursor.to_json())
            saved_at = time.monotonic()
        bar.update(settings.chunk_steps)
        bar.set_postfix(
            {f"val_{spec.metric}": f"{np.median(host[f'val_{spec.metric}']):.3f}"},
            diverged=int(host["diverged"].sum()),
        )
        if host["diverged"].all() and on_eval is None:
            ckpts.close()
            raise AllDiverged(
                f"every member diverged by step {step}; allowed: a smaller config.hparams.learning_rate "
                "(or config.train.clip_norm > 0)"
            )
    bar.close()
    with clock("checkpoint"):  # waits for the last asynchronous save
        ckpts.close()
    baselines = {
        k: np.asarray(v, np.float64) for k, v in sharding.to_host(program.baselines(hparams, data)).items()
    }
    if clock.count["compile"]:  # programs: compiled or read from the persistent cache, this bucket
        model_flops = flops.train_flops(bucket.model, settings.batch_size)  # per model-step
        peak = flops.devices_peak(bucket.model.compute_dtype, settings.matmul_precision, mesh.size)
        if not compiled.programs:  # its programs reused in memory: the first chunk compiled nothing
            clock.seconds["first chunk"] = clock.seconds.pop("compile")
        summary = clock.summary(len(members), settings.chunk_steps, model_flops, peak)
        print(f"[{bucket.name}] {summary}; {compiled.programs} programs compiled", flush=True)
    rows = member_rows(bucket, cursor, baselines)
    store.add_member_rows(rows)
    writers.active().write_final(rows, runs)  # test metrics, once; HParams; the members' table
    store.check_tables(bucket.name, len(members), cursor)
    return rows

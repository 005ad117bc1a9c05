"""The capacity experiment: per architecture, bits stored against exposures per item, for
random datasets grown until the bits stored plateau.

`config.sweep.buckets` lists the architectures (e.g. "model.d_model=16,model.n_heads=2"). Round 0
trains the dataset sizes whose bits are `capacity.bits_per_param_grid` times the architecture's
parameter count (so each grid brackets its own capacity), or `config.sweep.task.dataset_size`
when that grid is empty. Every size is one population (learning rates × seeds) trained to the
last of `capacity.exposures` (steps × batch / n, jaxcap/capacity_curve.py): all its members
share n, so they pass each budget at the same step. All sizes of a round share one compiled
program: the task draws the round's largest n for every member and n is a traced knob
(`jaxcap.tasks.random_data`), so a population per size costs no compile and each size trains
only the steps its own budget needs (a population mixing sizes would run every member for the
largest size's steps). After every chunk the whole training set is scored (bits stored per
member), and the budgets passed are recorded in the checkpointed cursor; capacity.jsonl gets one
row per member with the bits at every budget. If the sizes have not plateaued, the next round
adds larger ones (`capacity.growth`, `capacity.extend`), up to `capacity.max_rounds` rounds.

Rerunning resumes: a measured size is skipped, a trained one is read from its checkpoint, an
interrupted one resumes inside `train_bucket` with its exposure record.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time

import jax
import ml_collections
import numpy as np

from jaxcap import capacity, capacity_curve, capacity_report, sharding
from jaxcap.checkpoint import PopulationCheckpoints
from jaxcap.models import param_count
from jaxcap.plan import Bucket, bucket_configs, plan
from jaxcap.population import stack
from jaxcap.run import population_program, train_bucket
from jaxcap.runtime import numerics
from jaxcap.store import Store, clean, read_jsonl, write_atomic
from jaxcap.tasks.random_data import RandomData
from jaxcap.validate import ConfigError

ROWS = "capacity.jsonl"
TIMES = "capacity_time.jsonl"  # wall seconds per size and process (kept out of ROWS: resumes differ)


def first_sizes(config: ml_collections.ConfigDict, label: str) -> list[int]:
    """Round 0's sizes for one architecture: from `capacity.bits_per_param_grid` and its
    parameter count, or else `sweep.task.dataset_size`."""
    grid = tuple(config.capacity.bits_per_param_grid)
    if not grid:
        return sorted(set(config.sweep.task.get("dataset_size", ()) or (config.task.dataset_size,)))
    [bucket] = plan(_only(config, label))
    per_example = bucket.task.complexity_bits({"dataset_size": 1})
    return capacity.sizes_for(grid, param_count(bucket.model), per_example)


def largest_size(config: ml_collections.ConfigDict, label: str) -> int:
    sizes = first_sizes(config, label)
    for _ in range(config.capacity.max_rounds - 1):
        sizes = capacity.next_sizes(sizes, config.capacity.growth, config.capacity.extend)
    return max(sizes)


def check(config: ml_collections.ConfigDict) -> None:
    """What `config.validate` cannot know: the task suits the experiment at every size it may
    reach, and every size reaches the last exposure budget within `train.steps`."""
    budgets = tuple(config.capacity.exposures)
    if not budgets or any(b <= a for a, b in zip(budgets, budgets[1:])):
        raise ConfigError(
            f"config.capacity.exposures: got {budgets}; allowed: a non-empty ascending tuple of "
            "exposures per item (e.g. (10, 100, 1000))"
        )
    for i, (label, variant) in enumerate(bucket_configs(config)):
        where = f"config.sweep.buckets[{i}] ({label}): " if label else ""
        [bucket] = plan(_only(variant, ""))
        if not isinstance(bucket.task, RandomData):
            raise ConfigError(
                f"config.task.name: got {variant.task.name!r}; allowed: random_labels, random_tokens"
            )
        if bucket.task.spec.kind == "sequence" and variant.model.attention != "causal":
            raise ConfigError(
                f"{where}config.model.attention: got {variant.model.attention!r}; allowed: causal "
                "(next-token prediction must not see the token it predicts)"
            )
        if variant.train.schedule != "constant":
            raise ConfigError(
                f"{where}config.train.schedule: got {variant.train.schedule!r}; allowed: constant (the "
                "bits at an exposure budget must not depend on where train.steps ends a decay)"
            )
        top, smallest = largest_size(config, label), min(first_sizes(config, label))
        try:
            dataclasses.replace(bucket.task, max_dataset_size=top).check()
        except ConfigError as e:
            raise ConfigError(f"{where}{e} (sizes may grow to {top} in config.capacity.max_rounds)") from None
        t = variant.train
        need = -(-capacity_curve.steps_to(budgets[-1], top, t.batch_size) // t.chunk_steps) * t.chunk_steps
        if t.steps < need:
            raise ConfigError(
                f"{where}config.train.steps: got {t.steps}; allowed: >= {need} ({budgets[-1]:g} "
                f"exposures of n = {top} at batch {t.batch_size}, in chunks of {t.chunk_steps})"
            )
        if t.chunk_steps * t.batch_size > budgets[-1] * smallest:
            raise ConfigError(
                f"{where}config.train.chunk_steps: got {t.chunk_steps}; allowed: at most "
                f"{int(budgets[-1] * smallest // t.batch_size)} (the first eval must come before "
                f"n = {smallest} reaches the last budget, {budgets[-1]:g} exposures)"
            )


def _only(config: ml_collections.ConfigDict, label: str, sizes: list[int] | None = None):
    """A copy of `config` with one architecture (bucket label) and the given dataset sizes."""
    variant = ml_collections.ConfigDict(config.to_dict())
    variant.sweep.buckets = (label,) if label else ()
    if sizes is not None:
        variant.sweep.task.dataset_size = tuple(sizes)
    return variant


def size_bucket(config, arch: int, label: str, sizes: list[int], size: int) -> Bucket:
    """The population of one dataset size in a round of `sizes`: its task draws the round's
    largest n, so every size of the round has the same shapes and one compiled program."""
    variant = _only(config, label, [size])
    variant.task.dataset_size = variant.task.max_dataset_size = max(sizes)
    [bucket] = plan(variant)
    bucket.name = f"b{arch}n{size}"
    return bucket


@functools.lru_cache(maxsize=8)
def _scores(task, model, batch_size: int):
    return capacity.make_scores(task, model, batch_size)  # one compile per round's shapes


def extra_metrics_for(bucket: Bucket):
    """`extra_metrics` for `train_bucket`: every eval also scores each member's training set
    per item (bits stored, net bits, exact recall), summed on the host in float64."""
    scores = _scores(bucket.task, bucket.model, bucket.settings.eval_batch_size)
    sizes = [int(m.knobs["dataset_size"]) for m in bucket.members]

    def extra(state, hparams, data) -> dict[str, np.ndarray]:
        per_member = capacity.totals(sharding.to_host(scores(state.params, hparams, data)), sizes)
        return {k: np.array([t[k] for t in per_member], np.float64) for k in per_member[0]}

    return extra


def measure(
    bucket: Bucket, store: Store, arch: int, round_: int, cap: ml_collections.ConfigDict
) -> list[dict]:
    """capacity.jsonl rows of a trained size: the exposure record of its last checkpoint."""
    mesh = sharding.population_mesh(len(bucket.members), bucket.config.runtime.devices)
    program = population_program(bucket.settings, bucket.task, bucket.model, mesh)
    keys, hparams = sharding.put(stack(bucket.members, bucket.config.seed), mesh)
    ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
    state, cursor = ckpts.restore(sharding.abstract(jax.eval_shape(program.init, keys, hparams), mesh))
    ckpts.close()
    budgets, batch = list(cap.exposures), bucket.settings.batch_size
    at, step = cursor["exposure"]["at"], int(cursor["step"])
    diverged = sharding.to_host(state.diverged)
    rows = []
    for i, member in enumerate(bucket.members):
        n = int(member.knobs["dataset_size"])
        bits = bucket.task.complexity_bits(member.knobs)
        rows.append(
            {
                "bucket": bucket.name,
                "arch": arch,
                "arch_label": bucket.label,
                "round": round_,
                "member": i,
                "seed": member.seed,
                "learning_rate": member.hparams["learning_rate"],
                "dataset_size": n,
                "dataset_bits": float(bits),
                "batch_size": batch,
                "exposures": budgets,
                "bits_at": at["bits_stored"][i],
                "net_bits_at": at["net_bits"][i],
                "exact_at": at["exact_fraction"][i],
                "bits_stored": at["bits_stored"][i][-1],  # at the last budget: C_mem's measure
                "net_bits": at["net_bits"][i][-1],
                "exact_fraction": at["exact_fraction"][i][-1],
                "ce_bits_per_item": cursor["last"]["ce_bits_per_item"][i],  # at the final eval
                "saturated": capacity_curve.member_saturated(
                    budgets, at["bits_stored"][i], bits, cap.saturation_tol
                ),
                "diverged": bool(diverged[i]),
                "steps": step,
                "final_exposures": capacity_curve.exposures(step, batch, n),
                "n_params": param_count(bucket.model),
                "family": bucket.task.spec.family,
                "model": dataclasses.asdict(bucket.model),
            }
        )
    return rows


def _save_rows(store: Store, rows: list[dict]) -> None:
    names = {r["bucket"] for r in rows}
    kept = [r for r in read_jsonl(store.root / ROWS) if r["bucket"] not in names]
    text = "".join(json.dumps(clean(r), sort_keys=True) + "\n" for r in kept + rows)
    write_atomic(store.root / ROWS, text)


def _bpp(points: list[dict]) -> str:
    return ", ".join("—" if p["bits_per_param"] is None else f"{p['bits_per_param']:.2f}" for p in points)


def train_size(config, store: Store, bucket: Bucket, arch: int, round_: int) -> list[dict]:
    """Train (or resume) one size to the last exposure budget and measure it."""
    cap, tic = config.capacity, time.time()
    sizes = [int(m.knobs["dataset_size"]) for m in bucket.members]
    model = bucket.config.model
    with numerics(
        bucket.config.train.matmul_precision, "float64" in (model.param_dtype, model.compute_dtype)
    ):
        if bucket.name not in store.finished_buckets():
            stop_fn = capacity_curve.make_stop_fn(sizes, bucket.settings.batch_size, cap.exposures)
            train_bucket(bucket, store, config.runtime, stop_fn, extra_metrics=extra_metrics_for(bucket))
        rows = measure(bucket, store, arch, round_, cap)
    _save_rows(store, rows)
    with open(store.root / TIMES, "a") as f:
        f.write(json.dumps({"bucket": bucket.name, "wall_s": time.time() - tic}) + "\n")
    return rows


def capacity_experiment(config: ml_collections.ConfigDict, store: Store) -> list[dict]:
    """Train and measure every architecture until its sizes plateau; print and write the report."""
    check(config)
    cap = config.capacity
    for arch, (label, _) in enumerate(bucket_configs(config)):
        sizes, seen = first_sizes(config, label), []
        for round_ in range(cap.max_rounds):
            for size in sizes:
                bucket = size_bucket(config, arch, label, sizes, size)
                done = [r for r in read_jsonl(store.root / ROWS) if r["bucket"] == bucket.name]
                seen += done or train_size(config, store, bucket, arch, round_)
                mine = [r for r in seen if r["bucket"] == bucket.name]
                print(
                    f"[{bucket.name}] n = {size} ({mine[0]['dataset_bits']:,.0f} bits): bits/param at "
                    f"{', '.join(f'{e:g}' for e in cap.exposures)} exposures: "
                    + _bpp(capacity_curve.curve(mine, mine[0]["n_params"])),
                    flush=True,
                )
            [summary] = capacity.summarize(seen, cap.plateau_tol, cap.saturation_tol)
            flat = summary["flat"]
            gain = "—" if flat["gain"] is None else f"{flat['gain']:+.1%}"
            print(
                f"[b{arch}] {summary['label'] or 'base model'}: C_mem {summary['c_mem']:,.0f} bits "
                f"({summary['bits_per_param']:.2f} bits/param) at {cap.exposures[-1]:g} exposures; gain over "
                f"the last doubling {gain} ({'flat' if flat['flat'] else 'still gaining'}); sizes "
                f"{'plateaued' if summary['plateau'] else 'not plateaued'}",
                flush=True,
            )
            if summary["plateau"]:
                break
            sizes = capacity.next_sizes(sizes, cap.growth, cap.extend)
    written = capacity_report.write_report(store)
    print(capacity_report.format_text(store), flush=True)
    print(f"wrote {ROWS} and {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}")
    return read_jsonl(store.root / ROWS)

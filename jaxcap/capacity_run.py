"""The capacity experiment: per architecture, grow a random dataset until the bits stored plateau.

`config.sweep.buckets` lists the architectures (e.g. "model.d_model=16,model.n_heads=2"). Each
is trained in rounds; a round is one population — dataset sizes × learning rates × seeds — and
one compile, since the size n is a traced knob (`jaxcap.tasks.random_data`). Round 0 trains the
sizes whose dataset bits are `capacity.bits_per_param_grid` times the architecture's parameter
count (so each grid brackets its own capacity), or `config.sweep.task.dataset_size` when that
grid is empty. A round trains until every member has saturated
(`capacity.make_stop_fn`; `train.steps` is only a cap), then the bits stored are measured from
its final checkpoint on each member's training set (`capacity.make_scores`) and appended to
`capacity.jsonl`. If the curve has not plateaued, the next round adds larger sizes
(`capacity.growth`, `capacity.extend`), up to `capacity.max_rounds` rounds.

Rerunning resumes: a measured round is skipped, a trained one is measured from its checkpoint,
an interrupted one resumes inside `train_bucket`.
"""

from __future__ import annotations

import dataclasses
import json
import time

import jax
import ml_collections
import numpy as np

from jaxcap import capacity, capacity_report, sharding
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
    """What `config.validate` cannot know: the task suits the experiment at every size it may reach."""
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
        top = largest_size(config, label)
        try:
            dataclasses.replace(bucket.task, max_dataset_size=top).check()
        except ConfigError as e:
            raise ConfigError(f"{where}{e} (sizes may grow to {top} in config.capacity.max_rounds)") from None


def _only(config: ml_collections.ConfigDict, label: str, sizes: list[int] | None = None):
    """A copy of `config` with one architecture (bucket label) and the given dataset sizes."""
    variant = ml_collections.ConfigDict(config.to_dict())
    variant.sweep.buckets = (label,) if label else ()
    if sizes is not None:
        variant.sweep.task.dataset_size = tuple(sizes)
    return variant


def round_bucket(config, arch: int, label: str, round_: int, sizes: list[int]) -> Bucket:
    [bucket] = plan(_only(config, label, sizes))
    bucket.name = f"b{arch}r{round_}"
    return bucket


def _targets(bucket: Bucket) -> tuple[np.ndarray, np.ndarray]:
    task = bucket.task
    sizes = np.array([m.knobs["dataset_size"] for m in bucket.members], np.float64)
    bits = np.array([task.complexity_bits(m.knobs) for m in bucket.members], np.float64)
    return bits, sizes * task.targets_per_example()


def stop_fn_for(bucket: Bucket, cap: ml_collections.ConfigDict):
    bits, targets = _targets(bucket)
    per_target = float(np.max(bits / targets))
    return capacity.make_stop_fn(bits, targets, per_target, cap.saturation_window, cap.saturation_tol)


def measure(
    bucket: Bucket, store: Store, arch: int, round_: int, cap: ml_collections.ConfigDict
) -> list[dict]:
    """capacity.jsonl rows of a trained bucket: bits stored per member from its last checkpoint."""
    mesh = sharding.population_mesh(len(bucket.members), bucket.config.runtime.devices)
    program = population_program(bucket.settings, bucket.task, bucket.model, mesh)
    keys, hparams = sharding.put(stack(bucket.members, bucket.config.seed), mesh)
    ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
    state, cursor = ckpts.restore(sharding.abstract(jax.eval_shape(program.init, keys, hparams), mesh))
    ckpts.close()
    scores = capacity.make_scores(bucket.task, bucket.model, bucket.settings.eval_batch_size)
    host = sharding.to_host(scores(state.params, hparams, program.data(keys, hparams)))
    sizes = [int(m.knobs["dataset_size"]) for m in bucket.members]
    # saturation, judged after the fact from the stored curve of the training loss
    names, curves = store.curves(bucket.name)
    bits, targets = _targets(bucket)
    loss = curves[:, :, names.index("train_loss")].T.astype(np.float64)  # [eval, member]
    series = capacity.estimated_bits(bits[None], targets[None], loss)
    flat = capacity.saturated(
        series, cap.saturation_window, cap.saturation_tol, float(np.max(bits / targets)), bits
    )
    diverged = sharding.to_host(state.diverged)
    rows = []
    for i, (member, total) in enumerate(zip(bucket.members, capacity.totals(host, sizes))):
        rows.append(
            {
                "bucket": bucket.name,
                "arch": arch,
                "arch_label": bucket.label,
                "round": round_,
                "member": i,
                "seed": member.seed,
                "learning_rate": member.hparams["learning_rate"],
                "dataset_size": sizes[i],
                "dataset_bits": float(bits[i]),
                **total,
                "saturated": bool(flat[i]),
                "diverged": bool(diverged[i]),
                "steps": int(cursor["step"]),
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


def capacity_experiment(config: ml_collections.ConfigDict, store: Store) -> list[dict]:
    """Train and measure every architecture until its curve plateaus; print and write the report."""
    check(config)
    cap = config.capacity
    for arch, (label, variant) in enumerate(bucket_configs(config)):
        sizes, seen = first_sizes(config, label), []
        for round_ in range(cap.max_rounds):
            bucket = round_bucket(config, arch, label, round_, sizes)
            done = [r for r in read_jsonl(store.root / ROWS) if r["bucket"] == bucket.name]
            if not done:
                tic = time.time()
                needs_x64 = "float64" in (variant.model.param_dtype, variant.model.compute_dtype)
                with numerics(variant.train.matmul_precision, needs_x64):
                    if bucket.name not in store.finished_buckets():
                        train_bucket(bucket, store, config.runtime, stop_fn_for(bucket, cap))
                    done = measure(bucket, store, arch, round_, cap)
                for row in done:  # this process's time on the bucket (a resumed one counts less)
                    row["wall_s"] = time.time() - tic
                _save_rows(store, done)
            seen += done
            [summary] = capacity.summarize(seen, cap.plateau_tol)
            top = summary["curve"][-1]
            print(
                f"[{bucket.name}] n = {', '.join(map(str, sizes))}: "
                f"C_mem so far {summary['c_mem']:,.0f} bits; "
                f"largest n stores {top['median'] or 0:,.0f} of {top['dataset_bits']:,.0f} bits"
                f"{'; plateau' if summary['plateau'] else ''}",
                flush=True,
            )
            if summary["plateau"]:
                break
            sizes = capacity.next_sizes(sizes, cap.growth, cap.extend)
    written = capacity_report.write_report(store)
    print(capacity_report.format_text(store), flush=True)
    print(f"wrote {ROWS} and {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}")
    return read_jsonl(store.root / ROWS)

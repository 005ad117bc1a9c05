"""Throughput of a population trained as one program vs its members one after another.

`python -m jaxcap.bench` (jaxcap/main/bench.py) parses its flags and prints; this module
measures. Population and one-after-another runs alternate over rounds and the medians are
reported, so a slow moment of a shared machine does not decide the ratio; the sharded
measurement splits P members over every device vs all on one. Nothing here asserts a speed.
Details: docs/design/performance.md#the-benchmark.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time

import jax

from jaxcap import tasks
from jaxcap.benchmarks import cost as bench_cost
from jaxcap.core import flops as bench_flops
from jaxcap.core import sharding
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.progress import tqdm
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig, param_count

PRESETS = bench_cost.PRESETS  # name -> (model kwargs, batch, task config)


class SizeError(ValueError):
    """A population size the measurement cannot take (the command says it in one line)."""


def _members(p: int, knobs: dict) -> list[Member]:
    hp = {**DEFAULT_HPARAMS, "weight_decay": 0.1, "warmup_steps": 10.0}
    return [Member(i, i, {**hp, "learning_rate": 1e-3 * (1 + i % 4)}, knobs) for i in range(p)]


def _stacked(program, members: list[Member]):
    keys, hp = stack(members, 0)
    return (keys, hp) if program.mesh is None else sharding.put((keys, hp), program.mesh)


def _compiled(program, members: list[Member]):
    """(compiled chunk, state, hparams, data, compile seconds) for these members."""
    keys, hp = _stacked(program, members)
    state, data = program.init(keys, hp), program.data(keys, hp)
    start = time.perf_counter()
    chunk = program.chunk.lower(state, hp, data).compile()
    return chunk, state, hp, data, time.perf_counter() - start


_BAR: tqdm | None = None


def progress(total: int) -> tqdm:
    """The bar over the measurements (model x size): on stderr like training's, so that a long
    benchmark is never silent; each finished row is printed above it."""
    global _BAR
    _BAR = tqdm(total=total, unit="measurement", desc="bench", dynamic_ncols=True, file=sys.stderr)
    return _BAR


def done(row: dict) -> None:
    """A finished measurement: its JSON on stderr (through tqdm, so the bar is not torn), one tick."""
    tqdm.write(json.dumps(row), file=sys.stderr)
    if _BAR is not None:
        _BAR.update(1)


def _seconds(chunk, state, hp, data, repeats: int) -> float:
    state, _ = chunk(state, hp, data)  # warm-up
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(repeats):
        state, _ = chunk(state, hp, data)
    jax.block_until_ready(state)
    return time.perf_counter() - start


def measure(
    name: str,
    sizes: list[int],
    steps: int,
    repeats: int,
    trials: int,
    max_sequential: int,
    compute_dtype: str = "float32",
    batch: int = 0,
    matmul_precision: str = "default",
) -> list[dict]:
    """Rates for each P; population and one-after-another runs alternate over `trials` rounds and
    the medians are reported, so a slow moment of a shared machine does not decide the ratio.
    Each row also gives the model's FLOPs rate and, on a device of known peak, its MFU (the peak
    read for `compute_dtype` at `matmul_precision`: jaxcap.core.flops)."""
    task, model, settings, batch = _preset(name, steps, repeats, compute_dtype, batch)
    program = make_population(settings, task, model)
    # the P = 1 program, unless no P is 1 or timed one member after another
    needs_solo = any(p == 1 or p <= max_sequential for p in sizes)
    solo = _compiled(program, _members(1, task.default_knobs())) if needs_solo else None
    results = []
    for p in sorted(sizes):
        members = _members(p, task.default_knobs())
        chunk, state, hp, data, compile_s = solo if p == 1 else _compiled(program, members)
        population, sequential = [], []
        for _ in range(trials):
            keys, hp = _stacked(program, members)
            population.append(
                p * steps * repeats / _seconds(chunk, program.init(keys, hp), hp, data, repeats)
            )
            if p <= max_sequential:  # the same P members, one after another, by the P = 1 program
                total = 0.0
                for member in members:
                    keys, hp1 = stack([dataclasses.replace(member, index=0)], 0)
                    total += _seconds(solo[0], program.init(keys, hp1), hp1, program.data(keys, hp1), repeats)
                sequential.append(p * steps * repeats / total)
        rate = statistics.median(population)
        row = {
            "model": name,
            "params": param_count(model),
            "batch": batch,
            "P": p,
            "compile_s": round(compile_s, 2),
            "population_model_steps_per_s": round(rate, 1),
            "ms_per_model_step": round(1000 / rate, 3),
            "model_gflop_per_step": float(f"{bench_flops.train_flops(model, batch) / 1e9:.4g}"),
            **bench_flops.utilization(rate, model, batch, jax.devices()[0].device_kind, matmul_precision),
            "gemm_algorithms": bench_cost.gemm_algorithms(chunk.as_text()),
        }
        if sequential:
            seq = statistics.median(sequential)
            row.update(sequential_model_steps_per_s=round(seq, 1), speedup_vs_sequential=round(rate / seq, 3))
        results.append(row)
        done(row)
    return results


def _preset(name: str, steps: int, repeats: int, compute_dtype: str, batch: int = 0):
    """(task, model, settings, batch) of a preset; `batch` > 0 replaces the preset's."""
    model_kw, preset_batch, task_cfg = PRESETS[name]
    batch = batch or preset_batch
    task = tasks.build(task_cfg)
    model = ModelConfig.for_task(task.spec, **model_kw, compute_dtype=compute_dtype)
    settings = TrainSettings(steps=steps * (repeats + 1), chunk_steps=steps, batch_size=batch, dropout=False)
    return task, model, settings, batch


def measure_sharded(
    name: str,
    sizes: list[int],
    steps: int,
    repeats: int,
    trials: int,
    compute_dtype: str = "float32",
    batch: int = 0,
) -> list[dict]:
    """Model-steps per second of P members split over every device vs all on one device (the
    same P, alternating over `trials` rounds, medians). P must be a multiple of the device count.
    On a CPU the devices are simulated (JAX_NUM_CPU_DEVICES) and share its cores: such a run
    shows that the sharded program works, not a speed-up."""
    task, model, settings, batch = _preset(name, steps, repeats, compute_dtype, batch)
    n = len(jax.devices())
    results = []
    for p in sorted(sizes):
        if p % n:
            raise SizeError(f"--sizes: got {p}; allowed with --sharded: multiples of the {n} devices")
        members = _members(p, task.default_knobs())
        runs = {}
        for d in (n, 1):
            program = make_population(settings, task, model, sharding.population_mesh(p, d))
            runs[d] = (program, *_compiled(program, members))
        rates: dict[int, list[float]] = {n: [], 1: []}
        for _ in range(trials):
            for d, (program, chunk, _, _, data, _) in runs.items():
                keys, hp = _stacked(program, members)
                seconds = _seconds(chunk, program.init(keys, hp), hp, data, repeats)
                rates[d].append(p * steps * repeats / seconds)
        sharded, single = statistics.median(rates[n]), statistics.median(rates[1])
        row = {
            "model": name,
            "params": param_count(model),
            "batch": batch,
            "P": p,
            "devices": n,
            "compile_s": round(runs[n][-1], 2),
            "sharded_model_steps_per_s": round(sharded, 1),
            "single_device_model_steps_per_s": round(single, 1),
            "speedup_vs_single_device": round(sharded / single, 3),
        }
        results.append(row)
        done(row)
    return results

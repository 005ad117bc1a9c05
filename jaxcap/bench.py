"""Throughput benchmark: a population trained as one program vs its members one after another.

    python -m jaxcap.bench                              # CPU defaults: small + baseline models
    python -m jaxcap.bench --models grok --sizes 1,64,256,1024   # accelerator
    python -m jaxcap.bench --study --models small       # Optuna trials per minute, batched vs one at a time
    python -m jaxcap.bench --sharded --sizes 64,256     # P split over every device vs one device
    python -m jaxcap.bench --models grok --compute_dtype bfloat16   # bf16 matmuls, float32 params
    python -m jaxcap.bench --cost                       # XLA's flops and bytes per model-step (any backend)
    python -m jaxcap.bench --probe --models grok --sizes 256   # fresh processes, one suspect each

Prints one JSON document per model and population size P: compile time, model-steps/s as one
population and one member after another, and their ratio. Nothing here asserts a speed.

Details: docs/design.md#jaxcapbenchpy.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time

import jax
from absl import app, flags, logging

from jaxcap import tasks
from jaxcap.benchmarks import cost as bench_cost
from jaxcap.benchmarks import probe as bench_probe
from jaxcap.main import cli
from jaxcap.core import sharding
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.progress import tqdm
from jaxcap.core.runtime import describe_devices, enable_compilation_cache, numerics
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig, attention, param_count

PRESETS = bench_cost.PRESETS  # name -> (model kwargs, batch, task config)

_MODELS = flags.DEFINE_list("models", ["small", "baseline"], f"Presets: {', '.join(PRESETS)}.")
_SIZES = flags.DEFINE_list("sizes", ["1", "8", "64"], "Population sizes P.")
_MAX_SEQUENTIAL = flags.DEFINE_integer("max_sequential", 64, "Largest P also timed one member after another.")
_STEPS = flags.DEFINE_integer("steps", 20, "Steps per chunk (one lax.scan).")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed chunks per measurement (after one warm-up).")
_TRIALS = flags.DEFINE_integer("trials", 3, "Alternating population / one-after-another rounds (medians).")
_PRECISION = flags.DEFINE_string("matmul_precision", "default", "fp32 matmul precision (default: backend's).")
_DTYPE = flags.DEFINE_enum(
    "compute_dtype", "float32", ["float32", "bfloat16", "float16"], "Activation dtype (params stay float32)."
)
_SHARDED = flags.DEFINE_bool("sharded", False, "P members split over every device vs all on one device.")
_STUDY = flags.DEFINE_bool("study", False, "Optuna trials per minute: batched vs one trial at a time.")
_STUDY_TRIALS = flags.DEFINE_integer("study_trials", 8, "--study: trials per study, all in one batch.")
_STUDY_STEPS = flags.DEFINE_integer("study_steps", 200, "--study: training steps per trial (2 seeds each).")
_COST = flags.DEFINE_bool("cost", False, "XLA's flops, bytes and matmul traffic per model-step (P = 64).")
_PROBE = flags.DEFINE_bool("probe", False, "This benchmark in fresh processes, one slowdown suspect each.")
_BATCH = flags.DEFINE_integer("batch", 0, "Batch size (0: the preset's).")
_BROADCAST = flags.DEFINE_integer(
    "broadcast_max_len", -1, "Attention as broadcast-multiply-reduce up to this length (-1: by backend)."
)
_CACHE = flags.DEFINE_string("compilation_cache", "", "Persistent compilation cache directory ('': none).")


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


def _progress(total: int) -> tqdm:
    """The bar over the measurements (model x size): on stderr like training's, so that a long
    benchmark is never silent; each finished row is printed above it."""
    global _BAR
    _BAR = tqdm(total=total, unit="measurement", desc="bench", dynamic_ncols=True, file=sys.stderr)
    return _BAR


def _done(row: dict) -> None:
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
) -> list[dict]:
    """Rates for each P; population and one-after-another runs alternate over `trials` rounds and
    the medians are reported, so a slow moment of a shared machine does not decide the ratio."""
    task, model, settings, batch = _preset(name, steps, repeats, compute_dtype)
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
            "gemm_algorithms": bench_cost.gemm_algorithms(chunk.as_text()),
        }
        if sequential:
            seq = statistics.median(sequential)
            row.update(sequential_model_steps_per_s=round(seq, 1), speedup_vs_sequential=round(rate / seq, 3))
        results.append(row)
        _done(row)
    return results


def _preset(name: str, steps: int, repeats: int, compute_dtype: str):
    model_kw, batch, task_cfg = PRESETS[name]
    batch = _BATCH.value or batch
    task = tasks.build(task_cfg)
    model = ModelConfig.for_task(task.spec, **model_kw, compute_dtype=compute_dtype)
    settings = TrainSettings(steps=steps * (repeats + 1), chunk_steps=steps, batch_size=batch, dropout=False)
    return task, model, settings, batch


def measure_sharded(
    name: str, sizes: list[int], steps: int, repeats: int, trials: int, compute_dtype: str = "float32"
) -> list[dict]:
    """Model-steps per second of P members split over every device vs all on one device (the
    same P, alternating over `trials` rounds, medians). P must be a multiple of the device count.
    On a CPU the devices are simulated (JAX_NUM_CPU_DEVICES) and share its cores: such a run
    shows that the sharded program works, not a speed-up."""
    task, model, settings, batch = _preset(name, steps, repeats, compute_dtype)
    n = len(jax.devices())
    results = []
    for p in sorted(sizes):
        if p % n:
            cli.usage_exit(f"--sizes: got {p}; allowed with --sharded: multiples of the {n} devices")
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
        _done(row)
    return results


def _cost(names: list[str]) -> dict:
    """`--cost`: XLA's accounting per model and compute dtype, at each P of --sizes (default 64)."""
    sizes = cli.positive_ints("sizes", _SIZES.value) if flags.FLAGS["sizes"].present else [64]
    dtypes = [_DTYPE.value] if flags.FLAGS["compute_dtype"].present else ["float32", "bfloat16"]
    if _BROADCAST.value < 0:  # count the program an accelerator runs, whatever the backend
        attention.BROADCAST_MAX_LEN = attention.ACCELERATOR_BROADCAST_MAX_LEN
    out = {
        "device": describe_devices(),
        "matmul_precision": _PRECISION.value,
        "broadcast_max_len": attention.broadcast_max_len(),
        "matmul_counted": "dot operands + results of the lowered (pre-optimization) StableHLO",
        "cost": [],
    }
    _progress(len(names) * len(sizes) * len(dtypes))
    for name in names:
        model_kw, batch, task_cfg = PRESETS[name]
        for p in sizes:
            for dtype in dtypes:
                row = {
                    "model": name,
                    **bench_cost.step_cost(model_kw, _BATCH.value or batch, task_cfg, p, dtype),
                }
                out["cost"].append(row)
                _done(row)
    return out


def main(argv):
    # (a positional argument was refused by cli.make_parser: a typo must not be ignored)
    for name in _MODELS.value:
        if name not in PRESETS:
            cli.usage_exit(f"--models: got {name!r}; allowed: {', '.join(PRESETS)}")
    if _PROBE.value:  # the same command minus --probe, in fresh processes; this one never
        # touches the device (a GPU backend would preallocate memory the children need)
        args = [a for a in sys.argv[1:] if a.lstrip("-") not in ("probe", "probe=true", "probe=True")]
        print(json.dumps(bench_probe.run_probe(args), indent=1))
        return
    if _BROADCAST.value >= 0:
        attention.BROADCAST_MAX_LEN = _BROADCAST.value
    if _CACHE.value:
        enable_compilation_cache(_CACHE.value)
    if _STUDY.value:
        from jaxcap.benchmarks.study import measure_study

        logging.set_verbosity(logging.WARNING)  # orbax logs every checkpoint of every round at INFO
        out = {"device": describe_devices(), "rounds": _TRIALS.value, "study": []}
        with numerics(_PRECISION.value, needs_x64=False):
            for name in _MODELS.value:
                row = measure_study(
                    name, PRESETS[name], _STUDY_TRIALS.value, _STUDY_STEPS.value, _TRIALS.value
                )
                out["study"].append(row)
        print(json.dumps(out, indent=1))
        return
    with numerics(_PRECISION.value, needs_x64=False):
        if _COST.value:
            print(json.dumps(_cost(_MODELS.value), indent=1))
            return
        sizes = cli.positive_ints("sizes", _SIZES.value)
        out = {
            "device": describe_devices(),
            "trials": _TRIALS.value,
            "steps_per_chunk": _STEPS.value,
            "repeats": _REPEATS.value,
            "matmul_precision": _PRECISION.value,
            "compute_dtype": _DTYPE.value,
            "broadcast_max_len": attention.broadcast_max_len(),
            "precision_probe": bench_probe.precision_probe(),
            "results": [],
        }
        _progress(len(_MODELS.value) * len(sizes))
        for name in _MODELS.value:
            args = (name, sizes, _STEPS.value, _REPEATS.value, _TRIALS.value)
            if _SHARDED.value:
                out["results"] += measure_sharded(*args, _DTYPE.value)
            else:
                out["results"] += measure(*args, _MAX_SEQUENTIAL.value, _DTYPE.value)
    print(json.dumps(out, indent=1))


def console() -> None:
    """The `jaxcap-bench` console script (also `python -m jaxcap.bench`)."""
    app.run(main, flags_parser=cli.make_parser(__doc__))


if __name__ == "__main__":
    console()

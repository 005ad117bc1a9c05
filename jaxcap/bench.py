"""Throughput benchmark: a population trained as one program vs its members one after another.

    python -m jaxcap.bench                              # CPU defaults: small + baseline models
    python -m jaxcap.bench --models grok --sizes 1,64,256,1024   # accelerator

Prints one JSON document: for each model and population size P, the compile time, model-steps
per second as one population, model-steps per second for the same P members trained one after
another by the P = 1 program in the same process, and their ratio. Nothing here asserts a
speed; tests never time anything.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time

import jax
from absl import app, flags

from jaxcap import tasks
from jaxcap.models import ModelConfig, param_count
from jaxcap.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.runtime import describe_devices, numerics
from jaxcap.train import TrainSettings, make_population

PRESETS = {
    # the reference point: d_model 64, batch 64, x mod N inputs (5 tokens)
    "small": (
        dict(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=256),
        64,
        {"name": "modulo", "modulus": 97, "digits": 4, "train_fraction": 0.5},
    ),
    # the seed baseline (2 layers, d_model 256, 8 x 32, d_ff 1024)
    "baseline": (dict(), 64, {"name": "modulo", "modulus": 97, "digits": 4, "train_fraction": 0.5}),
    # grokking-sized: d_model 128, 4 heads, batch 512, 4-token inputs a ∘ b =
    "grok": (
        dict(n_layers=2, d_model=128, n_heads=4, d_head=32, d_ff=512),
        512,
        {"name": "binop", "operation": "add", "p": 97, "train_fraction": 0.5},
    ),
}

_MODELS = flags.DEFINE_list("models", ["small", "baseline"], f"Presets: {', '.join(PRESETS)}.")
_SIZES = flags.DEFINE_list("sizes", ["1", "8", "64"], "Population sizes P.")
_MAX_SEQUENTIAL = flags.DEFINE_integer("max_sequential", 64, "Largest P also timed one member after another.")
_STEPS = flags.DEFINE_integer("steps", 20, "Steps per chunk (one lax.scan).")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed chunks per measurement (after one warm-up).")
_TRIALS = flags.DEFINE_integer("trials", 3, "Alternating population / one-after-another rounds (medians).")
_PRECISION = flags.DEFINE_string("matmul_precision", "default", "fp32 matmul precision (default: backend's).")


def _members(p: int, knobs: dict) -> list[Member]:
    hp = {**DEFAULT_HPARAMS, "weight_decay": 0.1, "warmup_steps": 10.0}
    return [Member(i, i, {**hp, "learning_rate": 1e-3 * (1 + i % 4)}, knobs) for i in range(p)]


def _compiled(program, members: list[Member]):
    """(compiled chunk, state, hparams, data, compile seconds) for these members."""
    keys, hp = stack(members, 0)
    state, data = program.init(keys, hp), program.data(keys, hp)
    start = time.perf_counter()
    chunk = program.chunk.lower(state, hp, data).compile()
    return chunk, state, hp, data, time.perf_counter() - start


def _seconds(chunk, state, hp, data, repeats: int) -> float:
    state, _ = chunk(state, hp, data)  # warm-up
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(repeats):
        state, _ = chunk(state, hp, data)
    jax.block_until_ready(state)
    return time.perf_counter() - start


def measure(
    name: str, sizes: list[int], steps: int, repeats: int, trials: int, max_sequential: int
) -> list[dict]:
    """Rates for each P; population and one-after-another runs alternate over `trials` rounds and
    the medians are reported, so a slow moment of a shared machine does not decide the ratio."""
    model_kw, batch, task_cfg = PRESETS[name]
    task = tasks.build(task_cfg)
    model = ModelConfig.for_task(task.spec, **model_kw)
    settings = TrainSettings(steps=steps * (repeats + 1), chunk_steps=steps, batch_size=batch, dropout=False)
    program = make_population(settings, task, model)
    solo = _compiled(program, _members(1, task.default_knobs()))
    results = []
    for p in sorted(sizes):
        members = _members(p, task.default_knobs())
        chunk, state, hp, data, compile_s = solo if p == 1 else _compiled(program, members)
        population, sequential = [], []
        for _ in range(trials):
            keys, hp = stack(members, 0)
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
        }
        if sequential:
            seq = statistics.median(sequential)
            row.update(sequential_model_steps_per_s=round(seq, 1), speedup_vs_sequential=round(rate / seq, 3))
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return results


def main(argv):
    del argv
    sizes = [int(s) for s in _SIZES.value]
    out = {
        "device": describe_devices(),
        "trials": _TRIALS.value,
        "steps_per_chunk": _STEPS.value,
        "repeats": _REPEATS.value,
        "matmul_precision": _PRECISION.value,
        "results": [],
    }
    with numerics(_PRECISION.value, needs_x64=False):
        for name in _MODELS.value:
            if name not in PRESETS:
                raise app.UsageError(f"--models: got {name!r}; allowed: {', '.join(PRESETS)}")
            out["results"] += measure(
                name, sizes, _STEPS.value, _REPEATS.value, _TRIALS.value, _MAX_SEQUENTIAL.value
            )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    app.run(main)

"""Throughput benchmark: a population trained as one program vs its members one after another.

    python -m jaxcap.bench                              # CPU defaults: small + baseline models
    python -m jaxcap.bench --models grok --sizes 1,64,256,1024   # accelerator
    python -m jaxcap.bench --study --models small       # Optuna trials per minute, batched vs one at a time
    python -m jaxcap.bench --sharded --sizes 64,256     # P split over every device vs one device
    python -m jaxcap.bench --models grok --compute_dtype bfloat16   # bf16 matmuls, float32 params
    python -m jaxcap.bench --cost                       # XLA's flops and bytes per model-step (any backend)
    python -m jaxcap.bench --probe --models grok --sizes 256   # fresh processes, one suspect each

Prints one JSON document per model and population size P: compile time, model-steps/s as one
population and one after another, their ratio, model FLOP/s and MFU. Nothing asserts a speed.

Details: docs/design/performance.md#the-benchmark.
"""

from __future__ import annotations

import json
import sys

from absl import app, flags, logging

from jaxcap.benchmarks import cost as bench_cost
from jaxcap.benchmarks import probe as bench_probe
from jaxcap.benchmarks.throughput import PRESETS, SizeError, done, measure, measure_sharded, progress
from jaxcap.core.runtime import describe_devices, enable_compilation_cache, numerics
from jaxcap.main import cli
from jaxcap.models import attention

_MODELS = flags.DEFINE_list("models", ["small", "baseline"], f"Presets: {', '.join(PRESETS)}.")
_SIZES = flags.DEFINE_list("sizes", ["1", "8", "64"], "Population sizes P.")
_MAX_SEQUENTIAL = flags.DEFINE_integer(
    "max_sequential", 64, "Largest P also timed one member after another.", lower_bound=0
)
_STEPS = flags.DEFINE_integer("steps", 20, "Steps per chunk (one lax.scan).", lower_bound=1)
_REPEATS = flags.DEFINE_integer(
    "repeats", 3, "Timed chunks per measurement (after one warm-up).", lower_bound=1
)
_TRIALS = flags.DEFINE_integer(
    "trials", 3, "Alternating population / one-after-another rounds (medians).", lower_bound=1
)
_PRECISION = flags.DEFINE_string("matmul_precision", "default", "fp32 matmul precision (default: backend's).")
_DTYPE = flags.DEFINE_enum(
    "compute_dtype", "float32", ["float32", "bfloat16", "float16"], "Activation dtype (params stay float32)."
)
_SHARDED = flags.DEFINE_bool("sharded", False, "P members split over every device vs all on one device.")
_STUDY = flags.DEFINE_bool("study", False, "Optuna trials per minute: batched vs one trial at a time.")
_STUDY_TRIALS = flags.DEFINE_integer(
    "study_trials", 8, "--study: trials per study, all in one batch.", lower_bound=1
)
_STUDY_STEPS = flags.DEFINE_integer(
    "study_steps", 200, "--study: training steps per trial (2 seeds each).", lower_bound=1
)
_COST = flags.DEFINE_bool("cost", False, "XLA's flops, bytes and matmul traffic per model-step (P = 64).")
_PROBE = flags.DEFINE_bool("probe", False, "This benchmark in fresh processes, one slowdown suspect each.")
_BATCH = flags.DEFINE_integer("batch", 0, "Batch size (0: the preset's).", lower_bound=0)
_BROADCAST = flags.DEFINE_integer(
    "broadcast_max_len", -1, "Attention as broadcast-multiply-reduce up to this length (-1: by backend)."
)
_CACHE = flags.DEFINE_string("compilation_cache", "", "Persistent compilation cache directory ('': none).")


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
    progress(len(names) * len(sizes) * len(dtypes))
    for name in names:
        model_kw, batch, task_cfg = PRESETS[name]
        for p in sizes:
            for dtype in dtypes:
                row = {
                    "model": name,
                    **bench_cost.step_cost(model_kw, _BATCH.value or batch, task_cfg, p, dtype),
                }
                out["cost"].append(row)
                done(row)
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
        from jaxcap.benchmarks.trials_per_minute import measure_study

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
        progress(len(_MODELS.value) * len(sizes))
        for name in _MODELS.value:
            args = (name, sizes, _STEPS.value, _REPEATS.value, _TRIALS.value)
            if _SHARDED.value:
                try:
                    out["results"] += measure_sharded(*args, _DTYPE.value, _BATCH.value)
                except SizeError as e:
                    cli.usage_exit(str(e))
            else:
                out["results"] += measure(
                    *args, _MAX_SEQUENTIAL.value, _DTYPE.value, _BATCH.value, _PRECISION.value
                )
    print(json.dumps(out, indent=1))


def console() -> None:
    """The `jaxcap-bench` console script (also `python -m jaxcap.bench`)."""
    app.run(main, flags_parser=cli.make_parser(__doc__))


if __name__ == "__main__":
    console()

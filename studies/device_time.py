"""Predicted accelerator time of each part of the device study (studies/device_study.sh).

    python -m studies.device_time SPEC.json > predicted.json

SPEC.json names each part's command as the script runs it: {"speed": {"runs": [[model, dtype],
...], "P": 256, "batch": 512, "steps": 100, "repeats": 3, "trials": 2}, "grokking": [config
args], "capacity": [...], "calibrate": [...]} (config args: "configs/x.py:variant" then
"--config.a.b=value" overrides). Every part is a list of population runs (members P, steps,
programs compiled); a run's seconds are its programs' compiles plus its steps at a floor per step
plus, per member, the larger of its matmul bytes over a bandwidth and its model FLOPs over a
sustained rate, with the constants refitted to the device study's measured rates
(docs/benchmarks.md).

Details: docs/design/performance.md#the-device-time-model.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import jax

from jaxcap import tasks
from jaxcap.benchmarks.cost import PRESETS, matmul_traffic
from jaxcap.config.base import build_plan, load_config
from jaxcap.core.flops import peak_kind, train_flops
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig, attention

# step seconds = FLOOR_S + P x B / BANDWIDTH through the H100's grok rates (B = 77.03 MB) at P = 3 and 256
_PER_MEMBER_S = (256 / 13792 - 3 / 4880) / 253
FLOOR_S = 3 / 4880 - 3 * _PER_MEMBER_S  # 0.40 ms a step whatever P: kernel launches, not bytes
BANDWIDTH = 77.03e6 / _PER_MEMBER_S  # 1.09 TB/s of GEMM operands and results
# sustained model FLOP/s of a compute-bound step: the seed baseline in bfloat16 at P = 256 (16.23
# GFLOP a model-step, 8,806 model-steps/s on the H100, the only compute-bound rate measured; the
# bandwidth line predicts 26 % too fast there), 14.6 % of the bf16 peak; TF32 and float32 are
# assumed to reach the same fraction of their own peaks (PEAK_TFLOPS), never measured
_BF16_TFLOPS = 16.2296e9 / (1 / 8806 - FLOOR_S / 256) / 1e12
SUSTAINED_TFLOPS = {
    "bfloat16": _BF16_TFLOPS,
    "tf32": _BF16_TFLOPS / 2,
    "float32": _BF16_TFLOPS * 66.9 / 989.4,
}
COMPILE_S = 20.0  # per program (the H100 device study: 15-28 s; docs/benchmarks.md)
PROCESS_S = 15.0  # Python, JAX and CUDA start-up per process
EVAL_SHARE = 0.1  # evals are sized to at most this share of training (config.eval.time_share)
# one NUTS fit, 4 x (1,000 + 4,000) on the host CPU (jaxcap/meta/fit.py), compile included, as
# measured by calibrate :device on the H200 machine (docs/meta-model.md, "NUTS runs on the host CPU")
FIT_S = 25.0
REPORT_S = 8.0  # one workdir's report and its figures


_BYTES: dict = {}  # (model, task, batch) -> bytes: a part lowers each shape once


def _matmul_bytes(model: ModelConfig, task, batch: int, knobs: dict | None = None) -> int:
    """Operand + result bytes of the dots of one model-step, as an accelerator runs attention."""
    key = (model, repr(task), batch)
    if key not in _BYTES:
        attention.BROADCAST_MAX_LEN = attention.ACCELERATOR_BROADCAST_MAX_LEN
        settings = TrainSettings(steps=1, chunk_steps=1, batch_size=batch, dropout=False)
        program = make_population(settings, task, model)
        keys, hp = stack([Member(0, 0, dict(DEFAULT_HPARAMS), knobs or task.default_knobs())], 0)
        state, data = jax.eval_shape(program.init, keys, hp), jax.eval_shape(program.data, keys, hp)
        _BYTES[key] = matmul_traffic(program.chunk.lower(state, hp, data).as_text())[1]
    return _BYTES[key]


def _run(label: str, bucket, p: int, steps: int, programs: int = 1) -> dict:
    member, batch = bucket.members[0], bucket.settings.batch_size
    mb = _matmul_bytes(bucket.model, bucket.task, batch, member.knobs) / 1e6
    return {
        "run": label,
        "P": p,
        "steps": steps,
        "matmul_mb": round(mb, 2),
        "gflop": round(train_flops(bucket.model, batch) / 1e9, 4),
        "numerics": peak_kind(bucket.model.compute_dtype),
        "programs": programs,
    }


def load(args: list[str]):
    """The config of `configs/x.py[:variant] --config.a.b=v ...` (values as Python literals)."""
    config = load_config(args[0])
    for arg in args[1:]:
        path, _, text = arg.removeprefix("--config.").partition("=")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        node, *_ = path.rsplit(".", 1)
        parent = config if "." not in path else config[node]
        key = path.rsplit(".", 1)[-1]
        parent[key] = float(value) if isinstance(parent[key], float) and isinstance(value, int) else value
    return config


def grokking_runs(config) -> list[dict]:
    out = [_run(b.label, b, len(b.members), b.settings.steps) for b in build_plan(config).buckets]
    out[-1]["reports"] = 1
    return out


def capacity_runs(config) -> list[dict]:
    from jaxcap.experiments.capacity.curve import steps_to

    run = build_plan(config).section  # the CapacityRun: its sizes and populations
    cap, out = run.settings, []
    for arch, label in enumerate(b.label for b in run.architectures):
        base = run.architecture(label)
        seeds, batch, grid = base.grid.seeds, base.settings.batch_size, 1
        for values in base.grid.hparam_grid.values():
            grid *= max(1, len(values))
        sizes = run.first_sizes(label)
        bucket = run.size_bucket(arch, label, sizes, sizes[0], recipe={})
        if cap.search_exposures:
            mid = sizes[len(sizes) // 2]
            out.append(
                _run(
                    f"{label} search n={mid}",
                    bucket,
                    grid * seeds,
                    steps_to(cap.search_exposures, mid, batch),
                )
            )
        for n in sizes:
            for budget in (cap.exposures[-1], *cap.annealed):
                out.append(_run(f"{label} n={n} to {budget:g}", bucket, seeds, steps_to(budget, n, batch), 0))
        out[-1]["programs"] = 1 + len(cap.annealed)  # one program per schedule, shared by the sizes
    out[-1]["reports"] = 1
    return out


def calibrate_runs(config) -> list[dict]:
    from jaxcap.experiments.calibrate.settings import parse_families

    # every family, typed (the families alone: an enhance part predicts one variant at a time)
    design, out = config.calibrate.design, []
    for name, family in parse_families(config).items():
        values = family.values
        passes = [(f"{name} grid", values[: design.grid or len(values)])]
        passes += [(f"{name} round {r}", values[:1] * design.per_round) for r in range(1, design.rounds + 1)]
        for label, levels in passes:
            [run] = family.runs(tuple(sorted(set(levels))))
            [bucket] = run.plan.buckets
            per_level = len(bucket.members) // len(set(levels))
            out.append({**_run(label, bucket, per_level * len(levels), bucket.settings.steps), "reports": 1})
    return out


def speed_runs(spec: dict) -> list[dict]:
    out = []
    for name, dtype in spec["runs"]:
        model_kw, _, task_cfg = PRESETS[name]
        task = tasks.build(task_cfg)
        model = ModelConfig.for_task(task.spec, **model_kw, compute_dtype=dtype)
        mb = _matmul_bytes(model, task, spec["batch"]) / 1e6
        steps = spec["trials"] * (spec["repeats"] + 1) * spec["steps"]
        run = {
            "run": f"{name} {dtype}",
            "P": spec["P"],
            "steps": steps,
            "matmul_mb": round(mb, 2),
            "gflop": round(train_flops(model, spec["batch"]) / 1e9, 4),
            "numerics": peak_kind(dtype),
            "programs": 1,
        }
        out.append({**run, "process": True})
    return out


def step_seconds(run: dict, bandwidth: float = BANDWIDTH, floor_s: float = FLOOR_S) -> float:
    """One population step: the floor, then per member its bytes or its FLOPs, whichever is slower."""
    moved = run["matmul_mb"] * 1e6 / bandwidth
    computed = run.get("gflop", 0.0) * 1e9 / (SUSTAINED_TFLOPS[run.get("numerics", "tf32")] * 1e12)
    return floor_s + run["P"] * max(moved, computed)


def seconds(
    runs: list[dict], bandwidth: float = BANDWIDTH, floor_s: float = FLOOR_S, processes: int = 1
) -> float:
    """A part's predicted wall seconds from its runs (see the module docstring)."""
    total = PROCESS_S * (processes + sum(bool(r.get("process")) for r in runs))
    for r in runs:
        step = step_seconds(r, bandwidth, floor_s)
        total += (
            r["programs"] * COMPILE_S
            + r["steps"] * step * (1 + EVAL_SHARE)
            + r.get("fits", 0) * FIT_S
            + r.get("reports", 0) * REPORT_S
        )
    return total


def predict(spec: dict) -> dict:
    parts = {"speed": speed_runs(spec["speed"])}
    parts["grokking"] = grokking_runs(load(spec["grokking"]))
    parts["capacity"] = capacity_runs(load(spec["capacity"]))
    calibrate = load(spec["calibrate"])
    parts["calibrate"] = calibrate_runs(calibrate)
    v = calibrate.calibrate.validation
    fits = (
        1
        + v.folds * len(v.seeds) * ("levels" in v.designs)
        + sum(d in v.designs for d in ("top", "families", "archs"))
    )
    parts["calibrate"].append(
        {"run": "NUTS fits", "P": 0, "steps": 0, "matmul_mb": 0, "programs": 0, "fits": fits, "reports": 1}
    )
    return {
        "model": {
            "floor_ms": FLOOR_S * 1e3,
            "bandwidth_gb_s": BANDWIDTH / 1e9,
            "sustained_tflops": {k: round(v, 1) for k, v in SUSTAINED_TFLOPS.items()},
            "compile_s": COMPILE_S,
            "process_s": PROCESS_S,
            "eval_share": EVAL_SHARE,
            "fit_s": FIT_S,
            "report_s": REPORT_S,
        },
        "parts": {
            name: {"predicted_s": round(seconds(runs, processes=0 if name == "speed" else 1)), "runs": runs}
            for name, runs in parts.items()
        },
    }


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: python -m studies.device_time SPEC.json")
    try:
        spec = json.loads(Path(argv[1]).read_text())
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"device_time: cannot read the spec {argv[1]!r}: {e}")
    print(json.dumps(predict(spec), indent=1))


if __name__ == "__main__":
    main(sys.argv)

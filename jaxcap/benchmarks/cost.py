"""XLA's own accounting of one population training step, per model-step, on any backend.

    python -m jaxcap.bench --cost                         # small, baseline, grok; float32 + bfloat16; P = 64
    python -m jaxcap.bench --cost --models grok --sizes 64 --compute_dtype bfloat16

The step of a small Transformer is memory-bandwidth-bound (its GEMMs have ~30-50 flop/byte), so
the number to move is the bytes a step moves, and XLA counts them: `cost_analysis()` of the
optimized program and the dot operands of the lowered one, per model-step, with the FLOPs of
those dots beside the model's own (jaxcap.core.flops).

Details: docs/design/performance.md#xlas-accounting-of-a-step.
"""

from __future__ import annotations

import collections
import math
import re

import jax

from jaxcap import tasks
from jaxcap.core.flops import train_flops
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig, param_count

# The benchmark's models (`python -m jaxcap.bench --models ...`): model kwargs, batch, task.
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

_FUNC = re.compile(r"\s*func\.func (?:public |private )?@([\w.$-]+)\(")
_CALL = re.compile(r"call @([\w.$-]+)\(")
_TENSOR = re.compile(r"tensor<([^>]+)>")
_CONTRACTING = re.compile(r"contracting_dims = \[([\d, ]*)\] x")
_TRIVIAL = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast"}


def _tensor_bytes(spec: str) -> int:
    """Bytes of a StableHLO tensor type such as '64x512x128xbf16' (i1 counts one byte)."""
    *dims, dtype = spec.split(",")[0].split("x")
    bits = int(re.search(r"(\d+)", dtype).group(1))
    return math.prod(int(d) for d in dims) * max(1, bits // 8)


def dot_lines(stablehlo: str) -> list[str]:
    """The line of every `dot_general` (or `dot`) that `main` runs in a lowered StableHLO module,
    following calls: a function called twice gives its dots twice."""
    funcs: dict[str, tuple[list, list]] = {}
    current = None
    for line in stablehlo.splitlines():
        m = _FUNC.match(line)
        if m:
            current = funcs.setdefault(m.group(1), ([], []))
            continue
        if current is None:
            continue
        if "stablehlo.dot_general" in line or "stablehlo.dot " in line:
            current[0].append(line)
        current[1].extend(_CALL.findall(line))

    def reached(name: str) -> list[str]:
        dots, calls = funcs[name]
        return dots + [line for callee in calls for line in reached(callee)]

    return reached("main")


def _types(dot_line: str) -> list[str]:
    """The tensor types of a dot's signature: the operands', then the result's."""
    return _TENSOR.findall(dot_line.rsplit(" : ", 1)[1])


def _dims(spec: str) -> list[int]:
    """The dimensions of a StableHLO tensor type such as '64x512x128xbf16' ([] for a scalar)."""
    return [int(d) for d in spec.split(",")[0].split("x")[:-1]]


def matmul_traffic(stablehlo: str) -> tuple[int, int]:
    """(dots, operand + result bytes) of every `dot_general` in a lowered StableHLO module,
    following calls from `main` (a function called twice counts twice)."""
    lines = dot_lines(stablehlo)
    return len(lines), sum(_tensor_bytes(t) for line in lines for t in _types(line))


def dot_flops(dot_line: str) -> int:
    """FLOPs of one dot: 2 x the result's elements x the contracted elements of each."""
    types = _types(dot_line)
    lhs, result = _dims(types[0]), _dims(types[-1])
    # dot_general: `contracting_dims = [2, 3] x [1, 2]`; dot: the lhs's last axis
    contracting = _CONTRACTING.search(dot_line)
    axes = [int(a) for a in contracting.group(1).split(",") if a.strip()] if contracting else [len(lhs) - 1]
    return 2 * math.prod(result) * math.prod(lhs[a] for a in axes)


def matmul_flops(stablehlo: str) -> int:
    """FLOPs of every dot in a lowered StableHLO module, following calls from `main` as
    `matmul_traffic` does: the matmul work of a program as written, before XLA rewrites it."""
    return sum(dot_flops(line) for line in dot_lines(stablehlo))


def _entry_opcodes(hlo: str) -> list[str]:
    """Opcodes of the optimized module's ENTRY computation, in order."""
    out, inside = [], False
    for line in hlo.splitlines():
        if line.startswith("ENTRY"):
            inside = True
        elif inside and line.startswith("}"):
            break
        elif inside and " = " in line:
            m = re.search(r"\s([a-z][\w-]*)\(", line.split(" = ", 1)[1])
            if m:
                out.append(m.group(1))
    return out


def gemm_algorithms(hlo: str) -> dict[str, int]:
    """How often each GEMM implementation appears in an optimized (GPU) HLO module: cuBLAS
    custom calls by target and selected algorithm, Triton GEMM fusions by tile config."""
    found: collections.Counter = collections.Counter()
    for line in hlo.splitlines():
        target = re.search(r'custom_call_target="([^"]*(?:gemm|matmul)[^"]*)"', line)
        if target:
            algorithm = re.search(r'"selected_algorithm":"?(-?\d+)', line)
            found[f"{target.group(1)} algo {algorithm.group(1) if algorithm else '?'}"] += 1
        elif "__triton_gemm" in line:
            tiles = re.search(r'"triton_gemm_config":\{([^}]*)\}', line)
            found[f"triton {tiles.group(1) if tiles else '?'}".replace('"', "")] += 1
    return dict(sorted(found.items()))


def lower_step(model_kw: dict, batch: int, task_cfg: dict, p: int, compute_dtype: str = "float32"):
    """(model, lowered program) of one training step of a P-member population (not compiled)."""
    task = tasks.build(task_cfg)
    model = ModelConfig.for_task(task.spec, **model_kw, compute_dtype=compute_dtype)
    # One step per chunk: the scan of length 1 is unrolled, so the counts are of one step.
    settings = TrainSettings(steps=1, chunk_steps=1, batch_size=batch, dropout=False)
    program = make_population(settings, task, model)
    knobs = task.default_knobs()
    members = [Member(i, i, dict(DEFAULT_HPARAMS), knobs) for i in range(p)]
    keys, hp = stack(members, 0)
    state, data = jax.eval_shape(program.init, keys, hp), jax.eval_shape(program.data, keys, hp)
    return model, program.chunk.lower(state, hp, data)


def step_cost(model_kw: dict, batch: int, task_cfg: dict, p: int, compute_dtype: str) -> dict:
    """XLA's accounting of one training step of a P-member population, per model-step, beside
    the model's own FLOPs (`model_gflop`, jaxcap.core.flops)."""
    model, lowered = lower_step(model_kw, batch, task_cfg, p, compute_dtype)
    compiled = lowered.compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list on older jax
    stablehlo = lowered.as_text()
    dots, matmul_bytes = matmul_traffic(stablehlo)
    hlo = compiled.as_text()
    opcodes = [op for op in _entry_opcodes(hlo) if op not in _TRIVIAL]
    memory = compiled.memory_analysis()
    return {
        "params": param_count(model),
        "batch": batch,
        "P": p,
        "compute_dtype": compute_dtype,
        "gflop": round(cost["flops"] / p / 1e9, 3),
        "model_gflop": round(train_flops(model, batch) / 1e9, 3),
        "dot_gflop": round(matmul_flops(stablehlo) / p / 1e9, 3),
        "bytes_accessed_mb": round(cost["bytes accessed"] / p / 1e6, 1),
        "matmul_mb": round(matmul_bytes / p / 1e6, 1),
        "dots": dots,
        "top_level_ops": len(opcodes),
        "fusions": sum(op == "fusion" for op in opcodes),
        "temp_mb": round(memory.temp_size_in_bytes / 1e6, 1) if memory is not None else None,
        "gemm_algorithms": gemm_algorithms(hlo),
    }

"""The model FLOPs of a training step (jaxcap.core.flops) equal the FLOPs of the dots in
the lowered step, and the peaks they are read against (MFU) are those of the device."""

import pytest

from jaxcap.benchmarks import cost as bench_cost
from jaxcap.core import flops
from jaxcap.core.runtime import PhaseClock
from jaxcap.models import attention

MODULO = {"name": "modulo", "modulus": 7, "digits": 2, "train_fraction": 0.5}  # readout last
BINOP = {"name": "binop", "operation": "add", "p": 7, "train_fraction": 0.5}  # readout last
TOKENS = {"name": "random_tokens", "vocab_size": 7, "seq_len": 6}  # readout all (causal)
MAXSUM = {"name": "maxsum", "k": 2, "n_points": 5, "dim": 4}  # float inputs, readout mean
TINY = dict(n_layers=2, d_model=16, n_heads=2, d_head=8, d_ff=32)
BATCH = 4

CASES = {
    "last, 2 layers": (MODULO, TINY),
    "last, 1 layer": (BINOP, dict(TINY, n_layers=1)),
    "last, attention only": (MODULO, dict(TINY, mlp=False)),
    "last, one key/value head": (MODULO, dict(TINY, n_kv_heads=1)),
    "last, quantized activations (every position)": (MODULO, dict(TINY, qat_bits=4, qat_activations=True)),
    "last, angular in and out": (BINOP, dict(TINY, n_layers=1, angular="both", angular_n=7)),
    "all, 2 layers": (TOKENS, dict(TINY, attention="causal")),
    "all, grouped keys/values": (
        TOKENS,
        dict(TINY, n_layers=1, n_heads=4, d_head=4, n_kv_heads=2, attention="causal"),
    ),
    "all, attention only": (TOKENS, dict(TINY, mlp=False, attention="causal")),
    "mean, float inputs": (MAXSUM, TINY),
}


def _lowered_flops(task_cfg: dict, model_kw: dict) -> tuple:
    """(model, FLOPs of the model's dots in its lowered P = 1 training step). Attention as GEMMs
    (broadcast-multiply-reduce has no dots to count); the task's own dots at HIGHEST precision
    (maxsum draws its targets with one) are its data, not the model's."""
    saved, attention.BROADCAST_MAX_LEN = attention.BROADCAST_MAX_LEN, 0
    try:
        model, lowered = bench_cost.lower_step(model_kw, BATCH, task_cfg, p=1)
        lines = bench_cost.dot_lines(lowered.as_text())
    finally:
        attention.BROADCAST_MAX_LEN = saved
    return model, sum(bench_cost.dot_flops(line) for line in lines if "HIGHEST" not in line)


FAST = ("last, 2 layers", "all, 2 layers")  # the fast tier's two; every case runs in the slow tier


@pytest.mark.parametrize("case", [c if c in FAST else pytest.param(c, marks=pytest.mark.slow) for c in CASES])
def test_train_flops_are_the_dots_of_the_lowered_step(case):
    model, lowered = _lowered_flops(*CASES[case])
    assert flops.train_flops(model, BATCH) == lowered, case


def test_a_last_readout_trims_the_last_block_and_no_input_gradient_is_counted():
    model, _ = _lowered_flops(MODULO, TINY)
    t, d, hd, ff = model.seq_len, 16, 16, 32
    block = 2 * t * d * 3 * hd + 2 * 2 * t * t * hd + 2 * t * hd * d + 2 * 2 * t * d * ff
    last = 2 * t * d * 2 * hd + 2 * d * hd + 2 * 2 * t * hd + 2 * hd * d + 2 * 2 * d * ff
    assert flops.forward_flops(model) == block + last + 2 * d * model.n_outputs
    assert flops.train_flops(model, BATCH) == 3 * BATCH * flops.forward_flops(model)
    floats, _ = _lowered_flops(MAXSUM, TINY)  # the input embedding: its weight gradient only
    embed = 2 * floats.seq_len * floats.input_dim * 16
    assert flops.train_flops(floats, 1) == 3 * flops.forward_flops(floats) - embed


STABLEHLO = """
module @jit_f {
  func.func public @main(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8x3xf32>) -> (tensor<2x4x4xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %1 = call @inner(%arg1) : (tensor<8x3xf32>) -> tensor<3x3xf32>
    %2 = call @inner(%arg1) : (tensor<8x3xf32>) -> tensor<3x3xf32>
    %3 = stablehlo.dot %arg1, %1 : (tensor<8x3xf32>, tensor<3x3xf32>) -> tensor<8x3xf32>
    return %0 : tensor<2x4x4xf32>
  }
  func.func private @inner(%arg0: tensor<8x3xf32>) -> (tensor<3x3xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [0] x [0] : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<3x3xf32>
    return %0 : tensor<3x3xf32>
  }
}
"""  # noqa: E501


def test_matmul_flops_counts_every_call_of_a_function():
    main = 2 * (2 * 4 * 4) * 8  # batched, contracting the 8
    inner = 2 * (3 * 3) * 8  # called twice
    plain = 2 * (8 * 3) * 3  # `dot`: the lhs's last axis
    assert bench_cost.matmul_flops(STABLEHLO) == main + 2 * inner + plain
    assert bench_cost.matmul_traffic(STABLEHLO)[0] == 4


def test_peaks_by_device_and_numerics():
    h100 = "NVIDIA H100 80GB HBM3"
    assert flops.peak_tflops(h100, "bfloat16") == 989.4
    assert flops.peak_tflops(h100, "float32") == 494.7  # TF32 at the default precision
    assert flops.peak_tflops(h100, "float32", "highest") == 66.9
    assert flops.peak_tflops(h100, "float32", "bfloat16") == 989.4
    assert flops.peak_tflops("TPU v4", "float32") == 275.0  # float32 as bfloat16 passes
    assert flops.peak_tflops("cpu", "float32") is None and flops.peak_tflops(h100, "float64") is None
    assert flops.peak_name(h100, "float32") == f"{h100} tf32"


def test_utilization_on_a_known_device_and_on_a_cpu():
    model, _ = _lowered_flops(MODULO, TINY)
    tflops = 1e6 * flops.train_flops(model, BATCH) / 1e12
    known = flops.utilization(1e6, model, BATCH, "NVIDIA H200")
    assert known["model_tflop_per_s"] == pytest.approx(tflops, rel=1e-3)
    assert known["mfu"] == round(tflops / 494.7, 4) and known["peak"] == "NVIDIA H200 tf32 494.7 TFLOP/s"
    cpu = flops.utilization(1e6, model, BATCH, "cpu")
    assert cpu["model_tflop_per_s"] == known["model_tflop_per_s"] and cpu["mfu"] is None is cpu["peak"]


def test_the_phase_line_quotes_the_model_flops_rate_and_its_share_of_the_peak():
    clock = PhaseClock()
    clock.seconds.update(compile=3.0, train=2.0, eval=0.5)
    clock.count.update(compile=1, train=4)  # 4 chunks of 10 steps by 5 members: 100 model-steps/s
    line = clock.summary(5, 10, step_flops=int(2e10), peak=("NVIDIA H200 bfloat16", 989.4))
    assert line == (
        "100 model-steps/s training (5 members), 2 TFLOP/s model (0.2 % of NVIDIA H200 bfloat16 peak); "
        "5.5 s: compile 54.5%, train 36.4%, eval 9.1%"
    )
    assert clock.summary(5, 10, step_flops=int(1.5e8)).startswith(
        "100 model-steps/s training (5 members), 15 GFLOP/s model; 5.5 s:"  # a CPU: no known peak
    )
    clock.count["train"] = 0  # one chunk only: its time includes the compile, no rate
    assert clock.summary(5, 10, int(2e10)).startswith("- model-steps/s training (5 members); 5.5 s:")

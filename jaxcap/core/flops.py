"""Model FLOPs of a training step and the accelerator peaks they are read against (MFU).

Model FLOPs utilization (MFU) is the model's own matmul FLOPs per second over the device's
peak: recomputation, padding and elementwise work do not count (Chowdhery et al. 2022, PaLM,
arXiv:2204.02311, appendix B). A step is a forward and a backward of twice its cost (Kaplan et
al. 2020, arXiv:2001.08361, section 2.1), counted exactly as `models/transformer.py` computes:
the last block of a `last` readout computes only the read position, and no gradient is taken of
data or constants. Equal to the FLOPs of the lowered step's dots (tests/benchmarks/test_flops.py).
Here, a layer below the training loop, so that its phase line can quote it.

Details: docs/design/performance.md#model-flops-and-mfu.
"""

from __future__ import annotations

import jax

from jaxcap.models import ModelConfig

# Dense (no sparsity) peak TFLOP/s per chip by `jax.Device.device_kind`, for matmuls in bfloat16 (and
# float16), TF32 (float32 inputs at the GPU's default precision) and full float32. Sources: the
# NVIDIA H100, H200 and A100 datasheets (the sparsity figures halved); Google Cloud's TPU system
# architecture pages (bfloat16 only: float32 matmuls on a TPU run as bfloat16 passes).
PEAK_TFLOPS = {
    "NVIDIA H100 80GB HBM3": {"bfloat16": 989.4, "tf32": 494.7, "float32": 66.9},  # SXM5
    "NVIDIA H100 PCIe": {"bfloat16": 756.0, "tf32": 378.0, "float32": 51.2},
    "NVIDIA H200": {"bfloat16": 989.4, "tf32": 494.7, "float32": 66.9},  # the H100 SXM's compute
    "NVIDIA A100-SXM4-80GB": {"bfloat16": 312.0, "tf32": 156.0, "float32": 19.5},
    "NVIDIA A100-SXM4-40GB": {"bfloat16": 312.0, "tf32": 156.0, "float32": 19.5},
    "TPU v4": {"bfloat16": 275.0},
    "TPU v5 lite": {"bfloat16": 197.0},
    "TPU v5": {"bfloat16": 459.0},  # v5p
    "TPU v6 lite": {"bfloat16": 918.0},
}


def _matmuls(model: ModelConfig, t: int) -> list[tuple[int, int]]:
    """(forward FLOPs, how many backward matmuls of that size) of each matmul of one sequence:
    2 (input and weight gradients), or 1 where one operand is data or a constant."""
    d, hd, kvd = model.d_model, model.n_heads * model.d_head, model.kv_heads * model.d_head
    read = 1 if model.readout == "last" and not model.qat_activations else t  # transformer.read_positions
    out = [(2 * t * model.input_dim * d, 1)]  # a linear embedding of float inputs (a table lookup: none)
    out.append((2 * t * 2 * d, 1) if model.angular_numbers else (0, 0))  # angular features -> d_model
    for layer in range(model.n_layers):
        r = read if layer == model.n_layers - 1 else t  # the positions this block computes
        out.append((2 * t * d * 2 * kvd + 2 * r * d * hd, 2))  # keys, values everywhere; queries at r
        out.append((2 * 2 * r * t * hd, 2))  # scores and the mix (every key, causal or not)
        out.append((2 * r * hd * d, 2))  # the output projection
        out.append((2 * 2 * r * d * model.d_ff if model.mlp else 0, 2))
    heads = 2 if model.angular_output else model.n_outputs
    r_out = t if model.readout == "all" else 1
    out.append((2 * r_out * d * heads, 2))
    if model.angular_output:  # the head's 2-vectors against the classes' (constant) unit vectors
        out.append((2 * r_out * 2 * model.n_outputs, 1))
    return out


def forward_flops(model: ModelConfig, seq_len: int | None = None) -> int:
    """Matmul FLOPs (2 per multiply-add) of one sequence's forward pass, as the model computes it."""
    return sum(f for f, _ in _matmuls(model, seq_len or model.seq_len))


def train_flops(model: ModelConfig, batch: int) -> int:
    """Model FLOPs of one member's training step on `batch` sequences: the forward and its
    backward (3 x forward, less the gradients of data and constants, which nobody takes)."""
    return batch * sum(f * (1 + backward) for f, backward in _matmuls(model, model.seq_len))


def peak_kind(compute_dtype: str, matmul_precision: str = "default") -> str:
    """Which peak a run's matmuls are read against: bfloat16 (also float16, and float32 at
    precision 'bfloat16'), TF32 (float32 at the default precision) or float32 ('highest')."""
    if compute_dtype in ("bfloat16", "float16") or (
        compute_dtype == "float32" and matmul_precision == "bfloat16"
    ):
        return "bfloat16"
    if compute_dtype != "float32":
        return compute_dtype  # float64: no peak listed
    return "float32" if matmul_precision in ("highest", "float32") else "tf32"


def _peak(device_kind: str, compute_dtype: str, matmul_precision: str) -> tuple[str, float | None]:
    """(the kind of peak, its TFLOP/s or None) of a device for these numerics."""
    kind = peak_kind(compute_dtype, matmul_precision)
    peaks = PEAK_TFLOPS.get(device_kind, {})
    if kind in ("tf32", "float32") and peaks and kind not in peaks:  # a TPU: float32 is bfloat16 passes
        kind = "bfloat16"
    return kind, peaks.get(kind)


def peak_tflops(device_kind: str, compute_dtype: str, matmul_precision: str = "default") -> float | None:
    """The device's dense peak for these numerics, or None for a device not in PEAK_TFLOPS (a CPU)."""
    return _peak(device_kind, compute_dtype, matmul_precision)[1]


def peak_name(device_kind: str, compute_dtype: str, matmul_precision: str = "default") -> str:
    """'NVIDIA H200 bfloat16': the device and which of its peaks `peak_tflops` reads."""
    return f"{device_kind} {_peak(device_kind, compute_dtype, matmul_precision)[0]}"


def devices_peak(compute_dtype: str, matmul_precision: str, n_devices: int = 1) -> tuple[str, float] | None:
    """(name, TFLOP/s) of the peak of `n_devices` of this process's devices for these numerics,
    e.g. ('NVIDIA H200 bfloat16', 989.4), or None where the peak is unknown (a CPU)."""
    kind = jax.devices()[0].device_kind
    peak = peak_tflops(kind, compute_dtype, matmul_precision)
    if peak is None:
        return None
    name = peak_name(kind, compute_dtype, matmul_precision)
    return (name if n_devices == 1 else f"{n_devices} x {name}"), n_devices * peak


def utilization(
    model_steps_per_s: float,
    model: ModelConfig,
    batch: int,
    device_kind: str,
    matmul_precision: str = "default",
) -> dict:
    """{'model_tflop_per_s', 'peak', 'mfu'}: the model FLOPs rate and, on a known device, its
    fraction of the peak for the model's compute dtype ('peak' and 'mfu' are None elsewhere)."""
    rate = model_steps_per_s * train_flops(model, batch) / 1e12
    peak = peak_tflops(device_kind, model.compute_dtype, matmul_precision)
    name = peak_name(device_kind, model.compute_dtype, matmul_precision)
    return {
        "model_tflop_per_s": float(f"{rate:.4g}"),  # 4 significant digits: a CPU's is ~0.01
        "peak": f"{name} {peak:g} TFLOP/s" if peak else None,
        "mfu": round(rate / peak, 4) if peak else None,
    }

"""Quantization-aware training: weights (and optionally activations) fake-quantized to k bits.

Details: docs/design/model.md#quantization-aware-training.

[1] Bengio, Léonard & Courville 2013, "Estimating or Propagating Gradients Through Stochastic
    Neurons for Conditional Computation", arXiv:1308.3432.
[2] Jacob et al. 2018, "Quantization and Training of Neural Networks for Efficient
    Integer-Arithmetic-Only Inference", arXiv:1712.05877.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.inits import linear_inits


def fake_quant(x: jax.Array, bits: int) -> jax.Array:
    """x rounded to 2^bits evenly spaced levels over [min x, max x], with a straight-through
    gradient (d out / d x = 1). The forward value is exactly the quantized one."""
    lo = jax.lax.stop_gradient(jnp.min(x))
    hi = jax.lax.stop_gradient(jnp.max(x))
    step = (hi - lo) / (2**bits - 1)
    step = jnp.where(step > 0, step, jnp.ones_like(step))  # a constant tensor is already quantized
    q = jnp.round((jax.lax.stop_gradient(x) - lo) / step) * step + lo
    # q + (x - x): exactly q forward (x - x is exactly 0), gradient 1 with respect to x. The
    # usual x + stop_gradient(q - x) can land one ulp off a level.
    return q + (x - jax.lax.stop_gradient(x))


def quantize_params(params: Any, bits: int) -> Any:
    """Every weight matrix (ndim >= 2) fake-quantized to `bits`; vectors are kept."""
    return jax.tree.map(lambda p: fake_quant(p, bits) if p.ndim >= 2 else p, params)


class QuantLinear(nnx.Linear):
    """`nnx.Linear` whose input is fake-quantized to `act_bits` (the kernel is quantized with the
    rest of the weights in `make_apply`)."""

    def __init__(self, *args, act_bits: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.act_bits = act_bits

    def __call__(self, x: jax.Array) -> jax.Array:
        return super().__call__(fake_quant(x, self.act_bits))


def make_linear(
    cfg, d_in: int, d_out: int, rngs: nnx.Rngs, use_bias: bool = True, inits: dict | None = None
) -> nnx.Linear:
    """A linear layer in the model's dtypes, initialized by `cfg.init` (an `nn.Linear` under
    'torch') unless `inits` gives its kernel_init/bias_init; quantizes its input when
    `cfg.qat_activations`."""
    inits = linear_inits(cfg.init, d_in, use_bias) if inits is None else inits
    kwargs = dict(use_bias=use_bias, dtype=cfg.compute_jnp_dtype, param_dtype=cfg.param_jnp_dtype, rngs=rngs)
    kwargs.update(inits)
    if cfg.qat_activations:
        return QuantLinear(d_in, d_out, act_bits=cfg.qat_bits, **kwargs)
    return nnx.Linear(d_in, d_out, **kwargs)


def project(layers: list[nnx.Linear], x: jax.Array) -> list[jax.Array]:
    """`[layer(x) for layer in layers]` as one GEMM: the kernels side by side, so x is read once
    (and its gradient written once) instead of once per layer. Each output column is the same
    dot product as in its own layer; biases are added per layer (a layer may have none)."""
    first = layers[0]
    if isinstance(first, QuantLinear):  # every layer of a model quantizes its input the same way
        x = fake_quant(x, first.act_bits)
    kernels = [layer.kernel[...] for layer in layers]
    kernel = kernels[0] if len(kernels) == 1 else jnp.concatenate(kernels, axis=-1)
    x, kernel = x.astype(first.dtype), kernel.astype(first.dtype)
    y = jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())), precision=first.precision)
    outs, start = [], 0
    for layer, w in zip(layers, kernels):
        part = y[..., start : start + w.shape[-1]]
        start += w.shape[-1]
        if layer.bias is not None:
            part = part + layer.bias[...].astype(part.dtype).reshape((1,) * (y.ndim - 1) + (-1,))
        outs.append(part)
    return outs

"""Normalization variants: LayerNorm or RMSNorm wherever a norm is placed, and QK-norm.

`ModelConfig.norm` places the norms (pre-LN [2], post-LN [1], or none); `norm_type` picks
LayerNorm [3] or RMSNorm [4] (x / rms(x) · g: no centring and no bias, so d parameters instead
of 2d). `qk_norm=True` normalizes every head's query and key over d_head (with the same norm
type, learned scales shared by the heads) before the dot product [5, 6], which bounds the
attention logits by the learned scales and keeps softmax from saturating.

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762 (post-LN).
[2] Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture", arXiv:2002.04745.
[3] Ba, Kiros & Hinton 2016, "Layer Normalization", arXiv:1607.06450.
[4] Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", arXiv:1910.07467.
[5] Henry et al. 2020, "Query-Key Normalization for Transformers", arXiv:2010.04245.
[6] Dehghani et al. 2023, "Scaling Vision Transformers to 22 Billion Parameters", arXiv:2302.05442.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.config import ModelConfig


def make_norm(cfg: ModelConfig, dim: int, rngs: nnx.Rngs) -> nnx.LayerNorm | nnx.RMSNorm:
    """A norm over the last axis of size `dim`, computed in float32 whatever the compute dtype,
    with epsilon `cfg.norm_eps` (Flax's 1e-6 by default; PyTorch's `nn.LayerNorm` uses 1e-5)."""
    if cfg.norm_type == "rms":
        return nnx.RMSNorm(
            dim, epsilon=cfg.norm_eps, dtype=jnp.float32, param_dtype=cfg.param_jnp_dtype, rngs=rngs
        )
    return nnx.LayerNorm(
        dim, epsilon=cfg.norm_eps, dtype=jnp.float32, param_dtype=cfg.param_jnp_dtype, rngs=rngs
    )


def block_norm(cfg: ModelConfig, rngs: nnx.Rngs) -> nnx.Module | None:
    """The norm of a sublayer or before the readout; None when `cfg.norm == 'none'`. Whether the
    stack ends in one is `ModelConfig.has_final_norm`."""
    return None if cfg.norm == "none" else make_norm(cfg, cfg.d_model, rngs)


class QKNorm(nnx.Module):
    """Separate norms for queries and keys over d_head (shared by the heads) [5, 6]."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.q_norm = make_norm(cfg, cfg.d_head, rngs)
        self.k_norm = make_norm(cfg, cfg.d_head, rngs)

    def __call__(self, q_BxTxHxD: jax.Array, k_BxTxKxD: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.q_norm(q_BxTxHxD).astype(q_BxTxHxD.dtype), self.k_norm(k_BxTxKxD).astype(k_BxTxKxD.dtype)

"""Multi-head self-attention for short sequences, written for the memory-bandwidth limit.

Details: docs/design/model.md#attention-for-short-sequences.

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762.
[2] Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
    Checkpoints", arXiv:2305.13245.
[3] Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need", arXiv:1911.02150.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcap.models.config import ModelConfig
from jaxcap.models.embeddings import rotary
from jaxcap.models.inits import out_proj_inits, packed_qkv_inits
from jaxcap.models.norms import QKNorm
from jaxcap.models.quantize import make_linear, project

# Longest key sequence attended by broadcast-multiply-reduce on an accelerator; longer ones
# (and every length on a CPU) use batched GEMMs. Not a config field: it changes the speed,
# never the function computed. `python -m jaxcap.bench --broadcast_max_len N` sets
# BROADCAST_MAX_LEN, which then holds on every backend (0: always GEMMs).
ACCELERATOR_BROADCAST_MAX_LEN = 16
BROADCAST_MAX_LEN: int | None = None


def broadcast_max_len() -> int:
    """The longest key sequence attended by broadcast-multiply-reduce (read at trace time)."""
    if BROADCAST_MAX_LEN is not None:
        return BROADCAST_MAX_LEN
    return 0 if jax.default_backend() == "cpu" else ACCELERATOR_BROADCAST_MAX_LEN


def scores_and_mix(q_BxQxHxD, k_BxKxHxD, v_BxKxHxD, allowed_QxK: np.ndarray | None) -> jax.Array:
    """softmax(q·k / √d) · v per head, [B, Q, H, D]; `allowed` (static) masks query/key pairs."""
    d, lowest = q_BxQxHxD.shape[-1], jnp.finfo(jnp.float32).min
    if k_BxKxHxD.shape[1] <= broadcast_max_len():
        q, k, v = (a.astype(jnp.float32) for a in (q_BxQxHxD, k_BxKxHxD, v_BxKxHxD))
        scores_BxQxKxH = (q[:, :, None] * k[:, None]).sum(-1) / math.sqrt(d)
        if allowed_QxK is not None:
            scores_BxQxKxH = jnp.where(allowed_QxK[None, :, :, None], scores_BxQxKxH, lowest)
        probs = jax.nn.softmax(scores_BxQxKxH, axis=2)
        return (probs[..., None] * v[:, None]).sum(2).astype(v_BxKxHxD.dtype)
    scores_BxHxQxK = jnp.einsum("bqhd,bkhd->bhqk", q_BxQxHxD, k_BxKxHxD).astype(jnp.float32)
    scores_BxHxQxK = scores_BxHxQxK / math.sqrt(d)
    if allowed_QxK is not None:
        scores_BxHxQxK = jnp.where(allowed_QxK[None, None], scores_BxHxQxK, lowest)
    probs = jax.nn.softmax(scores_BxHxQxK, axis=-1).astype(v_BxKxHxD.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v_BxKxHxD)


class Attention(nnx.Module):
    """Multi-head self-attention with H heads of width d_head (H x d_head need not be d_model),
    and K = n_kv_heads key/value heads, each shared by H/K query heads [2, 3]."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        width, kv_width = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head
        # under init='torch', q, k and v are drawn as parts of one packed projection (inits.py)
        qkv = packed_qkv_inits(cfg.init, cfg.d_model, width + 2 * kv_width)
        self.q = make_linear(cfg, cfg.d_model, width, rngs, inits=qkv or None)
        # No key bias: q·(k + b) shifts every score of a query equally, which softmax ignores, so
        # its gradient is pure rounding noise that Adam would amplify into a random walk. (PyTorch
        # has one, zero at init; it cannot change the output, so init='torch' leaves it out too.)
        self.k = make_linear(cfg, cfg.d_model, kv_width, rngs, use_bias=False, inits=qkv or None)
        self.v = make_linear(cfg, cfg.d_model, kv_width, rngs, inits=qkv or None)
        self.out = make_linear(cfg, width, cfg.d_model, rngs, inits=out_proj_inits(cfg.init, width) or None)
        self.qk_norm = QKNorm(cfg, rngs) if cfg.qk_norm else None
        self.n_heads, self.d_head, self.causal = cfg.n_heads, cfg.d_head, cfg.attention == "causal"
        self.kv_heads, self.rotary = cfg.kv_heads, cfg.pos_encoding == "rotary"

    def __call__(self, x_BxTxD: jax.Array, read: slice | None = None) -> jax.Array:
        """[B, T, d_model] -> [B, R, d_model]: the outputs at the positions `read` (all if None)."""
        b, t, _ = x_BxTxD.shape
        positions = np.arange(t)[read or slice(None)]
        if read is None:
            q, k, v = project([self.q, self.k, self.v], x_BxTxD)
        else:
            (q,) = project([self.q], x_BxTxD[:, read])
            k, v = project([self.k, self.v], x_BxTxD)
        q = q.reshape(b, len(positions), self.n_heads, self.d_head)
        k, v = (y.reshape(b, t, self.kv_heads, self.d_head) for y in (k, v))
        if self.qk_norm is not None:
            q, k = self.qk_norm(q, k)
        if self.rotary:
            q, k = rotary(q, positions), rotary(k)
        if self.kv_heads != self.n_heads:  # query head h reads key/value head h // (H / K)
            group = self.n_heads // self.kv_heads
            k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        allowed = positions[:, None] >= np.arange(t)[None, :] if self.causal else None
        mixed = scores_and_mix(q, k, v, allowed)
        return self.out(mixed.reshape(b, len(positions), -1))

"""Position and number embeddings: sinusoidal and rotary positions, angular numbers.

Positions (`ModelConfig.pos_encoding`): 'sinusoidal' adds the fixed sin/cos table of [1],
'learned' a trained table (in transformer.py), 'rotary' rotates every query and key pair of
features (x_i, x_{i+D/2}) by the angle t·θ_i, θ_i = 10000^(-2i/D), at position t [2], so the
score of positions (s, t) depends on s - t only; nothing is added to the residual stream.

Details: docs/design/model.md#angular-numbers.

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762.
[2] Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding", arXiv:2104.09864.
[3] Saxena et al. 2024, "Teaching Transformers Modular Arithmetic at Scale", arXiv:2410.03569.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcap.models.config import ModelConfig
from jaxcap.models.quantize import make_linear


@functools.lru_cache(maxsize=64)
def sinusoidal_positions(seq_len: int, d_model: int) -> np.ndarray:
    """The fixed sin/cos table of [1], [seq_len, d_model] float32. A host constant (computed in
    float64, then rounded), so a compiled step embeds it instead of recomputing it, and every
    backend sees the same values."""
    angle = np.arange(seq_len)[:, None] / np.power(10000.0, np.arange(0, d_model, 2)[None, :] / d_model)
    table = np.zeros((seq_len, d_model), np.float32)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d_model // 2])
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=64)
def _rotary_table(n_positions: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of t·θ_i [2] for t < n_positions, i < d/2: float32 host constants."""
    angle = np.arange(n_positions)[:, None] * np.power(10000.0, -np.arange(0, d // 2) * 2.0 / d)[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rotary(x_BxTxHxD: jax.Array, positions: np.ndarray | None = None) -> jax.Array:
    """Rotary position embedding [2] of queries or keys (D even) at `positions` (static; 0..T-1
    if None), computed in float32."""
    t, d = x_BxTxHxD.shape[1], x_BxTxHxD.shape[-1]
    positions = np.arange(t) if positions is None else np.asarray(positions)
    cos, sin = (c[positions][None, :, None, :] for c in _rotary_table(int(positions.max()) + 1, d))
    x = x_BxTxHxD.astype(jnp.float32)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1).astype(x_BxTxHxD.dtype)


def angular_features(n: jax.Array, modulus: int) -> jax.Array:
    """(cos 2πn/N, sin 2πn/N) in float32, shape n.shape + (2,). Exactly periodic in N for
    integer n: the angle is taken of n mod N."""
    angle = 2.0 * math.pi * (jnp.asarray(n) % modulus).astype(jnp.float32) / modulus
    return jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=-1)


def angular_logits(u: jax.Array, n_outputs: int, modulus: int) -> jax.Array:
    """Logits of classes 0..n_outputs-1 from the head's 2-vectors u [..., 2]: u · e_c."""
    e_Cx2 = angular_features(jnp.arange(n_outputs), modulus)
    return jnp.einsum("...f,cf->...c", u.astype(jnp.float32), e_Cx2)


class NumberEmbed(nnx.Module):
    """Token embedding in which ids [0, n) are numbers embedded by angle, the rest by a table."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.n, self.modulus, self.d_model = cfg.angular_numbers, cfg.angular_n, cfg.d_model
        self.dtype = cfg.compute_jnp_dtype
        self.table = nnx.Embed(  # parameter dtype: see Transformer.embed (16-bit scatter-adds)
            cfg.vocab_size - self.n,
            cfg.d_model,
            dtype=cfg.param_jnp_dtype,
            param_dtype=cfg.param_jnp_dtype,
            embedding_init=nnx.initializers.normal(1.0 / math.sqrt(cfg.d_model)),
            rngs=rngs,
        )
        self.angle = make_linear(cfg, 2, cfg.d_model, rngs)

    def __call__(self, tokens_BxT: jax.Array) -> jax.Array:
        words = (self.table(jnp.maximum(tokens_BxT - self.n, 0)) * math.sqrt(self.d_model)).astype(self.dtype)
        numbers = self.angle(angular_features(tokens_BxT, self.modulus).astype(self.dtype))
        return jnp.where((tokens_BxT < self.n)[..., None], numbers, words).astype(self.dtype)


def task_numbers(task: Any) -> int:
    """N of a task whose token ids 0..N-1 and answers 0..N-1 are the residues mod N; 0 if the
    task has none. Known: binop's add/sub/mul/div (N = p). Other tasks set `angular_n` (and
    `angular_tokens` if their numeric tokens are not 0..N-1) explicitly, e.g. modulo: its digit
    tokens 0..base-1 with N = base for the input, or N = modulus for an unswept output."""
    if task.spec.family == "binop" and task.operation != "perm":
        return task.p
    return 0

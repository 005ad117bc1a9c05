"""Residual variants: plain [1], scaled [2, 3], gated [4] and DenseFormer averaging [5].

Details: docs/design/model.md#residual-variants.

[1] He et al. 2016, "Deep Residual Learning for Image Recognition", arXiv:1512.03385.
[2] Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2).
[3] Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers", arXiv:2203.00555.
[4] Bachlechner et al. 2021, "ReZero is All You Need: Fast Convergence at Large Depth",
    arXiv:2003.04887.
[5] Pagliardini et al. 2024, "DenseFormer: Enhancing Information Flow in Transformers via
    Depth Weighted Averaging", arXiv:2402.02622.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.config import ModelConfig


def n_sublayers(cfg: ModelConfig) -> int:
    """Residual branches per layer: attention, and the MLP unless the blocks are attention-only."""
    return 2 if cfg.mlp else 1


class BranchScale(nnx.Module):
    """What multiplies a sublayer's output f(x) before it is added to x (one per block)."""

    def __init__(self, cfg: ModelConfig):
        self.kind = cfg.residual
        self.factor = 1.0 / math.sqrt(cfg.n_layers * n_sublayers(cfg))
        if self.kind == "gated":
            self.gate = nnx.Param(jnp.zeros((n_sublayers(cfg),), cfg.param_jnp_dtype))

    def __call__(self, y: jax.Array, i: int) -> jax.Array:
        if self.kind == "scaled":
            return y * jnp.asarray(self.factor, y.dtype)
        if self.kind == "gated":
            return y * self.gate[...][i].astype(y.dtype)
        return y  # standard, and dense (whose mixing happens between blocks)


class DepthWeightedAverage(nnx.Module):
    """DenseFormer's DWA [5]: weights w_i over the i + 2 states seen after block i."""

    def __init__(self, cfg: ModelConfig):
        self.weights = nnx.List(
            [nnx.Param(jax.nn.one_hot(i + 1, i + 2, dtype=cfg.param_jnp_dtype)) for i in range(cfg.n_layers)]
        )

    def __call__(self, states: list[jax.Array], i: int) -> jax.Array:
        w = self.weights[i][...].astype(states[0].dtype)
        return sum(w[j] * s for j, s in enumerate(states))

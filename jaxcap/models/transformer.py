"""A small Flax NNX Transformer encoder/decoder built from a frozen `ModelConfig`.

Written for one member; the population is made by `jax.vmap` over `(graphdef, params)` in
`jaxcap.train`, never by NNX transforms. Attention is written out by hand (two einsums and a
float32 softmax) so that every variant stays readable and vmaps without special cases.
Dropout is hand-written too: its rate is a traced per-member value, which `nnx.Dropout` cannot
take (it branches on `rate == 0` in Python).

Variant switches of `ModelConfig` (all off by default) live in their own modules: norms.py,
embeddings.py (rotary and angular embeddings), residual.py, quantize.py. Two are built here:
`n_kv_heads` < n_heads shares each key/value head among a group of query heads (grouped-query
attention [3]; 1 = multi-query attention [4]), and `mlp=False` drops the MLP sublayer, leaving
attention-only blocks.

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762.
[2] Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture", arXiv:2002.04745.
[3] Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
    Checkpoints", arXiv:2305.13245.
[4] Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need", arXiv:1911.02150.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.config import ModelConfig
from jaxcap.models.embeddings import NumberEmbed, angular_logits, rotary, sinusoidal_positions
from jaxcap.models.norms import QKNorm, block_norm
from jaxcap.models.quantize import make_linear, quantize_params
from jaxcap.models.residual import BranchScale, DepthWeightedAverage


def dropout(x: jax.Array, rate: jax.Array, key: jax.Array | None) -> jax.Array:
    """Inverted dropout with a traced rate; identity when `key` is None (evaluation)."""
    if key is None:
        return x
    keep = 1.0 - rate
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jnp.where(mask, x / keep.astype(x.dtype), jnp.zeros_like(x))


class Attention(nnx.Module):
    """Multi-head self-attention with H heads of width d_head (H x d_head need not be d_model),
    and K = n_kv_heads key/value heads, each shared by H/K query heads [3, 4]."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        width, kv_width = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head
        self.q = make_linear(cfg, cfg.d_model, width, rngs)
        # No key bias: q·(k + b) shifts every score of a query equally, which softmax ignores, so
        # its gradient is pure rounding noise that Adam would amplify into a random walk.
        self.k = make_linear(cfg, cfg.d_model, kv_width, rngs, use_bias=False)
        self.v = make_linear(cfg, cfg.d_model, kv_width, rngs)
        self.out = make_linear(cfg, width, cfg.d_model, rngs)
        self.qk_norm = QKNorm(cfg, rngs) if cfg.qk_norm else None
        self.n_heads, self.d_head, self.causal = cfg.n_heads, cfg.d_head, cfg.attention == "causal"
        self.kv_heads, self.rotary = cfg.kv_heads, cfg.pos_encoding == "rotary"

    def __call__(self, x_BxTxD: jax.Array) -> jax.Array:
        b, t, _ = x_BxTxD.shape
        split = lambda y, h: y.reshape(b, t, h, self.d_head)  # noqa: E731
        q = split(self.q(x_BxTxD), self.n_heads)
        k, v = split(self.k(x_BxTxD), self.kv_heads), split(self.v(x_BxTxD), self.kv_heads)
        if self.qk_norm is not None:
            q, k = self.qk_norm(q, k)
        if self.rotary:
            q, k = rotary(q), rotary(k)
        if self.kv_heads != self.n_heads:  # query head h reads key/value head h // (H / K)
            group = self.n_heads // self.kv_heads
            k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        scores_BxHxTxT = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
        scores_BxHxTxT = scores_BxHxTxT / math.sqrt(self.d_head)
        if self.causal:
            allowed = jnp.tril(jnp.ones((t, t), bool))[None, None]
            scores_BxHxTxT = jnp.where(allowed, scores_BxHxTxT, jnp.finfo(jnp.float32).min)
        probs = jax.nn.softmax(scores_BxHxTxT, axis=-1).astype(v.dtype)
        mixed = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, t, -1)
        return self.out(mixed)


class Block(nnx.Module):
    """Attention + MLP (or attention only) with residuals; norms before (pre), after (post) or
    nowhere."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.attn = Attention(cfg, rngs)
        if cfg.mlp:
            self.fc1 = make_linear(cfg, cfg.d_model, cfg.d_ff, rngs)
            self.fc2 = make_linear(cfg, cfg.d_ff, cfg.d_model, rngs)
            self.norm1, self.norm2 = block_norm(cfg, rngs), block_norm(cfg, rngs)
        else:
            self.norm1 = block_norm(cfg, rngs)
        self.placement, self.mlp = cfg.norm, cfg.mlp
        self.act = jax.nn.gelu if cfg.activation == "gelu" else jax.nn.relu
        self.branch = BranchScale(cfg)

    def _sublayer(self, x, fn, norm, rate, key, i):
        if self.placement == "pre":
            return x + self.branch(dropout(fn(norm(x).astype(x.dtype)), rate, key), i)
        y = x + self.branch(dropout(fn(x), rate, key), i)
        return norm(y).astype(x.dtype) if self.placement == "post" else y

    def __call__(self, x, rate, keys):
        x = self._sublayer(x, self.attn, self.norm1, rate, keys[0], 0)
        if not self.mlp:
            return x
        mlp = lambda y: self.fc2(self.act(self.fc1(y)))  # noqa: E731
        return self._sublayer(x, mlp, self.norm2, rate, keys[1], 1)


class Transformer(nnx.Module):
    """Token embedding + positions -> n_layers blocks -> readout -> linear head."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        if cfg.input_dim:  # float vectors in (e.g. points of a retrieval task)
            self.embed = make_linear(cfg, cfg.input_dim, cfg.d_model, rngs)
        elif cfg.angular_numbers:
            self.embed = NumberEmbed(cfg, rngs)
        else:
            # Looked up in the parameters' dtype and cast after: the gradient of a lookup is a
            # scatter-add with many repeated tokens, which GPUs run as slow compare-and-swap
            # loops in 16-bit types (bfloat16 compute was 3-8x slower than float32 on an H100).
            self.embed = nnx.Embed(
                cfg.vocab_size,
                cfg.d_model,
                dtype=cfg.param_jnp_dtype,
                param_dtype=cfg.param_jnp_dtype,
                embedding_init=nnx.initializers.normal(1.0 / math.sqrt(cfg.d_model)),
                rngs=rngs,
            )
        if cfg.pos_encoding == "learned":
            init = nnx.initializers.normal(1.0)  # the same scale as the sinusoidal table
            self.pos = nnx.Param(init(rngs.params(), (cfg.seq_len, cfg.d_model), cfg.param_jnp_dtype))
        self.blocks = nnx.List([Block(cfg, rngs) for _ in range(cfg.n_layers)])
        self.final_norm = block_norm(cfg, rngs) if cfg.norm == "pre" else None
        self.head = make_linear(cfg, cfg.d_model, 2 if cfg.angular_output else cfg.n_outputs, rngs)
        self.dense = DepthWeightedAverage(cfg) if cfg.residual == "dense" else None

    def __call__(self, tokens_BxT: jax.Array, rate: jax.Array | float = 0.0, key=None) -> jax.Array:
        """Outputs in float32: [B, n_outputs] for 'last'/'mean' readout, [B, T, n_outputs] for
        'all'. Inputs are token ids [B, T], or float vectors [B, T, input_dim] when input_dim > 0."""
        cfg = self.cfg
        n_sites = 1 + 2 * cfg.n_layers
        keys = [None] * n_sites if key is None else list(jax.random.split(key, n_sites))
        rate = jnp.asarray(rate, jnp.float32)
        # Scaled by sqrt(d_model) as in [1], so tokens and positions have comparable norms.
        if cfg.input_dim:
            x = self.embed(tokens_BxT.astype(cfg.compute_jnp_dtype))
        elif cfg.angular_numbers:
            x = self.embed(tokens_BxT)
        else:
            x = (self.embed(tokens_BxT) * math.sqrt(cfg.d_model)).astype(cfg.compute_jnp_dtype)
        t = tokens_BxT.shape[1]
        if cfg.pos_encoding == "sinusoidal":
            x = x + sinusoidal_positions(t, cfg.d_model)[None].astype(x.dtype)
        elif cfg.pos_encoding == "learned":
            x = x + self.pos[...][None, :t].astype(x.dtype)
        x = dropout(x, rate, keys[0])
        states = [x]  # the embedding and every block output, for DenseFormer's averages
        for i, block in enumerate(self.blocks):
            x = block(x, rate, keys[1 + 2 * i : 3 + 2 * i])
            if self.dense is not None:
                states.append(x)
                x = self.dense(states, i)
        if self.final_norm is not None:
            x = self.final_norm(x).astype(x.dtype)
        if cfg.readout == "last":
            x = x[:, -1]
        elif cfg.readout == "mean":
            x = x.mean(axis=1)
        if cfg.angular_output:
            return angular_logits(self.head(x), cfg.n_outputs, cfg.angular_n)
        return self.head(x).astype(jnp.float32)


def init_params(cfg: ModelConfig, key: jax.Array) -> dict:
    """Freshly initialised parameters of one member as a pure nested dict of arrays."""
    return nnx.to_pure_dict(nnx.state(Transformer(cfg, nnx.Rngs(params=key)), nnx.Param))


def make_apply(cfg: ModelConfig):
    """`apply_fn(params, tokens_BxT, rate, key) -> logits` over pure-dict params (one member).

    The graph definition is computed once from an abstract model, so nothing is allocated and
    the jitted population step only sees plain arrays.
    """
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: Transformer(cfg, nnx.Rngs(0))))

    def apply_fn(params: dict, tokens_BxT: jax.Array, rate=0.0, key=None) -> jax.Array:
        if cfg.qat_bits:  # quantization-aware training: the forward sees k-bit weights
            params = quantize_params(params, cfg.qat_bits)
        state = jax.tree.map(lambda leaf: leaf, abstract_state)
        nnx.replace_by_pure_dict(state, params)
        return nnx.merge(graphdef, state)(tokens_BxT, rate, key)

    return apply_fn

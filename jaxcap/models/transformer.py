"""A small Flax NNX Transformer encoder/decoder built from a frozen `ModelConfig`.

Written for one member; the population is made by `jax.vmap` over `(graphdef, params)` in
`jaxcap.train`, never by NNX transforms. Attention is written out by hand (two einsums and a
float32 softmax) so that every variant stays readable and vmaps without special cases.
Dropout is hand-written too: its rate is a traced per-member value, which `nnx.Dropout` cannot
take (it branches on `rate == 0` in Python).

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762.
[2] Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture", arXiv:2002.04745.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.config import ModelConfig


def dropout(x: jax.Array, rate: jax.Array, key: jax.Array | None) -> jax.Array:
    """Inverted dropout with a traced rate; identity when `key` is None (evaluation)."""
    if key is None:
        return x
    keep = 1.0 - rate
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jnp.where(mask, x / keep.astype(x.dtype), jnp.zeros_like(x))


def sinusoidal_positions(seq_len: int, d_model: int) -> jax.Array:
    """The fixed sin/cos table of [1], shape [seq_len, d_model]."""
    pos = jnp.arange(seq_len, dtype=jnp.float32)[:, None]
    i = jnp.arange(0, d_model, 2, dtype=jnp.float32)[None, :]
    angle = pos / jnp.power(10000.0, i / d_model)
    table = jnp.zeros((seq_len, d_model), jnp.float32)
    table = table.at[:, 0::2].set(jnp.sin(angle))
    return table.at[:, 1::2].set(jnp.cos(angle[:, : d_model // 2]))


def _linear(cfg: ModelConfig, d_in: int, d_out: int, rngs: nnx.Rngs, use_bias: bool = True) -> nnx.Linear:
    return nnx.Linear(
        d_in,
        d_out,
        use_bias=use_bias,
        dtype=cfg.compute_jnp_dtype,
        param_dtype=cfg.param_jnp_dtype,
        rngs=rngs,
    )


def _norm(cfg: ModelConfig, rngs: nnx.Rngs) -> nnx.LayerNorm | None:
    if cfg.norm == "none":
        return None
    return nnx.LayerNorm(cfg.d_model, dtype=jnp.float32, param_dtype=cfg.param_jnp_dtype, rngs=rngs)


class Attention(nnx.Module):
    """Multi-head self-attention with H heads of width d_head (H x d_head need not be d_model)."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        width = cfg.n_heads * cfg.d_head
        self.q = _linear(cfg, cfg.d_model, width, rngs)
        # No key bias: q·(k + b) shifts every score of a query equally, which softmax ignores, so
        # its gradient is pure rounding noise that Adam would amplify into a random walk.
        self.k = _linear(cfg, cfg.d_model, width, rngs, use_bias=False)
        self.v = _linear(cfg, cfg.d_model, width, rngs)
        self.out = _linear(cfg, width, cfg.d_model, rngs)
        self.n_heads, self.d_head, self.causal = cfg.n_heads, cfg.d_head, cfg.attention == "causal"

    def __call__(self, x_BxTxD: jax.Array) -> jax.Array:
        b, t, _ = x_BxTxD.shape
        split = lambda y: y.reshape(b, t, self.n_heads, self.d_head)  # noqa: E731
        q, k, v = split(self.q(x_BxTxD)), split(self.k(x_BxTxD)), split(self.v(x_BxTxD))
        scores_BxHxTxT = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
        scores_BxHxTxT = scores_BxHxTxT / math.sqrt(self.d_head)
        if self.causal:
            allowed = jnp.tril(jnp.ones((t, t), bool))[None, None]
            scores_BxHxTxT = jnp.where(allowed, scores_BxHxTxT, jnp.finfo(jnp.float32).min)
        probs = jax.nn.softmax(scores_BxHxTxT, axis=-1).astype(v.dtype)
        mixed = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, t, -1)
        return self.out(mixed)


class Block(nnx.Module):
    """Attention + MLP with residuals; LayerNorm before (pre), after (post) or nowhere."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.attn = Attention(cfg, rngs)
        self.fc1 = _linear(cfg, cfg.d_model, cfg.d_ff, rngs)
        self.fc2 = _linear(cfg, cfg.d_ff, cfg.d_model, rngs)
        self.norm1, self.norm2 = _norm(cfg, rngs), _norm(cfg, rngs)
        self.placement = cfg.norm
        self.act = jax.nn.gelu if cfg.activation == "gelu" else jax.nn.relu

    def _sublayer(self, x, fn, norm, rate, key):
        if self.placement == "pre":
            return x + dropout(fn(norm(x).astype(x.dtype)), rate, key)
        y = x + dropout(fn(x), rate, key)
        return norm(y).astype(x.dtype) if self.placement == "post" else y

    def __call__(self, x, rate, keys):
        x = self._sublayer(x, self.attn, self.norm1, rate, keys[0])
        mlp = lambda y: self.fc2(self.act(self.fc1(y)))  # noqa: E731
        return self._sublayer(x, mlp, self.norm2, rate, keys[1])


class Transformer(nnx.Module):
    """Token embedding + positions -> n_layers blocks -> readout -> linear head."""

    def __init__(self, cfg: ModelConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        if cfg.input_dim:  # float vectors in (e.g. points of a retrieval task)
            self.embed = _linear(cfg, cfg.input_dim, cfg.d_model, rngs)
        else:
            self.embed = nnx.Embed(
                cfg.vocab_size,
                cfg.d_model,
                dtype=cfg.compute_jnp_dtype,
                param_dtype=cfg.param_jnp_dtype,
                embedding_init=nnx.initializers.normal(1.0 / math.sqrt(cfg.d_model)),
                rngs=rngs,
            )
        if cfg.pos_encoding == "learned":
            init = nnx.initializers.normal(1.0)  # the same scale as the sinusoidal table
            self.pos = nnx.Param(init(rngs.params(), (cfg.seq_len, cfg.d_model), cfg.param_jnp_dtype))
        self.blocks = nnx.List([Block(cfg, rngs) for _ in range(cfg.n_layers)])
        self.final_norm = _norm(cfg, rngs) if cfg.norm == "pre" else None
        self.head = _linear(cfg, cfg.d_model, cfg.n_outputs, rngs)

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
        else:
            x = (self.embed(tokens_BxT) * math.sqrt(cfg.d_model)).astype(cfg.compute_jnp_dtype)
        t = tokens_BxT.shape[1]
        if cfg.pos_encoding == "sinusoidal":
            x = x + sinusoidal_positions(t, cfg.d_model)[None].astype(x.dtype)
        elif cfg.pos_encoding == "learned":
            x = x + self.pos[...][None, :t].astype(x.dtype)
        x = dropout(x, rate, keys[0])
        for i, block in enumerate(self.blocks):
            x = block(x, rate, keys[1 + 2 * i : 3 + 2 * i])
        if self.final_norm is not None:
            x = self.final_norm(x).astype(x.dtype)
        if cfg.readout == "last":
            x = x[:, -1]
        elif cfg.readout == "mean":
            x = x.mean(axis=1)
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
        state = jax.tree.map(lambda leaf: leaf, abstract_state)
        nnx.replace_by_pure_dict(state, params)
        return nnx.merge(graphdef, state)(tokens_BxT, rate, key)

    return apply_fn

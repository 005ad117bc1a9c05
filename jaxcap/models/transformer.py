"""A small Flax NNX Transformer encoder/decoder built from a frozen `ModelConfig`.

Written for one member; the population is made by `jax.vmap` over `(graphdef, params)` in
`jaxcap.core.train`, never by NNX transforms. Attention (attention.py) is written out by hand so
that every variant stays readable and vmaps without special cases. Dropout is hand-written
too: its rate is a traced per-member value, which `nnx.Dropout` cannot take (it branches on
`rate == 0` in Python).

Details: docs/design/model.md#moving-fewer-bytes.

[1] Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762.
[2] Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture", arXiv:2002.04745.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcap.models.attention import Attention
from jaxcap.models.config import ModelConfig
from jaxcap.models.embeddings import NumberEmbed, angular_logits, sinusoidal_positions
from jaxcap.models.inits import embedding_std
from jaxcap.models.norms import block_norm
from jaxcap.models.quantize import make_linear, quantize_params
from jaxcap.models.residual import BranchScale, DepthWeightedAverage


def dropout(x: jax.Array, rate: jax.Array, key: jax.Array | None, full_len: int = 0, read=None) -> jax.Array:
    """Inverted dropout with a traced rate; identity when `key` is None (evaluation).

    When x holds only the positions `read` of a length-`full_len` sequence (a trimmed block),
    the mask is drawn for every position and sliced, so the trimmed block drops exactly what
    the full one would."""
    if key is None:
        return x
    keep = 1.0 - rate
    if read is None:
        mask = jax.random.bernoulli(key, keep, x.shape)
    else:
        mask = jax.random.bernoulli(key, keep, (x.shape[0], full_len, *x.shape[2:]))[:, read]
    return jnp.where(mask, x / keep.astype(x.dtype), jnp.zeros_like(x))


def read_positions(cfg: ModelConfig, t: int) -> slice | None:
    """The positions the readout reads, if only some (the last block computes only those).

    None when every position is read, and with quantized activations: their range is taken
    over the whole input tensor, so a trimmed block would quantize differently."""
    if cfg.readout == "last" and not cfg.qat_activations:
        return slice(t - 1, t)
    return None


def embed_multiplier(cfg: ModelConfig) -> float:
    """What the token table is multiplied by in the forward: sqrt(d_model) as in [1], or 1."""
    return math.sqrt(cfg.d_model) if cfg.embed_sqrt_d else 1.0


def activation(cfg: ModelConfig):
    """The MLP's nonlinearity: ReLU, or GELU as the tanh approximation (`gelu='tanh'`, jax's
    default) or exact, x·Φ(x) with the normal CDF from erf (`gelu='exact'`, PyTorch's `nn.GELU`)."""
    if cfg.activation == "relu":
        return jax.nn.relu
    return jax.nn.gelu if cfg.gelu == "tanh" else functools.partial(jax.nn.gelu, approximate=False)


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
        self.act = activation(cfg)
        self.branch = BranchScale(cfg)

    def _sublayer(self, x, skip, fn, norm, drop, i):
        """skip + f(x) with the block's norm placement (skip: x, or the positions f returns)."""
        if self.placement == "pre":
            return skip + self.branch(drop(fn(norm(x).astype(x.dtype))), i)
        y = skip + self.branch(drop(fn(x)), i)
        return norm(y).astype(x.dtype) if self.placement == "post" else y

    def __call__(self, x, rate, keys, read: slice | None = None):
        """[B, T, D] -> [B, T, D], or only the positions `read` ([B, R, D]): attention reads
        every position, everything after it is per position."""
        t = x.shape[1]
        skip = x if read is None else x[:, read]
        drop_attn = lambda y: dropout(y, rate, keys[0], t, read)  # noqa: E731
        x = self._sublayer(x, skip, lambda h: self.attn(h, read), self.norm1, drop_attn, 0)
        if not self.mlp:
            return x
        mlp = lambda y: self.fc2(self.act(self.fc1(y)))  # noqa: E731
        drop_mlp = lambda y: dropout(y, rate, keys[1], t, read)  # noqa: E731
        return self._sublayer(x, x, mlp, self.norm2, drop_mlp, 1)


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
                embedding_init=nnx.initializers.normal(
                    embedding_std(cfg.init, cfg.embed_std, embed_multiplier(cfg))
                ),
                rngs=rngs,
            )
        if cfg.pos_encoding == "learned":
            init = nnx.initializers.normal(cfg.embed_std)  # 1: the sinusoidal table's scale
            self.pos = nnx.Param(init(rngs.params(), (cfg.seq_len, cfg.d_model), cfg.param_jnp_dtype))
        self.blocks = nnx.List([Block(cfg, rngs) for _ in range(cfg.n_layers)])
        # pre-LN ends in a norm by default; post-LN can (`final_norm='on'`, as the PyTorch
        # grokking template's nn.LayerNorm before its head)
        self.final_norm = block_norm(cfg, rngs) if cfg.has_final_norm else None
        self.head = make_linear(cfg, cfg.d_model, 2 if cfg.angular_output else cfg.n_outputs, rngs)
        self.dense = DepthWeightedAverage(cfg) if cfg.residual == "dense" else None

    def __call__(self, tokens_BxT: jax.Array, rate: jax.Array | float = 0.0, key=None) -> jax.Array:
        """Outputs in float32: [B, n_outputs] for 'last'/'mean' readout, [B, T, n_outputs] for
        'all'. Inputs are token ids [B, T], or float vectors [B, T, input_dim] when input_dim > 0."""
        cfg = self.cfg
        n_sites = 1 + 2 * cfg.n_layers
        keys = [None] * n_sites if key is None else list(jax.random.split(key, n_sites))
        rate = jnp.asarray(rate, jnp.float32)
        # Scaled by sqrt(d_model) as in [1] (embed_sqrt_d), so tokens and positions have comparable norms.
        if cfg.input_dim:
            x = self.embed(tokens_BxT.astype(cfg.compute_jnp_dtype))
        elif cfg.angular_numbers:
            x = self.embed(tokens_BxT)
        else:
            x = (self.embed(tokens_BxT) * embed_multiplier(cfg)).astype(cfg.compute_jnp_dtype)
        t = tokens_BxT.shape[1]
        if cfg.pos_encoding == "sinusoidal":
            x = x + sinusoidal_positions(t, cfg.d_model)[None].astype(x.dtype)
        elif cfg.pos_encoding == "learned":
            x = x + self.pos[...][None, :t].astype(x.dtype)
        x = dropout(x, rate, keys[0])
        read = read_positions(cfg, t)
        states = [x]  # the embedding and every block output, for DenseFormer's averages
        for i, block in enumerate(self.blocks):
            last = i == cfg.n_layers - 1
            x = block(x, rate, keys[1 + 2 * i : 3 + 2 * i], read if last else None)
            if self.dense is not None:
                if last and read is not None:
                    states = [s[:, read] for s in states]
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


def cast_linear(params: dict, dtype) -> dict:
    """Every linear layer's kernel and bias (a dict holding a 'kernel') in `dtype`; embedding
    tables, positions, norms and gates keep the parameter dtype."""
    if not isinstance(params, dict):
        return params
    if "kernel" in params:
        return {k: v.astype(dtype) for k, v in params.items()}
    return {k: cast_linear(v, dtype) for k, v in params.items()}


def make_apply(cfg: ModelConfig):
    """`apply_fn(params, tokens_BxT, rate, key) -> logits` over pure-dict params (one member).

    The graph definition is computed once from an abstract model, so nothing is allocated and
    the jitted population step only sees plain arrays. Linear layers are cast to the compute
    dtype here, once per forward: the layers (and the packed q/k/v kernel) then use the cast
    copy, and the gradient flows back to the float32 master parameters through that one cast.
    """
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: Transformer(cfg, nnx.Rngs(0))))

    def apply_fn(params: dict, tokens_BxT: jax.Array, rate=0.0, key=None) -> jax.Array:
        if cfg.qat_bits:  # quantization-aware training: the forward sees k-bit weights
            params = quantize_params(params, cfg.qat_bits)
        params = cast_linear(params, cfg.compute_jnp_dtype)
        state = jax.tree.map(lambda leaf: leaf, abstract_state)
        nnx.replace_by_pure_dict(state, params)
        return nnx.merge(graphdef, state)(tokens_BxT, rate, key)

    return apply_fn

"""The Transformer: parameter count, readouts, causal masking, dtypes, dropout."""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcap.models import ModelConfig, Transformer, param_count
from jaxcap.models.transformer import init_params, make_apply

BASE = dict(vocab_size=11, seq_len=6, n_outputs=7, n_layers=2, d_model=16, n_heads=2, d_head=8, d_ff=32)


@pytest.mark.parametrize("norm", ["pre", "post", "none"])
@pytest.mark.parametrize("pos", ["sinusoidal", "learned", "none"])
def test_param_count_matches_the_module(norm, pos):
    cfg = ModelConfig(**BASE, norm=norm, pos_encoding=pos)
    params = nnx.state(Transformer(cfg, nnx.Rngs(0)), nnx.Param)
    assert sum(x.size for x in jax.tree.leaves(params)) == param_count(cfg)


def test_seed_baseline_defaults():
    cfg = ModelConfig(vocab_size=11, seq_len=5, n_outputs=640)
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.d_head, cfg.d_ff) == (2, 256, 8, 32, 1024)
    assert (cfg.norm, cfg.activation, cfg.pos_encoding, cfg.param_dtype) == (
        "pre",
        "gelu",
        "sinusoidal",
        "float32",
    )
    # 2 x (4 x 256 x 256 + 2 x 256 x 1024) weights dominate: ~1.6M parameters
    assert 1_500_000 < param_count(cfg) < 1_800_000


@pytest.mark.parametrize("readout,shape", [("last", (3, 7)), ("mean", (3, 7)), ("all", (3, 6, 7))])
def test_readout_shapes(readout, shape):
    cfg = ModelConfig(**BASE, readout=readout)
    apply = make_apply(cfg)
    logits = apply(init_params(cfg, jax.random.key(0)), jnp.zeros((3, 6), jnp.int32))
    assert logits.shape == shape and logits.dtype == jnp.float32


def test_causal_attention_ignores_the_future():
    cfg = ModelConfig(**BASE, readout="all", attention="causal", activation="relu")
    apply, params = make_apply(cfg), init_params(cfg, jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (2, 6), 0, 11)
    changed = tokens.at[:, 4:].set((tokens[:, 4:] + 1) % 11)
    a, b = apply(params, tokens), apply(params, changed)
    np.testing.assert_allclose(a[:, :4], b[:, :4], rtol=1e-6)
    assert not np.allclose(a[:, 4:], b[:, 4:])
    bidirectional = ModelConfig(**BASE, readout="all")
    apply_b = make_apply(bidirectional)
    params_b = init_params(bidirectional, jax.random.key(0))
    assert not np.allclose(apply_b(params_b, tokens)[:, :4], apply_b(params_b, changed)[:, :4])


def test_dropout_depends_on_rate_and_key():
    cfg = ModelConfig(**BASE)
    apply, params = make_apply(cfg), init_params(cfg, jax.random.key(0))
    tokens = jnp.ones((4, 6), jnp.int32)
    clean = apply(params, tokens)
    np.testing.assert_allclose(apply(params, tokens, 0.0, jax.random.key(1)), clean, rtol=1e-6)
    k1, k2 = apply(params, tokens, 0.5, jax.random.key(1)), apply(params, tokens, 0.5, jax.random.key(2))
    assert not np.allclose(k1, clean) and not np.allclose(k1, k2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_compute_keeps_float32_params_and_logits(dtype):
    cfg = ModelConfig(**BASE, compute_dtype=dtype)
    params = init_params(cfg, jax.random.key(0))
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(params))
    logits = make_apply(cfg)(params, jnp.ones((2, 6), jnp.int32))
    assert logits.dtype == jnp.float32 and np.isfinite(logits).all()


@pytest.mark.parametrize("angular", ["none", "input"])
def test_low_precision_embedding_gradient_scatters_in_float32(angular):
    # The gradient of a lookup is a scatter-add over repeated tokens; in bfloat16 GPUs run it
    # as compare-and-swap loops (bf16 compute was 3-8x slower than float32 on an H100).
    n = 5 if angular != "none" else 0
    cfg = ModelConfig(**BASE, compute_dtype="bfloat16", angular=angular, angular_n=n)
    params, apply = init_params(cfg, jax.random.key(0)), make_apply(cfg)
    tokens = jax.random.randint(jax.random.key(1), (8, 6), 0, 11)
    jaxpr = jax.make_jaxpr(jax.grad(lambda p: apply(p, tokens).sum()))(params).jaxpr
    scatters = [e for e in _eqns(jaxpr) if "scatter" in e.primitive.name]
    assert scatters and all(e.outvars[0].aval.dtype == jnp.float32 for e in scatters)


def _eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from _eqns(sub)


def test_float64_params_only_inside_the_x64_scope():
    cfg = ModelConfig(**BASE, param_dtype="float64", compute_dtype="float64")
    with jax.enable_x64(True):
        params = init_params(cfg, jax.random.key(0))
        assert all(x.dtype == jnp.float64 for x in jax.tree.leaves(params))
    assert jnp.zeros(1).dtype == jnp.float32

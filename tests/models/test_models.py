"""The Transformer: parameter count, readouts, causal masking, dtypes, dropout, and the
bandwidth-saving forms of the forward pass (trimmed last block, packed projections, broadcast
attention, one cast per forward) against the plain computation."""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcap.models import ModelConfig, Transformer, attention, param_count
from jaxcap.models.quantize import project
from jaxcap.models.transformer import cast_linear, init_params, make_apply, read_positions

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


TRIM_VARIANTS = [
    {},
    dict(norm="post", activation="relu", n_kv_heads=1, qk_norm=True),
    dict(norm="none", residual="dense", n_layers=3),
    dict(pos_encoding="rotary", attention="causal", mlp=False, residual="gated"),
]


@pytest.mark.parametrize("variant", range(len(TRIM_VARIANTS)))
def test_trimmed_last_block_equals_the_full_block(variant):
    """readout='last' computes the last block's queries, MLP and head at the last position only;
    outputs and gradients must equal the full block read at that position, dropout included."""
    last = ModelConfig(**{**BASE, **TRIM_VARIANTS[variant]}, readout="last")
    full = ModelConfig(**{**BASE, **TRIM_VARIANTS[variant]}, readout="all")
    params = init_params(last, jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (4, 6), 0, 11)
    weights = jax.random.normal(jax.random.key(3), (4, 7))

    def run(cfg, pick):
        def f(p):
            out = pick(make_apply(cfg)(p, tokens, 0.3, jax.random.key(2)))
            return (out * weights).sum(), out

        return jax.jit(jax.value_and_grad(f, has_aux=True))(params)

    (_, trimmed), g_trimmed = run(last, lambda y: y)
    (_, whole), g_whole = run(full, lambda y: y[:, -1])
    np.testing.assert_allclose(trimmed, whole, rtol=1e-5, atol=1e-6)
    _assert_trees_close(g_trimmed, g_whole)


def _assert_trees_close(a, b):
    """Equal to float32 rounding: 1e-5 relative, or 1e-6 of the largest magnitude (gradients
    summed in another order differ by rounding that is large next to their smallest entries)."""
    scale = max(float(jnp.abs(x).max()) for x in jax.tree.leaves(b))
    close = lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6 * scale)  # noqa: E731
    jax.tree.map(close, a, b)


def _flops(cfg, tokens):
    params = init_params(cfg, jax.random.key(0))
    cost = jax.jit(make_apply(cfg)).lower(params, tokens).compile().cost_analysis()
    return (cost[0] if isinstance(cost, (list, tuple)) else cost)["flops"]


def test_trimmed_last_block_skips_the_unread_positions():
    # 2 layers: the second computes queries, MLP and head for 1 of 6 positions (keys and values
    # for all), so the forward needs well under the full model's flops.
    cfg = ModelConfig(**{**BASE, "n_outputs": 2}, readout="last")
    tokens = jnp.zeros((8, 6), jnp.int32)
    full = ModelConfig(**{**BASE, "n_outputs": 2}, readout="all")
    assert _flops(cfg, tokens) < 0.8 * _flops(full, tokens)
    # quantized activations take their range over the whole tensor: no trimming there
    qat = dict(qat_bits=4, qat_activations=True)
    assert read_positions(ModelConfig(**BASE, **qat), 6) is None and read_positions(cfg, 6) == slice(5, 6)


@pytest.mark.parametrize("extra", [{}, dict(attention="causal", pos_encoding="rotary", n_kv_heads=1)])
def test_broadcast_attention_equals_the_einsum_path(monkeypatch, extra):
    cfg = ModelConfig(**BASE, **extra, readout="all")
    params = init_params(cfg, jax.random.key(0))
    tokens = jax.random.randint(jax.random.key(1), (4, 6), 0, 11)
    loss = lambda p: (make_apply(cfg)(p, tokens) ** 2).sum()  # noqa: E731
    assert attention.broadcast_max_len() == 0  # a CPU runs batched GEMMs (it would materialize)
    einsum = jax.jit(jax.value_and_grad(loss))(params)
    assert "dot_general" in _attention_jaxpr()
    monkeypatch.setattr(attention, "BROADCAST_MAX_LEN", 16)  # what an accelerator runs at T = 6
    assert "dot_general" not in _attention_jaxpr()
    short = jax.jit(jax.value_and_grad(loss))(params)
    _assert_trees_close(short, einsum)


def _attention_jaxpr() -> str:
    qkv = [jax.random.normal(jax.random.key(i), (2, 6, 2, 8)) for i in range(3)]
    return str(jax.make_jaxpr(lambda *a: attention.scores_and_mix(*a, None))(*qkv))  # a new trace


@pytest.mark.parametrize("qat", [False, True])
def test_packed_projection_equals_separate_layers(qat):
    cfg = ModelConfig(**BASE, qat_bits=4 if qat else 0, qat_activations=qat, n_kv_heads=1)
    attn = Transformer(cfg, nnx.Rngs(0)).blocks[0].attn
    x = jax.random.normal(jax.random.key(1), (3, 6, 16))
    packed = project([attn.q, attn.k, attn.v], x)
    for got, layer in zip(packed, (attn.q, attn.k, attn.v)):
        np.testing.assert_allclose(got, layer(x), rtol=1e-6, atol=1e-6)
    assert [y.shape[-1] for y in packed] == [16, 8, 8]


def test_low_precision_linear_layers_are_cast_once_and_norms_stay_float32():
    cfg = ModelConfig(**BASE, compute_dtype="bfloat16")
    params = init_params(cfg, jax.random.key(0))
    cast = cast_linear(params, jnp.bfloat16)
    assert cast["blocks"][0]["attn"]["q"]["kernel"].dtype == jnp.bfloat16
    assert cast["blocks"][0]["fc1"]["bias"].dtype == jnp.bfloat16
    assert cast["blocks"][0]["norm1"]["scale"].dtype == jnp.float32  # norms compute in float32
    assert cast["embed"]["embedding"].dtype == jnp.float32  # lookups scatter their gradient in float32
    # every dot of the forward and backward runs in bfloat16
    tokens = jnp.ones((2, 6), jnp.int32)
    jaxpr = jax.make_jaxpr(jax.grad(lambda p: make_apply(cfg)(p, tokens).sum()))(params).jaxpr
    dots = [e for e in _eqns(jaxpr) if e.primitive.name == "dot_general"]
    assert dots and all(v.aval.dtype == jnp.bfloat16 for e in dots for v in e.invars)

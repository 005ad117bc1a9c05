"""Model variant switches (jaxcap/models): each changes the forward pass as intended, the
parameter count follows every variant, and with all switches off the model gives the baseline's
golden numbers (up to the drift of XLA's CPU code generation between hosts)."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcap import tasks
from jaxcap.config.base import base_config, build_plan, validate
from jaxcap.core.population import stack
from jaxcap.core.runtime import numerics
from jaxcap.core.train import make_population
from jaxcap.fields import ConfigError
from jaxcap.models import ModelConfig, Transformer, param_count
from jaxcap.models.embeddings import angular_features, angular_logits, rotary, task_numbers
from jaxcap.models.quantize import fake_quant, quantize_params
from jaxcap.models.transformer import init_params, make_apply

SMALL = dict(vocab_size=11, seq_len=6, n_outputs=7, n_layers=2, d_model=16, n_heads=2, d_head=8, d_ff=32)

# Computed (jitted, CPU) with the code before any variant existed (default ModelConfig(vocab_size=13,
# seq_len=5, n_outputs=13), params from key 0, tokens from key 1; SMALL with dropout 0.1, key 2).
# Update these only for a deliberate change of the baseline model's numerics, never for a variant.
DEFAULT_LOGITS = [
    -0.8008973598480225, -0.9229475259780884, 0.511620283126831, -0.6484575867652893,
    0.30830782651901245, -2.123455047607422, 0.051635682582855225, -0.010826408863067627,
    -1.6400871276855469, 1.162801742553711, -1.343433141708374, 0.5986807346343994,
    -0.23515135049819946, -0.7490935921669006, -0.5924128293991089, 0.8865853548049927,
    -0.04760952293872833, -0.7856404185295105, -1.626202940940857, 2.196115732192993,
    0.852229118347168, -1.3126598596572876, 1.5233986377716064, -0.8414268493652344,
    0.8916597962379456, -0.2479027509689331,
]  # fmt: skip
SMALL_DROPOUT_LOGITS = [
    -0.03520697355270386, 2.0471932888031006, 0.5010172128677368, -0.668860912322998,
    0.22463475167751312, -0.7110307812690735, 1.211728572845459, 0.5761997103691101,
    -1.8853263854980469, 0.8511228561401367, -0.2527381181716919, 0.0982477068901062,
    1.5463166236877441, 1.1919113397598267,
]  # fmt: skip
SMALL_GRAD_SQUARED = 3094.17333984375  # Σ over leaves of |d Σ logits² / d param|², SMALL, dropout 0.1
# XLA's CPU code generation differs between hosts and versions (fusion, FMA, vector width): the
# logits above moved by up to 8.3e-7 on an AMD EPYC host and 1.0e-6 on an Intel Xeon one, the
# gradient sum by 2.4e-7 (relative) when jit is dropped. A real change of the numerics moves them
# far more (exact GELU instead of tanh: 2.6e-4 and 1.2e-4): the tolerances sit in between.
LOGITS_ATOL, GRAD_RTOL = 1e-5, 1e-5
LAYER_PARAMS = (
    "attn.k.kernel attn.out.bias attn.out.kernel attn.q.bias attn.q.kernel attn.v.bias attn.v.kernel"
)
LAYER_PARAMS += " fc1.bias fc1.kernel fc2.bias fc2.kernel norm1.bias norm1.scale norm2.bias norm2.scale"
TOP_PARAMS = "embed.embedding final_norm.bias final_norm.scale head.bias head.kernel"
BASELINE_PATHS = sorted(
    [f"blocks.{i}.{name}" for i in range(2) for name in LAYER_PARAMS.split()] + TOP_PARAMS.split()
)


def _init(cfg):
    # Jitted (not eager) so that the persistent compilation cache serves reruns.
    return jax.jit(lambda key: init_params(cfg, key))(jax.random.key(0))


def _forward(cfg, params=None, tokens=None):
    params = _init(cfg) if params is None else params
    if tokens is None:
        tokens = jax.random.randint(jax.random.key(1), (2, cfg.seq_len), 0, cfg.vocab_size)
    return np.asarray(jax.jit(make_apply(cfg))(params, tokens))


def _paths(params):
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    return sorted(".".join(str(k.key) for k in path) for path, _ in flat)


def assert_golden(logits, golden, grad_squared=None) -> None:
    np.testing.assert_allclose(np.ravel(logits), np.float32(golden), rtol=0, atol=LOGITS_ATOL)
    if grad_squared is not None:
        assert grad_squared == pytest.approx(SMALL_GRAD_SQUARED, rel=GRAD_RTOL, abs=0)


def _small_with_dropout() -> tuple[np.ndarray, float]:
    """(logits, Σ squared gradients) of SMALL with dropout on, so the dropout key sites count too."""
    small = ModelConfig(**SMALL)
    params = _init(small)
    tokens = jax.random.randint(jax.random.key(1), (2, 6), 0, 11)
    apply = make_apply(small)

    def loss_fn(p):
        logits = apply(p, tokens, 0.1, jax.random.key(2))
        return (logits**2).sum(), logits

    (_, logits), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params)
    return np.asarray(logits), float(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads)))


def test_all_switches_off_gives_the_baseline_numbers():
    """If this fails, a variant leaked into the default path. Updating the numbers is legitimate
    only for a deliberate change of the baseline model's numerics, never for XLA's code generation
    (widen the tolerance, with the drift measured on the new host, if that alone moves them)."""
    cfg = ModelConfig(vocab_size=13, seq_len=5, n_outputs=13)
    assert cfg.variants() == []
    assert cfg.describe() == (
        "2 layers, d_model 256, 8 heads x d_head 32, d_ff 1024, pre-LN, gelu, sinusoidal positions, "
        "bidirectional, float32"
    )
    params = _init(cfg)
    assert _paths(params) == BASELINE_PATHS
    tokens = jax.random.randint(jax.random.key(1), (2, 5), 0, 13)
    assert_golden(jax.jit(make_apply(cfg))(params, tokens), DEFAULT_LOGITS)
    logits, grad_squared = _small_with_dropout()
    assert_golden(logits, SMALL_DROPOUT_LOGITS, grad_squared)


def test_the_golden_tolerance_passes_codegen_drift_and_fails_a_real_change(monkeypatch):
    """Every number off by 1e-6 (more than any host's code generation moved them) passes; the
    exact GELU in place of the model's tanh approximation (a real numerics change) fails."""
    sign = np.where(np.arange(26) % 2, 1.0, -1.0)
    assert_golden(np.float64(DEFAULT_LOGITS) + 1e-6 * sign, DEFAULT_LOGITS)
    assert_golden(
        np.float64(SMALL_DROPOUT_LOGITS) + 1e-6 * sign[:14],
        SMALL_DROPOUT_LOGITS,
        SMALL_GRAD_SQUARED * (1 + 1e-6),
    )
    monkeypatch.setattr(jax.nn, "gelu", functools.partial(jax.nn.gelu, approximate=False))
    logits, grad_squared = _small_with_dropout()
    with pytest.raises(AssertionError):
        assert_golden(logits, SMALL_DROPOUT_LOGITS)
    with pytest.raises(AssertionError):
        assert_golden(np.float32(SMALL_DROPOUT_LOGITS), SMALL_DROPOUT_LOGITS, grad_squared)


VARIANTS = {
    "rms": dict(norm_type="rms"),
    "rms_post": dict(norm_type="rms", norm="post"),
    "qk_norm": dict(qk_norm=True),
    "qk_norm_rms": dict(qk_norm=True, norm_type="rms", norm="none"),
    "rotary": dict(pos_encoding="rotary"),
    "mqa": dict(n_kv_heads=1),
    "gqa": dict(n_heads=4, d_head=4, n_kv_heads=2),
    "attention_only": dict(mlp=False),
    "attention_only_gated": dict(mlp=False, residual="gated", norm="post"),
    "scaled": dict(residual="scaled"),
    "gated": dict(residual="gated"),
    "dense": dict(residual="dense", n_layers=3),
    "qat": dict(qat_bits=4, qat_activations=True),
    "angular_input": dict(angular="input", angular_n=5),
    "angular_both": dict(angular="both", angular_n=7, angular_tokens=9, pos_encoding="learned"),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_param_count_of_every_variant(variant):
    cfg = ModelConfig(**{**SMALL, **VARIANTS[variant]})
    params = nnx.state(nnx.eval_shape(lambda: Transformer(cfg, nnx.Rngs(0))), nnx.Param)
    assert sum(x.size for x in jax.tree.leaves(params)) == param_count(cfg)
    assert cfg.describe() != ModelConfig(**SMALL).describe()


# The variants whose forward pass no hand-case test below runs.
@pytest.mark.parametrize(
    "variant", ["rms_post", "qk_norm_rms", "rotary", "attention_only_gated", "angular_input"]
)
def test_forward_of_variant_differs_from_the_baseline(variant):
    cfg = ModelConfig(**{**SMALL, **VARIANTS[variant]})
    logits = _forward(cfg)
    assert logits.shape == (2, 7) and np.isfinite(logits).all()
    assert not np.allclose(logits, _forward(ModelConfig(**SMALL)))


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_qat_weights_take_at_most_2_to_the_k_values(bits):
    params = _init(ModelConfig(**SMALL, qat_bits=bits))
    quantized = jax.jit(quantize_params, static_argnums=1)(params, bits)
    for w, q in zip(jax.tree.leaves(params), jax.tree.leaves(quantized)):
        if w.ndim >= 2:
            assert len(np.unique(np.asarray(q))) <= min(2**bits, len(np.unique(np.asarray(w))))
            assert np.abs(np.asarray(q - w)).max() <= (w.max() - w.min()) / (2**bits - 1) / 2 + 1e-6
        else:
            np.testing.assert_array_equal(q, w)  # biases and norm scales stay float
    assert not np.array_equal(params["head"]["kernel"], quantized["head"]["kernel"])


def test_qat_forward_sees_quantized_weights_with_straight_through_gradients():
    cfg = ModelConfig(**SMALL, qat_bits=2)
    params = _init(cfg)
    quantized = quantize_params(params, 2)
    float_apply, tokens = make_apply(ModelConfig(**SMALL)), jnp.ones((2, 6), jnp.int32)
    # (XLA fuses the two programs differently, hence a tolerance of a few ulps)
    np.testing.assert_allclose(
        _forward(cfg, params, tokens), jax.jit(float_apply)(quantized, tokens), rtol=1e-5, atol=1e-6
    )
    # The gradient passes through the rounding unchanged: d f(q(w)) / dw = f'(q(w)).
    qat_grads = jax.jit(jax.grad(lambda p: make_apply(cfg)(p, tokens).sum()))(params)
    ste_grads = jax.jit(jax.grad(lambda p: float_apply(p, tokens).sum()))(quantized)
    for a, b in zip(jax.tree.leaves(qat_grads), jax.tree.leaves(ste_grads)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fake_quant_hand_case_and_activation_quantization():
    x = jnp.array([0.0, 0.1, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(fake_quant(x, 2), [0.0, 0.0, 2 / 3, 1.0, 1.0], rtol=1e-6)
    np.testing.assert_array_equal(jax.grad(lambda v: fake_quant(v, 2).sum())(x), np.ones(5))
    np.testing.assert_array_equal(fake_quant(jnp.full(3, 0.25), 2), np.full(3, 0.25))  # no range
    weights_only = ModelConfig(**SMALL, qat_bits=2)
    both = dataclasses.replace(weights_only, qat_activations=True)
    params = _init(weights_only)
    assert not np.allclose(_forward(weights_only, params), _forward(both, params))
    assert both.precision_bits == 2 and ModelConfig(**SMALL).precision_bits == 32


def _run_one_chunk(dtype: str, loss_scale: float):
    """One chunk of a 2-member population on a tiny binop model, as `jaxcap.run` scopes it."""
    c = base_config("binop")
    c.task.update(operation="add", p=5)
    c.model.update(
        n_layers=1, d_model=8, n_heads=2, d_head=4, d_ff=16, param_dtype=dtype, compute_dtype=dtype
    )
    c.model.param_dtype = "float32" if dtype == "float16" else dtype  # fp16: fp32 master weights
    c.train.update(steps=2, chunk_steps=2, batch_size=8, loss_scale=loss_scale)
    c.sweep.seeds = 2
    (bucket,) = build_plan(c).buckets
    keys, hparams = stack(bucket.members, 0)
    with numerics("highest", needs_x64=dtype == "float64"):
        program = make_population(bucket.settings, bucket.task, bucket.model)
        state, stats = program.chunk(program.init(keys, hparams), hparams, program.data(keys, hparams))
        return jax.device_get((state.params, stats))


def test_float64_run_has_float64_params_and_x64_stays_in_its_scope():
    params, stats = _run_one_chunk("float64", 1.0)
    assert {x.dtype for x in jax.tree.leaves(params)} == {np.dtype("float64")}
    assert np.isfinite(stats.loss).all()
    assert jnp.zeros(1).dtype == jnp.float32 and not jax.config.jax_enable_x64
    small = ModelConfig(**SMALL)
    assert {x.dtype for x in jax.tree.leaves(init_params(small, jax.random.key(0)))} == {np.dtype("float32")}


def test_float16_compute_trains_with_loss_scaling():
    params, stats = _run_one_chunk("float16", 1024.0)
    assert {x.dtype for x in jax.tree.leaves(params)} == {np.dtype("float32")}
    assert np.isfinite(stats.loss).all() and np.isfinite(stats.grad_norm).all()
    assert (stats.grad_norm > 0).all() and (stats.grad_norm < 1e3).all()  # unscaled gradients


def test_rms_norm_and_qk_norm_hand_cases():
    cfg = ModelConfig(**SMALL, norm_type="rms")
    model = Transformer(cfg, nnx.Rngs(0))
    x = jnp.zeros((1, 1, 16)).at[0, 0, :2].set(jnp.array([3.0, 4.0]))
    rms = np.sqrt(25.0 / 16)  # mean of squares over d_model = 16 features
    np.testing.assert_allclose(model.blocks[0].norm1(x)[0, 0, :3], [3 / rms, 4 / rms, 0.0], rtol=1e-5)
    assert not hasattr(model.blocks[0].norm1, "bias")
    # QK-norm makes attention invariant to the scale of queries and keys; plain attention is not.
    for qk_norm, invariant in ((True, True), (False, False)):
        cfg = ModelConfig(**SMALL, qk_norm=qk_norm)
        params = _init(cfg)
        scaled = jax.tree_util.tree_map_with_path(
            lambda path, p: p * 7.0 if "'q'" in jax.tree_util.keystr(path) else p, params
        )
        same = np.allclose(_forward(cfg, params), _forward(cfg, scaled), rtol=1e-4, atol=1e-5)
        assert same == invariant


def test_residual_gates_scaling_and_dense_averages():
    gated = ModelConfig(**SMALL, residual="gated")
    params = _init(gated)
    assert params["blocks"][0]["branch"]["gate"].shape == (2,)
    # Gates start at 0 (ReZero): every block is the identity, whatever its weights.
    noisy = jax.tree_util.tree_map_with_path(
        lambda path, p: p + 1.0 if "attn" in jax.tree_util.keystr(path) else p, params
    )
    np.testing.assert_array_equal(_forward(gated, params), _forward(gated, noisy))
    # Gates equal to 1/sqrt(#sublayers) reproduce the scaled residuals.
    open_gates = jax.tree.map(lambda p: p, params)
    for block in open_gates["blocks"].values():
        block["branch"]["gate"] = jnp.full((2,), 0.5)  # 1/sqrt(2 layers x 2 sublayers)
    plain = {k: v for k, v in open_gates.items()}
    plain["blocks"] = {
        i: {k: v for k, v in b.items() if k != "branch"} for i, b in open_gates["blocks"].items()
    }
    scaled = ModelConfig(**SMALL, residual="scaled")
    np.testing.assert_allclose(_forward(gated, open_gates), _forward(scaled, plain), rtol=1e-5, atol=1e-6)
    assert not np.allclose(_forward(scaled, plain), _forward(ModelConfig(**SMALL), plain))
    # DenseFormer: initialized to the standard model; weights on X_0 only skip every block.
    dense = ModelConfig(**SMALL, residual="dense")
    dparams = _init(dense)
    base = {k: v for k, v in dparams.items() if k != "dense"}
    np.testing.assert_allclose(
        _forward(dense, dparams), _forward(ModelConfig(**SMALL), base), rtol=1e-5, atol=1e-6
    )
    dparams["dense"]["weights"][1] = jnp.array([1.0, 0.0, 0.0])
    skipped = jax.tree_util.tree_map_with_path(
        lambda path, p: p + 1.0 if "blocks" in jax.tree_util.keystr(path) else p, dparams
    )
    np.testing.assert_array_equal(_forward(dense, dparams), _forward(dense, skipped))


def test_angular_embeddings_are_periodic_in_n():
    n = 5
    np.testing.assert_allclose(angular_features(jnp.arange(3) + n, n), angular_features(jnp.arange(3), n))
    np.testing.assert_allclose(angular_features(jnp.array([1]), 4), [[0.0, 1.0]], atol=1e-7)
    logits = angular_logits(jnp.array([[2.0, 0.0]]), 2 * n, n)
    np.testing.assert_allclose(logits[:, :n], logits[:, n:], atol=1e-6)
    # Token ids 0..2N-1 are numbers: n and n + N embed identically, the other tokens do not.
    cfg = ModelConfig(**{**SMALL, "vocab_size": 12}, angular="both", angular_n=n, angular_tokens=2 * n)
    params = _init(cfg)
    tokens = jnp.array([[0, 1, 2, 3, 4, 10], [5, 6, 7, 8, 9, 10], [0, 1, 2, 3, 4, 11]])
    out = _forward(cfg, params, tokens)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(out[0], out[2])


def test_rotary_scores_depend_on_relative_position_only():
    q = jnp.broadcast_to(jax.random.normal(jax.random.key(0), (1, 1, 1, 8)), (1, 6, 1, 8))
    k = jnp.broadcast_to(jax.random.normal(jax.random.key(1), (1, 1, 1, 8)), (1, 6, 1, 8))
    scores = np.asarray(jnp.einsum("bqhd,bkhd->qk", rotary(q), rotary(k)))
    np.testing.assert_allclose(scores[1:, 1:], scores[:-1, :-1], rtol=1e-5, atol=1e-5)
    assert not np.allclose(scores[0, 1], scores[0, 2])
    np.testing.assert_allclose(jnp.linalg.norm(rotary(q), axis=-1), jnp.linalg.norm(q, axis=-1), rtol=1e-6)


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_grouped_and_multi_query_attention_share_key_value_heads(kv_heads):
    heads = dict(n_heads=4, d_head=4)
    gqa = ModelConfig(**{**SMALL, **heads}, n_kv_heads=kv_heads)
    mha = ModelConfig(**{**SMALL, **heads})
    params = _init(gqa)
    assert params["blocks"][0]["attn"]["k"]["kernel"].shape == (16, kv_heads * 4)
    # MHA whose head h uses key/value head h // (H/K) computes the same function.
    expanded = jax.tree.map(lambda p: p, params)
    for block in expanded["blocks"].values():
        for name in ("k", "v"):
            for leaf in block["attn"][name]:
                w = block["attn"][name][leaf]
                w = w.reshape(w.shape[:-1] + (kv_heads, 4))
                block["attn"][name][leaf] = jnp.repeat(w, 4 // kv_heads, axis=-2).reshape(
                    w.shape[:-2] + (16,)
                )
    np.testing.assert_allclose(_forward(gqa, params), _forward(mha, expanded), rtol=1e-5, atol=1e-6)


def test_head_partitions_of_one_d_model_have_one_size():
    counts = {
        param_count(ModelConfig(**{**SMALL, "n_heads": h, "d_head": 16 // h})) for h in (1, 2, 4, 8, 16)
    }
    assert len(counts) == 1
    assert _forward(ModelConfig(**{**SMALL, "n_heads": 16, "d_head": 1})).shape == (2, 7)


def test_switches_are_config_fields_with_one_line_errors():
    c = base_config("binop")
    c.task.update(operation="add", p=11)
    c.model.update(norm_type="rms", qk_norm=True, n_kv_heads=2, residual="dense", angular="both", qat_bits=3)
    (bucket,) = validate(c).buckets
    assert bucket.model.angular_n == 11 and bucket.model.norm_type == "rms"  # N from the task
    assert task_numbers(tasks.build({"name": "binop", "operation": "perm", "k": 3})) == 0
    bad = [
        (dict(norm_type="layernorm"), "config.model.norm_type: got 'layernorm'; allowed: layer, rms"),
        (dict(qat_bits=5), "config.model.qat_bits: got 5; allowed: 0, 2, 3, 4, 8"),
        (dict(n_kv_heads=3), r"config.model.n_kv_heads: got 3; allowed: 0 or a divisor of n_heads \(8\)"),
        (dict(qat_activations=True), "config.model.qat_activations: got True; allowed: only with qat_bits"),
        (dict(pos_encoding="rotary", d_head=5), "config.model.d_head: got 5; allowed: even with rotary"),
        (dict(residual="highway"), "config.model.residual: got 'highway'"),
    ]
    for edit, message in bad:
        c = base_config("binop")
        c.model.update(edit)
        with pytest.raises(ConfigError, match=message):
            validate(c)
    c = base_config("modulo")
    c.model.angular = "input"
    with pytest.raises(ConfigError, match="config.model.angular_n: got 0, and task modulo"):
        validate(c)

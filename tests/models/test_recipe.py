"""The PyTorch recipe's switches (docs/population.md#the-pytorch-recipe), each against a reference
computed independently: large draws against the initializers' formulas, exact GELU against
math.erf, LayerNorm against its formula, a final norm by what it makes of the logits, and one
AdamW step on biases and norms against lr · wd · p by hand."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcap import tasks
from jaxcap.config.base import base_config, build_plan
from jaxcap.core.population import DEFAULT_HPARAMS, grid_members, stack
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.fields import ConfigError
from jaxcap.models import ModelConfig, Transformer, param_count
from jaxcap.models.attention import Attention
from jaxcap.models.norms import make_norm
from jaxcap.models.quantize import make_linear
from jaxcap.models.transformer import activation

TINY = dict(vocab_size=11, seq_len=4, n_outputs=7, n_layers=2, d_model=16, n_heads=2, d_head=8, d_ff=32)


def _check_uniform(values, bound: float, rtol: float = 0.02) -> None:
    """A large draw of U(±bound): inside the bounds, reaching near them, mean 0, variance bound²/3."""
    v = np.asarray(values, np.float64).ravel()
    assert np.abs(v).max() <= bound * (1 + 1e-6), (np.abs(v).max(), bound)
    assert np.abs(v).max() > bound * 0.99
    assert abs(v.mean()) < 4 * bound / math.sqrt(3 * v.size)
    assert v.var() == pytest.approx(bound**2 / 3, rel=rtol)


def test_torch_linear_is_kaiming_uniform_and_its_bias():
    cfg = ModelConfig(**TINY, init="torch")
    layer = make_linear(cfg, 512, 2048, nnx.Rngs(0))
    _check_uniform(layer.kernel[...], 1 / math.sqrt(512))  # kaiming_uniform(a=√5): 1/√fan_in
    _check_uniform(layer.bias[...], 1 / math.sqrt(512), rtol=0.1)  # 2,048 draws
    default = make_linear(dataclasses.replace(cfg, init="jax"), 512, 2048, nnx.Rngs(0))
    assert float(jnp.std(default.kernel[...])) == pytest.approx(1 / math.sqrt(512), rel=0.02)  # LeCun normal
    assert not np.asarray(default.bias[...]).any()


def test_torch_attention_is_xavier_over_the_packed_projection():
    cfg = ModelConfig(**{**TINY, "d_model": 256, "n_heads": 4, "d_head": 64}, init="torch")
    attn = Attention(cfg, nnx.Rngs(1))
    packed = np.concatenate([np.asarray(m.kernel[...]) for m in (attn.q, attn.k, attn.v)], axis=1)
    assert packed.shape == (256, 768)  # PyTorch's in_proj_weight, transposed: (3d, d)
    _check_uniform(packed, math.sqrt(6 / (256 + 768)))
    for part in (attn.q, attn.k, attn.v):  # one draw: every part shares the packed bound
        _check_uniform(part.kernel[...], math.sqrt(6 / (256 + 768)), rtol=0.05)
    assert not np.asarray(attn.q.bias[...]).any() and not np.asarray(attn.v.bias[...]).any()
    assert attn.k.bias is None  # see attention.py: it cannot change the output
    _check_uniform(attn.out.kernel[...], 1 / math.sqrt(256))  # out_proj: nn.Linear's kernel
    assert not np.asarray(attn.out.bias[...]).any()  # ... and a zero bias


def test_torch_embedding_is_standard_normal_as_stored():
    for sqrt_d in (True, False):
        cfg = ModelConfig(**{**TINY, "vocab_size": 4096, "d_model": 64}, init="torch", embed_sqrt_d=sqrt_d)
        table = np.asarray(Transformer(cfg, nnx.Rngs(2)).embed.embedding[...], np.float64)
        assert table.std() == pytest.approx(1.0, rel=0.01) and abs(table.mean()) < 0.01
    jax_cfg = dataclasses.replace(cfg, init="jax", embed_sqrt_d=True)  # the stream sees N(0, 1)
    table = np.asarray(Transformer(jax_cfg, nnx.Rngs(2)).embed.embedding[...], np.float64)
    assert table.std() == pytest.approx(1 / 8, rel=0.01)


def test_torch_layernorm_is_ones_and_zeros():
    model = Transformer(ModelConfig(**TINY, init="torch", norm="post", final_norm="on"), nnx.Rngs(3))
    for norm in (model.blocks[0].norm1, model.blocks[1].norm2, model.final_norm):
        assert (np.asarray(norm.scale[...]) == 1).all() and not np.asarray(norm.bias[...]).any()


def test_exact_gelu_is_erf_and_tanh_is_not():
    x = np.linspace(-6, 6, 1201)
    reference = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    exact = np.asarray(activation(ModelConfig(**TINY, gelu="exact"))(jnp.asarray(x, jnp.float32)))
    tanh = np.asarray(activation(ModelConfig(**TINY))(jnp.asarray(x, jnp.float32)))
    np.testing.assert_allclose(exact, reference, atol=2e-6)
    assert np.abs(tanh - reference).max() > 1e-4  # the approximation is another function


def test_norm_epsilon_is_the_formulas():
    x = np.random.default_rng(0).normal(size=(5, 16)) * 3e-3  # variance ~1e-5: epsilon matters
    for eps in (1e-5, 1e-6):
        norm = make_norm(ModelConfig(**TINY, norm_eps=eps), 16, nnx.Rngs(0))
        reference = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
        np.testing.assert_allclose(np.asarray(norm(jnp.asarray(x, jnp.float32))), reference, rtol=2e-4)


@pytest.mark.parametrize(("norm", "final_norm", "present"), [
    ("pre", "auto", True), ("post", "auto", False), ("none", "auto", False),
    ("post", "on", True), ("pre", "off", False), ("post", "off", False),
])  # fmt: skip
def test_final_norm_present_or_absent(norm, final_norm, present):
    cfg = ModelConfig(**TINY, norm=norm, final_norm=final_norm)
    model = Transformer(cfg, nnx.Rngs(4))
    assert (model.final_norm is not None) == present == cfg.has_final_norm
    n = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    assert n == param_count(cfg)


def test_final_norm_is_what_the_head_reads():
    """With the final norm's scale 0 and bias b, every input's logits are head(b)."""
    model = Transformer(ModelConfig(**TINY, norm="post", final_norm="on"), nnx.Rngs(5))
    b = jax.random.normal(jax.random.key(6), (16,))
    model.final_norm.scale[...] = jnp.zeros(16)
    model.final_norm.bias[...] = b
    tokens = jax.random.randint(jax.random.key(7), (3, 4), 0, 11)
    expected = b @ model.head.kernel[...] + model.head.bias[...]
    np.testing.assert_allclose(np.asarray(model(tokens)), np.broadcast_to(expected, (3, 7)), rtol=1e-5)


def test_decay_all_is_one_adamw_step_on_biases_and_norms():
    """Two members alike but for hparams.decay: after one step their matrices are equal and every
    other parameter p differs by exactly AdamW's decoupled decay -lr · wd · p0."""
    task = tasks.build({"name": "binop", "operation": "add", "p": 5, "train_fraction": 0.6})
    cfg = ModelConfig.for_task(task.spec, n_layers=1, d_model=8, n_heads=2, d_head=4, d_ff=16, init="torch")
    lr, wd = 1e-2, 0.5
    defaults = {**DEFAULT_HPARAMS, "learning_rate": lr, "weight_decay": wd}
    members = grid_members(defaults, {"decay": ("matrices", "all")}, {}, {}, seeds=1)
    assert [m.hparams["decay"] for m in members] == ["matrices", "all"]
    program = make_population(TrainSettings(steps=1, chunk_steps=1, batch_size=8), task, cfg)
    keys, hp = stack(members, base_seed=0)
    np.testing.assert_array_equal(hp.decay, [0.0, 1.0])
    state = program.init(keys, hp)
    before = jax.device_get(state.params)
    after, _ = program.chunk(state, hp, program.data(keys, hp))
    after = jax.device_get(after.params)
    n_vectors = 0
    for p0, p1 in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        np.testing.assert_array_equal(p0[0], p0[1])  # one seed: the same init
        if p0.ndim - 1 >= 2:
            np.testing.assert_array_equal(p1[0], p1[1])
        else:
            n_vectors += 1
            np.testing.assert_allclose(p1[1] - p1[0], -lr * wd * p0[0], rtol=1e-3, atol=1e-8)
    assert n_vectors >= 8  # biases of q, v, out, fc1, fc2, head; the norms' scales and offsets


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("model.init", "pytorch", "jax, torch"),
    ("model.gelu", "erf", "tanh, exact"),
    ("model.final_norm", "yes", "auto, on, off"),
    ("hparams.decay", "biases", "matrices, all"),
])  # fmt: skip
def test_unknown_recipe_values_name_the_field(field, value, allowed):
    c = base_config("binop")
    section, name = field.split(".")
    c[section][name] = value
    with pytest.raises(ConfigError, match=rf"^config\.{field}: got '{value}'; allowed: {allowed}$"):
        build_plan(c)


def test_final_norm_on_needs_norms():
    c = base_config("binop")
    c.model.update(norm="none", final_norm="on")
    with pytest.raises(ConfigError, match=r"^config\.model\.final_norm: got 'on' with config\.model\.norm"):
        build_plan(c)


def test_the_grokking_template_sets_the_whole_recipe():
    from helpers import ROOT, load_module

    plan = build_plan(load_module(ROOT / "configs/grokking.py").get_config("template"))
    assert [b.label for b in plan.buckets] == [f"task.operation={op}" for op in ("add", "sub", "div", "perm")]
    bucket = plan.buckets[0]
    m, s, hp = bucket.model, bucket.settings, bucket.members[0].hparams
    assert (m.init, m.gelu, m.norm, m.final_norm, m.norm_eps) == ("torch", "exact", "post", "on", 1e-5)
    assert (m.pos_encoding, m.attention, m.embed_sqrt_d, m.d_ff) == ("learned", "causal", False, 512)
    assert param_count(m) == 422_625 - 2 * 128 - 128  # the template's, less key biases and a position row
    assert (hp["decay"], hp["weight_decay"], hp["learning_rate"], hp["warmup_steps"]) == (
        "all",
        0.5,
        1e-3,
        50,
    )
    assert (s.steps, s.chunk_steps, s.batch_size, s.clip_norm, s.eval_share) == (7500, 10, 512, 0.0, 0.0)
    assert bucket.task.split_sizes() == (4704, 2352, 2353) and bucket.task.n_eval >= 2353

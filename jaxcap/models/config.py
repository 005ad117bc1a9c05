"""The frozen model configuration and the parameter count it implies.

`ModelConfig` is the one static description of a Transformer shape; everything in it is a
bucket key (changing it means a new compile). Per-member values (dropout rate, init scale) are
traced `HParams`, never fields here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import jax.numpy as jnp

from jaxcap.fields import Bool, Choice, ConfigError, Float, Int, rules, setting
from jaxcap.models.inits import INITS

ACTIVATIONS = ("gelu", "relu")
GELUS = ("tanh", "exact")
FINAL_NORMS = ("auto", "on", "off")
NORMS = ("pre", "post", "none")
NORM_TYPES = ("layer", "rms")
POSITIONS = ("sinusoidal", "learned", "rotary", "none")
RESIDUALS = ("standard", "scaled", "gated", "dense")
ANGULAR = ("none", "input", "output", "both")
QAT_BITS = (0, 2, 3, 4, 8)
ATTENTIONS = ("bidirectional", "causal")
READOUTS = ("last", "all", "mean")
DTYPES = {
    "float16": jnp.float16,
    "bfloat16": jnp.bfloat16,
    "float32": jnp.float32,
    "float64": jnp.float64,
}
PRECISION_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape and numerics of one Transformer; the defaults are the seed baseline.

    The seed baseline is 2 layers, d_model 256, 8 heads x d_head 32, d_ff 1024, pre-LayerNorm,
    GELU, sinusoidal positions, float32 (Vaswani et al. 2017, arXiv:1706.03762; pre-LN as in
    Xiong et al. 2020, arXiv:2002.04745).

    The variant switches below are all off by default (the baseline); each is documented where
    it is built: `norm_type`, `qk_norm` in norms.py; `pos_encoding='rotary'` and `angular*` in
    embeddings.py; `residual` in residual.py; `qat_bits`, `qat_activations` in quantize.py;
    `n_kv_heads` (grouped/multi-query attention) and `mlp` (False: attention-only blocks) in
    transformer.py.
    """

    # Which fields name an architecture, declared once. The task sets these (a language model
    # must be causal whatever its architecture), so they are not part of it:
    TASK_FIELDS: ClassVar[tuple[str, ...]] = (
        "vocab_size",
        "seq_len",
        "n_outputs",
        "input_dim",
        "readout",
        "attention",
    )
    SHAPE_FIELDS: ClassVar[tuple[str, ...]] = ("n_layers", "d_model", "n_heads", "d_head", "d_ff")
    # the same architecture across experiments whose recipes (positions, embedding init) and
    # task sizes differ (the capacity anchor of the meta-model's scale): its shape and numerics
    CORE_FIELDS: ClassVar[tuple[str, ...]] = (*SHAPE_FIELDS, "param_dtype", "compute_dtype", "qat_bits")

    vocab_size: int
    seq_len: int
    n_outputs: int
    # the config.model section (jaxcap.config.base) is generated from the `setting` fields below:
    # each carries its default and the rule its config value must pass (jaxcap.fields)
    n_layers: int = setting(2, Int(1, 64))
    d_model: int = setting(256, Int(1))
    n_heads: int = setting(8, Int(1))
    d_head: int = setting(32, Int(1))
    d_ff: int = setting(1024, Int(1))
    activation: str = setting("gelu", Choice(ACTIVATIONS))
    norm: str = setting("pre", Choice(NORMS))
    pos_encoding: str = setting("sinusoidal", Choice(POSITIONS))
    attention: str = setting("bidirectional", Choice(ATTENTIONS))
    # the config's 'auto' is the task's readout (`for_task`)
    readout: str = setting("last", Choice(("auto", *READOUTS)), config_default="auto")
    input_dim: int = 0  # > 0: a linear embedding of float input vectors instead of tokens
    param_dtype: str = setting("float32", Choice(tuple(DTYPES)))
    compute_dtype: str = setting("float32", Choice(tuple(DTYPES)))
    # 'rms': RMSNorm instead of LayerNorm wherever a norm is placed
    norm_type: str = setting("layer", Choice(NORM_TYPES))
    qk_norm: bool = setting(False, Bool())  # normalize queries and keys per head before the scores
    # 0: one key/value head per query head; 1: multi-query; else grouped (a divisor of n_heads)
    n_kv_heads: int = setting(0, Int(0))
    mlp: bool = setting(True, Bool())  # False: attention-only blocks
    # 'scaled', 'gated' (learned gate per sublayer), 'dense' (DWA)
    residual: str = setting("standard", Choice(RESIDUALS))
    # > 0: weights fake-quantized to this many bits in the forward pass
    qat_bits: int = setting(0, Choice(QAT_BITS))
    qat_activations: bool = setting(False, Bool())  # also fake-quantize the input of every linear layer
    # angular number embeddings for numeric tokens: input/output/both
    angular: str = setting("none", Choice(ANGULAR))
    # N of the angles 2πn/N (0: from the task, see embeddings.task_numbers)
    angular_n: int = setting(0, Int(0))
    angular_tokens: int = setting(0, Int(0))  # token ids [0, angular_tokens) are the numbers 0, 1, ... (0: N)
    # token (and learned position) tables: their std as the residual stream sees them at init, and
    # whether the table is stored at std/sqrt(d_model) and multiplied by sqrt(d_model) in the
    # forward, as in Vaswani et al. (True), or stored and read as it is, as GPT-2 does (False).
    # The multiplier makes Adam's step on a token row sqrt(d_model) times larger in the stream.
    embed_std: float = setting(1.0, Float(1e-6, 1e3))
    embed_sqrt_d: bool = setting(True, Bool())
    # A recipe ported from PyTorch (docs/population.md#the-pytorch-recipe): 'torch' draws every
    # layer as its PyTorch default does (inits.py); GELU as the tanh approximation or exact erf
    # (nn.GELU); the norms' epsilon (nn.LayerNorm: 1e-5); a norm before the readout ('auto': only
    # pre-LN stacks end in one; 'on' also for post-LN, as the grokking template does).
    init: str = setting("jax", Choice(INITS))
    gelu: str = setting("tanh", Choice(GELUS))
    norm_eps: float = setting(1e-6, Float(1e-12, 1.0))
    final_norm: str = setting("auto", Choice(FINAL_NORMS))

    def __post_init__(self):
        # Rules between fields, said once: a config meets them when its plan builds the model
        # (jaxcap.config.base.validate), so the errors name the config's fields.
        if self.final_norm == "on" and self.norm == "none":
            raise ConfigError(
                "config.model.final_norm: got 'on' with config.model.norm 'none'; allowed: auto, off "
                "(a stack without norms has no final one)"
            )
        if self.angular != "none" and self.angular_n <= 0:
            raise ConfigError(
                f"config.model.angular_n: got {self.angular_n}; allowed: > 0 with angular embeddings"
            )
        if self.n_heads % self.kv_heads:
            raise ConfigError(
                f"config.model.n_kv_heads: got {self.n_kv_heads}; allowed: 0 or a divisor of n_heads "
                f"({self.n_heads})"
            )

    @classmethod
    def for_task(cls, spec: Any, **fields: Any) -> ModelConfig:
        """The model for a task's `TaskSpec`: its vocabulary, length, outputs and readout."""
        if fields.get("readout", "auto") == "auto":
            fields["readout"] = spec.readout
        return cls(
            vocab_size=spec.vocab_size,
            seq_len=spec.seq_len,
            n_outputs=spec.n_outputs,
            input_dim=spec.input_dim,
            **fields,
        )

    def arch_fields(self) -> dict[str, Any]:
        """The architecture: every field the task does not set, by name, JSON-normal (what the
        meta-model's table records as an architecture)."""
        return ModelConfig.arch_of(dataclasses.asdict(self))

    @staticmethod
    def arch_of(model: Mapping[str, Any]) -> dict[str, Any]:
        """`arch_fields` of a recorded model (a results row's): a switch added after the row was
        written takes its default (off), so an older and a newer run of one model are one architecture."""
        defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.name in MODEL_FIELDS}
        return {k: v for k, v in sorted((defaults | dict(model)).items()) if k not in ModelConfig.TASK_FIELDS}

    @property
    def param_jnp_dtype(self) -> Any:
        return DTYPES[self.param_dtype]

    @property
    def compute_jnp_dtype(self) -> Any:
        return DTYPES[self.compute_dtype]

    @property
    def precision_bits(self) -> int:
        """Bits per stored weight: the QAT bit width when weights are quantized, else the dtype's."""
        return self.qat_bits or PRECISION_BITS[self.param_dtype]

    @property
    def has_final_norm(self) -> bool:
        """Whether a norm sits between the last block and the readout."""
        if self.final_norm == "auto":
            return self.norm == "pre"
        return self.final_norm == "on"

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def angular_numbers(self) -> int:
        """How many token ids (from 0) are numbers with an angular input embedding."""
        return (self.angular_tokens or self.angular_n) if self.angular in ("input", "both") else 0

    @property
    def angular_output(self) -> bool:
        return self.angular in ("output", "both")

    def describe(self) -> str:
        base = (
            f"{self.n_layers} layers, d_model {self.d_model}, {self.n_heads} heads x d_head "
            f"{self.d_head}, d_ff {self.d_ff}, {self.norm}-LN, {self.activation}, "
            f"{self.pos_encoding} positions, {self.attention}, {self.param_dtype}"
        )
        return ", ".join([base, *self.variants()])

    def variants(self) -> list[str]:
        """The switches that differ from the baseline, in words (empty for the baseline)."""
        out = []
        if self.norm_type != "layer":
            out.append(f"{self.norm_type} norm")
        if self.qk_norm:
            out.append("QK-norm")
        if self.n_kv_heads:
            out.append(f"{self.n_kv_heads} kv heads")
        if not self.mlp:
            out.append("attention only")
        if self.residual != "standard":
            out.append(f"{self.residual} residuals")
        if self.qat_bits:
            out.append(f"QAT {self.qat_bits}-bit" + (" weights+activations" if self.qat_activations else ""))
        if self.angular != "none":
            out.append(f"angular numbers ({self.angular}, N={self.angular_n})")
        if self.init != "jax":
            out.append(f"{self.init} init")
        if self.activation == "gelu" and self.gelu != "tanh":
            out.append(f"{self.gelu} GELU")
        if self.norm_eps != 1e-6:
            out.append(f"norm eps {self.norm_eps:g}")
        if self.final_norm != "auto":
            out.append(f"final norm {self.final_norm}")
        return out


MODEL_FIELDS = tuple(rules(ModelConfig))  # the config's model fields (the rest come from the task)


def _norm_size(cfg: ModelConfig, dim: int) -> int:
    return dim if cfg.norm_type == "rms" else 2 * dim  # RMSNorm has a scale, LayerNorm also a bias


def param_count(cfg: ModelConfig) -> int:
    """Number of trainable parameters, counted from the shapes (checked against NNX in tests)."""
    d, hd, kvd = cfg.d_model, cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head
    if cfg.input_dim:
        n = cfg.input_dim * d + d
    else:  # the table holds the non-number tokens; numbers go through a 2 -> d_model map
        numbers = cfg.angular_numbers
        n = (cfg.vocab_size - numbers) * d + (3 * d if numbers else 0)
    if cfg.pos_encoding == "learned":
        n += cfg.seq_len * d
    norm = _norm_size(cfg, d) if cfg.norm != "none" else 0
    attn = 2 * d * hd + hd + d + 2 * d * kvd + kvd  # q, out, k, v; biases on all but k
    attn += 2 * _norm_size(cfg, cfg.d_head) if cfg.qk_norm else 0
    mlp = d * cfg.d_ff + cfg.d_ff + cfg.d_ff * d + d if cfg.mlp else 0
    n += cfg.n_layers * (attn + mlp + (2 if cfg.mlp else 1) * norm)
    if cfg.has_final_norm:
        n += norm  # final norm before the readout
    if cfg.residual == "gated":
        n += cfg.n_layers * (2 if cfg.mlp else 1)  # one gate per sublayer
    elif cfg.residual == "dense":
        n += sum(i + 2 for i in range(cfg.n_layers))  # DWA weights after block i: i + 2 inputs
    head = 2 if cfg.angular_output else cfg.n_outputs
    return n + d * head + head

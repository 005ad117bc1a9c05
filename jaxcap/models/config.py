"""The frozen model configuration and the parameter count it implies.

`ModelConfig` is the one static description of a Transformer shape; everything in it is a
bucket key (changing it means a new compile). Per-member values (dropout rate, init scale) are
traced `HParams`, never fields here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

from jaxcap.fields import ConfigError

ACTIVATIONS = ("gelu", "relu")
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

    vocab_size: int
    seq_len: int
    n_outputs: int
    n_layers: int = 2
    d_model: int = 256
    n_heads: int = 8
    d_head: int = 32
    d_ff: int = 1024
    activation: str = "gelu"
    norm: str = "pre"
    pos_encoding: str = "sinusoidal"
    attention: str = "bidirectional"
    readout: str = "last"
    input_dim: int = 0  # > 0: a linear embedding of float input vectors instead of tokens
    param_dtype: str = "float32"
    compute_dtype: str = "float32"
    norm_type: str = "layer"  # 'rms': RMSNorm instead of LayerNorm wherever a norm is placed
    qk_norm: bool = False  # normalize queries and keys per head before the scores
    n_kv_heads: int = 0  # 0: one key/value head per query head; 1: multi-query; else grouped
    mlp: bool = True  # False: attention-only blocks
    residual: str = "standard"  # 'scaled', 'gated' (learned gate per sublayer), 'dense' (DWA)
    qat_bits: int = 0  # > 0: weights fake-quantized to this many bits in the forward pass
    qat_activations: bool = False  # also fake-quantize the input of every linear layer
    angular: str = "none"  # angular number embeddings for numeric tokens: input/output/both
    angular_n: int = 0  # N of the angles 2πn/N (0: from the task, see embeddings.task_numbers)
    angular_tokens: int = 0  # token ids [0, angular_tokens) are the numbers 0, 1, ... (0: N)
    # token (and learned position) tables: their std as the residual stream sees them at init, and
    # whether the table is stored at std/sqrt(d_model) and multiplied by sqrt(d_model) in the
    # forward, as in Vaswani et al. (True), or stored and read as it is, as GPT-2 does (False).
    # The multiplier makes Adam's step on a token row sqrt(d_model) times larger in the stream.
    embed_std: float = 1.0
    embed_sqrt_d: bool = True

    def __post_init__(self):
        # The config schema says this with the config's field names; this guards direct use.
        if self.angular != "none" and self.angular_n <= 0:
            raise ConfigError(
                f"ModelConfig.angular_n: got {self.angular_n}; allowed: > 0 with angular embeddings"
            )
        if self.n_heads % self.kv_heads:
            raise ConfigError(f"ModelConfig.n_kv_heads: got {self.n_kv_heads}; allowed: a divisor of n_heads")

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
        return out


MODEL_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(ModelConfig)
    if f.name not in ("vocab_size", "seq_len", "n_outputs", "input_dim")
)


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
    if cfg.norm == "pre":
        n += norm  # final norm before the readout
    if cfg.residual == "gated":
        n += cfg.n_layers * (2 if cfg.mlp else 1)  # one gate per sublayer
    elif cfg.residual == "dense":
        n += sum(i + 2 for i in range(cfg.n_layers))  # DWA weights after block i: i + 2 inputs
    head = 2 if cfg.angular_output else cfg.n_outputs
    return n + d * head + head

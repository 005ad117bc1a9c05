"""The frozen model configuration and the parameter count it implies.

`ModelConfig` is the one static description of a Transformer shape; everything in it is a
bucket key (changing it means a new compile). Per-member values (dropout rate, init scale) are
traced `HParams`, never fields here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

ACTIVATIONS = ("gelu", "relu")
NORMS = ("pre", "post", "none")
POSITIONS = ("sinusoidal", "learned", "none")
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
        return PRECISION_BITS[self.param_dtype]

    def describe(self) -> str:
        return (
            f"{self.n_layers} layers, d_model {self.d_model}, {self.n_heads} heads x d_head "
            f"{self.d_head}, d_ff {self.d_ff}, {self.norm}-LN, {self.activation}, "
            f"{self.pos_encoding} positions, {self.attention}, {self.param_dtype}"
        )


MODEL_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(ModelConfig)
    if f.name not in ("vocab_size", "seq_len", "n_outputs", "input_dim")
)


def param_count(cfg: ModelConfig) -> int:
    """Number of trainable parameters, counted from the shapes (checked against NNX in tests)."""
    d, hd = cfg.d_model, cfg.n_heads * cfg.d_head
    n = cfg.input_dim * d + d if cfg.input_dim else cfg.vocab_size * d  # embedding
    if cfg.pos_encoding == "learned":
        n += cfg.seq_len * d
    norm = 2 * d if cfg.norm != "none" else 0
    attn = 3 * d * hd + 2 * hd + hd * d + d  # q, k, v, out; biases on all but k
    mlp = d * cfg.d_ff + cfg.d_ff + cfg.d_ff * d + d
    n += cfg.n_layers * (attn + mlp + 2 * norm)
    if cfg.norm == "pre":
        n += norm  # final LayerNorm before the readout
    n += d * cfg.n_outputs + cfg.n_outputs  # head
    return n

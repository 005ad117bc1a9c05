"""Parameter initializers: jaxcap's own (`init='jax'`) or each layer type's PyTorch default.

`ModelConfig.init = 'jax'` (the default) keeps Flax's defaults: every kernel from a truncated
normal of std 1/√fan_in (LeCun normal), zero biases, token tables N(0, embed_std²/multiplier²).
`init = 'torch'` draws what a PyTorch model of the same layers starts from, so a recipe ported
from PyTorch starts where it did:

- `nn.Linear` (fc1, fc2, the attention output, the head, a float-input embedding): kernel from
  `kaiming_uniform_(a=√5)`, i.e. U(±gain·√3/√fan_in) with gain √(2/(1+a²)) = √(1/3), which is
  U(±1/√fan_in); bias U(±1/√fan_in).
- `nn.MultiheadAttention`: q, k and v are one packed (3d, d) `in_proj_weight` drawn by
  `xavier_uniform_`, U(±√(6/(fan_in + fan_out))) with fan_out the packed width (3d); the
  in_proj and out_proj biases are zero (out_proj's kernel is an `nn.Linear` default).
- `nn.Embedding`: N(0, 1) as stored (jaxcap's `embed_std`, 1 by default, sets the std).
- `nn.LayerNorm`: weight 1, bias 0, which Flax's LayerNorm already does.

Checked against the formulas on large draws in tests/models/test_recipe.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx

INITS = ("jax", "torch")
Initializer = Callable[..., jax.Array]


def uniform(bound: float) -> Initializer:
    """U(-bound, bound) in the requested dtype."""

    def init(key: jax.Array, shape, dtype=jnp.float32) -> jax.Array:
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def linear_bound(fan_in: int) -> float:
    """PyTorch `nn.Linear`'s bound for kernel and bias: 1/√fan_in (kaiming_uniform with a=√5)."""
    return 1.0 / math.sqrt(fan_in)


def xavier_bound(fan_in: int, fan_out: int) -> float:
    """`xavier_uniform_`'s bound √(6/(fan_in + fan_out)) (gain 1)."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def linear_inits(init: str, fan_in: int, use_bias: bool = True) -> dict[str, Initializer]:
    """The kernel_init/bias_init keywords of an `nnx.Linear` (empty for Flax's defaults)."""
    if init == "jax":
        return {}
    bound = linear_bound(fan_in)
    return {"kernel_init": uniform(bound), **({"bias_init": uniform(bound)} if use_bias else {})}


def packed_qkv_inits(init: str, d_model: int, packed_width: int) -> dict[str, Initializer]:
    """The keywords of each of the q, k and v projections: under 'torch' one xavier-uniform draw
    over the packed (packed_width, d_model) matrix, i.e. every part shares the packed bound, and
    zero biases (PyTorch's in_proj_bias)."""
    if init == "jax":
        return {}
    return {
        "kernel_init": uniform(xavier_bound(d_model, packed_width)),
        "bias_init": nnx.initializers.zeros_init(),
    }


def out_proj_inits(init: str, fan_in: int) -> dict[str, Initializer]:
    """`nn.MultiheadAttention.out_proj`: an `nn.Linear` kernel and a zero bias."""
    if init == "jax":
        return {}
    return {"kernel_init": uniform(linear_bound(fan_in)), "bias_init": nnx.initializers.zeros_init()}


def embedding_std(init: str, embed_std: float, multiplier: float) -> float:
    """The std a token table is stored at: under 'jax' the stream sees `embed_std` after the
    forward's multiplier; under 'torch' the table is stored as `nn.Embedding` draws it."""
    return embed_std if init == "torch" else embed_std / multiplier

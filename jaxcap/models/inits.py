"""Parameter initializers: jaxcap's own (`init='jax'`) or each layer type's PyTorch default.

'jax' (the default) keeps Flax's: kernels LeCun normal (truncated, std 1/√fan_in), zero biases.
'torch' draws what the same PyTorch layers start from (docs/population.md#the-pytorch-recipe):
- `nn.Linear` (fc1, fc2, attention output, head): kernel `kaiming_uniform_(a=√5)`, which is
  U(±1/√fan_in) (gain √(1/3) times √3/√fan_in); bias U(±1/√fan_in).
- `nn.MultiheadAttention`: q, k, v are one packed (3d, d) `in_proj_weight` drawn by
  `xavier_uniform_`, U(±√(6/(fan_in + fan_out))), fan_out the packed width; in_proj and
  out_proj biases zero (out_proj's kernel is an `nn.Linear` default).
- `nn.Embedding`: N(0, 1) as stored (`embed_std`, 1 by default, is its std).
- `nn.LayerNorm`: weight 1, bias 0, as Flax's LayerNorm already is.
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

"""Capacity in bits, scored from the model: what a trained member stores about random data (per
item, on device), its totals, and the dataset sizes each round trains. What other experiments
share (memorized bits from a loss, saturation, the plateau, the per-architecture summary and its
budgets) is in the results layer: jaxcap/results/capacity_curves.py and capacity_reading.py.

Details: docs/design/capacity.md#bits-stored.

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.core.losses import masked
from jaxcap.models import ModelConfig
from jaxcap.models.transformer import make_apply
from jaxcap.tasks import Split, Task


def clipped_bits(ce_bits: jax.Array, log2_k: float | jax.Array) -> jax.Array:
    """max(0, log2 K − cross-entropy in bits), elementwise: the bits one answer stores."""
    return jnp.maximum(0.0, log2_k - ce_bits)


def item_scores(logits, targets, weights, mask=None) -> dict[str, jax.Array]:
    """Per item (axis 0): bits stored, net bits (unclipped), cross-entropy in bits, exact recall.

    logits [N, K] or [N, T, K]; targets and weights [N] or [N, T]. A sequence item's entropy and
    code length are sums over its scored positions, and the item is clipped as a whole (as in
    [1]): clipping each token would count every lucky token of an unlearned sequence. `mask`
    hides classes that do not exist for the member (then K is the number of valid classes).
    """
    log_probs = jax.nn.log_softmax(masked(logits.astype(jnp.float32), mask), axis=-1)
    k = logits.shape[-1] if mask is None else jnp.sum(mask)
    ce_bits = -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0] / math.log(2.0)
    scored = weights > 0
    entropy = jnp.where(scored, jnp.log2(jnp.asarray(k, jnp.float32)), 0.0)
    ce_bits = jnp.where(scored, ce_bits, 0.0)
    right = log_probs.argmax(-1) == targets
    if targets.ndim > 1:
        axes = tuple(range(1, targets.ndim))
        exact = jnp.all(right | ~scored, axis=axes) & jnp.any(scored, axis=axes)
        entropy, ce_bits = entropy.sum(axes), ce_bits.sum(axes)
    else:
        exact = right & scored
    return {
        "bits": clipped_bits(ce_bits, entropy),
        "net_bits": entropy - ce_bits,
        "ce_bits": ce_bits,
        "exact": exact.astype(jnp.float32),
    }


def make_scores(task: Task, model_cfg: ModelConfig, batch_size: int) -> Callable:
    """`scores(params_P, hp_P, data_P) -> {name: [P, n_max]}` on every member's training set,
    jit(vmap) over the population, in fixed-size batches inside a `lax.scan`."""
    apply_fn = make_apply(model_cfg)

    def one(params, hp, data: dict[str, Split]) -> dict[str, jax.Array]:
        split, mask = data["train"], task.output_mask(hp.task)
        size = min(batch_size, split.size)
        n_batches = -(-split.size // size)
        pad = n_batches * size - split.size
        padded = jax.tree.map(lambda a: jnp.concatenate([a, jnp.zeros((pad,) + a.shape[1:], a.dtype)]), split)
        batches = jax.tree.map(lambda a: a.reshape((n_batches, size) + a.shape[1:]), padded)

        def body(_, batch: Split):
            return None, item_scores(apply_fn(params, batch.inputs), batch.targets, batch.weights, mask)

        _, out = jax.lax.scan(body, None, batches)
        return jax.tree.map(lambda a: a.reshape((-1,))[: split.size], out)

    return jax.jit(jax.vmap(one))


def totals(scores: dict[str, np.ndarray], sizes: list[int]) -> list[dict[str, float]]:
    """Per member, float64 sums over its n items: bits stored (clipped per item), net bits
    (entropy minus code length, unclipped: a lower bound that counts items coded worse than
    chance against the others), mean cross-entropy per item, and the fraction memorized exactly."""
    out = []
    for i, n in enumerate(sizes):
        column = {k: np.asarray(v[i][:n], np.float64) for k, v in scores.items()}
        out.append(
            {
                "bits_stored": float(column["bits"].sum()),
                "net_bits": float(column["net_bits"].sum()),
                "ce_bits_per_item": float(column["ce_bits"].mean()),
                "exact_fraction": float(column["exact"].mean()),
            }
        )
    return out


def sizes_for(grid: tuple[float, ...], n_params: int, bits_per_example: float) -> list[int]:
    """Dataset sizes whose entropy is each `grid` value times the parameter count, so every
    architecture's sizes bracket its capacity alike."""
    return sorted({max(1, int(round(g * n_params / bits_per_example))) for g in grid})


def next_sizes(sizes: list[int], growth: float, extend: int) -> list[int]:
    """The next extension round: `extend` sizes continuing geometrically past the largest."""
    top, out = max(sizes), []
    for k in range(1, extend + 1):
        out.append(max(int(round(top * growth**k)), (out[-1] if out else top) + 1))
    return out

"""Training objective and evaluation sums for classification-style outputs.

Logits are [..., C] float32; targets are integer classes with the same leading shape; weights
say which positions are scored. A per-member class mask (e.g. x mod N with N below the head
size) removes classes that do not exist for that member from the softmax.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

_NEG = -1e9  # finite, so masked probabilities are exactly 0 and 0 * logit stays 0


def masked(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    if mask is None:
        return logits
    return jnp.where(mask.reshape((1,) * (logits.ndim - 1) + mask.shape), logits, _NEG)


def train_loss(logits, targets, weights, mask, label_smoothing) -> jax.Array:
    """Weighted mean cross-entropy with label smoothing spread over the member's valid classes."""
    logits = masked(logits, mask)
    n_classes = logits.shape[-1]
    valid = jnp.ones((n_classes,), jnp.float32) if mask is None else mask.astype(jnp.float32)
    valid = valid.reshape((1,) * (logits.ndim - 1) + valid.shape)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(targets, n_classes, dtype=jnp.float32)
    smooth = valid / valid.sum()
    target_dist = (1.0 - label_smoothing) * onehot + label_smoothing * smooth
    ce = -(target_dist * jnp.where(valid > 0, log_probs, 0.0)).sum(-1)
    return (ce * weights).sum() / jnp.maximum(weights.sum(), 1.0)


def eval_sums(logits, targets, weights, mask) -> dict[str, jax.Array]:
    """Sums over a batch: loss (nats), correct, entropy (bits), scored weight, exact examples.

    `exact` counts examples whose every scored position is right (the sequence metric); for
    one answer per example it equals `correct`.
    """
    logits = masked(logits, mask)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    right = (logits.argmax(-1) == targets).astype(jnp.float32)
    entropy_bits = -(jnp.exp(log_probs) * log_probs).sum(-1) / jnp.log(2.0)
    scored = weights > 0
    if targets.ndim > 1:
        example_ok = jnp.all(jnp.where(scored, right > 0, True), axis=tuple(range(1, targets.ndim)))
        example_in = jnp.any(scored, axis=tuple(range(1, targets.ndim)))
    else:
        example_ok, example_in = right > 0, scored
    return {
        "loss": (nll * weights).sum(),
        "correct": (right * weights).sum(),
        "entropy": (entropy_bits * weights).sum(),
        "weight": weights.sum(),
        "exact": (example_ok & example_in).astype(jnp.float32).sum(),
        "examples": example_in.astype(jnp.float32).sum(),
    }


def finalize(sums: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Means from eval sums: loss, accuracy, entropy (bits), exact match."""
    w = jnp.maximum(sums["weight"], 1e-9)
    return {
        "loss": sums["loss"] / w,
        "accuracy": sums["correct"] / w,
        "entropy": sums["entropy"] / w,
        "exact": sums["exact"] / jnp.maximum(sums["examples"], 1e-9),
    }

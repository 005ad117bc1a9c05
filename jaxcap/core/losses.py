"""Training objectives and evaluation sums, one `Objective` per output kind.

classify / sequence: logits [..., C] float32, integer targets with the same leading shape,
weights saying which positions are scored; a per-member class mask (x mod N below the head
size) removes classes that do not exist for that member from the softmax.
regress: outputs [B, K] float32 against float targets [B, K]; the metric is the normalized MSE,
NMSE = MSE / Var(y) over the scored set, so 1.0 is the best constant predictor.

Evaluation accumulates sums over batches (`sums`), then turns them into means (`finalize`),
so a split of any size is scored exactly in fixed-size batches. A split with an `optimum` (the
true process's loss per target, language tasks) also gets bits per token, perplexity and the
excess over the optimum in bits per token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

_NEG = -1e9  # finite, so masked probabilities are exactly 0 and 0 * logit stays 0


def masked(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    if mask is None:
        return logits
    return jnp.where(mask.reshape((1,) * (logits.ndim - 1) + mask.shape), logits, _NEG)


def classify_loss(logits, targets, weights, mask, label_smoothing) -> jax.Array:
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


def classify_sums(logits, targets, weights, mask, optimum=None) -> dict[str, jax.Array]:
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
        axes = tuple(range(1, targets.ndim))
        example_ok = jnp.all(jnp.where(scored, right > 0, True), axis=axes)
        example_in = jnp.any(scored, axis=axes)
    else:
        example_ok, example_in = right > 0, scored
    sums = {
        "loss": (nll * weights).sum(),
        "correct": (right * weights).sum(),
        "entropy": (entropy_bits * weights).sum(),
        "weight": weights.sum(),
        "exact": (example_ok & example_in).astype(jnp.float32).sum(),
        "examples": example_in.astype(jnp.float32).sum(),
    }
    if optimum is not None:
        sums["optimum"] = (optimum * weights).sum()
    return sums


def classify_finalize(sums: dict[str, jax.Array]) -> dict[str, jax.Array]:
    w = jnp.maximum(sums["weight"], 1e-9)
    out = {
        "loss": sums["loss"] / w,
        "accuracy": sums["correct"] / w,
        "entropy": sums["entropy"] / w,
        "exact": sums["exact"] / jnp.maximum(sums["examples"], 1e-9),
    }
    if "optimum" in sums:  # language modelling: bits per token and the excess over the true process
        out["bits"] = out["loss"] / jnp.log(2.0)
        out["perplexity"] = jnp.exp(out["loss"])
        out["excess_bits"] = (sums["loss"] - sums["optimum"]) / (w * jnp.log(2.0))
    return out


def regress_loss(outputs, targets, weights, mask, label_smoothing) -> jax.Array:
    """Weighted mean squared error (mean over output dimensions); mask/smoothing do not apply."""
    del mask, label_smoothing
    se = ((outputs - targets) ** 2).mean(-1)
    return (se * weights).sum() / jnp.maximum(weights.sum(), 1.0)


def regress_sums(outputs, targets, weights, mask, optimum=None) -> dict[str, jax.Array]:
    del mask, optimum
    w = weights[:, None]
    return {
        "se": (((outputs - targets) ** 2) * w).sum(),
        "y": (targets * w).sum(0),
        "y2": ((targets**2) * w).sum(0),
        "weight": weights.sum(),
    }


def regress_finalize(sums: dict[str, jax.Array]) -> dict[str, jax.Array]:
    w = jnp.maximum(sums["weight"], 1e-9)
    k = sums["y"].shape[0]
    mse = sums["se"] / (w * k)
    variance = (sums["y2"] / w - (sums["y"] / w) ** 2).mean()
    return {"loss": mse, "nmse": mse / jnp.maximum(variance, 1e-12)}


@dataclasses.dataclass(frozen=True)
class Objective:
    loss: Callable  # (outputs, targets, weights, mask, label_smoothing) -> scalar
    sums: Callable  # (outputs, targets, weights, mask, optimum) -> {name: array}
    finalize: Callable  # sums -> {metric: scalar}
    zeros: Callable  # (n_outputs, with_optimum) -> sums of an empty set


def _classify_zeros(n_outputs: int, with_optimum: bool = False) -> dict[str, jax.Array]:
    names = ("loss", "correct", "entropy", "weight", "exact", "examples") + ("optimum",) * with_optimum
    return {k: jnp.zeros((), jnp.float32) for k in names}


def _regress_zeros(n_outputs: int, with_optimum: bool = False) -> dict[str, jax.Array]:
    return {
        "se": jnp.zeros((), jnp.float32),
        "y": jnp.zeros((n_outputs,), jnp.float32),
        "y2": jnp.zeros((n_outputs,), jnp.float32),
        "weight": jnp.zeros((), jnp.float32),
    }


_CLASSIFY = Objective(classify_loss, classify_sums, classify_finalize, _classify_zeros)
OBJECTIVES = {
    "classify": _CLASSIFY,
    "sequence": _CLASSIFY,
    "regress": Objective(regress_loss, regress_sums, regress_finalize, _regress_zeros),
}

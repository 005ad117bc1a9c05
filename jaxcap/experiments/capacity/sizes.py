"""Capacity in bits: what a trained member stores about random data, when training has
saturated, where the storage curve plateaus, and the theoretical budgets it is compared with.

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
from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.experiments.capacity.budgets import budgets, embedding_params
from jaxcap.models import ModelConfig
from jaxcap.models.transformer import make_apply
from jaxcap.results.capacity_summary import MODEL_FIELDS, CapacitySummary
from jaxcap.results.records import CapacityRow
from jaxcap.tasks import Split, Task

MEMORIZED = 0.9  # a size storing this fraction of its bits is still being memorized, not a plateau


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


def estimated_bits(
    dataset_bits: np.ndarray, n_targets: np.ndarray, train_loss_nats: np.ndarray
) -> np.ndarray:
    """Unclipped bits stored from the mean training loss: dataset bits − code length."""
    return dataset_bits - n_targets * train_loss_nats / math.log(2.0)


def saturated(series: np.ndarray, window: int, tol: float, floor: float, ceiling: np.ndarray) -> np.ndarray:
    """[member] bool from a bits series [eval, member]: the mean of the last `window` evals
    exceeds the mean of the `window` before by less than `tol` (relative, of at least `floor`
    bits), or the last eval is within `tol` of the member's dataset bits (`ceiling`: nothing is
    left to gain). Means over windows, because constant-rate SGD makes single evals jitter."""
    series = np.asarray(series, np.float64)
    full = series[-1] >= (1.0 - tol) * np.asarray(ceiling, np.float64)
    if series.shape[0] < 2 * window:
        return full
    recent, before = series[-window:].mean(0), series[-2 * window : -window].mean(0)
    return full | (recent - before <= tol * np.maximum(np.abs(recent), floor))


def plateaued(sizes: list[int], bits: list[float], dataset_bits: list[float], tol: float) -> bool:
    """Whether the bits stored stopped growing with the dataset (sizes ascending)."""
    if len(sizes) < 2:
        return False
    best_before = max(bits[:-1])
    return bits[-1] < (1.0 + tol) * best_before and bits[-1] < MEMORIZED * dataset_bits[-1]


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


def _curve(members: list[CapacityRow]) -> list[dict]:
    """Per dataset size: the bits each seed stored with its best learning rate."""
    points = []
    for size in sorted({r.dataset_size for r in members}):
        everyone = [r for r in members if r.dataset_size == size]
        per_seed: dict[int, CapacityRow] = {}
        for r in everyone:
            if r.diverged:
                continue
            if r.seed not in per_seed or r.bits_stored > per_seed[r.seed].bits_stored:
                per_seed[r.seed] = r
        best = [per_seed[s] for s in sorted(per_seed)]
        bits = [r.bits_stored for r in best]
        points.append(
            {
                "size": size,
                "dataset_bits": everyone[0].dataset_bits,
                "seeds": sorted(per_seed),
                "bits": bits,
                "median": float(np.median(bits)) if bits else None,
                "min": min(bits, default=None),
                "max": max(bits, default=None),
                "exact": float(np.median([r.exact_fraction for r in best])) if best else None,
                "best_lr": [r.learning_rate for r in best],
                "saturated": sum(r.saturated for r in everyone),
                "members": len(everyone),
            }
        )
    return points


def summarize(
    rows: list[CapacityRow], plateau_tol: float, saturation_tol: float = 0.05
) -> list[CapacitySummary]:
    """One record per architecture: its curve over sizes, C_mem over seeds, bits/param, budgets,
    utilization, and (rows with exposure budgets) C per budget with the flatness verdict: C_mem
    is a capacity (`is_capacity`) only where C(E) flattened and the sizes plateaued."""
    out = []
    for arch in sorted({r.arch for r in rows}):
        everyone = [r for r in rows if r.arch == arch]
        constant = [r for r in everyone if r.schedule == "constant"]
        annealed = [r for r in everyone if r.schedule == "annealed"]
        searched = [r for r in everyone if r.schedule == "search"]
        by_budget = capacity_curve.annealed_curve(annealed, everyone[0].n_params)
        # the verdict reads the annealed runs when there are any (they store the most at a
        # budget), at their last budget; else the constant-rate run at its last budget
        last = by_budget[-1]["exposures"] if by_budget else None
        members = [r for r in annealed if r.anneal_budget == last] if by_budget else constant
        first, curve = members[0], _curve(members)
        seeds = sorted({s for p in curve for s in p["seeds"]})
        c_seed = [
            max((b for p in curve for s, b in zip(p["seeds"], p["bits"]) if s == seed)) for seed in seeds
        ]
        c_mem = float(np.median(c_seed)) if c_seed else float("nan")
        net = [max(r.net_bits for r in members if r.seed == s and not r.diverged) for s in seeds]
        sizes = [p["size"] for p in curve if p["median"] is not None]
        medians = [p["median"] for p in curve if p["median"] is not None]
        data_bits = [p["dataset_bits"] for p in curve if p["median"] is not None]
        budget = budgets(first.model, first.n_params)
        # rows of the step-capped protocol (and the enhance experiment's) have no exposure record
        has_record = constant and constant[0].bits_at is not None
        by_exposure = capacity_curve.curve(constant, first.n_params) if has_record else []
        flat = (
            capacity_curve.flatness(by_budget or by_exposure, saturation_tol)
            if by_exposure or by_budget
            else None
        )
        plateau = plateaued(sizes, medians, data_bits, plateau_tol)
        summary = {
            "arch": arch,
            "label": first.arch_label,
            "family": first.family,
            **{k: first.model[k] for k in MODEL_FIELDS},
            "n_params": first.n_params,
            "model": first.model,
            "curve": curve,
            "c_mem_seeds": c_seed,
            "c_mem_seed_ids": seeds,
            "c_mem": c_mem,
            "c_min": min(c_seed, default=None),
            "c_max": max(c_seed, default=None),
            "bits_per_param": c_mem / first.n_params,
            **{f"n_{k}_params": v for k, v in embedding_params(first.model).items()},
            "bits_per_body_param": c_mem / (first.n_params - sum(embedding_params(first.model).values())),
            "c_net": float(np.median(net)) if net else float("nan"),
            "plateau": plateau,
            "exposure_curve": by_exposure,
            "annealed_curve": by_budget,
            "verdict_schedule": "annealed" if by_budget else "constant",
            "recipe": first.trained_recipe,
            "searched": bool(searched),
            "flat": flat,
            "is_capacity": bool(plateau and flat and flat["flat"]),
            "rounds": 1 + max(r.round for r in everyone),
            "unsaturated": sum(not r.saturated for r in members),
            "members": len(members),
            **budget,
            "head_utilization": c_mem / budget["head_budget_bits"],
            "storage_utilization": c_mem / budget["storage_budget_bits"],
        }
        out.append(CapacitySummary.from_json(summary))
    return out

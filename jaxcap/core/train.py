"""The population trainer: pure one-member functions that `jax.jit(jax.vmap(...))` turns into
one XLA program for the whole population (purejaxrl's `make_train`, evosax's State/Params split).

`make_train` returns `init_member(key_data, hparams) -> MemberState` and
`run_chunk(state, hparams, data) -> (state, ChunkStats)`, a `lax.scan` over `chunk_steps`
steps with no host synchronization. Per-member learning rate, weight decay and Adam β2 live in
the optimizer state through `optax.inject_hyperparams`; the warmup/decay schedule is a shared
unit shape times the member's peak learning rate. A member whose loss or gradient norm becomes
non-finite keeps its last finite parameters and is marked `diverged`; it never touches the
other members, which are computed independently under vmap.

Details: docs/design/population.md#evaluation-costs-a-fixed-share.

[1] Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization" (AdamW), arXiv:1711.05101.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.sharding import Mesh

from jaxcap.core import losses
from jaxcap.core.baselines import make_baselines
from jaxcap.core.population import HParams
from jaxcap.core.runtime import MATMUL_PRECISIONS, few_options, init_options
from jaxcap.core.scoring import score_splits
from jaxcap.core.sharding import member_sharding
from jaxcap.fields import Choice, Float, Int, setting
from jaxcap.models import ModelConfig
from jaxcap.models.transformer import init_params, make_apply
from jaxcap.tasks import Split, Task

# fold_in tags: what each of a member's derived keys is for
KEY_INIT, KEY_DATA, KEY_TRAIN = 1, 2, 3


@struct.dataclass
class MemberState:
    """Everything about one member that changes during training."""

    step: jax.Array  # int32
    params: dict
    opt_state: Any
    key: jax.Array  # uint32 key data, portable through checkpoints
    diverged: jax.Array  # bool: a non-finite value appeared; frozen at its last finite state
    frozen: jax.Array  # bool: stopped from outside (e.g. a pruned trial)


@struct.dataclass
class ChunkStats:
    """Means over the steps of one chunk (steps a member did not update are excluded)."""

    loss: jax.Array
    grad_norm: jax.Array


SCHEDULES = ("constant", "cosine", "linear")


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """The config.eval section: eval batch, steps-to-threshold levels, and the eval sample's size.
    The thresholds default to the task's `TaskSpec.step_threshold` (jaxcap.config.base)."""

    batch_size: int = setting(1024, Int(1))
    train_threshold: float = setting(0.99, Float(0.0))  # steps-to-threshold on the primary metric
    val_threshold: float = setting(0.99, Float(0.0))
    # the most of a run spent evaluating; it sizes the fixed eval sample (`sampled_task`)
    time_share: float = setting(0.1, Float(0.0, 1.0, open_high=True))


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """Static training choices (a change means a new compile). The `setting` fields are the
    config.train section, generated from here (jaxcap.config.base); the others are derived."""

    steps: int = setting(1000, Int(1))
    chunk_steps: int = setting(100, Int(1))
    batch_size: int = setting(128, Int(1))
    # or "cosine" / "linear": decay to 0 at the member's horizon
    schedule: str = setting("constant", Choice(SCHEDULES))
    b1: float = setting(0.9, Float(0.0, 1.0, open_high=True))
    eps: float = setting(1e-8, Float(0.0))
    clip_norm: float = setting(0.0, Float(0.0))  # 0: no clipping
    loss_scale: float = setting(1.0, Float(1e-8))  # static loss scaling for float16 compute
    # 'default': the backend's (true float32 on a CPU, TF32 on recent GPUs); 'highest' asks for
    # true float32 everywhere, at 0.61x the speed on an H100 (applied by jaxcap.core.runtime.numerics)
    matmul_precision: str = setting("default", Choice(MATMUL_PRECISIONS))
    dropout: bool = True  # False: no member uses dropout, so no masks are drawn at all
    eval_batch_size: int = EvalSettings.batch_size  # config.eval.batch_size
    # config.eval.time_share: the most of a run's compute spent evaluating (0: whole splits)
    eval_share: float = EvalSettings.time_share


# A forward and backward pass cost about three forwards, so a chunk trains the equivalent of
# 3 x chunk_steps x batch_size forward examples. No eval sample is cut below this many examples
# per split (a tiny run may then spend more than eval_share evaluating).
EVAL_MIN_ROWS = 256


def eval_budget(settings: TrainSettings) -> int | None:
    """Examples an eval may score in all (None: no budget): eval_share of a chunk's compute."""
    if settings.eval_share <= 0:
        return None
    share = settings.eval_share / (1.0 - settings.eval_share)  # eval / train compute
    return int(share * 3 * settings.chunk_steps * settings.batch_size)


def sampled_task(task: Task, data: dict[str, Split], settings: TrainSettings) -> Task:
    """The task with its n_eval cap lowered so that its eval splits hold about `eval_budget`
    examples (at least EVAL_MIN_ROWS per split). The task still builds its own eval splits
    (derived ones, e.g. soft-label or per-class splits, stay consistent), and a task that scores
    whole splits regardless of n_eval (random data: every memorized item counts) keeps doing so.
    Shapes are static, so this is decided once, at trace time."""
    budget = eval_budget(settings)
    total = sum(split.size for split in task.eval_splits(data).values())  # traced, then unused
    if budget is None or total <= budget:
        return task
    largest = min(task.n_eval, max(split.size for split in data.values()))
    n_eval = max(EVAL_MIN_ROWS, int(largest * budget / total))
    if n_eval >= task.n_eval:
        return task
    capped = copy.copy(task)  # a frozen dataclass: no __init__ (which may load files) runs again
    object.__setattr__(capped, "n_eval", n_eval)
    return capped


def unit_schedule(
    step: jax.Array, warmup: jax.Array, settings: TrainSettings, decay_steps: jax.Array | float = 0.0
) -> jax.Array:
    """Linear warmup over the member's `warmup` steps, then constant, or a cosine or linear decay
    to zero at the member's horizon: `decay_steps` (traced, so members of one program can end
    their decays at different steps, as the annealed capacity budgets do), or `settings.steps`
    when that is 0. Past the horizon the rate stays 0."""
    step = step.astype(jnp.float32)
    ramp = jnp.minimum(1.0, (step + 1.0) / jnp.maximum(warmup, 1.0))
    if settings.schedule == "constant":
        return ramp
    horizon = jnp.where(decay_steps > 0, decay_steps, float(settings.steps))
    done = jnp.minimum(step / horizon, 1.0)
    if settings.schedule == "cosine":
        return ramp * 0.5 * (1.0 + jnp.cos(jnp.pi * done))
    return ramp * (1.0 - done)


def _decay_mask(params: dict) -> dict:
    # Decay matrices only: biases, LayerNorm scales and offsets are not regularized.
    return jax.tree.map(lambda p: p.ndim >= 2, params)


def decay_vectors(updates: dict, params: dict, rate: jax.Array) -> dict:
    """AdamW's decoupled decay, -rate · p, added to the updates of the parameters `_decay_mask`
    leaves out (biases, norm scales and offsets), so with rate = lr · wd they decay as the
    matrices do, as `torch.optim.AdamW(model.parameters())` decays them (hparams.decay = 'all').
    rate is 0 under 'matrices', and u - 0 · p is u exactly: the default's updates do not move."""
    return jax.tree.map(lambda u, p: u if p.ndim >= 2 else u - (rate * p).astype(u.dtype), updates, params)


def make_optimizer(settings: TrainSettings) -> optax.GradientTransformation:
    # `mask` is static: inject_hyperparams would otherwise call it as a schedule of the step count.
    return optax.inject_hyperparams(optax.adamw, static_args=("mask",), hyperparam_dtype=jnp.float32)(
        learning_rate=0.0, b1=settings.b1, b2=0.98, eps=settings.eps, weight_decay=0.0, mask=_decay_mask
    )


def make_train(settings: TrainSettings, task: Task, model_cfg: ModelConfig) -> tuple[Callable, Callable]:
    """(init_member, run_chunk) for one member; vmap them for a population."""
    apply_fn = make_apply(model_cfg)
    tx = make_optimizer(settings)
    objective = losses.OBJECTIVES[task.spec.kind]

    def init_member(key_data: jax.Array, hp: HParams) -> MemberState:
        key = jax.random.wrap_key_data(key_data)
        params = init_params(model_cfg, jax.random.fold_in(key, KEY_INIT))
        params = jax.tree.map(lambda p: p * hp.init_scale.astype(p.dtype) if p.ndim >= 2 else p, params)
        opt_state = tx.init(params)
        hyper = dict(opt_state.hyperparams, weight_decay=hp.weight_decay, b2=hp.b2)
        return MemberState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            opt_state=opt_state._replace(hyperparams=hyper),
            key=key_data,
            diverged=jnp.zeros((), bool),
            frozen=jnp.zeros((), bool),
        )

    def train_step(state: MemberState, hp: HParams, data: dict[str, Split]):
        key = jax.random.fold_in(
            jax.random.fold_in(jax.random.wrap_key_data(state.key), KEY_TRAIN), state.step
        )
        key_batch, key_dropout = jax.random.split(key)
        batch = task.sample_batch(key_batch, data, hp.task, settings.batch_size)
        mask = task.output_mask(hp.task)

        def loss_fn(params):
            logits = apply_fn(params, batch.inputs, hp.dropout, key_dropout if settings.dropout else None)
            loss = objective.loss(logits, batch.targets, batch.weights, mask, hp.label_smoothing)
            return loss * settings.loss_scale

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        loss = loss / settings.loss_scale
        grads = jax.tree.map(lambda g: g / settings.loss_scale, grads)
        grad_norm = optax.tree.norm(grads)
        if settings.clip_norm > 0:
            factor = jnp.minimum(1.0, settings.clip_norm / (grad_norm + 1e-12))
            grads = jax.tree.map(lambda g: g * factor.astype(g.dtype), grads)
        # The divergence guard decides on the two scalars the step already has: finite loss and
        # gradients keep parameters finite (Adam's step is bounded by the lr). A member that does
        # not take this step (diverged, frozen, or non-finite now) gets zero gradients, so its
        # moments stay finite, and learning rate 0, so AdamW's update (decay included) is exactly
        # 0: it keeps its last finite parameters with no select over them, and the zeroing is an
        # elementwise part of the optimizer's own pass over the gradients.
        finite = jnp.isfinite(loss) & jnp.isfinite(grad_norm)
        active = ~state.frozen & ~state.diverged
        take = finite & active
        grads = jax.tree.map(lambda g: jnp.where(take, g, jnp.zeros_like(g)), grads)
        unit = unit_schedule(state.step, hp.warmup_steps, settings, hp.decay_steps)
        lr = jnp.where(take, hp.learning_rate * unit, 0.0)
        opt_state = state.opt_state._replace(hyperparams=dict(state.opt_state.hyperparams, learning_rate=lr))
        updates, new_opt = tx.update(grads, opt_state, state.params)
        updates = decay_vectors(updates, state.params, lr * hp.weight_decay * hp.decay)
        # float32 hyperparameters promote the moments of bfloat16/float16 parameters: keep every
        # leaf in its dtype so the scan carry is stable (a no-op for float32 and float64 models)
        new_opt = jax.tree.map(lambda new, old: new.astype(old.dtype), new_opt, opt_state)
        new_state = state.replace(
            step=state.step + 1,
            params=optax.apply_updates(state.params, updates),
            opt_state=new_opt,
            diverged=state.diverged | (active & ~finite),
        )
        return new_state, (jnp.where(take, loss, 0.0), jnp.where(take, grad_norm, 0.0), take)

    def run_chunk(state: MemberState, hp: HParams, data: dict[str, Split]):
        state, (loss, grad_norm, took) = jax.lax.scan(
            lambda s, _: train_step(s, hp, data), state, None, length=settings.chunk_steps
        )
        n = jnp.maximum(took.sum(), 1).astype(jnp.float32)
        return state, ChunkStats(loss=loss.sum() / n, grad_norm=grad_norm.sum() / n)

    return init_member, run_chunk


def make_evaluate(settings: TrainSettings, task: Task, model_cfg: ModelConfig) -> Callable:
    """`evaluate(state, hp, data) -> {split_metric: value}` for one member, on every eval split
    (train, val, test and any task-specific split), in batches of `eval_batch_size`.

    Each split is scored on its first n_eval examples (a fixed random sample: splits are drawn
    in random order), n_eval lowered to the eval budget (`sampled_task`).
    """
    apply_fn = make_apply(model_cfg)

    def evaluate(state: MemberState, hp: HParams, data: dict[str, Split]) -> dict[str, jax.Array]:
        predict = lambda inputs: apply_fn(state.params, inputs)
        sampled = sampled_task(task, data, settings)
        splits, mask = sampled.eval_splits(data), task.output_mask(hp.task)
        return score_splits(predict, sampled, splits, mask, model_cfg.n_outputs, settings.eval_batch_size)

    return evaluate


@dataclasses.dataclass(frozen=True)
class PopulationProgram:
    """The compiled population functions: every argument and result has P on axis 0."""

    init: Callable  # (key_data_P, hparams_P) -> state_P
    data: Callable  # (key_data_P, hparams_P) -> data_P
    chunk: Callable  # (state_P, hparams_P, data_P) -> (state_P, ChunkStats_P); donates state_P
    evaluate: Callable  # (state_P, hparams_P, data_P) -> {metric: [P]}
    baselines: Callable  # (hparams_P, data_P) -> {chance_*, shortcut_*, overlap_*: [P]}
    mesh: Mesh | None = None  # the devices the member axis is split over (None: jit's default)


def make_population(
    settings: TrainSettings, task: Task, model_cfg: ModelConfig, mesh: Mesh | None = None
) -> PopulationProgram:
    """`jax.jit(jax.vmap(...))` of the one-member functions; the population is axis 0, split over
    `mesh` when one is given (every argument and result, so no step moves data between devices)."""
    init_member, run_chunk = make_train(settings, task, model_cfg)
    evaluate = make_evaluate(settings, task, model_cfg)
    member_baselines = make_baselines(task, model_cfg.n_outputs, settings.eval_batch_size)

    def member_data(key_data, hp: HParams):
        key = jax.random.fold_in(jax.random.wrap_key_data(key_data), KEY_DATA)
        return task.make_data(key, hp.task)

    on = member_sharding(mesh) if mesh is not None else None
    split = {} if on is None else {"in_shardings": on, "out_shardings": on}
    init = {**split, "compiler_options": init_options()}
    few = {**split, "compiler_options": few_options()}
    return PopulationProgram(
        init=jax.jit(jax.vmap(init_member), **init),
        data=jax.jit(jax.vmap(member_data), **few),
        chunk=jax.jit(jax.vmap(run_chunk), donate_argnums=0, **split),
        evaluate=jax.jit(jax.vmap(evaluate), **few),
        baselines=jax.jit(jax.vmap(lambda hp, data: member_baselines(hp.task, data)), **few),
        mesh=mesh,
    )

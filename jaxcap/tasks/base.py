"""The task contract: a static `TaskSpec`, examples as `Split`s, and the shared data plumbing.

A task is a small frozen dataclass holding only static choices (vocabulary, sequence length,
sizes). Everything member-varying that keeps shapes fixed — the modulus of `x mod N`, for
example — is a *knob*: a traced per-member array in `HParams.task`, so one compiled program
trains every difficulty level at once. All functions here are pure and jittable and are
written for one member; the trainer vmaps them.

Data are either finite (a train/val split drawn from the member's key, minibatches sampled on
device with replacement) or an infinite stream (fresh examples every step, a fixed validation
sample drawn from the key).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from jaxcap.validate import ConfigError, Float, Int

KINDS = ("classify", "sequence", "regress")


@struct.dataclass
class Split:
    """A set of examples. inputs: [N, T] int32 tokens, or [N, T, input_dim] float32 vectors;
    targets: [N] or [N, T] int32 classes, or [N, K] float32 for regression; weights: one per
    scored answer ([N] or [N, T]), 0 where nothing is scored. optimum (optional, like weights):
    the loss in nats of the true process on each target, where it is known (language tasks);
    evaluation then reports the model's excess over it."""

    inputs: jax.Array
    targets: jax.Array
    weights: jax.Array
    optimum: jax.Array | None = None

    def take(self, idx: jax.Array) -> Split:
        return jax.tree.map(lambda a: a[idx], self)

    def head(self, n: int) -> Split:
        return jax.tree.map(lambda a: a[:n], self)

    @property
    def size(self) -> int:
        return self.inputs.shape[0]


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What the model and the results tables need to know about a task (all static)."""

    family: str
    kind: str  # classify: one answer per example; sequence: one per position; regress: K floats
    vocab_size: int  # token vocabulary (unused when input_dim > 0)
    seq_len: int
    n_outputs: int  # classes, or output dimensions for regress
    readout: str  # which positions the model reads out: 'last', 'all' or 'mean'
    knobs: tuple[str, ...] = ()  # per-member traced task parameters
    input_dim: int = 0  # > 0: inputs are float vectors of this size instead of tokens
    metric: str = "accuracy"  # the primary metric (per split): accuracy, exact or nmse
    higher_is_better: bool = True
    step_threshold: float = 0.99  # default of config.eval.*_threshold (steps-to-threshold)
    success_metric: str = "val_accuracy"
    success_threshold: float = 0.95

    def reached(self, value: float | None, threshold: float) -> bool:
        """Whether a value of the primary metric is at least as good as `threshold`."""
        if value is None:
            return False
        return value >= threshold if self.higher_is_better else value <= threshold


@dataclasses.dataclass(frozen=True)
class Task(abc.ABC):
    """Base class: subclasses set `spec` and implement `examples` (enumerable) or `draw`.

    Attributes:
      train_fraction: for enumerable tasks, the fraction of all examples used for training;
        0 means an infinite stream.
      train_size: for sampled tasks, the number of training examples; 0 means a stream.
      n_eval: the most examples of each split evaluated (the rest is a fixed random subset).
    """

    train_fraction: float = 0.0
    train_size: int = 0
    n_eval: int = 4096

    SCHEMA: ClassVar[dict] = {
        "train_fraction": Float(0.0, 1.0, open_high=True),
        "train_size": Int(0),
        "n_eval": Int(1, 1 << 20),
    }

    # --- implemented by each task -------------------------------------------------------
    @property
    @abc.abstractmethod
    def spec(self) -> TaskSpec:
        """The static description of this task instance."""

    def examples(self, knobs: dict[str, jax.Array]) -> Split | None:
        """All examples of an enumerable task (None if the task is sampled)."""
        return None

    def draw(self, key: jax.Array, knobs: dict[str, jax.Array], n: int) -> Split:
        """n fresh examples (sampled tasks and streams)."""
        raise ValueError(f"task {self.spec.family} cannot sample examples; set a train_fraction")

    @abc.abstractmethod
    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        """The task's complexity in bits for these knob values (defined in each docstring)."""

    @abc.abstractmethod
    def chance(self, knobs: dict[str, Any]) -> float:
        """The success metric of a predictor that ignores its input."""

    def output_mask(self, knobs: dict[str, jax.Array]) -> jax.Array | None:
        """Which of the n_outputs classes exist for this member (None: all of them)."""
        return None

    def default_knobs(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.spec.knobs}

    def check(self) -> None:
        """Raise ConfigError for values that are individually fine but impossible together."""
        n_train, n_val = self.split_sizes()
        if not self.is_stream and (n_train < 1 or n_val < 1):
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}, which leaves {n_train} train "
                f"and {n_val} val examples of {self.n_examples()}; allowed: a fraction leaving at least "
                "one of each"
            )

    # --- shared plumbing -----------------------------------------------------------------
    @property
    def is_stream(self) -> bool:
        return self.train_fraction == 0.0 and self.train_size == 0

    def n_examples(self) -> int | None:
        """Size of the enumerable example set, or None for sampled tasks."""
        return None

    def split_sizes(self) -> tuple[int, int]:
        """(n_train, n_val) of the finite dataset; (0, n_eval) for a stream."""
        if self.is_stream:
            return 0, self.n_eval
        total = self.n_examples()
        if total is None:
            return self.train_size, self.n_eval
        n_train = int(round(self.train_fraction * total))
        return n_train, total - n_train

    def make_data(self, key: jax.Array, knobs: dict[str, jax.Array]) -> dict[str, Split]:
        """The member's fixed data: {'train', 'val'} splits (for a stream, eval samples)."""
        n_train, n_val = self.split_sizes()
        if self.is_stream:  # fixed samples, so train and val metrics are comparable over time
            return {
                "train": self.draw(jax.random.fold_in(key, 1), knobs, self.n_eval),
                "val": self.draw(jax.random.fold_in(key, 2), knobs, self.n_eval),
            }
        everything = self.examples(knobs)
        if everything is None:
            everything = self.draw(key, knobs, n_train + n_val)
        else:
            everything = everything.take(jax.random.permutation(key, everything.size))
        train = jax.tree.map(lambda a: a[:n_train], everything)
        val = jax.tree.map(lambda a: a[n_train : n_train + n_val], everything)
        return {"train": train, "val": val}

    def sample_batch(
        self, key: jax.Array, data: dict[str, Split], knobs: dict[str, jax.Array], batch_size: int
    ) -> Split:
        if self.is_stream:
            return self.draw(key, knobs, batch_size)
        train = data["train"]
        return train.take(jax.random.randint(key, (batch_size,), 0, train.size))

    def eval_splits(self, data: dict[str, Split]) -> dict[str, Split]:
        """The examples scored at each eval: whole splits, capped at n_eval (a fixed subset)."""
        return {name: split.head(min(split.size, self.n_eval)) for name, split in data.items()}

    def derived_metrics(self, metrics: dict[str, jax.Array], splits: dict[str, Split]) -> dict:
        """Metrics computed from one eval's per-split metrics and scored splits (e.g. macro F1)."""
        return {}


def ones_like_targets(targets: jax.Array) -> jax.Array:
    return jnp.ones(targets.shape, jnp.float32)

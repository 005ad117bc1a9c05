"""The task contract: a static `TaskSpec`, examples as `Split`s, and the shared data plumbing.

A task is a small frozen dataclass holding only static choices (vocabulary, sequence length,
sizes). Everything member-varying that keeps shapes fixed — the modulus of `x mod N`, for
example — is a *knob*: a traced per-member array in `HParams.task`, so one compiled program
trains every difficulty level at once. All functions here are pure and jittable and are
written for one member; the trainer vmaps them.

Every member has three disjoint splits (docs/design.md, "Contracts"): **train** (fit),
**val** (every selection: best setting, Optuna objective, early stopping) and **test** (every
reported outcome). Data are either finite (a permutation of all examples cut into train/val/test,
or a sampled training set) or an infinite stream (fresh examples every step; fixed val and test
samples). Sampled data keep val and test inputs out of training with a salted hash hold-out
(`jaxcap.tasks.holdout`), so "held out" means never seen in training, not merely drawn again.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Float, Int
from jaxcap.tasks import holdout
from jaxcap.tasks.split import Split

KINDS = ("classify", "sequence", "regress")
SPLITS = ("train", "val", "test")  # what every task's make_data returns, at least


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
    success_metric: str = "test_accuracy"  # every reported outcome reads this (jaxcap.results.outcomes)
    success_threshold: float = 0.95
    select_metric: str = "val_accuracy"  # every selection reads this: best setting, HPO objective

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
        """The nominal chance level: the success metric's expected value for the best predictor
        that ignores its input, from the task's definition (the *measured* chance, from each
        member's training split, is `jaxcap.core.baselines`)."""

    def shortcut(self, inputs: jax.Array, knobs: dict[str, jax.Array]) -> jax.Array | None:
        """Logits of an obvious shortcut that reads the input but does not solve the task (e.g.
        recall: the commonest value shown), or None where the task has none (`shortcut_name`)."""
        return None

    shortcut_name: ClassVar[str] = ""
    # next-token tasks (teacher forcing): bidirectional attention would show each position the
    # token it must predict, so config validation refuses it (jaxcap/config/base.py)
    causal: ClassVar[bool] = False

    def output_mask(self, knobs: dict[str, jax.Array]) -> jax.Array | None:
        """Which of the n_outputs classes exist for this member (None: all of them)."""
        return None

    def default_knobs(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.spec.knobs}

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Task:
        """The task of a config's task section (less `name`); `knob_grid` holds the swept knob
        values, which a task whose static sizes follow the sweep (padding, head size) reads."""
        return cls(**cfg)

    def __post_init__(self) -> None:
        # parse, don't validate: a task that exists is one a run can use, however it was built
        # (a config, `dataclasses.replace`, a results row)
        self.check()

    def check(self) -> None:
        """Raise ConfigError for values that are individually fine but impossible together. The
        constructor runs it, so it reads the fields only: no packages, no files, no data."""
        n_train, n_val, n_test = self.split_sizes()
        if not self.is_stream and min(n_train, n_val, n_test) < 1:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}, which leaves {n_train} train, "
                f"{n_val} val and {n_test} test examples of {self.n_examples()}; allowed: a fraction "
                "leaving at least one of each"
            )

    def check_resources(self) -> None:
        """Raise ConfigError if what the task reads from outside its fields is missing or does not
        fit them (an optional package, a data cache). It may load data, so it is not run by the
        constructor: a bucket runs it when it is built (jaxcap.config.bucket_checks)."""
        return None  # most tasks read nothing but their fields

    # --- shared plumbing -----------------------------------------------------------------
    @property
    def is_stream(self) -> bool:
        return self.train_fraction == 0.0 and self.train_size == 0

    def n_examples(self) -> int | None:
        """Size of the enumerable example set, or None for sampled tasks."""
        return None

    def split_sizes(self) -> tuple[int, int, int]:
        """(n_train, n_val, n_test). Enumerable: the held-out rest, halved; sampled: n_eval each."""
        if self.is_stream:
            return 0, self.n_eval, self.n_eval
        total = self.n_examples()
        if total is None:
            return self.train_size, self.n_eval, self.n_eval
        n_train = int(round(self.train_fraction * total))
        n_val = (total - n_train) // 2
        return n_train, n_val, total - n_train - n_val

    def make_data(self, key: jax.Array, knobs: dict[str, jax.Array]) -> dict[str, Split]:
        """The member's fixed data: disjoint {'train', 'val', 'test'} splits (a stream's 'train' is a
        fixed sample of its training stream, for train metrics) and the hold-out `salt`."""
        n_train, n_val, n_test = self.split_sizes()
        salt = holdout.salt(key)
        everything = None if self.is_stream else self.examples(knobs)
        if everything is None:  # sampled: each split from its own hash buckets
            sizes = {"train": n_train or self.n_eval, "val": n_val, "test": n_test}
            return {**holdout.draw_splits(self.draw, key, knobs, sizes, salt), "salt": salt}
        everything = everything.take(jax.random.permutation(key, everything.size))
        cut = (0, n_train, n_train + n_val, n_train + n_val + n_test)
        return {
            name: jax.tree.map(lambda a, lo=cut[i], hi=cut[i + 1]: a[lo:hi], everything)
            for i, name in enumerate(SPLITS)
        }

    def sample_batch(
        self, key: jax.Array, data: dict[str, Split], knobs: dict[str, jax.Array], batch_size: int
    ) -> Split:
        if self.is_stream and "salt" in data:  # held-out inputs are never drawn for training
            return holdout.draw_train_batch(self.draw, key, knobs, batch_size, data["salt"])
        if self.is_stream:  # a task whose splits are disjoint by construction (e.g. separate text)
            return self.draw(key, knobs, batch_size)
        train = data["train"]
        return train.take(jax.random.randint(key, (batch_size,), 0, train.size))

    def eval_splits(self, data: dict[str, Split]) -> dict[str, Split]:
        """The examples scored at each eval: whole splits, capped at n_eval (a fixed subset)."""
        return {
            name: split.head(min(split.size, self.n_eval))
            for name, split in data.items()
            if isinstance(split, Split)
        }

    def overlap_guaranteed(self) -> bool:
        """Whether train ∩ val and train ∩ test are empty by construction (a permutation of all
        examples, or the hash hold-out); members.jsonl reports the measured fractions either way."""
        return True

    def derived_metrics(self, metrics: dict[str, jax.Array], splits: dict[str, Split]) -> dict:
        """Metrics computed from one eval's per-split metrics and scored splits (e.g. macro F1)."""
        return {}


def ones_like_targets(targets: jax.Array) -> jax.Array:
    return jnp.ones(targets.shape, jnp.float32)

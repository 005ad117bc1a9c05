"""Tasks from outside jaxcap that break the contract, one way each: the fixtures of the task
checker's failure lines (tests/test_check_task.py) and of the loader's errors
(tests/tasks/test_loader.py). Each is the worked example, examples/sort_task.py, with one
method or field gone wrong, so a failure names exactly that."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxcap.tasks import Split, Task, TaskSpec, task_class

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sort_task.py"
SortTask = task_class(f"{EXAMPLE}:SortTask")  # the worked example: the base of every task here


@dataclasses.dataclass(frozen=True)
class OverlappingSplits(SortTask):
    """Val and test are the training examples themselves."""

    def make_data(self, key, knobs):
        split = self.draw(key, knobs, self.n_eval)
        return {"train": split, "val": split, "test": split}


@dataclasses.dataclass(frozen=True)
class ZeroBits(SortTask):
    """A complexity of 0 bits at length 1 and below: not on a log scale."""

    def complexity_bits(self, knobs):
        return float(int(knobs["length"]) - 2)


@dataclasses.dataclass(frozen=True)
class GrowingShape(SortTask):
    """The input grows with the level: `int(knob)` sizes an array, which a traced knob cannot."""

    def draw(self, key, knobs, n):
        length = int(knobs["length"])
        inputs = jax.random.randint(key, (n, length), 0, self.vocab, jnp.int32)
        return Split(inputs, jnp.sort(inputs, axis=1), jnp.ones(inputs.shape, jnp.float32))


@dataclasses.dataclass(frozen=True)
class BadReadout(SortTask):
    """A sequence task that reads one position only."""

    @property
    def spec(self) -> TaskSpec:
        return dataclasses.replace(super().spec, readout="last")


@dataclasses.dataclass(frozen=True)
class SelectsOnTest(SortTask):
    """Selection reads the test split, which only reports."""

    @property
    def spec(self) -> TaskSpec:
        return dataclasses.replace(super().spec, select_metric="test_exact")


@dataclasses.dataclass(frozen=True)
class UnknownMetric(SortTask):
    """A success metric the evaluation does not return."""

    @property
    def spec(self) -> TaskSpec:
        return dataclasses.replace(super().spec, success_metric="test_sorted")


@dataclasses.dataclass(frozen=True)
class NoRule(SortTask):
    """A field the config schema has no rule for."""

    reverse: bool = False


@dataclasses.dataclass(frozen=True)
class CertainChance(SortTask):
    """A chance level above 1."""

    def chance(self, knobs):
        return 2.0


class NotFrozen(SortTask):
    """A subclass without its own dataclass decorator: its fields would be silently dropped."""

    reverse: bool = False


@dataclasses.dataclass(frozen=True)
class NoSpec(Task):
    """A Task that implements neither spec nor complexity_bits nor chance."""


def not_a_class():
    return SortTask

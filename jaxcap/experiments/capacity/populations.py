"""Which populations the capacity experiment trains, and the checks before anything compiles.

Per architecture (`config.sweep.buckets`), round 0's dataset sizes come from
`capacity.bits_per_param_grid` and its parameter count (or `sweep.task.dataset_size`); every
size is one population (`size_bucket`): the constant-rate run to the last budget of
`capacity.exposures`, one annealed run per budget of `capacity.annealed`, and the recipe search
(recipe.py). All of them draw the largest n any round may reach (`largest_size`), so an
architecture's sizes, in every round, share a compiled program per schedule. `check` refuses, in
one line naming the field, what could not measure capacity: a task that is not random data, a
decay under the constant-rate run, a budget `train.steps` cannot reach, a first eval after the
last budget, and the recipe settings `recipe.check` refuses. What it returns, the plan's
`section`, is a `CapacityRun`: the typed `CapacitySettings` (declared once, below) and the plan's
buckets, from which each size's population derives (`Bucket.with_*`).
"""

from __future__ import annotations

import dataclasses

import ml_collections

from jaxcap import tasks
from jaxcap.config.plan import Bucket, Plan
from jaxcap.core.train import SCHEDULES
from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.experiments.capacity import recipe as capacity_recipe
from jaxcap.experiments.capacity import sizes as capacity
from jaxcap.fields import Choice, ConfigError, Float, Int, TupleOf, from_section, setting
from jaxcap.models import param_count
from jaxcap.tasks.random_data import RandomData

NEVER = 1e30  # the constant-rate run's decay horizon, in steps: no run reaches it


@dataclasses.dataclass(frozen=True)
class CapacitySettings:
    """config.capacity: the dataset sizes, how they grow, and when a curve counts as flat. Each
    `setting` is a field's default and rule; the config section and its schema derive from them."""

    # dataset sizes per architecture, as dataset bits per parameter (empty: sweep.task.dataset_size)
    bits_per_param_grid: tuple[float, ...] = setting((2.0, 4.0, 8.0), TupleOf(Float(0.0, 1e6)))
    growth: float = setting(2.0, Float(1.01, 16.0))  # factor between successive sizes of an extension
    extend: int = setting(1, Int(1, 16))  # sizes added per extension round
    max_rounds: int = setting(1, Int(1, 16))  # 1: only the configured sizes
    # exposure budgets (times each training item is seen), ascending: where bits stored are read
    exposures: tuple[float, ...] = setting(
        (10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 4e3, 8e3, 16e3), TupleOf(Float(1.0, 1e7))
    )
    # relative gain over the last doubling of exposures: flat below
    saturation_tol: float = setting(0.05, Float(0.0, 1.0))
    # budgets each trained as its own run, the rate decaying to 0 exactly there (recipe.py); ()
    annealed: tuple[float, ...] = setting((4e3, 8e3), TupleOf(Float(1.0, 1e7)))
    anneal_schedule: str = setting("linear", Choice(SCHEDULES))  # the decay's shape: linear or cosine
    # > 0: search sweep.hparams' recipes, annealed to this many exposures on the middle size
    search_exposures: float = setting(1e3, Float(0.0, 1e7))
    plateau_tol: float = setting(0.05, Float(0.0, 10.0))  # gain of the largest size below which n plateaued


@dataclasses.dataclass(frozen=True)
class CapacityRun:
    """The capacity experiment's typed section (`check` builds it as `plan.section`): its settings
    and one bucket per architecture, from which every size's population derives (`size_bucket`)."""

    settings: CapacitySettings
    architectures: tuple[Bucket, ...]  # the plan's buckets: one per config.sweep.buckets entry

    def architecture(self, label: str) -> Bucket:
        return next(b for b in self.architectures if b.label == label)

    def first_sizes(self, label: str) -> list[int]:
        """Round 0's sizes for one architecture: from `capacity.bits_per_param_grid` and its
        parameter count, or else `sweep.task.dataset_size`."""
        bucket, grid = self.architecture(label), tuple(self.settings.bits_per_param_grid)
        if not grid:
            return sorted(set(bucket.grid.knob_grid.get("dataset_size", ()) or (bucket.task.dataset_size,)))
        per_example = bucket.task.complexity_bits({"dataset_size": 1})
        return capacity.sizes_for(grid, param_count(bucket.model), per_example)

    def largest_size(self, label: str) -> int:
        sizes, cap = self.first_sizes(label), self.settings
        for _ in range(cap.max_rounds - 1):
            sizes = capacity.next_sizes(sizes, cap.growth, cap.extend)
        return max(sizes)

    def size_bucket(
        self,
        arch: int,
        label: str,
        sizes: list[int],
        size: int,
        budget: float | None = None,
        recipe: dict | None = None,
        name: str = "",
    ) -> Bucket:
        """The population of one dataset size in a round of `sizes`: its task draws the largest n
        any round may reach, so every size of every round has the same shapes and one compiled
        program (the extra examples are drawn but neither trained on nor counted). With a
        `recipe`, its hyperparameters replace the `sweep.hparams` grid; with a `budget`, the run
        is annealed: its learning rate decays to 0 when the items have had `budget` exposures;
        without one it is the constant-rate run, on the same program."""
        top = max(*sizes, self.largest_size(label))
        bucket = self.architecture(label).with_task(dataset_size=top, max_dataset_size=top)
        # Every run of a size decays on `anneal_schedule`, the constant-rate run too, with a horizon
        # it never reaches: its rate is then the warmup ramp bit for bit (1 - t/1e30 and cos(π t/1e30)
        # round to 1 in float32) and it shares the annealed runs' compiled program.
        # (`anneal_schedule` may be constant only when nothing is annealed: recipe.check)
        bucket = bucket.with_knobs(dataset_size=(size,)).with_settings(schedule=self.settings.anneal_schedule)
        if recipe is not None:
            bucket = bucket.with_hparams({k: float(v) for k, v in recipe.items()}, sweep=False)
        if bucket.settings.schedule != "constant":
            horizon = (
                NEVER if budget is None else capacity_recipe.horizon(budget, size, bucket.settings.batch_size)
            )
            bucket = bucket.with_hparams({"decay_steps": float(horizon)})
        name = name or f"b{arch}n{size}" + ("" if budget is None else f"a{budget:g}")
        return dataclasses.replace(bucket, name=name)


def check(config: ml_collections.ConfigDict, plan: Plan) -> CapacityRun:
    """The capacity section built over the plan's buckets, refusing what could not measure
    capacity: the task suits the experiment at every size it may reach, and every size reaches
    the last exposure budget within `train.steps`."""
    run = CapacityRun(from_section(CapacitySettings, config.capacity), plan.buckets)
    budgets = tuple(run.settings.exposures)
    if not budgets or any(b <= a for a, b in zip(budgets, budgets[1:])):
        raise ConfigError(
            f"config.capacity.exposures: got {budgets}; allowed: a non-empty ascending tuple of "
            "exposures per item (e.g. (10, 100, 1000))"
        )
    capacity_recipe.check(run.settings, plan.buckets[0].grid)
    longest = max(budgets[-1], *run.settings.annealed, run.settings.search_exposures)
    for i, bucket in enumerate(plan.buckets):
        label = bucket.label
        where = f"config.sweep.buckets[{i}] ({label}): " if label else ""
        if not isinstance(bucket.task, RandomData):
            raise ConfigError(
                f"config.task.name: got {task_name(bucket.task)!r}; allowed: random_labels, random_tokens"
            )
        if bucket.settings.schedule != "constant":
            raise ConfigError(
                f"{where}config.train.schedule: got {bucket.settings.schedule!r}; allowed: constant (the "
                "bits at an exposure budget must not depend on where train.steps ends a decay)"
            )
        top, smallest = run.largest_size(label), min(run.first_sizes(label))
        try:
            dataclasses.replace(bucket.task, max_dataset_size=top)  # the constructor checks it
        except ConfigError as e:
            raise ConfigError(f"{where}{e} (sizes may grow to {top} in config.capacity.max_rounds)") from None
        t = bucket.settings
        need = -(-capacity_curve.steps_to(longest, top, t.batch_size) // t.chunk_steps) * t.chunk_steps
        if t.steps < need:
            raise ConfigError(
                f"{where}config.train.steps: got {t.steps}; allowed: >= {need} ({longest:g} "
                f"exposures of n = {top} at batch {t.batch_size}, in chunks of {t.chunk_steps})"
            )
        if t.chunk_steps * t.batch_size > budgets[-1] * smallest:
            raise ConfigError(
                f"{where}config.train.chunk_steps: got {t.chunk_steps}; allowed: at most "
                f"{int(budgets[-1] * smallest // t.batch_size)} (the first eval must come before "
                f"n = {smallest} reaches the last budget, {budgets[-1]:g} exposures)"
            )
    return run


def task_name(task) -> str:
    """What config.task.name says of a task: its registry name, or its import path."""
    return tasks.task_name(task)

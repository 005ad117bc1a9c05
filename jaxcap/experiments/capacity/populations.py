"""Which populations the capacity experiment trains, and the checks before anything compiles.

Per architecture (`config.sweep.buckets`), round 0's dataset sizes come from
`capacity.bits_per_param_grid` and its parameter count (or `sweep.task.dataset_size`); every
size is one population (`size_bucket`): the constant-rate run to the last budget of
`capacity.exposures`, one annealed run per budget of `capacity.annealed`, and the recipe search
(recipe.py). All of them draw the largest n any round may reach (`largest_size`), so an
architecture's sizes, in every round, share a compiled program per schedule. `check` refuses, in
one line naming the field, what could not measure capacity: a task that is not random data, a
sequence task without causal attention, a decay under the constant-rate run, a budget
`train.steps` cannot reach, a first eval after the last budget, and the recipe settings
`recipe.check` refuses. What it returns, the plan's `section`, is the `capacity` section as a
typed `CapacitySettings` (declared once, below) with the one thing that still reads the config:
the derivation of each size's population.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from jaxcap.config.plan import Bucket, make_buckets, variant_configs
from jaxcap.core.train import SCHEDULES
from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.experiments.capacity import recipe as capacity_recipe
from jaxcap.experiments.capacity import sizes as capacity
from jaxcap.fields import Choice, ConfigError, Float, Int, TupleOf, from_section, setting
from jaxcap.models import param_count
from jaxcap.tasks.random_data import RandomData


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
    """The capacity experiment's checked section (`check` returns it as `plan.section`)."""

    settings: CapacitySettings
    # The one ConfigDict of a capacity run. Each size is a population whose task, hparams and
    # schedule differ from the config's, and a bucket is built from a config (make_buckets), so
    # every size derives from the validated config (`size_bucket`), here and nowhere else.
    config: ml_collections.ConfigDict

    def first_sizes(self, label: str) -> list[int]:
        return first_sizes(self.config, label)

    def size_bucket(self, arch: int, label: str, sizes: list[int], size: int, *args, **kwargs) -> Bucket:
        return size_bucket(self.config, arch, label, sizes, size, *args, **kwargs)


def first_sizes(config: ml_collections.ConfigDict, label: str) -> list[int]:
    """Round 0's sizes for one architecture: from `capacity.bits_per_param_grid` and its
    parameter count, or else `sweep.task.dataset_size`."""
    grid = tuple(config.capacity.bits_per_param_grid)
    if not grid:
        return sorted(set(config.sweep.task.get("dataset_size", ()) or (config.task.dataset_size,)))
    [bucket] = make_buckets(_only(config, label))
    per_example = bucket.task.complexity_bits({"dataset_size": 1})
    return capacity.sizes_for(grid, param_count(bucket.model), per_example)


def largest_size(config: ml_collections.ConfigDict, label: str) -> int:
    sizes = first_sizes(config, label)
    for _ in range(config.capacity.max_rounds - 1):
        sizes = capacity.next_sizes(sizes, config.capacity.growth, config.capacity.extend)
    return max(sizes)


def check(config: ml_collections.ConfigDict) -> CapacityRun:
    """What `config.validate` cannot know: the task suits the experiment at every size it may
    reach, and every size reaches the last exposure budget within `train.steps`. Returns the
    run's typed section."""
    budgets = tuple(config.capacity.exposures)
    if not budgets or any(b <= a for a, b in zip(budgets, budgets[1:])):
        raise ConfigError(
            f"config.capacity.exposures: got {budgets}; allowed: a non-empty ascending tuple of "
            "exposures per item (e.g. (10, 100, 1000))"
        )
    capacity_recipe.check(config)
    longest = max(budgets[-1], *config.capacity.annealed, config.capacity.search_exposures)
    for i, (label, variant) in enumerate(variant_configs(config)):
        where = f"config.sweep.buckets[{i}] ({label}): " if label else ""
        [bucket] = make_buckets(_only(variant, ""))
        if not isinstance(bucket.task, RandomData):
            raise ConfigError(
                f"config.task.name: got {variant.task.name!r}; allowed: random_labels, random_tokens"
            )
        if bucket.task.spec.kind == "sequence" and variant.model.attention != "causal":
            raise ConfigError(
                f"{where}config.model.attention: got {variant.model.attention!r}; allowed: causal "
                "(next-token prediction must not see the token it predicts)"
            )
        if variant.train.schedule != "constant":
            raise ConfigError(
                f"{where}config.train.schedule: got {variant.train.schedule!r}; allowed: constant (the "
                "bits at an exposure budget must not depend on where train.steps ends a decay)"
            )
        top, smallest = largest_size(config, label), min(first_sizes(config, label))
        try:
            dataclasses.replace(bucket.task, max_dataset_size=top).check()
        except ConfigError as e:
            raise ConfigError(f"{where}{e} (sizes may grow to {top} in config.capacity.max_rounds)") from None
        t = variant.train
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
    return CapacityRun(from_section(CapacitySettings, config.capacity), config)


def _only(config: ml_collections.ConfigDict, label: str, sizes: list[int] | None = None):
    """A copy of `config` with one architecture (bucket label) and the given dataset sizes."""
    variant = ml_collections.ConfigDict(config.to_dict())
    variant.sweep.buckets = (label,) if label else ()
    if sizes is not None:
        variant.sweep.task.dataset_size = tuple(sizes)
    return variant


def size_bucket(
    config,
    arch: int,
    label: str,
    sizes: list[int],
    size: int,
    budget: float | None = None,
    recipe: dict | None = None,
    name: str = "",
) -> Bucket:
    """The population of one dataset size in a round of `sizes`: its task draws the largest n any
    round may reach, so every size of every round has the same shapes and one compiled program
    (the extra examples are drawn but neither trained on nor counted). With a
    `recipe`, its hyperparameters replace the `sweep.hparams` grid; with a `budget`, the run is
    annealed: its learning rate decays to 0 when the items have had `budget` exposures."""
    variant = _only(config, label, [size])
    variant.task.dataset_size = variant.task.max_dataset_size = max(*sizes, largest_size(config, label))
    if recipe is not None:
        variant.hparams.update(recipe)
        variant.sweep.hparams = {k: () for k in variant.sweep.hparams}
    if budget is not None:
        variant.train.schedule = config.capacity.anneal_schedule
        variant.hparams.decay_steps = float(capacity_recipe.horizon(budget, size, variant.train.batch_size))
    [bucket] = make_buckets(variant)
    name = name or f"b{arch}n{size}" + ("" if budget is None else f"a{budget:g}")
    return dataclasses.replace(bucket, name=name)

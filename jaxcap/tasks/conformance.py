"""Does a task keep the contract? The checks every built-in task passes in tests/tasks, run on any.

From a config's task section and the levels to sweep (knob -> values): the static checks
(`jaxcap.tasks.checks`), every level builds with its values in SCHEMA range, the data of the
first level in bounds, shapes fixed across levels (one compiled program trains them all), val and
test inputs never in train (measured on `make_data`, as members.jsonl measures them), chance in
(0, 1], complexity bits finite and positive, the data deterministic in the key. `make_data` runs
under `jax.jit` with traced knobs, as in a run. The training step is `jaxcap.core.tiny_run`.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError
from jaxcap.tasks import checks, holdout, loader
from jaxcap.tasks.checks import Check, run_check
from jaxcap.tasks.contract import SPLITS, Task
from jaxcap.tasks.split import Split

# what jax raises where a knob (a traced array under jit) is used as a Python value or a shape
TRACED = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerArrayConversionError,
    jax.errors.NonConcreteBooleanIndexError,
)


def level_grid(task: Task, levels: dict[str, list]) -> list[dict[str, Any]]:
    """Every level's knob values: the product of `levels` over the task's default knobs."""
    names = list(levels)
    return [{**task.default_knobs(), **dict(zip(names, v))} for v in itertools.product(*levels.values())]


def traced(knobs: dict[str, Any]) -> dict[str, jax.Array]:
    """Knob values as a run passes them (int32 or float32 arrays, `jaxcap.core.population.stack`)."""
    return {k: jnp.asarray(v, jnp.int32 if isinstance(v, int) else jnp.float32) for k, v in knobs.items()}


def label(knobs: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in knobs.items()) or "the defaults"


def _build_levels(task_cfg: dict, levels: dict[str, list]) -> tuple[Task, str]:
    """The swept task, after each level's values passed the knob's rule and built alone."""
    cls = loader.task_class(task_cfg["name"])
    task = loader.build(task_cfg)
    for knob, values in levels.items():
        if knob not in task.spec.knobs:
            raise ConfigError(
                f"config.sweep.task.{knob}: not a knob of {cls.__name__}; allowed: "
                f"{', '.join(task.spec.knobs) or 'none (it has no knobs)'}"
            )
        for i, value in enumerate(values):
            cls.SCHEMA[knob](f"config.sweep.task.{knob}[{i}]", value)
            try:
                loader.build({**task_cfg, knob: value})
            except ConfigError as e:
                raise ConfigError(f"config.sweep.task.{knob}[{i}]: {value!r}: {e}") from None
    return loader.build(task_cfg, levels), f"{len(level_grid(task, levels))} levels"


def _check_data(task: Task, data: dict, knobs: dict) -> str:
    """The first level's splits: present, sized, and in the spec's bounds."""
    where, spec = f"{type(task).__name__}.make_data", task.spec
    sizes = dict(zip(SPLITS, task.split_sizes()))
    for name in SPLITS:
        split = data.get(name)
        if not isinstance(split, Split):
            raise ConfigError(f"{where}: no {name!r} Split; allowed: a dict with train, val and test Splits")
        inputs, targets = np.asarray(split.inputs), np.asarray(split.targets)
        expect = (split.size, spec.seq_len, *((spec.input_dim,) if spec.input_dim else ()))
        if inputs.shape != expect:
            raise ConfigError(f"{where}: {name} inputs have shape {inputs.shape}; allowed: {expect} (spec)")
        if not spec.input_dim and (inputs.min() < 0 or inputs.max() >= spec.vocab_size):
            raise ConfigError(
                f"{where}: {name} inputs span [{inputs.min()}, {inputs.max()}]; allowed: tokens in "
                f"[0, spec.vocab_size = {spec.vocab_size})"
            )
        if spec.kind != "regress" and (targets.min() < 0 or targets.max() >= spec.n_outputs):
            raise ConfigError(
                f"{where}: {name} targets span [{targets.min()}, {targets.max()}]; allowed: classes in "
                f"[0, spec.n_outputs = {spec.n_outputs})"
            )
        weights = np.asarray(split.weights)
        if weights.ndim < 1 or weights.shape != targets.shape[: weights.ndim] or (weights < 0).any():
            raise ConfigError(
                f"{where}: {name} weights of shape {weights.shape} for targets {targets.shape}; allowed: "
                "one weight >= 0 per scored answer ([N] or [N, T])"
            )
        if sizes[name] and split.size != sizes[name]:
            raise ConfigError(
                f"{where}: {name} holds {split.size} examples; allowed: {sizes[name]}, as split_sizes() says"
            )
    batch = task.sample_batch(jax.random.key(2), data, traced(knobs), 8)
    if batch.inputs.shape[:2] != (8, spec.seq_len):
        raise ConfigError(
            f"{type(task).__name__}.sample_batch: got inputs {batch.inputs.shape}; allowed: "
            f"(8, {spec.seq_len}, ...)"
        )
    return ", ".join(f"{name} {data[name].size}" for name in SPLITS) + " examples, in the spec's bounds"


def _shapes(tree) -> list:
    leaves = jax.tree_util.tree_leaves_with_path(tree)
    return [(jax.tree_util.keystr(path), a.shape, str(a.dtype)) for path, a in leaves]


def _check_shapes(task: Task, per_level: list[tuple[dict, dict]]) -> str:
    first_knobs, first = per_level[0]
    for knobs, data in per_level[1:]:
        for a, b in zip(_shapes(first), _shapes(data), strict=False):
            if a != b:
                raise ConfigError(
                    f"{type(task).__name__}.make_data: {a[0]} is {a[1]} {a[2]} at {label(first_knobs)} but "
                    f"{b[1]} {b[2]} at {label(knobs)}; allowed: shapes fixed across levels (pad to the "
                    "largest: one compiled program trains every level)"
                )
        if len(_shapes(first)) != len(_shapes(data)):
            raise ConfigError(
                f"{type(task).__name__}.make_data: other splits at {label(knobs)} than at "
                f"{label(first_knobs)}; allowed: the same splits at every level"
            )
    return f"the same at all {len(per_level)} levels"


def _check_splits(task: Task, per_level: list[tuple[dict, dict]]) -> str:
    worst = 0.0
    for knobs, data in per_level:
        for name in ("val", "test"):
            share = float(holdout.overlap(data["train"], data[name]))
            worst = max(worst, share)
            if share > 0 and task.overlap_guaranteed():
                raise ConfigError(
                    f"{type(task).__name__}.make_data: {share:.0%} of the {name} inputs are train inputs at "
                    f"{label(knobs)}; allowed: none (val and test inputs never in train: "
                    "jaxcap.tasks.holdout, or say so in overlap_guaranteed)"
                )
    if not task.overlap_guaranteed():
        return f"overlap not guaranteed (overlap_guaranteed); measured at most {worst:.1%}"
    return "val and test inputs never in train (measured at every level)"


def _check_values(task: Task, grid: list[dict], method: str) -> str:
    """chance in (0, 1], complexity_bits finite and > 0, at every level."""
    values, high = [], 1.0 if method == "chance" else math.inf
    for knobs in grid:
        value = float(getattr(task, method)(knobs))
        if not (math.isfinite(value) and 0 < value <= high):
            allowed = "0 < chance <= 1" if method == "chance" else "finite and > 0"
            where = f"{type(task).__name__}.{method}"
            raise ConfigError(f"{where}: got {value!r} at {label(knobs)}; allowed: {allowed}")
        values.append(value)
    return f"{min(values):.4g} … {max(values):.4g} over {len(grid)} levels"


def _check_determinism(task: Task, make_data, knobs: dict) -> str:
    where, k = f"{type(task).__name__}.make_data", traced(knobs)
    a, b, c = (make_data(jax.random.key(s), k) for s in (0, 0, 1))
    if not all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)):
        raise ConfigError(f"{where}: two calls with one key differ; allowed: a pure function of the key")
    if all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(c), strict=True)):
        raise ConfigError(f"{where}: keys 0 and 1 give the same data; allowed: data drawn from the key")
    return "the same data for one key, other data for another"


def run_checks(task_cfg: dict, levels: dict[str, list]) -> tuple[list[Check], Task | None, list[dict]]:
    """Every check short of training of the task a config section names, at the levels given;
    returns the checks, the swept task (None if it did not build) and each level's knobs."""
    cls = loader.task_class(task_cfg["name"])
    where = lambda method: f"{cls.__name__}.{method}"
    built: dict = {}
    out = [run_check("build", lambda: _build(built, cls, task_cfg), where("__init__"))]
    if out[0].ok:
        out += checks.static_checks(built["task"])
    if all(c.ok for c in out):
        out.append(run_check("levels", lambda: _levels(built, task_cfg, levels), where("__init__")))
    if not all(c.ok for c in out):
        return out, None, []
    task, grid = built["swept"], level_grid(built["swept"], levels)
    make_data = jax.jit(task.make_data)
    per_level: list[tuple[dict, dict]] = []

    def data() -> str:
        try:
            per_level.extend((k, jax.device_get(make_data(jax.random.key(0), traced(k)))) for k in grid)
        except TRACED as e:
            raise ConfigError(
                f"{where('make_data')}: a shape or a Python value depends on a knob ({checks.cause(e)}); "
                "allowed: knobs as traced arrays, shapes fixed across levels (pad to the largest level)"
            ) from None
        return _check_data(task, per_level[0][1], grid[0])

    data_ok = run_check("data", data, where("make_data"))
    out.append(data_ok)
    if data_ok.ok:  # the rest of make_data's checks read the data it made
        out.append(run_check("shapes", lambda: _check_shapes(task, per_level), where("make_data")))
        out.append(run_check("splits", lambda: _check_splits(task, per_level), where("make_data")))
    out.append(run_check("chance", lambda: _check_values(task, grid, "chance"), where("chance")))
    bits = lambda: _check_values(task, grid, "complexity_bits")
    out.append(run_check("bits", bits, where("complexity_bits")))
    if data_ok.ok:
        determinism = lambda: _check_determinism(task, make_data, grid[0])
        out.append(run_check("determinism", determinism, where("make_data")))
    return out, task, grid


def _build(built: dict, cls: type[Task], task_cfg: dict) -> str:
    """The task of the section with its values checked against SCHEMA first (a wrong type is then
    the rule's line, not the constructor's traceback)."""
    fields = {k: v for k, v in task_cfg.items() if k != "name"}
    schema = getattr(cls, "SCHEMA", {})
    for name, value in fields.items():
        if isinstance(schema, dict) and name in schema:
            schema[name](f"config.task.{name}", value)
    built["task"] = cls.from_config(fields, {})
    return f"the task section ({len(fields)} fields) passes SCHEMA and builds"


def _levels(built: dict, task_cfg: dict, levels: dict[str, list]) -> str:
    built["swept"], detail = _build_levels(task_cfg, levels)
    return f"{detail}: " + "; ".join(label(k) for k in level_grid(built["swept"], levels))

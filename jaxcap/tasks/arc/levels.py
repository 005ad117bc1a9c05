"""The level table of the ARC-like puzzles (`jaxcap.tasks.arc.puzzles`) [1]: rule families and the ladder.

A level is (name, family, whether the rule is inferred per puzzle, recolour stage). Families are
pools of rules, the first one being the fixed rule: the ladder's `arc_grids` primitives
(FAMILIES), the object families of `arc_objects` (KINDS), and the shape-changing families of
`arc_shapes` (levels 21+). The arrays below map a traced level to its pool, so one compiled
program trains every level.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import numpy as np

from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import objects as ao
from jaxcap.tasks.arc import shapes as ash

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
    ("tile", "tile", False, "none"),  # the shape-changing families of `arc_shapes`
    ("upscale", "upscale", False, "none"),
    ("mirror", "mirror", False, "none"),
    ("crop", "crop", False, "none"),
    ("tile?", "tile", True, "none"),
    ("upscale?", "upscale", True, "none"),
    ("mirror?", "mirror", True, "none"),
    ("shape?", "shape", True, "none"),
    ("shape?+recolour?", "shape", True, "inferred"),
)
SHAPE_LEVELS = tuple(i for i, (_, family, _, _) in enumerate(LEVELS) if family in ash.FAMILIES)
_NAMES = tuple(FAMILIES)
POOL = np.zeros((len(FAMILIES), ag.N_PRIMITIVES), np.int32)
for _i, _members in enumerate(FAMILIES.values()):
    POOL[_i, : len(_members)] = _members
POOL_SIZE = np.array([len(m) for m in FAMILIES.values()], np.int32)
LEVEL_FAMILY = np.array([_NAMES.index(f) if f in FAMILIES else 0 for _, f, _, _ in LEVELS], np.int32)
LEVEL_KIND = np.array([ao.KINDS.index(f) if f in ao.KINDS else 0 for _, f, _, _ in LEVELS], np.int32)
LEVEL_SHAPE = np.array(
    [list(ash.FAMILIES).index(f) if f in ash.FAMILIES else -1 for _, f, _, _ in LEVELS], np.int32
)
LEVEL_INFER = np.array([infer for _, _, infer, _ in LEVELS], bool)
LEVEL_RECOLOUR = np.array([RECOLOUR.index(r) for *_, r in LEVELS], np.int32)


def fixed_colour_map(seed: int) -> np.ndarray:
    """The fixed recolour table: a random permutation of colours 1-9 (0 and specials kept)."""
    table = np.arange(ag.VOCAB, dtype=np.int32)
    table[1:10] = 1 + np.random.default_rng(seed).permutation(9)
    return table


def level_rules(level: int) -> tuple:
    """The rules a level draws from: the family's pool if inferred, else its first rule."""
    _, family, infer, _ = LEVELS[level]
    pool = ash.FAMILIES[family] if family in ash.FAMILIES else FAMILIES.get(family, (0,))
    return pool if infer else pool[:1]


def out_scale(level: int) -> int:
    """How many times the input canvas a level's outputs need (0: same-size, no output canvas)."""
    if level not in SHAPE_LEVELS:
        return 0
    return max(ash.SCALE[name] for name in level_rules(level))

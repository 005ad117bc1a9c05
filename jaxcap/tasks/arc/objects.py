"""ARC object-level families in jax.numpy: flood fill, symmetry completion, object counting.

The ladder's primitives (`arc_grids`) act on any grid; these rules need inputs with structure,
so each family draws its own inputs (pure, jittable, vmappable; s traced, s <= G canvas):
fill paints the background that rectangle outlines enclose, symmetry completes a masked
mirror-symmetric grid, count tallies the 4-connected single-colour objects (after ARC-AGI-1
tasks 00d62c1b, 9ecd008a and 1fad071e [1]). Each is fixed, or has its paint colour or mirror
axis inferred per puzzle; complexity is the bits of the test input the output depends on plus
the bits inferred, and chance is sampled (`Arc.chance`).

Details: docs/design/arc.md#object-families.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxcap.tasks.arc import grids as ag

KINDS = ("ladder", "fill", "symmetry", "count")
PAINT = 4
N_OUTLINES = 2


def _shift(a: jax.Array, dr: int, dc: int, fill) -> jax.Array:
    """out[r, c] = a[r + dr, c + dc], `fill` off the canvas."""
    g = a.shape[0]
    return jnp.pad(a, 1, constant_values=fill)[1 + dr : 1 + dr + g, 1 + dc : 1 + dc + g]


_STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1))


def enclosed(x_GxG: jax.Array, s: jax.Array) -> jax.Array:
    """[G, G] bool: background cells of the s x s grid not 4-connected to its border."""
    g = x_GxG.shape[0]
    idx = jnp.arange(g)
    background = ag.inside(s, g) & (x_GxG == 0)
    edge = (idx[:, None] == 0) | (idx[:, None] == s - 1) | (idx[None, :] == 0) | (idx[None, :] == s - 1)

    def grow(_, reach):
        spread = reach
        for dr, dc in _STEPS:
            spread = spread | _shift(reach, dr, dc, False)
        return background & spread

    reach = jax.lax.fori_loop(0, g * g, grow, background & edge)
    return background & ~reach


def count_objects(x_GxG: jax.Array, s: jax.Array) -> jax.Array:
    """The number of 4-connected single-colour components of non-background cells."""
    g = x_GxG.shape[0]
    solid = ag.inside(s, g) & (x_GxG != 0)
    own = jnp.where(solid, jnp.arange(1, g * g + 1).reshape(g, g), 0)

    def spread(_, label):
        for dr, dc in _STEPS:
            same = solid & (_shift(x_GxG, dr, dc, ag.PAD) == x_GxG) & _shift(solid, dr, dc, False)
            label = jnp.maximum(label, jnp.where(same, _shift(label, dr, dc, 0), 0))
        return label

    label = jax.lax.fori_loop(0, g * g, spread, own)
    return (solid & (label == own)).sum()


def tally(count: jax.Array, s: jax.Array, g: int, paint: jax.Array) -> jax.Array:
    """An s x s canvas whose first `count` cells in reading order are `paint`, the rest 0."""
    idx = jnp.arange(g)
    order = idx[:, None] * s + idx[None, :]
    return jnp.where(ag.inside(s, g), jnp.where(order < count, paint, 0), ag.PAD)


def outlines(key: jax.Array, s: jax.Array, g: int, n_colours: jax.Array) -> jax.Array:
    """A canvas with N_OUTLINES rectangle outlines (sides 3..s), later ones drawn on top."""
    idx = jnp.arange(g)
    r, c = idx[:, None], idx[None, :]
    grid = jnp.where(ag.inside(s, g), 0, ag.PAD)
    for key_rect in jax.random.split(key, N_OUTLINES):
        k_h, k_w, k_r, k_c, k_colour = jax.random.split(key_rect, 5)
        h = jnp.minimum(jax.random.randint(k_h, (), 3, jnp.maximum(s, 3) + 1), s)
        w = jnp.minimum(jax.random.randint(k_w, (), 3, jnp.maximum(s, 3) + 1), s)
        r0 = jax.random.randint(k_r, (), 0, s - h + 1)
        c0 = jax.random.randint(k_c, (), 0, s - w + 1)
        box = (r >= r0) & (r < r0 + h) & (c >= c0) & (c < c0 + w)
        rim = box & ((r == r0) | (r == r0 + h - 1) | (c == c0) | (c == c0 + w - 1))
        grid = jnp.where(rim, jax.random.randint(k_colour, (), 1, n_colours), grid)
    return grid


def mirrored(key: jax.Array, s: jax.Array, g: int, n_colours: jax.Array, axis: jax.Array):
    """(masked input, symmetric output): mirror axis 0 left-right, 1 up-down."""
    k_colours, k_h, k_w, k_r, k_c, k_side = jax.random.split(key, 6)
    idx = jnp.arange(g)
    r, c = idx[:, None], idx[None, :]
    x = jax.random.randint(k_colours, (g, g), 1, n_colours)
    full = jnp.where(c < (s + 1) // 2, x, x[r, jnp.clip(s - 1 - c, 0, g - 1)])  # left-right symmetric
    half = jnp.maximum(s // 2, 1)
    mh, mw = jax.random.randint(k_h, (), 1, s + 1), jax.random.randint(k_w, (), 1, half + 1)
    r0, c0 = jax.random.randint(k_r, (), 0, s - mh + 1), jax.random.randint(k_c, (), 0, half - mw + 1)
    col = jnp.where(jax.random.bernoulli(k_side), c, s - 1 - c)  # the mask in the left or right half
    mask = (r >= r0) & (r < r0 + mh) & (col >= c0) & (col < c0 + mw)
    full = jnp.where(ag.inside(s, g), full, ag.PAD)
    masked = jnp.where(mask & ag.inside(s, g), 0, full)
    flip = axis == 1  # an up-down symmetric grid is a transposed left-right one (iid cells)
    return jnp.where(flip, masked.T, masked), jnp.where(flip, full.T, full)


def object_puzzle(key, noise_KxGxG, kind, infer, s, n_colours, kinds: tuple[int, ...] = (1, 2, 3)):
    """Inputs and outputs [K, G, G] of the object family `kind` (1-3) for K = n + 1 pairs.

    `kinds` (static): the families `kind` may be; only these are computed (each is a G^2-step
    loop, and a traced `kind` in a vmapped program computes every family it may be and selects).
    Each family draws from its own key, so the values do not depend on `kinds`."""
    k, g, _ = noise_KxGxG.shape
    key_paint, key_axis, key_fill, key_mirror = jax.random.split(key, 4)
    paint = jnp.where(infer, jax.random.randint(key_paint, (), 1, 10), PAINT)
    axis = jnp.where(infer, jax.random.randint(key_axis, (), 0, 2), 0)

    def fill():
        walls = jax.vmap(lambda kk: outlines(kk, s, g, n_colours))(jax.random.split(key_fill, k))
        return walls, jax.vmap(lambda x: jnp.where(enclosed(x, s), paint, x))(walls)

    def symmetry():
        return jax.vmap(lambda kk: mirrored(kk, s, g, n_colours, axis))(jax.random.split(key_mirror, k))

    def count():
        return noise_KxGxG, jax.vmap(lambda x: tally(count_objects(x, s), s, g, paint))(noise_KxGxG)

    made = [{1: fill, 2: symmetry, 3: count}[i]() for i in kinds]
    which = jnp.argmax(jnp.asarray(kinds) == kind)  # a kind outside `kinds` (the ladder's 0): the first
    return tuple(jnp.stack([m[j] for m in made])[which] for j in (0, 1))


def complexity_bits(kind: str, infer: bool, size: int, n_colours: int) -> float:
    """Bits of the test input the output depends on, plus inferred bits (module docstring)."""
    if kind == "fill":
        placements = max((size - 2) * (size - 1) // 2, 1)
        bits = N_OUTLINES * (2 * math.log2(placements) + math.log2(n_colours - 1))
    elif kind == "symmetry":
        bits = size * ((size + 1) // 2) * math.log2(n_colours - 1)
    else:
        bits = size * size * math.log2(n_colours)
    inferred = (1.0 if kind == "symmetry" else math.log2(9)) if infer else 0.0
    return bits + inferred

"""ARC grid primitives and the token layout of a puzzle, in jax.numpy (pure, jittable, vmappable).

A grid lives on a fixed G x G canvas of tokens: colours 0-9 inside its h x w top-left corner
and PAD everywhere else, so grids of any size up to G share one static shape. Background is
colour 0 (as in most ARC tasks [1]). Primitives (ids 0-19: the dihedral group D4, wrapping unit
shifts, gravity) act on a square s x s grid and return a canvas again; a puzzle's grids become
slots of G rows x (G + 1) tokens joined by SEP, and the causal model is scored on the cells of
the test output only.

Details: docs/design/arc.md#grid-primitives.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

N_COLOURS = 10
ROW, SEP, PAD = 10, 11, 12
VOCAB = 13
SHIFTS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
N_MAPS = 8 + len(SHIFTS)  # index-map primitives; gravity follows
GRAVITY = (16, 17, 18, 19)  # down, up, left, right
N_PRIMITIVES = 20
PRIMITIVE_NAMES = (
    ["identity", "fliplr", "flipud", "transpose", "antitranspose", "rot90", "rot180", "rot270"]
    + [f"shift{dr:+d}{dc:+d}" for dr, dc in SHIFTS]
    + ["gravity_down", "gravity_up", "gravity_left", "gravity_right"]
)
# gravity in direction d = post(down(pre(x))): rotate the falling side to the bottom and back
_GRAVITY_PRE = np.array([0, 6, 5, 7], np.int32)
_GRAVITY_POST = np.array([0, 6, 7, 5], np.int32)


def _sources(s: jax.Array, g: int) -> tuple[jax.Array, jax.Array]:
    """(src_row, src_col), each [N_MAPS, G, G]: where out[r, c] reads from, per index map."""
    r = jnp.arange(g, dtype=jnp.int32)[:, None] + jnp.zeros((1, g), jnp.int32)
    c = jnp.arange(g, dtype=jnp.int32)[None, :] + jnp.zeros((g, 1), jnp.int32)
    rr, cc = s - 1 - r, s - 1 - c
    rows = [r, r, rr, c, cc, c, rr, cc]
    cols = [c, cc, c, r, rr, rr, cc, r]
    for dr, dc in SHIFTS:
        rows.append(jnp.mod(r - dr, s))
        cols.append(jnp.mod(c - dc, s))
    return jnp.stack(rows), jnp.stack(cols)


def inside(s: jax.Array, g: int) -> jax.Array:
    """[G, G] bool: the cells of the s x s grid."""
    idx = jnp.arange(g)
    return (idx[:, None] < s) & (idx[None, :] < s)


def index_map(x_GxG: jax.Array, prim: jax.Array, s: jax.Array) -> jax.Array:
    """Apply index-map primitive `prim` (0-15) to the s x s grid on canvas x."""
    g = x_GxG.shape[0]
    rows, cols = _sources(s, g)
    src_r, src_c = jnp.clip(rows[prim], 0, g - 1), jnp.clip(cols[prim], 0, g - 1)
    return jnp.where(inside(s, g), x_GxG[src_r, src_c], PAD)


def gravity_down(x_GxG: jax.Array, s: jax.Array) -> jax.Array:
    """Non-background cells of each column fall to the bottom of the s x s grid, order kept."""
    g = x_GxG.shape[0]
    solid = inside(s, g) & (x_GxG != 0)
    count_G = solid.sum(0)  # per column
    rank = jnp.cumsum(solid, axis=0)  # 1-based rank from the top of each solid cell
    j = jnp.arange(g)[:, None] - (s - count_G)[None, :]  # out[r, c] holds the j-th solid cell (0-based)
    match = solid[None, :, :] & (rank[None, :, :] == (j + 1)[:, None, :])  # [out row, in row, col]
    src = jnp.argmax(match, axis=1)
    dropped = jnp.where(j >= 0, jnp.take_along_axis(x_GxG, src, axis=0), 0)
    return jnp.where(inside(s, g), dropped, PAD)


def apply_primitive(x_GxG: jax.Array, prim: jax.Array, s: jax.Array) -> jax.Array:
    """Apply primitive `prim` (0-19, traced) to the s x s grid on canvas x."""
    is_gravity = prim >= N_MAPS
    d = jnp.clip(prim - N_MAPS, 0, 3)
    first = index_map(x_GxG, jnp.where(is_gravity, jnp.asarray(_GRAVITY_PRE)[d], prim), s)
    fallen = index_map(gravity_down(first, s), jnp.asarray(_GRAVITY_POST)[d], s)
    return jnp.where(is_gravity, fallen, first)


def identity_colours() -> jax.Array:
    return jnp.arange(VOCAB, dtype=jnp.int32)


def recolour(x: jax.Array, table_V: jax.Array) -> jax.Array:
    """Map every token through a VOCAB-entry table (entries >= 10 should map to themselves)."""
    return table_V[x]


def serialize(grids_KxGxG: jax.Array) -> jax.Array:
    """One puzzle's K = 2n + 2 canvases -> its full token sequence of K (G (G + 1) + 1) - 1 tokens."""
    k, g, _ = grids_KxGxG.shape
    row_end = jnp.where(grids_KxGxG[:, :, :1] != PAD, ROW, PAD)  # [K, G, 1]
    slots = jnp.concatenate([grids_KxGxG, row_end], axis=2).reshape(k, g * (g + 1))
    seps = jnp.full((k, 1), SEP, jnp.int32)
    return jnp.concatenate([slots, seps], axis=1).reshape(-1)[:-1]


def test_output_cells(k: int, g: int) -> np.ndarray:
    """[length] bool: which positions of a serialized puzzle are the test output's cell slots."""
    slot = g * (g + 1) + 1
    mask = np.zeros(k * slot - 1, bool)
    cells = (np.arange(g * (g + 1)) % (g + 1)) < g
    mask[(k - 1) * slot :] = cells
    return mask


def to_example(full_L: jax.Array, k: int, g: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(inputs, targets, weights), each of length L - 1: position j predicts token j + 1 (causal
    teacher forcing); only the test output's cells (non-PAD) are scored, with colour targets."""
    cells = jnp.asarray(test_output_cells(k, g))
    nxt = full_L[1:]
    scored = cells[1:] & (nxt != PAD)
    targets = jnp.where(scored, nxt, 0)
    return full_L[:-1], targets, scored.astype(jnp.float32)

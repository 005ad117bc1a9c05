"""Shape-changing ARC rules [1] in jax.numpy, and the puzzle layout in which the output's shape is
predicted and scored.

Rules (RULES) take an h x w grid in the top-left corner of a G x G canvas to a G_out x G_out
canvas, PAD outside the output's true shape: the one-primitive shape changes found in ARC-AGI-1
(block arrangements of dihedral images, upscaling, cropping to a bounding box). Families: tile,
upscale, mirror, crop and shape (every rule of scale 2). Every cell of the test output slot is
scored, those outside the output's shape with the class OUTSIDE, so exact-grid accuracy needs
the shape and the colours right.

Details: docs/design/arc.md#shape-changing-rules.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.tasks.arc import grids as ag

OUTSIDE = ag.N_COLOURS  # the scored class of a test-output cell outside the output's shape
N_OUTPUTS = ag.N_COLOURS + 1
BLOCK, UPSCALE, CROP = 0, 1, 2
# name: (kind, blocks (a, b), D4 id per block in reading order, upscale factor)
RULES = {
    "tile2x2": (BLOCK, (2, 2), (0, 0, 0, 0), 1),
    "tile1x2": (BLOCK, (1, 2), (0, 0), 1),
    "upscale2": (UPSCALE, (1, 1), (0,), 2),
    "upscale3": (UPSCALE, (1, 1), (0,), 3),
    "mirror_quad": (BLOCK, (2, 2), (0, 1, 2, 6), 1),
    "mirror_right": (BLOCK, (1, 2), (0, 1), 1),
    "mirror_down": (BLOCK, (2, 1), (0, 2), 1),
    "mirror_up": (BLOCK, (2, 1), (2, 0), 1),
    "mirror_quad_flipped": (BLOCK, (2, 2), (6, 2, 1, 0), 1),
    "rotate_quad": (BLOCK, (2, 2), (0, 7, 5, 6), 1),
    "rotate_quad_ccw": (BLOCK, (2, 2), (0, 5, 6, 7), 1),
    "crop": (CROP, (1, 1), (0,), 1),
}
NAMES = tuple(RULES)
SCALE = {name: max(*blocks, up) for name, (_, blocks, _, up) in RULES.items()}
_SCALE2 = tuple(n for n in NAMES if SCALE[n] == 2)
FAMILIES = {
    "tile": ("tile2x2", "tile1x2"),
    "upscale": ("upscale2", "upscale3"),
    "mirror": tuple(n for n in _SCALE2 if n.startswith(("mirror", "rotate"))),
    "crop": ("crop",),
    "shape": _SCALE2,
}
_POOL = np.array(
    [[NAMES.index(n) for n in p] + [0] * (len(NAMES) - len(p)) for p in FAMILIES.values()], np.int32
)
_POOL_SIZE = np.array([len(p) for p in FAMILIES.values()], np.int32)
_KIND = np.array([k for k, *_ in RULES.values()], np.int32)
_BLOCKS = np.array([b for _, b, _, _ in RULES.values()], np.int32)
_UP = np.array([u for *_, u in RULES.values()], np.int32)
_D4 = np.zeros((len(RULES), 2, 2), np.int32)
for _i, (_, (_a, _b), _ids, _) in enumerate(RULES.values()):
    _D4[_i, :_a, :_b] = np.reshape(_ids, (_a, _b))


def _d4_source(d, r, c, h, w):
    """Where cell (r, c) of D4 image `d` (arc_grids ids) of an h x w grid reads from."""
    rr, cc = h - 1 - r, w - 1 - c
    rows = jnp.stack([r, r, rr, c, cc, c, rr, cc])
    cols = jnp.stack([c, cc, c, r, rr, rr, cc, r])
    pick = lambda a: jnp.take_along_axis(a, d[None], axis=0)[0]  # noqa: E731
    return pick(rows), pick(cols)


def bounding_box(x_GxG: jax.Array, h: jax.Array, w: jax.Array):
    """(r0, c0, rows, cols) of the cells differing from the most common colour of the h x w grid."""
    g = x_GxG.shape[0]
    idx = jnp.arange(g)
    live = (idx[:, None] < h) & (idx[None, :] < w)
    counts = ((x_GxG[..., None] == jnp.arange(ag.N_COLOURS)[None, None]) & live[..., None]).sum((0, 1))
    fg = live & (x_GxG != jnp.argmax(counts))
    rows, cols = fg.any(1), fg.any(0)
    empty = ~rows.any()
    r0, c0 = jnp.argmax(rows), jnp.argmax(cols)
    r1, c1 = g - 1 - jnp.argmax(rows[::-1]), g - 1 - jnp.argmax(cols[::-1])
    return (
        jnp.where(empty, 0, r0),
        jnp.where(empty, 0, c0),
        jnp.where(empty, h, r1 - r0 + 1),
        jnp.where(empty, w, c1 - c0 + 1),
    )


def apply_shape(x_GxG: jax.Array, rule: jax.Array, h: jax.Array, w: jax.Array, g_out: int) -> jax.Array:
    """Rule `rule` (traced id) of the h x w grid on canvas x -> a g_out x g_out canvas."""
    g = x_GxG.shape[0]
    r = jnp.arange(g_out, dtype=jnp.int32)[:, None] + jnp.zeros((1, g_out), jnp.int32)
    c = jnp.arange(g_out, dtype=jnp.int32)[None, :] + jnp.zeros((g_out, 1), jnp.int32)
    a, b = jnp.asarray(_BLOCKS)[rule]
    i, j = r // h, c // w
    d = jnp.asarray(_D4)[rule][jnp.clip(i, 0, 1), jnp.clip(j, 0, 1)]
    block_r, block_c = _d4_source(d, r - i * h, c - j * w, h, w)
    k = jnp.asarray(_UP)[rule]
    r0, c0, bh, bw = bounding_box(x_GxG, h, w)
    kind = jnp.asarray(_KIND)[rule]
    src_r = jnp.stack([block_r, r // k, r + r0])[kind]
    src_c = jnp.stack([block_c, c // k, c + c0])[kind]
    out_h = jnp.stack([a * h, k * h, bh])[kind]
    out_w = jnp.stack([b * w, k * w, bw])[kind]
    cells = x_GxG[jnp.clip(src_r, 0, g - 1), jnp.clip(src_c, 0, g - 1)]
    return jnp.where((r < out_h) & (c < out_w), cells, ag.PAD)


_NUMPY_D4 = (
    lambda x: x,
    np.fliplr,
    np.flipud,
    np.transpose,
    lambda x: np.rot90(x, 2).T,
    np.rot90,
    lambda x: np.rot90(x, 2),
    lambda x: np.rot90(x, 3),
)


def numpy_shape(x: np.ndarray, name: str) -> np.ndarray | None:
    """Rule `name` on an h x w numpy grid (None where it is undefined: a rotation of a non-square)."""
    kind, (a, b), ids, up = RULES[name]
    if kind == UPSCALE:
        return np.kron(x, np.ones((up, up), x.dtype))
    if kind == CROP:
        colours, counts = np.unique(x, return_counts=True)
        fg = x != colours[counts.argmax()]
        if not fg.any():
            return x
        rows, cols = np.flatnonzero(fg.any(1)), np.flatnonzero(fg.any(0))
        return x[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    if x.shape[0] != x.shape[1] and set(ids) & {3, 4, 5, 7}:
        return None
    return np.block([[_NUMPY_D4[ids[i * b + j]](x) for j in range(b)] for i in range(a)])


def crop_inputs(key: jax.Array, s: jax.Array, g: int, n: int, n_colours: jax.Array) -> jax.Array:
    """[n, G, G]: background 0 and one rectangle of noisy colours with coloured corners."""
    idx = jnp.arange(g)
    r, c = idx[:, None], idx[None, :]

    def one(k):
        k_h, k_w, k_r, k_c, k_on, k_colour = jax.random.split(k, 6)
        top = jnp.maximum(s - 1, 1)
        h, w = jax.random.randint(k_h, (), 1, top + 1), jax.random.randint(k_w, (), 1, top + 1)
        r0, c0 = jax.random.randint(k_r, (), 0, s - h + 1), jax.random.randint(k_c, (), 0, s - w + 1)
        box = (r >= r0) & (r < r0 + h) & (c >= c0) & (c < c0 + w)
        corner = ((r == r0) & (c == c0)) | ((r == r0 + h - 1) & (c == c0 + w - 1))
        on = box & (jax.random.bernoulli(k_on, 0.5, (g, g)) | corner)
        grid = jnp.where(on, jax.random.randint(k_colour, (g, g), 1, n_colours), 0)
        return jnp.where(ag.inside(s, g), grid, ag.PAD)

    return jax.vmap(one)(jax.random.split(key, n))


def shape_puzzle(key, noise_KxGxG, s, family, infer, n_colours, table_V, g_out: int):
    """(inputs [K, G, G], outputs [K, G_out, G_out]) of a shape family (index into FAMILIES)."""
    k, g, _ = noise_KxGxG.shape
    key_rule, key_crop = jax.random.split(key)
    which = jax.random.randint(key_rule, (), 0, jnp.asarray(_POOL_SIZE)[family])
    rule = jnp.asarray(_POOL)[family, jnp.where(infer, which, 0)]
    crops = crop_inputs(key_crop, s, g, k, n_colours)
    inputs = jnp.where(jnp.asarray(_KIND)[rule] == CROP, crops, noise_KxGxG)
    outputs = jax.vmap(lambda x: ag.recolour(apply_shape(x, rule, s, s, g_out), table_V))(inputs)
    return inputs, outputs


def crop_bits(size: int, n_colours: int) -> float:
    """Crop complexity: log2 of the rectangle's (side, offset) choices per axis, squared, plus its
    mean number of cells times log2 n_colours (the content carried to the output)."""
    top = max(size - 1, 1)
    placements = sum(size - side + 1 for side in range(1, top + 1))
    return 2 * math.log2(placements) + ((1 + top) / 2) ** 2 * math.log2(n_colours)


def pad_canvas(grids_KxGxG: jax.Array, g_out: int) -> jax.Array:
    """Grids on G x G canvases -> the same grids on G_out x G_out canvases (PAD beyond)."""
    extra = g_out - grids_KxGxG.shape[-1]
    return jnp.pad(grids_KxGxG, ((0, 0), (0, extra), (0, extra)), constant_values=ag.PAD)


def _slots(grids_KxGxG: jax.Array) -> jax.Array:
    k, g, _ = grids_KxGxG.shape
    row_end = jnp.where(grids_KxGxG[:, :, :1] != ag.PAD, ag.ROW, ag.PAD)
    return jnp.concatenate([grids_KxGxG, row_end], axis=2).reshape(k, g * (g + 1))


def serialize(inputs_NxGxG: jax.Array, outputs_NxHxH: jax.Array) -> jax.Array:
    """N pairs -> in_1 SEP out_1 SEP ... in_N SEP out_N: N (G(G+1) + H(H+1) + 2) - 1 tokens."""
    sep = jnp.full((inputs_NxGxG.shape[0], 1), ag.SEP, jnp.int32)
    pairs = [_slots(inputs_NxGxG), sep, _slots(outputs_NxHxH), sep]
    return jnp.concatenate(pairs, axis=1).reshape(-1)[:-1]


def test_output_cells(n_pairs: int, g: int, g_out: int) -> np.ndarray:
    """[length] bool: the positions of every cell of the test output's G_out x G_out slot."""
    slot = g_out * (g_out + 1)
    length = n_pairs * (g * (g + 1) + slot + 2) - 1
    mask = np.zeros(length, bool)
    mask[length - slot :] = (np.arange(slot) % (g_out + 1)) < g_out
    return mask


def encode(grids_KxCxC: jax.Array, g: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One puzzle's canvases (inputs within G) -> (inputs, targets, weights) of length L - 1; the
    test output's cells are scored, OUTSIDE beyond its shape; nothing else is."""
    k, g_out, _ = grids_KxCxC.shape
    full = serialize(grids_KxCxC[0::2, :g, :g], grids_KxCxC[1::2])
    scored = jnp.asarray(test_output_cells(k // 2, g, g_out))[1:]
    nxt = full[1:]
    targets = jnp.where(scored, jnp.where(nxt == ag.PAD, OUTSIDE, nxt), 0)
    return full[:-1], targets, scored.astype(jnp.float32)

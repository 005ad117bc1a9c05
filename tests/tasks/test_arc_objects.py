"""ARC object families (jaxcap/tasks/arc/objects.py): flood fill and object counting against slow
pure-Python BFS references, every drawn puzzle of the object levels checked pair by pair (fill:
BFS from the border; symmetry: explicit mirror loops; count: BFS components), and their
complexity and sampled chance."""

import math
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from arc_grids import DRAW, PUZZLES
from arc_grids import parse_slot as _parse_slot

from jaxcap import tasks
from jaxcap.tasks.arc import objects as ao
from jaxcap.tasks.arc import real as arc_real
from jaxcap.tasks.arc.puzzles import LEVELS

OBJECTS = [i for i, (_, family, _, _) in enumerate(LEVELS) if family in ao.KINDS]  # 15-20
LEVEL = {name: i for i, (name, *_) in enumerate(LEVELS)}
STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1))


def _bfs(grid, starts, same):
    """Cells reached from `starts` through 4-neighbours (r, c) -> (r', c') with same(r, c, r', c')."""
    s, seen, queue = len(grid), set(starts), deque(starts)
    while queue:
        r, c = queue.popleft()
        for dr, dc in STEPS:
            nr, nc = r + dr, c + dc
            if 0 <= nr < s and 0 <= nc < s and (nr, nc) not in seen and same(r, c, nr, nc):
                seen.add((nr, nc))
                queue.append((nr, nc))
    return seen


def slow_enclosed(grid):
    """Background cells not connected through background to the border (BFS from the border)."""
    s = len(grid)
    border = [
        (r, c) for r in range(s) for c in range(s) if grid[r][c] == 0 and (r in (0, s - 1) or c in (0, s - 1))
    ]
    outside = _bfs(grid, border, lambda r, c, nr, nc: grid[nr][nc] == 0)
    return [[grid[r][c] == 0 and (r, c) not in outside for c in range(s)] for r in range(s)]


def slow_count(grid):
    """4-connected single-colour components of non-zero cells, by BFS."""
    s, seen, n = len(grid), set(), 0
    for r in range(s):
        for c in range(s):
            if grid[r][c] and (r, c) not in seen:
                n += 1
                seen |= _bfs(grid, [(r, c)], lambda a, b, nr, nc: grid[nr][nc] == grid[a][b])
    return n


ENCLOSED = jax.jit(ao.enclosed)
COUNT = jax.jit(ao.count_objects)


def test_enclosed_and_count_match_bfs():
    rng, g = np.random.default_rng(0), 7
    for s in (1, 2, 3, 5, 7):
        for density in (0.3, 0.5, 0.7, 0.9):
            for _ in range(8):
                grid = (rng.integers(1, 4, (s, s)) * (rng.random((s, s)) < density)).tolist()
                canvas = jnp.asarray(arc_real.canvas(np.array(grid), g))
                got = np.asarray(ENCLOSED(canvas, jnp.int32(s)))
                assert got[:s, :s].tolist() == slow_enclosed(grid), grid
                assert not got[s:].any() and not got[:, s:].any()
                assert int(COUNT(canvas, jnp.int32(s))) == slow_count(grid), grid


def _puzzles(split):
    """Each drawn puzzle as its list of grids (the test output read off the scored targets)."""
    k, g = PUZZLES.n_grids, PUZZLES.canvas
    slot = g * (g + 1)
    for inputs, targets, weights in zip(
        split.inputs.tolist(), split.targets.tolist(), split.weights.tolist()
    ):
        grids = [_parse_slot(inputs[i * (slot + 1) :][:slot], g) for i in range(k - 1)]
        side = len(grids[0])
        cells = [t for t, w in zip(targets, weights) if w]
        yield grids + [[cells[r * side : (r + 1) * side] for r in range(side)]]


def _mirror_axes(x, y):
    """Axes (0 left-right, 1 up-down) under which y is symmetric and x is y with a mask in one half."""
    s = len(y)
    masked = [(r, c) for r in range(s) for c in range(s) if x[r][c] != y[r][c]]
    if any(x[r][c] != 0 for r, c in masked):
        return set()
    axes = set()
    for axis in (0, 1):
        mirror = [[y[r][s - 1 - c] if axis == 0 else y[s - 1 - r][c] for c in range(s)] for r in range(s)]
        pos = [c if axis == 0 else r for r, c in masked]
        one_half = all(p < s // 2 for p in pos) or all(p >= (s + 1) // 2 for p in pos)
        if mirror == y and one_half and masked:
            axes.add(axis)
    return axes


@pytest.mark.parametrize("level", OBJECTS)
def test_object_puzzles_follow_their_level(level):
    _, family, infer, _ = LEVELS[level]
    knobs = {"level": jnp.int32(level), "size": jnp.int32(4), "n_colours": jnp.int32(5)}
    split = jax.tree.map(np.asarray, DRAW(jax.random.key(level), knobs))
    sides, paints, axes = set(), set(), set()
    for grids in _puzzles(split):
        side = len(grids[0])
        sides.add(side)
        paint, axis = set(), {0, 1}
        for x, y in zip(grids[0::2], grids[1::2]):
            assert len(x) == len(y) == side and all(len(r) == side for r in x + y)
            cells = [(r, c) for r in range(side) for c in range(side)]
            if family == "fill":
                assert all(0 <= v < 5 for v in sum(x, []))
                holes = slow_enclosed(x)
                assert all(y[r][c] == x[r][c] for r, c in cells if not holes[r][c])
                paint |= {y[r][c] for r, c in cells if holes[r][c]}
            elif family == "symmetry":
                assert all(1 <= v < 5 for v in sum(y, []))
                axis &= _mirror_axes(x, y)
            else:
                n = slow_count(x)
                paint |= {y[0][0]} if n else set()
                assert sum(y, []) == [y[0][0]] * n + [0] * (side * side - n), (x, y)
        assert len(paint) <= 1 and (infer or paint <= {ao.PAINT}), paint
        paints |= paint
        if family == "symmetry":
            assert axis and (infer or axis == {0}), grids
            axes |= axis if len(axis) == 1 else set()
    assert sides == {2, 3, 4}
    if infer:
        assert len(paints) >= 4 if family != "symmetry" else axes == {0, 1}


def test_object_complexity_and_chance():
    task = tasks.build({"name": "arc", "size": 3})
    bits = task.complexity_bits
    assert bits({"level": LEVEL["fill"], "size": 3, "n_colours": 4}) == pytest.approx(2 * math.log2(3))
    assert bits({"level": LEVEL["fill?"], "size": 5, "n_colours": 4}) == pytest.approx(
        2 * (2 * math.log2(6) + math.log2(3)) + math.log2(9)
    )
    assert bits({"level": LEVEL["symmetry"], "size": 5, "n_colours": 4}) == pytest.approx(15 * math.log2(3))
    assert bits({"level": LEVEL["symmetry?"], "size": 5, "n_colours": 4}) == pytest.approx(
        15 * math.log2(3) + 1
    )
    assert bits({"level": LEVEL["count?"], "size": 3, "n_colours": 4}) == pytest.approx(18 + math.log2(9))
    # 3 x 3 fill: both outlines are the grid's border, the last one's colour shows; the centre is paint
    assert task.chance({"level": LEVEL["fill"], "size": 3, "n_colours": 4}) == pytest.approx(1 / 3, abs=0.02)
    assert task.chance({"level": LEVEL["fill?"], "size": 3, "n_colours": 4}) == pytest.approx(
        1 / 27,
        abs=0.01,  # the largest of 27 sampled frequencies: biased up
    )
    count = task.chance({"level": LEVEL["count"], "size": 3, "n_colours": 4})
    assert 0.1 < count < 0.5  # the most likely number of objects on a noisy 3 x 3 grid


def test_a_level_sweep_generates_only_its_families_and_the_same_puzzles():
    """A swept task computes only the object families of its levels (`max_levels`); each level's
    puzzles are those of the task that computes every family, and other levels are refused."""
    knobs = {"size": jnp.int32(4), "n_colours": jnp.int32(5)}
    fill, count = LEVEL["fill?"], LEVEL["count"]
    swept = tasks.build(
        {"name": "arc", "size": 4, "min_size": 2, "n_demos": 3, "n_colours": 5}, {"level": [3, fill]}
    )
    assert swept.max_levels == (3, fill) and swept.object_kinds == (ao.KINDS.index("fill"),)
    assert PUZZLES.max_levels == () and PUZZLES.object_kinds == (1, 2, 3)
    for level in (3, fill):
        key, lv = jax.random.key(level), {"level": jnp.int32(level), **knobs}
        ours, every = swept.draw(key, lv, 8), PUZZLES.draw(key, lv, 8)
        jax.tree.map(np.testing.assert_array_equal, ours, every)
    with pytest.raises(ValueError, match=f"level {count} is outside this task's max_levels"):
        swept.draw(jax.random.key(0), {"level": jnp.int32(count), **knobs}, 8)
    with pytest.raises(ValueError, match="outside this task's max_levels"):
        swept.chance({"level": count, "size": 3, "n_colours": 4})

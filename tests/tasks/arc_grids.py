"""ARC grids as the tests read them back, shared by test_arc, test_arc_objects and test_arc_shapes:
a canvas without its padding, one demo slot parsed into its grid, and one puzzle generator with
its jitted draw (one compile for every level)."""

import jax
import numpy as np

from jaxcap import tasks
from jaxcap.tasks.arc import grids as ag


def unpad(canvas):
    return [[v for v in row if v != ag.PAD] for row in np.asarray(canvas).tolist() if row[0] != ag.PAD]


def parse_slot(tokens, g):
    """One G x (G + 1) slot -> its grid: the rows that end in ROW, without PAD cells."""
    rows = [tokens[r * (g + 1) : (r + 1) * (g + 1)] for r in range(g)]
    return [[v for v in row[:g] if v != ag.PAD] for row in rows if row[g] == ag.ROW]


PUZZLES = tasks.build({"name": "arc", "size": 4, "min_size": 2, "n_demos": 3, "n_colours": 5})
DRAW = jax.jit(lambda key, knobs: PUZZLES.draw(key, knobs, 40))  # one compile for every level

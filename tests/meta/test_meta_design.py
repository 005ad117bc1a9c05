"""The data design: a spanning grid over the candidates' covariate range, flips where success
crosses 1/2, bisection inside the widest flip, and levels tagged grid / boundary."""

import numpy as np

from jaxcap.meta import data as meta_data
from jaxcap.meta import design as meta_design
from jaxcap.meta import simulate as meta_simulate


def test_spanning_grid_takes_the_ends_and_spreads_in_log_bits():
    bits = list(np.geomspace(1, 1000, 31))
    chosen = meta_design.spanning_grid(bits, 4)
    assert chosen == [0, 10, 20, 30]
    assert meta_design.spanning_grid([5.0, 1.0, 3.0], 5) == [0, 1, 2]  # fewer candidates: all of them


def test_bisection_adds_the_middle_of_the_widest_flip():
    cand = [1, 2, 4, 8, 16, 32, 64, 128]
    rates = {1: 1.0, 16: 1.0, 128: 0.0}  # the flip lies between 16 and 128
    assert meta_design.flips(list(rates), list(rates.values())) == [(16, 128)]
    assert meta_design.next_levels(cand, rates, 1) == [5]  # 32 <= sqrt(16 x 128) = 45 < 64
    rates2 = {1: 1.0, 4: 0.0, 16: 1.0, 128: 0.0}  # not monotone: three flips, widest first
    assert meta_design.next_levels(cand, rates2, 2) == [1, 5]
    assert meta_design.next_levels(cand, {1: 1.0, 128: 1.0}, 2) == []  # no flip: nothing to add


def test_levels_are_tagged_by_the_pass_that_trained_them():
    rows, _ = meta_simulate.simulate_rows(
        meta_simulate.default_truth(n_levels=3), 2, np.random.default_rng(0)
    )
    for r in rows:
        r.extra["source"] = "boundary1" if r.complexity_bits == rows[0].complexity_bits else "grid"
    table = meta_data.build_table(rows)
    meta_design.tag_levels(table, {"boundary1"})
    assert [lv["design"] for lv in table.levels].count("boundary") == 1 and table.levels[0][
        "design"
    ] == "boundary"
    rates = meta_design.level_rates(table, "sim0")
    assert len(rates) == 3 and all(0 <= v <= 1 for v in rates.values())

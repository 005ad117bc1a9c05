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
    assert [lv.design for lv in table.levels].count("boundary") == 1 and table.levels[0].design == "boundary"
    rates = meta_design.level_rates(table, "sim0")
    assert len(rates) == 3 and all(0 <= v <= 1 for v in rates.values())


def test_information_rounds_pick_inside_the_bracket_and_stop_when_nothing_is_left():
    from jaxcap.meta.pilot.boundary import flat_particles, information_levels

    x = np.log(np.geomspace(4.0, 4096.0, 21))  # 21 candidates, a factor ~1.41 apart
    # learned (4/4) at candidates 0 and 5, failed (0/4) at 10 and 20: b* lies between 5 and 10
    trained = {0: (4, 4), 5: (4, 4), 10: (4, 0), 20: (4, 0)}
    picked = information_levels(x, trained, 2, 4, seed=0)
    assert len(picked) == 2 and all(5 < i < 10 for i in picked), picked
    assert picked == information_levels(x, trained, 2, 4, seed=0)  # a resumed round picks the same
    # a flip already pinned to neighbouring candidates leaves nothing worth a run
    tight = {i: (4, 4) if i <= 7 else (4, 0) for i in range(21) if i not in (3, 14)}
    assert information_levels(x, tight, 2, 4) == []
    assert information_levels(x, {i: (4, 2) for i in range(21)}, 1, 4) == []  # every level trained
    p = flat_particles(x, n=2000, seed=1)
    log_b = p.log_boundary
    assert log_b.min() >= x.min() - np.log(2.0) - 1e-9 and log_b.max() <= x.max() + np.log(2.0) + 1e-9
    assert (p.kappa > 0).all() and ((p.rho > 0) & (p.rho < 1)).all() and (p.sigma >= 0).all()


def test_design_rule_is_checked():
    import pytest
    from helpers import ROOT

    from jaxcap.config.base import checked_plan, load_config
    from jaxcap.fields import ConfigError

    config = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    config.calibrate.design.rule = "bisect"
    with pytest.raises(ConfigError, match=r"config\.calibrate\.design\.rule.*bisection, information"):
        checked_plan(config)

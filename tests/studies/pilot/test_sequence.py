"""The running pilot fit equals a fit on every pilot at once, and each rule picks what a hand
example says (the grid, calibrate's bisection round, the bisection pilot, the design)."""

import numpy as np
import pytest

from jaxcap.meta.pilot import fit as pilot_fit
from studies.pilot import sequence
from studies.pilot.world import synthetic_posterior


@pytest.fixture(scope="module")
def particles():
    return pilot_fit.prior_particles(synthetic_posterior(300, seed=1), arch=0, seed=0, repeat=2)


def test_running_fit_equals_fit_family_on_all_pilots(particles):
    log = sequence.PilotLog(particles)
    prior = log.fit()
    assert prior.pilots == 0 and prior.ess == pytest.approx(len(particles.log_c))
    pilots = [(3, np.log(300.0), 4, 4), (7, np.log(3000.0), 2, 1), (1, np.log(30000.0), 1, 0)]
    for level, b, n, k in pilots:
        log.add(level, b, n, k)
    got = log.fit()
    want = pilot_fit.fit_family(particles, *[[p[i] for p in pilots] for i in (1, 2, 3)])
    np.testing.assert_allclose(got.log_w, want.log_w, atol=1e-9)
    assert (got.pilots, got.runs) == (want.pilots, want.runs) == (3, 7)
    assert log.rates() == {3: 1.0, 7: 0.5, 1: 0.0}
    with pytest.raises(ValueError, match="already piloted"):
        log.add(7, np.log(3000.0), 2, 2)


def test_thinned_fit_has_equal_weights_drawn_where_the_weight_is(particles):
    log = sequence.PilotLog(particles)
    log.add(0, np.log(3000.0), 4, 4)
    fit = log.fit()
    thin = sequence.thinned(fit, 100, seed=0)
    assert len(thin.log_w) == 100 and np.allclose(thin.weights, 0.01)
    # the thinned median of b* is the weighted one (systematic resampling keeps quantiles)
    assert np.log(thin.boundary_interval()[1]) == pytest.approx(np.log(fit.boundary_interval()[1]), abs=0.3)
    assert sequence.thinned(fit, None, 0) is fit


def _log_with(particles, cands, rates):
    log = sequence.PilotLog(particles)
    for i, r in rates.items():
        log.add(i, cands[i], 4, int(4 * r))
    return log


def test_bisection_grid_trains_the_spanning_grid_then_bisects_the_flip(particles):
    cands = np.linspace(0.0, 11.0, 12)  # log bits 0 .. 11
    rule = sequence.make_rule("bisection_grid")
    log = sequence.PilotLog(particles)
    grid = rule(log.fit(), log, cands, 0)
    assert grid == [(0, 4), (4, 4), (7, 4), (11, 4)]  # nearest to 0, 3.67, 7.33, 11
    log = _log_with(particles, cands, {0: 1.0, 4: 1.0, 7: 1.0, 11: 0.0})
    assert rule(log.fit(), log, cands, 1) == [(9, 4)]  # the middle of the flip 7 .. 11
    log = _log_with(particles, cands, {0: 1.0, 4: 1.0, 7: 1.0, 8: 0.0, 11: 0.0})
    assert rule(log.fit(), log, cands, 2) == []  # no untried level inside the flip 7 .. 8


def test_bisection_pilot_rule_and_its_end(particles):
    cands = np.log([1, 2, 4, 8, 16, 32, 64, 128, 256])
    rule = sequence.make_rule("bisection")
    assert rule(None, sequence.PilotLog(particles), cands, 0) == [(4, 4)]
    log = _log_with(particles, cands, {4: 1.0, 6: 0.0})
    assert rule(log.fit(), log, cands, 2) == [(5, 4)]
    log = _log_with(particles, cands, {4: 1.0, 5: 0.0})
    assert rule(log.fit(), log, cands, 2) == []


def test_design_picks_an_untried_level_near_the_boundary_after_the_grid(particles):
    cands = np.linspace(4.0, 12.0, 9)
    rule = sequence.make_rule("design_after_grid", design_particles=300, seed=0)
    log = sequence.PilotLog(particles)
    assert [i for i, _ in rule(log.fit(), log, cands, 0)] == [0, 3, 5, 8]
    log = _log_with(particles, cands, {0: 1.0, 3: 1.0, 5: 0.0, 8: 0.0})
    ((i, seeds),) = rule(log.fit(), log, cands, 1)
    assert i == 4 and seeds in sequence.SEED_OPTIONS  # the only level between the flip
    four = sequence.make_rule("design4", design_particles=300, seed=0)
    assert four(log.fit(), log, cands, 1) == [(4, sequence.LEVEL_SEEDS)]
    with pytest.raises(ValueError, match="allowed: design"):
        sequence.make_rule("quest")

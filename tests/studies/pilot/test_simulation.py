"""Runs to a boundary on simulated families: the worlds are drawn as the model says, the
simulation is deterministic in its seed, and the pilot fit's intervals hold the truth about as
often as they claim (simulation-based calibration)."""

import numpy as np
import pytest

from jaxcap.meta.pilot import fit as pilot_fit
from studies.pilot import simulate, simulation, world


@pytest.fixture(scope="module")
def small():
    """Five families, every rule, a small budget."""
    post = world.synthetic_posterior(1000, seed=3)
    run = dict(families=5, seed=0, repeat=1, levels=12, targets=(4.0, 3.0), cap=16, design_particles=200)
    return post, run, simulation.simulate(post, **run)


def test_simulated_levels_follow_the_true_curve():
    post = world.synthetic_posterior(500, seed=0)
    parts = pilot_fit.prior_particles(post, 0, seed=0, repeat=1)
    cands = world.candidate_levels(parts, 24)
    lo, hi = pilot_fit.weighted_quantile(parts.log_boundary, np.ones(500), [0.005, 0.995])
    assert cands[0] == pytest.approx(lo) and cands[-1] == pytest.approx(hi) and len(cands) == 24
    narrow = world.candidate_levels(parts, 8, mass=0.9)
    q = pilot_fit.weighted_quantile(parts.log_boundary, np.ones(500), [0.05, 0.95])
    np.testing.assert_allclose(narrow[[0, -1]], q)
    fams = world.simulate_families(parts, 60, cands, seed=1)
    again = world.simulate_families(parts, 60, cands, seed=1)
    assert all(np.array_equal(a.outcomes, b.outcomes) for a, b in zip(fams, again))
    assert len({f.log_boundary for f in fams}) == 60  # distinct true families
    # far below b* (3 level spreads and 4 slopes' worth) nearly every seed learns, far above none
    below, above = [], []
    for f in fams:
        t = f.truth
        margin = 3 * t.sigma[0] + 4 / t.kappa[0]
        below += list(f.outcomes[cands < f.log_boundary - margin].ravel())
        above += list(f.outcomes[cands > f.log_boundary + margin].ravel())
    assert np.mean(below) > 0.95 and np.mean(above) < 0.05
    with pytest.raises(ValueError, match="families: got 501"):
        world.simulate_families(parts, 501, cands, seed=1)


def test_simulation_runs_is_deterministic_and_the_design_brackets_the_truth(small):
    post, run, result = small
    fams = result["families"]
    assert set(fams) == set(simulation.SIM_RULES) and all(len(v) == 5 for v in fams.values())
    again = simulation.simulate(post, **{**run, "families": 5}, rules=("design",))
    assert again["families"]["design"] == fams["design"]
    other = simulation.simulate(post, **{**run, "seed": 1}, rules=("design",))
    assert other["families"]["design"] != fams["design"]
    for rec in fams["bisection_grid"]:  # the grid pass first: 4 levels x 4 seeds
        assert rec["trajectory"][1][0] == 16
    covered = [lo <= r["true_boundary"] <= hi for r in fams["design"] for _, lo, hi in [r["trajectory"][-1]]]
    assert sum(covered) >= 3, covered  # 90 % intervals: most of 5
    for rec in fams["design"]:  # each pass narrows nothing it should not: the prior is widest
        factors = [hi / lo for _, lo, hi in rec["trajectory"]]
        assert factors[-1] < factors[0]


def test_summary_censors_at_the_cap_and_compares_with_the_grid():
    def rec(traj, truth=10.0, stop="cap"):
        return {"true_boundary": truth, "trajectory": traj, "stop": stop}

    design = [rec([[0, 1, 100], [4, 5, 12], [6, 11, 16]]), rec([[0, 1, 100], [30, 2, 20]])]
    grid = [
        rec([[0, 1, 100], [16, 6, 15], [20, 9, 12]], stop="nothing_left"),
        rec([[0, 1, 100], [16, 1, 50]]),
    ]
    out = simulation.summarize({"design": design, "bisection_grid": grid}, (3.0, 2.0), cap=40)
    assert out["stops"] == {"design": {"cap": 2}, "bisection_grid": {"cap": 1, "nothing_left": 1}}
    t3 = out["targets"]["3.0"]
    assert t3["design"] == {
        "reached": 0.5, "median_runs": 22.0, "mean_runs": 22.0, "coverage": 1.0,
        "ratio_median": 22.0 / 28.0, "ratio_mean": 22.0 / 28.0,
    }  # fmt: skip
    assert t3["bisection_grid"]["median_runs"] == 28.0  # 16 and the censored 40
    assert out["targets"]["2.0"]["design"]["coverage"] == 0.0  # [11, 16] misses b* = 10
    equal = out["equal_runs"]
    assert equal["design"]["median_runs"] == 18.0  # the grid stopped at 20 and 16 runs
    assert equal["design"]["median_factor"] == pytest.approx(np.median([16 / 11, 100.0]))


@pytest.mark.slow  # 40 families x 3 design pilots on 8,000 particles
def test_pilot_fit_intervals_of_log_theta_hold_the_truth():
    """Simulation-based calibration (Talts et al. 2018): families drawn from the prior, 3 design
    pilots each; the 90 % interval of log θ_f holds the true one in >= 85 % of 40 families."""
    post = world.synthetic_posterior(2000, seed=3)
    parts = pilot_fit.prior_particles(post, 0, seed=0, repeat=4)
    cands = world.candidate_levels(parts, 24)
    fams = world.simulate_families(pilot_fit.prior_particles(post, 0, seed=1, repeat=1), 40, cands, seed=2)
    covered = []
    for j, fam in enumerate(fams):
        rec, log = simulation.run_rule(fam, parts, "design", 1.0, 10**6, 3, 300, seed=j)
        assert rec["levels"] == 3 and rec["stop"] == "cap"
        lo, hi = pilot_fit.weighted_quantile(parts.log_theta, log.fit().weights, [0.05, 0.95])
        covered.append(lo <= fam.truth.log_theta[0] <= hi)
    assert np.mean(covered) >= 0.85, np.mean(covered)


def test_command_prints_the_tables_and_refuses_bad_flags(capsys, tmp_path):
    argv = ["--families", "2", "--cap", "8", "--levels", "6", "--design_particles", "50", "--targets", "3"]
    assert simulate.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 3.0 | design |" in out and "At equal runs" in out
    assert simulate.main(["--targets", "1"]) == 2
    assert "--targets" in capsys.readouterr().err
    assert simulate.main(["--posterior", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no posterior.nc" in err[0]

"""Leave one family out with k pilots: pools, the empirical boundary, the pilots-only logistic,
the scoring of a held-out family (pilots never score their own levels; k = 0 is the population
prediction), the tables over runs, and the command's refusals; one slow end-to-end NUTS run."""

import dataclasses
import json

import numpy as np
import pytest

from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import logistic_baselines as meta_baselines
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta.model import success_probability
from studies.pilot import holdout, lofo, score, score_tables
from studies.pilot.world import synthetic_posterior


def _table(n_families=5, seed=0):
    """One architecture, `n_families` families of 6 levels x 4 correlated seeds."""
    truth = meta_simulate.default_truth(n_levels=6, n_families=n_families)
    truth = dataclasses.replace(truth, log_c=truth.log_c[:1], rho=0.3)
    rows, _ = meta_simulate.simulate_rows(truth, 4, np.random.default_rng(seed))
    return meta_data.build_table(rows)


@pytest.fixture(scope="module")
def table():
    return _table()


def _posterior(table):
    """A stand-in for a fold's posterior: the population on the table's own scale (log C of
    the simulated architecture, families' log θ around the truth's)."""
    post = synthetic_posterior(2000, seed=0)
    post.draws["log_C"] = post.draws["log_C"] - 8.0 + np.log(8.0)
    post.draws["mu_log_C"] = post.draws["mu_log_C"] - 8.0 + np.log(8.0)
    post.draws["sigma_log_theta"] = np.full(2000, 1.0)
    return post


def test_pool_is_the_familys_levels_with_seeds_in_order(table):
    pool = holdout.family_pool(table, 2)
    assert len(pool.levels) == 6 and all(table.levels[lv].family == 2 for lv in pool.levels)
    for lv, out in zip(pool.levels, pool.outcomes):
        runs = sorted((r for r in table.rows if r.level == lv), key=lambda r: r.seed)
        assert out.tolist() == [r.success for r in runs] and len(out) == 4
    np.testing.assert_allclose(np.exp(pool.log_bits), [table.levels[lv].bits for lv in pool.levels])


def test_empirical_boundary_is_the_log_middle_of_the_bracket():
    outcomes = [np.array(o, bool) for o in ([1, 1], [1, 1], [1, 0], [1, 0, 0, 0], [0, 0])]
    pool = holdout.Pool([0, 1, 2, 3, 4], np.log([1.0, 2.0, 4.0, 8.0, 16.0]), outcomes)
    assert holdout.empirical_boundary(pool) == pytest.approx(np.sqrt(32.0))  # 4 learned, 8 not
    learned = holdout.Pool([0, 1], np.log([1.0, 2.0]), [np.ones(2, bool)] * 2)
    assert holdout.empirical_boundary(learned) is None


def test_pilot_logistic_falls_back_to_a_smoothed_rate():
    q = np.log([2.0, 8.0])
    assert np.all(holdout.pilot_logistic(np.zeros(0), np.zeros(0), 0.3, q) == 0.3)
    one_class = holdout.pilot_logistic(np.log([4.0] * 3), np.ones(3), 0.2, q)
    np.testing.assert_allclose(one_class, (3 + holdout.SMOOTHING_RUNS * 0.2) / (3 + 4))
    x, y = np.log([2.0, 2.0, 4.0, 4.0, 8.0, 8.0]), np.array([1, 1, 1, 0, 0, 0], float)
    got = holdout.pilot_logistic(x, y, 0.5, x)
    z = (x - x.mean()) / x.std()
    w = meta_baselines.fit_logistic(np.column_stack([np.ones(6), z]), y)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-(w[0] + w[1] * z))))
    assert got[0] > got[2] > got[4]


def test_pilots_never_score_their_own_levels(table):
    pool = holdout.family_pool(table, 1)
    out = holdout.score_family(pool, _posterior(table), 0.4, k=3, seed=0, repeat=1)
    design = out["pilots"]["design"]
    assert len(design) == 3 and len({p["level"] for p in design}) == 3
    assert all(p["seeds"] in (1, 2, 4) for p in design)
    assert all(p["seeds"] == 4 for r in ("design4", "bisection") for p in out["pilots"][r])
    for rule in holdout.PILOTS:
        piloted = []
        for j in range(4):
            at = out["k"][str(j)]
            rest = [i for i, lv in enumerate(pool.levels) if lv not in piloted]
            _, y = pool.runs(rest)
            # every seed of a piloted level is out, even the seeds a 1- or 2-seed pilot left unseen
            assert at["remaining_runs"][rule] == len(y) == 4 * len(rest)
            assert at["brier"][f"base_rate+{rule}"] == pytest.approx(np.mean((0.4 - y) ** 2))
            assert at["pilots"][rule] == len(piloted)
            if j < len(out["pilots"][rule]):
                piloted.append(out["pilots"][rule][j]["level"])
    for j in range(4):  # the runs no rule piloted: both rules' base rates score the same runs
        at = out["k"][str(j)]
        either = {p["level"] for r in holdout.PILOTS for p in out["pilots"][r][: at["pilots"][r]]}
        _, y = pool.runs([i for i, lv in enumerate(pool.levels) if lv not in either])
        assert at["common_runs"] == len(y)
        assert at["common"]["base_rate+design"] == at["common"]["base_rate+bisection"]
    # the pilots' outcomes are the pool's first seeds
    for p in design:
        i = pool.levels.index(p["level"])
        assert p["successes"] == int(pool.outcomes[i][: p["seeds"]].sum())


def test_no_pilot_is_the_population_prediction(table):
    post = _posterior(table)
    pool = holdout.family_pool(table, 3)
    out = holdout.score_family(pool, post, 0.4, k=0, seed=0, repeat=4)
    p = success_probability(post.draws, pool.log_bits, np.random.default_rng(1), arch=0, marginal=True)
    x, y = pool.runs(list(range(len(pool.levels))))
    want = np.mean((np.repeat(p.mean(axis=0), 4) - y) ** 2)
    assert out["k"]["0"]["brier"]["meta_model+design"] == pytest.approx(want, abs=0.01)
    assert out["k"]["0"]["brier"]["meta_model+bisection"] == out["k"]["0"]["brier"]["meta_model+design"]


def _fake_result(shift):
    fam = {
        "reference": "sim0",
        "diagnostics": {"divergences": 0, "transitions": 8, "max_rhat": 1.0, "min_ess": 9},
    }
    at = {
        "brier": {m: 0.1 + shift for m in holdout.METHODS},
        "common": {m: 0.2 + shift for m in holdout.METHODS},
        "boundary": {r: {"factor": 3.0, "covered": r == "design"} for r in holdout.PILOTS},
        "pilots": {r: 1 for r in holdout.PILOTS},
        "pilot_runs": {r: 4 for r in holdout.PILOTS},
        "common_runs": 8,
    }
    return {
        "families": {"a": {**fam, "k": {"0": at}}},
        "mean": {"0": at["brier"]},
        "mean_common": {"0": at["common"]},
    }


def brier_common(results):
    return score_tables.brier_table(results, "common")["0"]["meta_model+bisection"]["mean"]["mean"]


def test_tables_over_runs_give_mean_min_max():
    results = [_fake_result(0.0), _fake_result(0.2)]
    brier = score_tables.brier_table(results)
    cell = brier["0"]["meta_model+design"]["mean"]
    assert cell == {"mean": pytest.approx(0.2), "min": 0.1, "max": pytest.approx(0.3), "runs": 2}
    bound = score_tables.boundary_table(results)["0"]
    assert bound["design"]["covered"] == 2 and bound["bisection"]["covered"] == 0
    assert bound["design"]["bracketed"] == 2
    text = "\n".join(score_tables.markdown(results, ["s0", "s1"]))
    assert brier_common(results) == pytest.approx(0.3)
    assert (
        "0.200 [0.100, 0.300]" in text
        and "0.300 [0.200, 0.400]" in text
        and "| 0 | design | 1.0 | 4.0 | 2 / 2 | 3.0 |" in text
    )
    assert "| runs scored (all families) | 8 |" in text


def test_a_damaged_or_stale_cache_is_not_read(table, tmp_path):
    stamp = lofo._stamp(table, lofo.PRIOR_NUTS, "")
    draws = {"rho": np.zeros((1, 2, 5))}
    lofo._write_cache(tmp_path / "c.npz", draws, np.zeros((1, 2, 5), bool), {"stamp": stamp})
    got = lofo._read_cache(tmp_path / "c.npz", stamp)
    assert got is not None and np.array_equal(got[0]["rho"], draws["rho"])
    assert lofo._read_cache(tmp_path / "c.npz", {**stamp, "reference": "x"}) is None
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    assert lofo._read_cache(tmp_path / "bad.npz", stamp) is None
    assert lofo._read_cache(tmp_path / "none.npz", stamp) is None


def test_command_refuses_before_fitting(tmp_path, capsys):
    assert score.main([str(tmp_path)]) == 2
    assert "no table.json" in capsys.readouterr().err
    meta_data.save_table(_table(n_families=4), tmp_path / "table.json")
    assert score.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "families: the table has 4; allowed: >= 5" in err[0]
    assert score.main([]) == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:  # a usage error: exit status 2, one line on stderr
        score.main([str(tmp_path), "--repeats", "2"])
    assert info.value.code == 2
    assert "--repeats: unknown flag; did you mean --repeat" in capsys.readouterr().err


@pytest.mark.slow  # one compiled NUTS program for the 5 folds
def test_command_fits_once_then_reads_the_cache(tmp_path, capsys):
    meta_data.save_table(_table(), tmp_path / "table.json")
    argv = [str(tmp_path), "--k", "2", "--warmup", "30", "--samples", "30", "--chains", "1", "--repeat", "1"]
    assert score.main([*argv, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["runs"][0]
    assert not first["cached"] and (tmp_path / holdout.CACHE).exists()
    assert set(first["families"]) == {f"sim{f}" for f in range(5)}
    assert json.loads((tmp_path / holdout.OUTPUT).read_text())["families"] == first["families"]
    assert score.main(argv) == 0  # markdown, from the cache
    assert "| 2 | meta_model+design |" in capsys.readouterr().out
    second = json.loads((tmp_path / holdout.OUTPUT).read_text())
    assert second["cached"] and second["families"] == first["families"]
    # another NUTS setting is another fit: the cache is not reused for it
    table, cache = meta_data.read_table(tmp_path / "table.json"), tmp_path / holdout.CACHE
    nuts = meta_fit.NutsSettings(warmup=30, samples=30, chains=1)
    assert lofo._read_cache(cache, lofo._stamp(table, nuts, "random_labels")) is not None
    other = dataclasses.replace(nuts, seed=1)
    assert lofo._read_cache(cache, lofo._stamp(table, other, "random_labels")) is None

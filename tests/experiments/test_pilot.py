"""configs/pilot.py:smoke through the real entry point: a tiny calibration, then pilot rounds of a
new family, a posterior with it appended that predict answers from; a run killed after its first
round resumes to the same choices as an uninterrupted one; bad family specs are one line before
anything trains; the appended draws follow the family's weights and the pilots' outcomes."""

import json

import numpy as np
import pytest
from helpers import KILL_AFTER_ROUND_1, ROOT, launch, pilot_choices

from jaxcap.config.base import checked_plan, load_config
from jaxcap.experiments.pilot.posterior_out import append_family, level_effects, take
from jaxcap.fields import ConfigError
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.model import ARCH_COVARIATES
from jaxcap.meta.pilot.fit import fit_family, prior_particles
from jaxcap.meta.records import LevelInfo, PosteriorMeta

SMOKE = ["--config", "configs/pilot.py:smoke"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The smoke launched once: (workdir, its launch)."""
    workdir = tmp_path_factory.mktemp("pilot_smoke")
    return workdir, launch(*SMOKE, "--workdir", workdir)


@pytest.mark.slow
def test_smoke_end_to_end(smoke):
    workdir, out = smoke
    for name in (
        "base/posterior.nc",
        "pilot.jsonl",
        "posterior.nc",
        "report/pilot.md",
        "pilots/round1/members.jsonl",
    ):
        assert (workdir / name).exists(), name
    rounds = [json.loads(line) for line in (workdir / "pilot.jsonl").read_text().splitlines()]
    assert 1 <= len(rounds) <= 2 and [r["round"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert len({r["level"] for r in rounds}) == len(rounds)  # a level is never piloted twice
    assert all(r["seeds"] in (1, 2) and r["trials"] == r["seeds"] for r in rounds)
    assert all(
        r["level"] in r["untried"] and len(r["gains"][str(r["seeds"])]) == len(r["untried"]) for r in rounds
    )
    base = meta_posterior.load_posterior(workdir / "base")
    post = meta_posterior.load_posterior(workdir)
    assert post.meta.families == [*base.meta.families, "parity"]
    pilot = post.meta.pilot
    assert pilot.pilots == len(rounds) and pilot.runs == sum(r["trials"] for r in rounds)
    f = len(base.meta.families)
    mine = [lv for lv in post.meta.levels if lv.family == f]
    assert sorted(lv.fields["k"] for lv in mine) == sorted(r["value"] for r in rounds)
    assert post.meta.family_info[f].field == "k"
    n = base.draws["mu_log_C"].shape[0]
    assert post.draws["log_theta"].shape == (n, f + 1)
    assert post.draws["level_effect"].shape == (n, len(base.meta.levels) + len(rounds))
    report = (workdir / "report" / "pilot.md").read_text()
    assert "## Rounds" in report and report.count("| k=") == len(rounds) + 6  # rounds, then every candidate
    assert f"rests on {len(rounds)} pilot levels" in out.stdout


@pytest.mark.slow
def test_arviz_reads_the_pilot_posterior_like_the_base(smoke):
    """posterior.nc of the pilot: the base's chains and draws, az.summary's R-hat finite, and the
    observed and replicated success counts of every cell (the pilot levels' included) that
    az.plot_ppc draws; report/pilot.png beside pilot.md, which links it."""
    az = pytest.importorskip("arviz")
    workdir, _ = smoke
    base, post = az.from_netcdf(workdir / "base" / "posterior.nc"), az.from_netcdf(workdir / "posterior.nc")
    sizes = lambda idata: {d: dict(idata["posterior"].sizes)[d] for d in ("chain", "draw")}  # noqa: E731
    assert sizes(post) == sizes(base) and sizes(post)["chain"] >= 2
    summary = az.summary(post, var_names=["log_C", "kappa", "mu_log_C"], kind="diagnostics")
    assert np.isfinite(np.asarray(summary["r_hat"], float)).all(), summary
    f = len(meta_posterior.load_posterior(workdir / "base").meta.families)
    family = post["observed_data"]["cell_family_label"].values
    rounds = pilot_choices(workdir)
    mine = post["observed_data"]["successes"].values[family == "parity"]
    assert sorted(mine.tolist()) == sorted(r[5] for r in rounds) and f == len(set(family)) - 1
    replicated = post["posterior_predictive"]["successes"].values
    assert replicated.shape == (*sizes(post).values(), len(family))
    if hasattr(az, "plot_ppc"):  # ArviZ 0.23
        assert az.plot_ppc(post, var_names=["successes"], num_pp_samples=20, random_seed=0) is not None
    else:  # ArviZ 1.x (arviz-plots)
        assert az.plot_ppc_dist(post, var_names=["successes"]) is not None
    assert "![pilot](pilot.png)" in (workdir / "report" / "pilot.md").read_text()
    assert (workdir / "report" / "pilot.png").stat().st_size > 10_000


@pytest.mark.slow
def test_predict_answers_for_the_pilot_family(smoke):
    workdir, _ = smoke
    tried = pilot_choices(workdir)[0][2]

    def predict(*args):
        return launch("--posterior", workdir, *args, module="jaxcap.predict", timeout=300)

    text = predict("--task", "parity", "--level", str(tried), "6").stdout
    assert "task parity (in the fit)" in text and "pilot levels" in text and "runs (base fit: " in text
    (result,) = json.loads(predict("--task", "parity", "--level", str(tried), "6", "--json").stdout)
    pilot = result["pilot"]
    assert pilot["pilots"] == len(pilot_choices(workdir)) and pilot["runs"] >= pilot["pilots"]
    assert [p["seen_level"] for p in result["points"]] == [True, tried == 6]
    assert all(0 <= p["p"] <= 1 for p in result["points"]) and "parity" in result["boundaries"]
    (other,) = json.loads(predict("--task", "modulo", "--level", "5", "--json").stdout)
    assert other["pilot"] is None  # a calibrated family rests on the calibration


@pytest.mark.slow
def test_killed_after_a_round_resumes_to_the_same_choices(smoke, tmp_path):
    workdir = tmp_path / "w"
    killed = launch(*SMOKE, "--workdir", workdir, killer_code=KILL_AFTER_ROUND_1, check=False)
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert len(pilot_choices(workdir)) == 1
    resumed = launch(*SMOKE, "--workdir", workdir)
    assert "pilot round 1: trains" not in resumed.stdout  # the recorded round is not redone
    assert pilot_choices(workdir) == pilot_choices(smoke[0])
    again = launch(*SMOKE, "--workdir", workdir)
    assert "== pilot pass" not in again.stdout and pilot_choices(workdir) == pilot_choices(smoke[0])


@pytest.mark.parametrize(
    "override,message",
    [
        ("--config.pilot.family.task.name=nope", "config.pilot.family.task.name: got 'nope'; allowed:"),
        (
            "--config.pilot.family.levels.k=(1,2,9)",
            "config.pilot.family.levels.k[2]: 9: config.task.k: got 9",
        ),
        (
            "--config.pilot.posterior=/nonexistent",
            "config.pilot.posterior: got '/nonexistent', which holds no",
        ),
        ("--config.pilot.k=0", "config.pilot.k: got 0; allowed: in [1, 100]"),
        ("--config.pilot.seeds=()", "config.pilot.seeds: got (); allowed: one or more seed counts"),
        ("--config.pilot.arch=a3", "config.pilot.arch: got 'a3'; allowed: a0"),
        ("--config.pilot.name=modulo", "config.pilot.name: got 'modulo', which the posterior already fits"),
        ("--config.pilot.name=parity:x", "config.pilot.name: got 'parity:x'; allowed: 'parity'"),
    ],
)
def test_bad_pilot_spec_is_one_line_before_training(tmp_path, fork_server, override, message):
    out = fork_server.launch(*SMOKE, override, "--workdir", tmp_path / "w", check=False)
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert out.returncode != 0 and len(lines) == 1 and message in lines[0], out.stderr
    assert not (tmp_path / "w" / "base").exists() and not (tmp_path / "w" / "pilots").exists()


@pytest.mark.parametrize(
    "family,name,message",
    [
        (
            dict(task=dict(name="parity", n=8), levels=dict(j=(1, 2))),
            "parity",
            "config.pilot.family.levels.j: not a field",
        ),
        (
            dict(task=dict(name="parity", m=8), levels=dict(k=(1, 2))),
            "parity",
            "config.pilot.family.task.m: not a field",
        ),
        (
            dict(task=dict(name="modulo", base=10, digits=3), levels=dict(modulus=(2, 5))),
            "modulo",
            "config.pilot.name: got 'modulo', which the posterior already fits",
        ),
    ],
)
def test_bad_family_entries_are_one_line(family, name, message):
    config = load_config(f"{ROOT / 'configs' / 'pilot.py'}:smoke")  # no posterior needed to refuse these
    config.pilot.family = {**family, "overrides": ""}
    config.pilot.name = name
    with pytest.raises(ConfigError) as e:
        checked_plan(config)
    assert message in str(e.value) and "\n" not in str(e.value)


def tiny_posterior(n: int = 400) -> meta_posterior.Posterior:
    """A hand-made calibrated posterior: one architecture, one family with one level."""
    rng = np.random.default_rng(0)
    one = lambda loc, scale: rng.normal(loc, scale, (n, 1))  # noqa: E731
    draws = {
        "mu_log_C": rng.normal(5, 0.1, n),
        "sigma_log_C": np.full(n, 0.3),
        "beta": np.tile([1.0, 0, 0, 0], (n, 1)),
        "mu_log_theta": rng.normal(1, 0.3, n),
        "sigma_log_theta": np.full(n, 1.0),
        "mu_log_kappa": np.full(n, np.log(4.0)),
        "sigma_log_kappa": np.full(n, 0.3),
        "sigma_level": np.full((n, 1), 0.5),
        "log_C": one(5, 0.1),
        "log_theta": np.zeros((n, 1)),
        "kappa": np.full((n, 1), 4.0),
        "level_effect": one(0, 0.5),
        "rho": rng.uniform(0.1, 0.3, n),
    }
    meta = {
        "archs": [{"d_model": 16}],
        "arch_labels": ["a0: 1L d16"],
        "arch_covariates": list(ARCH_COVARIATES),
        "families": ["random_labels"],
        "family_info": [{"field": "dataset_size"}],
        "levels": [{"family": 0, "label": "dataset_size=8", "bits": 16.0, "fields": {"dataset_size": 8}}],
        "reference": 0,
    }
    return meta_posterior.Posterior(draws, PosteriorMeta.from_json(meta))


def test_appended_draws_follow_the_weights_and_the_pilot_outcomes(tmp_path):
    base = tiny_posterior()
    particles = prior_particles(base, 0, seed=0)
    log_bits = np.log([10.0, 200.0])  # both failed: b* is well below the prior's (~55 bits)
    fit = fit_family(particles, log_bits, [2, 2], [0, 0])
    levels = [LevelInfo(0, bits=b, fields={"k": k}, label=f"k={k}") for k, b in ((1, 10.0), (3, 200.0))]
    record = {"family": "parity", "pilots": fit.pilots, "runs": fit.runs}
    out = append_family(base, fit, "parity", {"field": "k"}, levels, [(2, 0), (2, 0)], record, seed=0)
    n = base.draws["mu_log_C"].shape[0]
    assert out.draws["log_theta"].shape == (n, 2) and out.draws["level_effect"].shape == (n, 3)
    assert out.meta.families == ["random_labels", "parity"] and base.meta.families == ["random_labels"]
    assert [lv.family for lv in out.meta.levels] == [0, 1, 1] and out.meta.pilot.to_json() == record
    # every calibrated site of a draw comes from one calibrated draw (the particle's)
    rows = {tuple(r) for r in np.stack([base.draws["mu_log_C"], base.draws["log_C"][:, 0]], 1)}
    assert {tuple(r) for r in np.stack([out.draws["mu_log_C"], out.draws["log_C"][:, 0]], 1)} <= rows
    # resampled by weight: the family's mean log θ is the weighted one, not the prior's
    weighted = np.average(particles.log_theta, weights=fit.weights)
    assert abs(out.draws["log_theta"][:, 1].mean() - weighted) < 0.1 * particles.log_theta.std()
    assert weighted - particles.log_theta.mean() > 0.2 * particles.log_theta.std()

    saved = meta_posterior.save_draws(tmp_path / "posterior.nc", out)
    back = meta_posterior.load_posterior(saved)
    assert back.meta == out.meta and all(np.array_equal(back.draws[k], v) for k, v in out.draws.items())


def test_a_level_effect_is_drawn_given_its_outcome():
    base = tiny_posterior()
    p = take(prior_particles(base, 0, seed=1), np.arange(1600))
    log_b = [float(np.median(p.log_boundary))]  # a level at the prior's b*
    learned = level_effects(p, log_b, [4], [4], np.random.default_rng(0))[:, 0]
    failed = level_effects(p, log_b, [4], [0], np.random.default_rng(0))[:, 0]
    # learned: the level was easier than its bits say (δ < 0); failed: harder (δ > 0)
    assert learned.mean() < -0.1 < 0.1 < failed.mean()
    no_runs = level_effects(p, log_b, [0], [0], np.random.default_rng(0))[:, 0]
    assert abs(no_runs.mean()) < 0.05  # nothing observed: the prior's mean

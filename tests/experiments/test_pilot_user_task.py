"""The pilot on a task from outside jaxcap (examples/sort_pilot.py:smoke: examples/sort_task.py's
SortTask by its path, on configs/calibrate.py:smoke's tiny fit): the appended family rebuilds the
task from its recorded path, a run killed after its first round resumes to the same choices,
`predict` takes the import path and names the covariate, the pilots and an extrapolation, and
`out_of_grid` scores the pilot's predictions on a separate run of every candidate level."""

import json
import re

import pytest
from helpers import KILL_AFTER_ROUND_1, ROOT, launch, pilot_choices

from jaxcap.config.base import checked_plan, load_config
from jaxcap.fields import ConfigError
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.data import load_table, read_table

SORT = "examples/sort_task.py:SortTask"
PILOT = ["--config", "examples/sort_pilot.py:smoke"]
CANDIDATES = ["--config", "examples/sort.py:candidates_smoke", "--config.seed=1000"]


@pytest.fixture(scope="module")
def piloted(tmp_path_factory):
    """The sort pilot launched once: (workdir, its launch)."""
    workdir = tmp_path_factory.mktemp("sort_pilot")
    return workdir, launch(*PILOT, "--workdir", workdir)


def predict(workdir, *args) -> str:
    return launch("--posterior", workdir, *args, module="jaxcap.predict", timeout=300).stdout


def test_the_plan_records_the_task_path_and_names_the_family():
    config = load_config(f"{ROOT / 'examples' / 'sort_pilot.py'}:smoke")
    plan = checked_plan(config).section
    assert plan.field == "length" and all(f["task_name"] == SORT for f in plan.level_fields)
    assert all(b > 0 for b in plan.bits) and list(plan.bits) == sorted(plan.bits)
    config.pilot.name = "SortTask"
    with pytest.raises(ConfigError) as e:
        checked_plan(config)
    assert "config.pilot.name: got 'SortTask'; allowed: 'sort'" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_the_appended_family_rebuilds_the_task_from_its_path(piloted):
    workdir, out = piloted
    post = meta_posterior.load_posterior(workdir)
    f = post.meta.families.index("sort")
    info = post.meta.family_info[f]
    assert info.task == "sort" and info.field == "length" and info.fixed["task_name"] == SORT
    assert info.values_range == [1, 8] and info.bits_range[0] == 3.0  # the padded size bounds a query
    rounds = pilot_choices(workdir)
    mine = [lv for lv in post.meta.levels if lv.family == f]
    assert sorted(lv.fields["length"] for lv in mine) == sorted(r[2] for r in rounds)
    assert all(lv.fields["task_name"] == SORT and lv.design == "pilot" for lv in mine)
    table = read_table(workdir / "table.json")  # the base rows, then the pilots', coded as the posterior
    assert table.families == post.meta.families and len(table.levels) == len(post.meta.levels)
    assert sum(r.family == f for r in table.rows) == post.meta.pilot.runs == sum(r[4] for r in rounds)
    assert f"sort on a0 rests on {len(rounds)} pilot levels" in out.stdout


@pytest.mark.slow
def test_killed_after_a_round_resumes_to_the_same_choices(piloted, tmp_path):
    workdir = tmp_path / "w"
    killed = launch(*PILOT, "--workdir", workdir, killer_code=KILL_AFTER_ROUND_1, check=False)
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert len(pilot_choices(workdir)) == 1 and not (workdir / "posterior.nc").exists()
    resumed = launch(*PILOT, "--workdir", workdir)
    assert "pilot round 1: trains" not in resumed.stdout and "== base calibration" in resumed.stdout
    assert pilot_choices(workdir) == pilot_choices(piloted[0])
    assert (workdir / "table.json").read_text() == (piloted[0] / "table.json").read_text().replace(
        str(piloted[0]), str(workdir)
    )


@pytest.mark.slow
def test_predict_takes_the_import_path_and_names_covariate_pilots_extrapolation(piloted):
    workdir, _ = piloted
    rounds = pilot_choices(workdir)
    tried = sorted(r[2] for r in rounds)
    text = predict(workdir, "--task", SORT, "--level", str(tried[0]), "8")
    assert "task sort (in the fit); covariate complexity_bits (the task's nominal bits)" in text
    assert f"rests on {len(rounds)} pilot levels, {sum(r[4] for r in rounds)} runs (base fit: " in text
    assert "WARNING: extrapolating: complexity_bits 12.65 bits is outside the fitted range" in text
    (by_path,) = json.loads(predict(workdir, "--task", SORT, "--level", str(tried[0]), "8", "--json"))
    (by_name,) = json.loads(predict(workdir, "--task", "sort", "--level", str(tried[0]), "8", "--json"))
    assert by_path == by_name and by_path["family"] == "sort" and by_path["family_in_fit"]
    assert by_path["pilot"]["pilots"] == len(rounds) and by_path["pilot"]["runs"] == sum(r[4] for r in rounds)
    assert by_path["pilot"]["ess"] > 0 and by_path["pilot"]["base"].endswith("base")
    first, last = by_path["points"]
    assert first["covariate"] == last["covariate"] == "complexity_bits" and first["seen_level"]
    assert first["extrapolation"] is None and "outside the fitted range" in last["extrapolation"]
    nope = ("--task", "examples/nope.py:Nope", "--level", "2")
    bad = launch("--posterior", workdir, *nope, module="jaxcap.predict", check=False)
    assert bad.returncode == 2 and "--task examples/nope.py:Nope: not a fitted family" in bad.stderr


@pytest.mark.slow
def test_out_of_grid_scores_the_pilot_on_every_candidate_with_fresh_seeds(piloted, tmp_path):
    workdir, _ = piloted
    check = tmp_path / "sort_check"
    launch(*CANDIDATES, "--config.runtime.progress=False", "--workdir", check)
    out = launch("--posterior", workdir, "--workdirs", check, module="jaxcap.main.out_of_grid", timeout=300)
    lengths = load_config(f"{ROOT / 'examples' / 'sort_pilot.py'}:smoke").pilot.family.levels.length
    seeds = load_config(f"{ROOT / 'examples' / 'sort.py'}:candidates_smoke").sweep.seeds
    assert (
        f"{len(lengths) * seeds} runs, {len(lengths)} cells ({len(pilot_choices(workdir))} level"
        in out.stdout
    )
    learned = sum(r.success for r in load_table([check]).rows)
    per_family = r"^    sort: [0-9.]+ / [0-9.]+ / (?:[0-9.]+|—) \((\d+) of (\d+) runs learned\)$"
    sort_line = re.search(per_family, out.stdout, re.M)
    assert sort_line and sort_line.group(1, 2) == (str(learned), str(len(lengths) * seeds)), out.stdout
    assert "cells outside their 90 % predictive count: " in out.stdout
    result = json.loads(
        launch("--posterior", workdir, "--workdirs", check, "--json", module="jaxcap.main.out_of_grid").stdout
    )
    assert {c["level"] for c in result["cells"]} == {f"length={n}" for n in lengths}
    assert 0 <= result["meta_model"]["brier"] <= 1 and result["n_rows"] == len(lengths) * seeds

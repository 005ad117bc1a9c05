"""The capacity size ladder (studies/ladder.py, ladder_plan.py, ladder_page.py): the plan's parts fit a
device session and reach the seed baseline; (slow) the tiny ladder runs on the CPU, skips what
finished, and a rung split into parts merges to what one launch of it measures."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from jaxcap.core.runtime import PhaseClock
from studies import device_time, ladder, ladder_page, ladder_plan


@pytest.mark.slow  # lowers every part's program for the cost model (~25 s)
def test_the_plan_reaches_the_seed_baseline_in_parts_a_session_holds():
    parts = ladder_plan.parts(ladder_plan.FIRST_RECIPE)
    names = [p.name for p in parts]
    assert len(set(names)) == len(names) and names[0].endswith("-search")
    sizes = {ladder_plan.n_params(r) for r in ladder_plan.RUNGS}
    assert sizes >= {14_288, 1_591_824}  # 14k to the seed baseline
    for rung in ladder_plan.RUNGS:  # every budget of every rung, at both sizes, is in exactly one part
        covered = [(b, s) for p in parts if p.rung == rung for b in p.budgets for s in p.sizes]
        assert sorted(covered) == sorted((b, s) for b in rung.budgets for s in ladder_plan.SIZES)
    for part in parts:
        seconds = ladder_plan.predicted_s(part, ladder_plan.FIRST_RECIPE)
        # a part holds the most that fits; only a single size at a single budget may exceed it
        assert seconds <= ladder_plan.PART_S or (len(part.budgets), len(part.sizes)) == (1, 1), part.name
        assert seconds > device_time.PROCESS_S


def test_a_part_trains_the_recipe_it_is_given_and_nothing_else():
    part = ladder_plan.Part(ladder_plan.RUNGS[-1], (1e3,), (4.0,))
    config = device_time.load(part.args({"learning_rate": 2e-3, "b2": 0.99}))
    assert (config.hparams.learning_rate, config.hparams.b2) == (2e-3, 0.99)
    assert config.sweep.hparams.learning_rate == () and config.capacity.search_exposures == 0.0
    assert config.capacity.annealed == (1e3,) and config.sweep.seeds == ladder_plan.SEEDS
    search = ladder_plan.Part(ladder_plan.RUNGS[2], (), ladder_plan.SIZES)
    assert device_time.load(search.args(ladder_plan.FIRST_RECIPE)).capacity.search_exposures > 0


def test_the_page_reads_the_phase_line_the_loop_prints():
    clock = PhaseClock()
    clock.seconds.update(compile=3.0, train=2.0)
    clock.count.update(compile=1, train=4)
    line = f"[b0n53061a500] {clock.summary(2, 500, 78_316_000_000, ('NVIDIA H200 bfloat16', 989.4))}"
    found = ladder_page.PHASE.match(line)  # 2 members x 2,000 steps in 2 s: 2,000 model-steps/s
    assert (found["rate"], found["members"], found["flops"], found["unit"]) == ("2,000", "2", "157", "T")
    assert (found["mfu"], found["peak"]) == ("15.8", "NVIDIA H200 bfloat16")
    cpu = ladder_page.PHASE.match(f"[b0] {clock.summary(2, 500, 1_000_000)}")
    assert (cpu["flops"], cpu["unit"], cpu["mfu"]) == ("2", "G", None)


def test_a_failed_rung_part_lets_the_others_run_then_fails_the_command(tmp_path, monkeypatch):
    """A rung's part that fails on the device does not stop the parts after it (device time is
    scarce), but the command exits non-zero naming it, so device_study.sh and its caller see it."""
    ran = []

    def launch(part, recipe, small, work, out, seconds, limit):
        ran.append(part.name)
        rc = 1 if part.name == failing else 0
        (out / part.name).mkdir(parents=True)
        (out / part.name / "part.json").write_text(json.dumps({"rc": rc}))
        return rc

    plan = ladder_plan.parts(ladder_plan.FIRST_RECIPE)
    failing = next(p.name for p in plan if p.budgets)
    monkeypatch.setattr(ladder, "launch", launch)
    monkeypatch.setattr(ladder, "predicted_s", lambda part, recipe, small=False: 1.0)
    monkeypatch.setattr(ladder, "recipe_of", lambda done: ladder_plan.FIRST_RECIPE if done else None)
    with pytest.raises(SystemExit) as info:
        ladder.run(tmp_path / "out", 1e6, False, tmp_path / "results", tmp_path / "work")
    assert str(info.value) == f"ladder: part(s) {failing} failed"
    assert sorted(ran) == sorted(p.name for p in plan)  # every part ran once, the failed one too


def _ladder(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "studies.ladder", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
def test_small_ladder_runs_resumes_and_merges_split_parts(tmp_path):
    out, split = tmp_path / "out", tmp_path / "split"
    env = {
        **os.environ,
        "PY": sys.executable,
        "SMALL": "1",
        "STUDY": str(tmp_path / "study"),
        "OUT": str(out),
    }
    done = subprocess.run(
        ["bash", "studies/device_study.sh", "ladder"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in (out / "ladder").glob("*/part.json")]
    assert sorted(r["part"] for r in records) == sorted(p.name for p in ladder_plan.parts({}, small=True))
    assert all(r["rc"] == 0 and r["small"] and r["phases"] for r in records)
    again = _ladder("run", "--small", "--out", str(out / "ladder"))
    assert "left for later: nothing" in again.stdout and "rc 0" not in again.stdout  # nothing reruns

    # the first rung again as one part per budget: merged, it reads both budgets as the one part
    # did, bit for bit. A part trains the same populations as the whole rung (each size its own,
    # the same members), so nothing changes the bfloat16 rounding; measured equal, and what a
    # layout that does change it moves (a seed alone, P = 1: up to 4 %): docs/engine.md, "bfloat16
    # on the CPU: same command, same numbers"
    recipe = ladder_plan.recipe_of(ladder_plan.finished(out / "ladder"))
    rung = ladder_plan.SMALL_RUNGS[0]
    for budget in rung.budgets:
        ladder.launch(
            ladder_plan.Part(rung, (budget,), ladder_plan.SIZES), recipe, True, tmp_path / "work", split, 60.0
        )
    whole_parts = [p for p in ladder_page.load(out / "ladder") if p["rung"] == rung.name]
    [(_, whole, _)] = ladder_page.merge(whole_parts, (rung,))
    [(_, parts, mine)] = ladder_page.merge(ladder_page.load(split), (rung,))
    assert len(mine) == 2 and len(parts.c_mem_seeds) == len(whole.c_mem_seeds) == ladder_plan.SEEDS
    assert [p.exposures for p in parts.annealed_curve] == [p.exposures for p in whole.annealed_curve]
    assert [p.size for p in parts.curve] == [p.size for p in whole.curve]  # each size's stub once
    assert (parts.flat.start, parts.flat.to) == (whole.flat.start, whole.flat.to)
    assert (parts.c_mem, parts.c_mem_seeds) == (whole.c_mem, whole.c_mem_seeds)

    text = (out / "ladder-small.md").read_text()
    assert "Not a measurement" in text and "size trend" in text and (out / ladder_page.FIGURE).exists()
    assert text.count("| finished:") == len(records) and "Not yet run: 0" in text
    assert text.count("no peak for this device") == len(records)  # every part's FLOP/s, no CPU MFU

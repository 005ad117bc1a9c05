"""`python -m jaxcap.main.check_task`: the contract the built-in tasks pass, run on any task. It
passes on the worked example (examples/sort_task.py) and on built-in tasks, fails with ONE line
naming the method or field on each broken task (tests/tasks/broken_tasks.py), and exits 1; the
example's smoke config launches, records the task's path in members.jsonl, and its workdir
reopens in a fresh process (the report, the meta-model's table) with nothing re-registered."""

import json

import pytest
from helpers import ROOT, launch

from jaxcap.main import check_task
from jaxcap.meta import data as meta_data
from jaxcap.meta.difficulty import family_info

SORT = "examples/sort_task.py:SortTask"
BROKEN = "tests/tasks/broken_tasks.py"
CHECKS = ["load", "build", "spec", "schema", "levels", "data", "shapes", "splits", "chance", "bits"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # a file path is read from the current directory


def test_the_example_passes_every_check_and_prints_the_table(capsys):
    code = check_task.main(["--task", SORT, "--level", "length=2,4,8"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(out)
    assert out[0].split() == ["check", "result", "detail"]
    rows = {line.split()[0]: line.split()[1] for line in out[1:-1]}
    assert rows == dict.fromkeys([*CHECKS, "determinism", "step"], "ok")
    assert "3 levels: length=2; length=4; length=8" in out[5]
    assert out[-1] == f"{SORT}: 12 of 12 checks passed"


@pytest.mark.parametrize(
    "name, sets, levels, step",
    [
        ("parity", ["n=6"], ["k=1,2,6"], True),
        ("copying", ["train_size=64", "n_eval=64", "longer_by=2"], ["length=2,4", "vocab=4,8"], False),
        (
            "modulo",
            ["modulus=7", "base=3", "digits=4", "train_fraction=0.5", "n_eval=50"],
            ["modulus=5,7,13"],
            False,
        ),
    ],
)
def test_built_in_tasks_pass(name, sets, levels, step):
    rows = check_task.check(name, sets, levels, step)
    assert all(r.ok for r in rows), check_task.table(rows)
    assert [r.name for r in rows] == [*CHECKS, "determinism", *(["step"] if step else [])]


@pytest.mark.parametrize(
    "task, levels, check, line",
    [
        (
            f"{BROKEN}:OverlappingSplits",
            [],
            "splits",
            "OverlappingSplits.make_data: 100% of the val inputs are train inputs at length=4; allowed: none",
        ),
        (
            f"{BROKEN}:ZeroBits",
            ["length=1,4"],
            "bits",
            "ZeroBits.complexity_bits: got -1.0 at length=1; allowed",
        ),
        (
            f"{BROKEN}:GrowingShape",
            ["length=2,4"],
            "data",
            "GrowingShape.make_data: a shape or a Python value depends on a knob (ConcretizationTypeError",
        ),
        (SORT, ["length=2,99"], "levels", "config.sweep.task.length[1]: got 99; allowed: in [1, 64]"),
        (SORT, ["length=9"], "levels", "config.sweep.task.length[0]: 9: config.task.length: got 9; allowed"),
        (SORT, ["k=1"], "levels", "config.sweep.task.k: not a knob of SortTask; allowed: length"),
        (
            f"{BROKEN}:BadReadout",
            [],
            "spec",
            "BadReadout.spec.readout: got 'last'; allowed for kind sequence",
        ),
        (
            f"{BROKEN}:SelectsOnTest",
            [],
            "spec",
            "SelectsOnTest.spec.select_metric: got 'test_exact'; allowed",
        ),
        (f"{BROKEN}:NoRule", [], "schema", "NoRule.SCHEMA: no rule for field 'reverse'; allowed: a rule"),
        (f"{BROKEN}:CertainChance", [], "chance", "CertainChance.chance: got 2.0 at length=4; allowed: 0 < "),
        (
            f"{BROKEN}:NoSpec",
            [],
            "load",
            "config.task.name: tests/tasks/broken_tasks.py:NoSpec: NoSpec does not",
        ),
    ],
)
def test_a_broken_task_fails_with_one_line(task, levels, check, line):
    rows = check_task.check(task, [], levels, step=False)
    failed = [r for r in rows if not r.ok]
    assert [r.name for r in failed] == [check], check_task.table(rows)
    assert failed[0].detail.startswith(line) and "\n" not in failed[0].detail, failed[0].detail


def test_a_metric_the_evaluation_lacks_fails_the_step_and_the_command_exits_1(capsys):
    code = check_task.main(["--task", f"{BROKEN}:UnknownMetric"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    step = next(line for line in out if line.startswith("step"))
    assert step.split()[1] == "FAIL"
    assert (
        "UnknownMetric.spec.success_metric: got 'test_sorted', which the evaluation does not return" in step
    )
    assert out[-1] == f"{BROKEN}:UnknownMetric: 11 of 12 checks passed"


def test_a_wrong_flag_value_is_a_usage_error(capsys):
    for argv, message in (
        (["--task", SORT, "--set", "colour=3"], "usage error: --set colour: not a field of"),
        (["--task", SORT, "--level", "length"], "usage error: --level: got 'length'; allowed: name=value"),
    ):
        with pytest.raises(SystemExit) as info:
            check_task.main(argv)
        assert info.value.code == 2 and capsys.readouterr().err.startswith(message)


def test_the_example_config_launches_and_its_workdir_reopens(tmp_path):
    workdir = tmp_path / "sort"
    launch("--config", "examples/sort.py:smoke", "--workdir", workdir)
    rows = [json.loads(line) for line in (workdir / "members.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["task_name"] for r in rows} == {SORT} and rows[0]["family"] == "sort"
    (workdir / "report" / "report.md").unlink()
    out = launch("--workdir", workdir, module="jaxcap.report")  # another process: nothing registered
    assert (workdir / "report" / "report.md").exists(), out.stdout
    levels = [meta_data.level_fields(r) for r in meta_data.read_rows(workdir)]
    assert {lv["task_name"] for lv in levels} == {SORT}
    info = family_info("sort", levels)
    assert info["field"] == "length" and info["bits_range"][1] > info["bits_range"][0] > 0

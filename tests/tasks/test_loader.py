"""Tasks by import path: a researcher's own Task subclass by module or by file, every loader
error one line naming config.task.name, the file or module and what is allowed, the static
checks before a launch compiles anything, and the row that lets a workdir rebuild the task."""

import dataclasses
import json
import math

import pytest
from helpers import ROOT

from jaxcap import tasks
from jaxcap.config.base import base_config, build_plan
from jaxcap.fields import ConfigError
from jaxcap.meta import data as meta_data
from jaxcap.meta.difficulty import family_info, task_class
from jaxcap.results.records import MemberRow
from jaxcap.tasks import checks

SORT = "examples/sort_task.py:SortTask"
BROKEN = "tests/tasks/broken_tasks.py"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # a file path is read from the current directory


def test_a_file_path_loads_its_class_once_and_keeps_the_name_given():
    cls = tasks.task_class(f"{ROOT}/{SORT}")
    assert cls.__name__ == "SortTask" and issubclass(cls, tasks.Task)
    assert tasks.task_class(SORT) is cls  # the same file by another spelling: one class
    assert tasks.task_name(cls(length=3)) == SORT and not tasks.is_builtin(SORT)  # the name it was given
    section = tasks.default_config(SORT)
    assert section == {"name": SORT, **{f.name: f.default for f in dataclasses.fields(cls)}}
    task = tasks.build({**section, "length": 3}, {"length": [2, 3]})
    assert task.spec.family == "sort" and task.complexity_bits({"length": 3}) == math.log2(math.comb(10, 3))


def test_a_module_path_loads_its_class(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "tasks"))
    cls = tasks.task_class("broken_tasks:ZeroBits")
    assert cls.__name__ == "ZeroBits" and tasks.task_name(cls) == "broken_tasks:ZeroBits"
    assert tasks.task_name(tasks.TASKS["parity"]) == "parity"


def _raise_module(tmp_path, monkeypatch, name: str, text: str) -> str:
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize(
    "name, message",
    [
        ("nope", r"config.task.name: got 'nope'; allowed: a built-in task \(modulo, binop, .*ClassName'$"),
        (None, r"config.task.name: got None; allowed: a built-in task"),
        ("a:b:c", r"config.task.name: got 'a:b:c'; allowed: a built-in task"),
        ("examples/nope.py:SortTask", r"config.task.name: got 'examples/nope.py:SortTask': no such file .*"),
        ("no_such_package.tasks:Sort", r"no module named 'no_such_package' on sys.path; allowed: a built-in"),
        (
            "examples/sort_task.py:Sort",
            r"examples/sort_task.py has no class 'Sort'; allowed: one of its Task ",
        ),
        (f"{BROKEN}:not_a_class", r"not_a_class is a function, not a Task; allowed: a subclass of jaxcap"),
        (f"{BROKEN}:EXAMPLE", r"EXAMPLE is a PosixPath, not a Task"),
        (f"{BROKEN}:NotFrozen", r"NotFrozen is not a frozen dataclass; allowed: decorate it with @data"),
        (f"{BROKEN}:NoSpec", r"NoSpec does not implement chance, complexity_bits, spec; allowed: a Task"),
    ],
)
def test_every_loader_error_is_one_line(name, message):
    with pytest.raises(ConfigError, match=message) as error:
        tasks.task_class(name)
    assert "\n" not in str(error.value) and str(error.value).startswith("config.task.name: ")


def test_an_import_error_is_its_cause_in_one_line(tmp_path, monkeypatch):
    (tmp_path / "boom.py").write_text("import math\n\nraise RuntimeError('the data dir is missing\\nmore')\n")
    (tmp_path / "typo.py").write_text("def f(:\n")
    for path, cause in (
        ("boom.py", "RuntimeError: the data dir is missing"),
        ("typo.py", "SyntaxError at line 1"),
    ):
        with pytest.raises(ConfigError, match=f"importing {tmp_path}/{path} failed: {cause}") as error:
            tasks.task_class(f"{tmp_path}/{path}:Task")
        assert "\n" not in str(error.value)
    module = _raise_module(tmp_path, monkeypatch, "needs_missing", "import not_installed_anywhere\n")
    with pytest.raises(
        ConfigError, match="importing needs_missing failed: ModuleNotFoundError: No module named"
    ):
        tasks.task_class(f"{module}:Task")


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_every_built_in_task_passes_the_static_checks(name, tmp_path):
    if name == "dataset":  # its shapes come from its files: a modulo level written to one
        from jaxcap.tasks.dataset.export import export

        task = tasks.build(export({"name": "modulo", "modulus": 7, "digits": 2}, tmp_path / "m.npz"))
    else:
        task = tasks.TASKS[name]()
    assert all(c.ok for c in checks.static_checks(task)), name


def test_a_launch_refuses_a_task_that_breaks_the_spec_before_compiling():
    config = base_config(f"{BROKEN}:BadReadout")
    message = (
        rf"^config.task.name \({BROKEN}:BadReadout\): BadReadout.spec.readout: got 'last'; allowed for "
        "kind sequence: all$"
    )
    with pytest.raises(ConfigError, match=message):
        build_plan(config)
    config = base_config(f"{BROKEN}:NoRule")  # the schema has no rule: config.task.reverse is unknown
    with pytest.raises(ConfigError, match=r"^config.task.reverse: unknown field"):
        build_plan(config)
    plan = build_plan(base_config(SORT))
    assert type(plan.buckets[0].task).__name__ == "SortTask"


def _row(**fields) -> MemberRow:
    base = dict(bucket="b0", member=0, seed=0, status="ok", family="sort", knobs={"length": 2}, hparams={})
    base |= dict(complexity_bits=5.17, success_metric="test_exact", success_threshold=0.95)
    base |= dict(higher_is_better=True, success=False, final={}, n_params=1, model={})
    base |= dict(task={"length": 2, "vocab": 8, "max_length": 4})
    return MemberRow(**{**base, **fields})


def test_a_row_records_the_path_and_a_built_in_row_is_unchanged():
    built_in = _row(family="parity", task={"k": 2, "n": 6})
    assert "task_name" not in built_in.to_json()
    assert json.dumps(MemberRow.from_json(built_in.to_json()).to_json()) == json.dumps(built_in.to_json())
    mine = _row(task_name=SORT)
    assert mine.to_json()["task_name"] == SORT and MemberRow.from_json(mine.to_json()) == mine


def test_the_meta_model_rebuilds_the_task_from_its_row():
    fields = meta_data.level_fields(_row(task_name=SORT))
    assert fields["task_name"] == SORT and task_class("sort", fields) is tasks.task_class(SORT)
    assert task_class("sort") is None and task_class("binop:add") is tasks.TASKS["binop"]
    levels = [meta_data.level_fields(_row(task={"length": n, "vocab": 8}, task_name=SORT)) for n in (2, 4)]
    info = family_info("sort", levels)
    assert info["field"] == "length" and info["values_range"] == [1, 8]  # the default max_length
    assert info["bits_range"][0] == pytest.approx(3.0)  # log2 C(8, 1): length 1 over 8 symbols

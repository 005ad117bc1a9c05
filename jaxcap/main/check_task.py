"""Check any task against the contract the built-in tasks pass: a table, one line per failure.

    python -m jaxcap.main.check_task --task examples/sort_task.py:SortTask --level length=2,4,8
    python -m jaxcap.main.check_task --task parity --set n=6 --level k=1,2,6

`--task` is a built-in name, `package.module:ClassName` or `path/to/file.py:ClassName` (docs/tasks.md,
"Your own task"); `--set field=value` sets a task field (a Python literal, else a string); `--level
knob=v1,v2` sweeps a knob, levels being the product of every `--level`. It prints one row per
check (check, result, detail) and exits 1 if any failed; `--nostep` leaves out the training step.
"""

from __future__ import annotations

import ast
import sys

from absl import flags

from jaxcap import tasks
from jaxcap.core.tiny_run import step_check
from jaxcap.fields import ConfigError
from jaxcap.main import cli
from jaxcap.tasks.checks import Check
from jaxcap.tasks.conformance import run_checks

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_string("task", None, "A built-in task, package.module:Class or a.py:Class.", flag_values=FLAGS)
flags.DEFINE_multi_string("level", [], "knob=v1,v2,...: a knob's levels (repeatable).", flag_values=FLAGS)
flags.DEFINE_multi_string("set", [], "field=value: a task field (repeatable).", flag_values=FLAGS)
flags.DEFINE_bool("step", True, "Also run one jitted training step and one eval.", flag_values=FLAGS)


def literal(text: str):
    """A flag's value: a Python literal (4, 0.5, True, (1, 2)), else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _pairs(flag: str, values: list[str]) -> list[tuple[str, str]]:
    out = []
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            cli.usage_exit(f"--{flag}: got {value!r}; allowed: name=value, e.g. --{flag} length=4")
        out.append((name, rest))
    return out


def task_section(name: str, sets: list[str]) -> dict:
    """The task section: the task's defaults, then every `--set`; an unknown field is a usage error."""
    section = tasks.default_config(name)
    for field, value in _pairs("set", sets):
        if field not in section or field == "name":
            known = ", ".join(k for k in section if k != "name")
            cli.usage_exit(f"--set {field}: not a field of {name}; fields: {known}")
        section[field] = literal(value)
    return section


def table(rows: list[Check]) -> str:
    """check | result | detail, aligned (a failure's detail is its one line)."""
    width = max(len("check"), *(len(r.name) for r in rows))
    lines = [f"{'check':<{width}}  result  detail"]
    lines += [f"{r.name:<{width}}  {'ok' if r.ok else 'FAIL':<6}  {r.detail}" for r in rows]
    return "\n".join(lines)


def check(name: str, sets: list[str], levels: list[str], step: bool = True) -> list[Check]:
    """Every check of the task `name` with its fields `sets` at the knob `levels` (flag forms)."""
    try:
        tasks.task_class(name)
    except ConfigError as e:
        return [Check("load", False, str(e))]
    grid = {knob: [literal(v) for v in values.split(",")] for knob, values in _pairs("level", levels)}
    rows, task, knobs = run_checks(task_section(name, sets), grid)
    rows = [Check("load", True, f"{tasks.task_class(name).__name__} from {name}"), *rows]
    if step and task is not None:
        rows.append(step_check(task, knobs))
    return rows


def main(argv: list[str] | None = None) -> int:
    cli.parse([cli.prog("main.check_task"), *(sys.argv[1:] if argv is None else argv)], __doc__, FLAGS)
    cli.required(FLAGS, "task", example="--task examples/sort_task.py:SortTask")
    rows = check(FLAGS.task, FLAGS.set, FLAGS.level, FLAGS.step)
    print(table(rows))
    failed = [r for r in rows if not r.ok]
    print(f"{FLAGS.task}: {len(rows) - len(failed)} of {len(rows)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

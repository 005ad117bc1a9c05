"""The task contract's static checks: what a task's spec and schema must hold, read without data.

A `Check` is one row of `python -m jaxcap.main.check_task`'s table; a failed one's detail is ONE
line naming the method or field and what is allowed. `static_checks` reads only the task's fields
and spec, so `jaxcap.tasks.build` runs it on every task from outside jaxcap before a launch
compiles anything; the data checks (`jaxcap.tasks.conformance`) and the training step
(`jaxcap.core.tiny_run`) come on top in the command.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from jaxcap.fields import ConfigError
from jaxcap.tasks.contract import KINDS, Task, TaskSpec

READOUTS = {"classify": ("last", "mean"), "sequence": ("all",), "regress": ("last", "mean")}


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of a task: its name, whether it passed, and one line saying what was seen (a
    failure: the method or field at fault and what is allowed)."""

    name: str
    ok: bool
    detail: str


def run_check(name: str, body: Callable[[], str], where: str) -> Check:
    """`body()` returns the detail of a pass and raises ConfigError (one line) for a failure; any
    other exception is a failure too: `where` (the task's method) raised it, named by type and
    first line."""
    try:
        return Check(name, True, body())
    except ConfigError as e:
        return Check(name, False, str(e).splitlines()[0])
    except Exception as e:
        return Check(name, False, f"{where} raised {cause(e)}")


def cause(e: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    if isinstance(e, SyntaxError):
        return f"SyntaxError at line {e.lineno}: {e.msg}"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _int(where: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{where}: got {value!r}; allowed: an integer >= {low}")


def check_spec(task: Task) -> str:
    """The spec's static description: kind, readout, vocabulary, length, outputs, metric names."""
    where = f"{type(task).__name__}.spec"
    spec = task.spec
    if not isinstance(spec, TaskSpec):
        raise ConfigError(f"{where}: got {type(spec).__name__}; allowed: a jaxcap.tasks.TaskSpec")
    if spec.kind not in KINDS:
        raise ConfigError(f"{where}.kind: got {spec.kind!r}; allowed: {', '.join(KINDS)}")
    if spec.readout not in READOUTS[spec.kind]:
        allowed = ", ".join(READOUTS[spec.kind])
        raise ConfigError(f"{where}.readout: got {spec.readout!r}; allowed for kind {spec.kind}: {allowed}")
    _int(f"{where}.seq_len", spec.seq_len, 1)
    _int(f"{where}.input_dim", spec.input_dim, 0)
    if not spec.input_dim:
        _int(f"{where}.vocab_size", spec.vocab_size, 1)
    _int(f"{where}.n_outputs", spec.n_outputs, 1 if spec.kind == "regress" else 2)
    fields = {f.name for f in dataclasses.fields(task)}
    if not isinstance(spec.knobs, tuple) or any(k not in fields for k in spec.knobs):
        raise ConfigError(f"{where}.knobs: got {spec.knobs!r}; allowed: a tuple of the task's field names")
    for name in ("metric", "success_metric", "select_metric"):
        value = getattr(spec, name)
        if not isinstance(value, str) or (name != "metric" and "_" not in value.strip("_")):
            raise ConfigError(f"{where}.{name}: got {value!r}; allowed: a metric name such as val_accuracy")
    if spec.select_metric.startswith("test_"):
        raise ConfigError(
            f"{where}.select_metric: got {spec.select_metric!r}; allowed: a val (or train) metric: "
            "every selection reads val, the test split only reports"
        )
    for name in ("step_threshold", "success_threshold"):
        value = getattr(spec, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where}.{name}: got {value!r}; allowed: a finite number")
    if not isinstance(spec.higher_is_better, bool):
        raise ConfigError(f"{where}.higher_is_better: got {spec.higher_is_better!r}; allowed: True or False")
    size = f"{spec.input_dim}-d inputs" if spec.input_dim else f"vocab {spec.vocab_size}"
    return (
        f"{spec.kind}, readout {spec.readout}, {size}, seq_len {spec.seq_len}, {spec.n_outputs} outputs, "
        f"success {spec.success_metric}, selection {spec.select_metric}"
    )


def check_schema(task: Task) -> str:
    """Every field has a rule in SCHEMA (the config is checked against it), and every value now
    set, the knobs' defaults included, passes its rule."""
    cls = type(task).__name__
    schema = getattr(task, "SCHEMA", None)
    if not isinstance(schema, dict):
        raise ConfigError(f"{cls}.SCHEMA: got {type(schema).__name__}; allowed: a dict of field -> rule")
    fields = [f.name for f in dataclasses.fields(task)]
    for name in fields:
        if name not in schema:
            raise ConfigError(
                f"{cls}.SCHEMA: no rule for field {name!r}; allowed: a rule (jaxcap.fields Int, Float, "
                "Choice, Bool, Str) for every field, e.g. {**Task.SCHEMA, ...}"
            )
    extra = sorted(set(schema) - set(fields))
    if extra:
        raise ConfigError(f"{cls}.SCHEMA: rule for {extra[0]!r}, which is not a field; allowed: field names")
    for name in fields:
        schema[name](f"config.task.{name}", getattr(task, name))
    knobs = ", ".join(task.spec.knobs) or "none"
    return f"{len(fields)} fields, each with a rule its value passes; knobs: {knobs}"


def static_checks(task: Task) -> list[Check]:
    """The checks that read no data: spec, then schema (a spec that fails stops there)."""
    cls = type(task).__name__
    spec = run_check("spec", lambda: check_spec(task), f"{cls}.spec")
    if not spec.ok:
        return [spec]
    return [spec, run_check("schema", lambda: check_schema(task), f"{cls}.spec")]

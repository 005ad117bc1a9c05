"""Tasks by name: the registry of built-in tasks, and a researcher's own `Task` subclass by path.

`config.task.name` is a registered name (`parity`), a module path (`package.module:ClassName`)
or a file path (`path/to/file.py:ClassName`, relative to the current directory, recorded as
given), so a task is added without editing the package (docs/tasks.md, "Your own task"). Every
reader resolves a name here (`task_class`), and a problem is one ConfigError line naming
config.task.name, the file or module, and what is allowed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from jaxcap.fields import ConfigError
from jaxcap.tasks import checks
from jaxcap.tasks.arc.puzzles import Arc
from jaxcap.tasks.binop import BinaryOp
from jaxcap.tasks.contract import Task
from jaxcap.tasks.copying import Copying
from jaxcap.tasks.dataset.task import Dataset
from jaxcap.tasks.hmm import HMMLanguage
from jaxcap.tasks.language import MarkovLanguage, PCFGLanguage
from jaxcap.tasks.modular import Modulo
from jaxcap.tasks.parity import Parity
from jaxcap.tasks.random_data import RandomLabels, RandomTokens
from jaxcap.tasks.recall import Recall
from jaxcap.tasks.retrieval import MaxSum, Triangle
from jaxcap.tasks.rna.structure import RnaStructure
from jaxcap.tasks.sentiment import Sentiment
from jaxcap.tasks.shakespeare import Shakespeare
from jaxcap.tasks.vader.real_sentiment import VaderSentences

TASKS: dict[str, type[Task]] = {"modulo": Modulo, "binop": BinaryOp}
TASKS.update(random_labels=RandomLabels, random_tokens=RandomTokens)
TASKS.update(parity=Parity, copying=Copying, recall=Recall, maxsum=MaxSum, triangle=Triangle)
TASKS.update(arc=Arc)
TASKS.update(rna=RnaStructure)
TASKS.update(markov=MarkovLanguage, pcfg=PCFGLanguage, hmm=HMMLanguage, shakespeare=Shakespeare)
TASKS.update(sentiment=Sentiment, vader=VaderSentences)
TASKS.update(dataset=Dataset)  # the user's own files (jaxcap/tasks/dataset/)

FIELD = "config.task.name"
_LOADED: dict[str, type[Task]] = {}  # name as given -> class (a file runs once per process)
_NAMES: dict[type, str] = {}  # class -> the name it was last resolved by (a run resolves one)


def allowed() -> str:
    return f"a built-in task ({', '.join(TASKS)}), 'package.module:ClassName' or 'path/to/file.py:ClassName'"


def is_builtin(name: str) -> bool:
    return name in TASKS


def task_class(name: Any) -> type[Task]:
    """The Task subclass `name` (config.task.name) names: built-in, by module or by file path."""
    if not isinstance(name, str):
        raise ConfigError(f"{FIELD}: got {name!r}; allowed: {allowed()}")
    if name in TASKS:
        return TASKS[name]
    if name in _LOADED:
        _NAMES[_LOADED[name]] = name
        return _LOADED[name]
    if name.count(":") != 1 or not all(name.split(":")):
        raise ConfigError(f"{FIELD}: got {name!r}; allowed: {allowed()}")
    where, class_name = name.split(":")
    from_file = where.endswith(".py") or "/" in where or "\\" in where
    module = _module_from_file(name, where) if from_file else _module_by_name(name, where)
    cls = getattr(module, class_name, None)
    if cls is None:
        found = [n for n, c in vars(module).items() if _is_task(c) and c is not Task]
        raise ConfigError(
            f"{FIELD}: {where} has no class {class_name!r}; allowed: one of its Task subclasses "
            f"({', '.join(found) or 'it defines none'})"
        )
    _check_class(name, cls)
    _LOADED[name], _NAMES[cls] = cls, name
    return cls


def _module_from_file(name: str, where: str):
    path = Path(where).expanduser()
    resolved = (path if path.is_absolute() else Path.cwd() / path).resolve()
    if not resolved.is_file():
        raise ConfigError(
            f"{FIELD}: got {name!r}: no such file {resolved} (a relative path is read from the current "
            f"directory, {Path.cwd()}); allowed: {allowed()}"
        )
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    module_name = f"_jaxcap_task_{resolved.stem}_{digest}"
    if module_name in sys.modules:  # the same file by another spelling: one module, one class
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[module_name]
        raise _import_failed(where, e, "file") from None
    return module


def _module_by_name(name: str, where: str):
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name and (where == e.name or where.startswith(e.name + ".")):
            raise ConfigError(
                f"{FIELD}: got {name!r}: no module named {e.name!r} on sys.path; allowed: {allowed()}"
            ) from None
        raise _import_failed(where, e, "module") from None
    except Exception as e:
        raise _import_failed(where, e, "module") from None


def _is_task(cls: Any) -> bool:
    return inspect.isclass(cls) and issubclass(cls, Task)


def _import_failed(where: str, e: BaseException, kind: str) -> ConfigError:
    return ConfigError(f"{FIELD}: importing {where} failed: {checks.cause(e)}; allowed: a {kind} that runs")


def _check_class(name: str, cls: Any) -> None:
    what = f"{FIELD}: {name}:"
    if not _is_task(cls):
        kind = "a class" if inspect.isclass(cls) else f"a {type(cls).__name__}"
        raise ConfigError(
            f"{what} {name.split(':')[1]} is {kind}, not a Task; allowed: a subclass of jaxcap.tasks.Task"
        )
    if "__dataclass_params__" not in vars(cls) or not cls.__dataclass_params__.frozen:
        raise ConfigError(
            f"{what} {cls.__name__} is not a frozen dataclass; allowed: decorate it with "
            "@dataclasses.dataclass(frozen=True)"
        )
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise ConfigError(
            f"{what} {cls.__name__} does not implement {', '.join(missing)}; allowed: a Task that "
            "implements spec, complexity_bits and chance"
        )


def task_name(task: Task | type[Task]) -> str:
    """The config.task.name of a task: its registry name, the path it was loaded by (as given),
    else `module:ClassName`."""
    cls = task if inspect.isclass(task) else type(task)
    builtin = next((name for name, c in TASKS.items() if c is cls), None)
    return builtin or _NAMES.get(cls) or f"{cls.__module__}:{cls.__qualname__}"


def default_config(name: str) -> dict[str, Any]:
    """The task section of a config: `name` plus every field of the task with its default."""
    cls = task_class(name)
    return {"name": name, **{field.name: field.default for field in dataclasses.fields(cls)}}


def build(task_cfg: dict[str, Any], knob_grid: dict[str, list] | None = None) -> Task:
    """The task of a config's task section; `knob_grid` holds the swept per-member knob values.
    A task outside jaxcap also passes the contract's static checks here, before any compile."""
    cfg = dict(task_cfg)
    name = cfg.pop("name")
    task = task_class(name).from_config(cfg, knob_grid or {})
    if not is_builtin(name):
        failed = [c for c in checks.static_checks(task) if not c.ok]
        if failed:
            raise ConfigError(f"{FIELD} ({name}): {failed[0].detail}")
    return task

"""Tasks by name: the registry of built-in tasks (tests are parametrized over it) and the import
path of a researcher's own Task subclass, both resolved by `jaxcap.tasks.loader`."""

from __future__ import annotations

from jaxcap.tasks.contract import Split, Task, TaskSpec
from jaxcap.tasks.loader import TASKS, build, default_config, is_builtin, task_class, task_name

__all__ = [
    "TASKS",
    "Split",
    "Task",
    "TaskSpec",
    "build",
    "default_config",
    "is_builtin",
    "task_class",
    "task_name",
]

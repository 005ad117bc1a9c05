"""Task registry: tasks are chosen by name; tests are parametrized over this dict."""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_collections

from jaxcap.tasks.base import Split, Task, TaskSpec
from jaxcap.tasks.binop import BinaryOp
from jaxcap.tasks.modular import Modulo

TASKS: dict[str, type[Task]] = {"modulo": Modulo, "binop": BinaryOp}


def default_config(name: str) -> ml_collections.ConfigDict:
    """The task section of a config: `name` plus every field of the task with its default."""
    cfg = ml_collections.ConfigDict({"name": name})
    for field in dataclasses.fields(TASKS[name]):
        cfg[field.name] = field.default
    return cfg


def build(task_cfg: dict[str, Any], knob_grid: dict[str, list] | None = None) -> Task:
    """The task of a config's task section; `knob_grid` holds the swept per-member knob values."""
    cfg = dict(task_cfg)
    cls = TASKS[cfg.pop("name")]
    return cls.from_config(cfg, knob_grid or {})


__all__ = ["TASKS", "Split", "Task", "TaskSpec", "build", "default_config"]

"""Config validation: every field checked before anything is compiled.

A schema mirrors the config: leaves are small checkers that know what is allowed, so the
error for a bad value, a wrong type or an unknown key is one line that names the field and
says what is allowed, e.g. ``config.model.norm: got 'layer'; allowed: pre, post, none``.
Tasks contribute the schema of their own section (`Task.SCHEMA`) and cross-field checks
(`Task.check`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any


class ConfigError(ValueError):
    """A config problem, phrased as one line naming the field."""


@dataclasses.dataclass(frozen=True)
class Int:
    low: int | None = None
    high: int | None = None

    def __call__(self, path: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                f"{path}: got {value!r} ({type(value).__name__}); allowed: an integer{_range(self)}"
            )
        _check_range(path, value, self)


@dataclasses.dataclass(frozen=True)
class Float:
    low: float | None = None
    high: float | None = None
    open_high: bool = False  # the upper bound itself is not allowed

    def __call__(self, path: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{path}: got {value!r}; allowed: a finite number{_range(self)}")
        _check_range(path, value, self)
        if self.open_high and value == self.high:
            raise ConfigError(f"{path}: got {value!r}; allowed: below {self.high}")


@dataclasses.dataclass(frozen=True)
class Choice:
    options: tuple

    def __call__(self, path: str, value: Any) -> None:
        if value not in self.options:
            allowed = ", ".join(str(o) for o in self.options)
            raise ConfigError(f"{path}: got {value!r}; allowed: {allowed}")


@dataclasses.dataclass(frozen=True)
class Bool:
    def __call__(self, path: str, value: Any) -> None:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: got {value!r}; allowed: True or False")


@dataclasses.dataclass(frozen=True)
class Str:
    def __call__(self, path: str, value: Any) -> None:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: got {value!r}; allowed: a string")


@dataclasses.dataclass(frozen=True)
class TupleOf:
    """A swept grid: a tuple (or list) of values, each checked by `item`; empty = not swept."""

    item: Any

    def __call__(self, path: str, value: Any) -> None:
        if not isinstance(value, (tuple, list)):
            raise ConfigError(f"{path}: got {value!r}; allowed: a tuple of values, e.g. (1, 2)")
        for i, v in enumerate(value):
            self.item(f"{path}[{i}]", v)


def _range(c) -> str:
    if c.low is not None and c.high is not None:
        return f" in [{c.low}, {c.high}]"
    if c.low is not None:
        return f" >= {c.low}"
    return f" <= {c.high}" if c.high is not None else ""


def _check_range(path: str, value, c) -> None:
    if (c.low is not None and value < c.low) or (c.high is not None and value > c.high):
        raise ConfigError(f"{path}: got {value!r}; allowed:{_range(c)}")


def check_tree(path: str, config: Any, schema: dict) -> None:
    """Check every key of `config` against `schema` (unknown keys are errors), recursively."""
    for key in config:
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise ConfigError(f"{path}.{key}: unknown field; fields of {path}: {known}")
    for key, rule in schema.items():
        if key not in config:
            raise ConfigError(f"{path}.{key}: missing (start configs from jaxcap.config.base_config)")
        value = config[key]
        if isinstance(rule, dict):
            if not hasattr(value, "keys"):
                raise ConfigError(
                    f"{path}.{key}: got {value!r}; allowed: a section with fields {sorted(rule)}"
                )
            check_tree(f"{path}.{key}", value, rule)
        else:
            rule(f"{path}.{key}", value)

"""Config validation: every field checked before anything is compiled.

A schema mirrors the config: leaves are small checkers that know what is allowed, so the
error for a bad value, a wrong type or an unknown key is one line that names the field and
says what is allowed, e.g. ``config.model.norm: got 'layer'; allowed: pre, post, none``.
Tasks contribute the schema of their own section (`Task.SCHEMA`) and cross-field checks
(`Task.check`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
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


def setting(default: Any, rule: Any, *, config_default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field that is also a config field: the dataclass owns its default and its rule,
    and the config section is generated from it (`defaults`, `rules`), so a new field is one line.
    `config_default` is what the config holds where it differs from the dataclass's own default
    (`readout='auto'`, which the model resolves from the task)."""
    metadata = {"rule": rule}
    if config_default is not dataclasses.MISSING:
        metadata["config_default"] = config_default
    return dataclasses.field(default=default, metadata=metadata)


def subsection(cls) -> Any:
    """A dataclass field that is a nested config section (`config.calibrate.nuts`): the section's
    own dataclass `cls` holds its settings, so its rules and defaults come from there too."""
    return dataclasses.field(default_factory=cls, metadata={"rule": None, "section": cls})


def rules(cls) -> dict[str, Any]:
    """The config section's schema: each `setting` field of the dataclass `cls` and its rule (a
    nested `subsection` contributes its own schema, which `check_tree` checks as a sub-section)."""
    return {
        f.name: rules(f.metadata["section"]) if "section" in f.metadata else f.metadata["rule"]
        for f in dataclasses.fields(cls)
        if "rule" in f.metadata
    }


def _config_default(f: dataclasses.Field) -> Any:
    if "section" in f.metadata:
        return defaults(f.metadata["section"])
    return f.metadata.get("config_default", f.default)


def defaults(cls, **overrides: Any) -> dict[str, Any]:
    """The config section's defaults, in field order (`overrides` replaces some of them)."""
    out = {f.name: _config_default(f) for f in dataclasses.fields(cls) if "rule" in f.metadata}
    for name in overrides:
        if name not in out:
            raise ConfigError(f"{cls.__name__}.{name}: not a config field; fields: {', '.join(out)}")
    return {**out, **overrides}


def from_section(cls, section: Any, **extra: Any) -> Any:
    """The dataclass `cls` from a checked config section (its `setting` fields, nested `subsection`s
    built the same way) and `extra`."""
    values = {}
    for f in dataclasses.fields(cls):
        if "section" in f.metadata:
            values[f.name] = from_section(f.metadata["section"], section[f.name])
        elif "rule" in f.metadata:
            values[f.name] = section[f.name]
    return cls(**values, **extra)


def to_section(obj: Any) -> dict[str, Any]:
    """The config section a dataclass built by `from_section` came from (its `setting` fields,
    nested `subsection`s the same way): what a config.json records of it."""
    out = {}
    for f in dataclasses.fields(obj):
        if "section" in f.metadata:
            out[f.name] = to_section(getattr(obj, f.name))
        elif "rule" in f.metadata:
            out[f.name] = getattr(obj, f.name)
    return out


# a field's type in the words the checkers above use (ml_collections keeps each field's type)
KINDS: dict[type, str] = {bool: "True or False", int: "an integer", float: "a finite number", str: "a string"}


def kind_of(value: Any) -> str:
    """What a field holding `value` allows, as its checker says it: `an integer`, `a string`."""
    name = type(value).__name__
    return KINDS.get(type(value), f"{'an' if name[0] in 'aeiou' else 'a'} {name}")


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
            raise ConfigError(f"{path}.{key}: missing (start configs from jaxcap.config.base.base_config)")
        value = config[key]
        if isinstance(rule, dict):
            if not hasattr(value, "keys"):
                raise ConfigError(
                    f"{path}.{key}: got {value!r}; allowed: a section with fields {sorted(rule)}"
                )
            check_tree(f"{path}.{key}", value, rule)
        else:
            rule(f"{path}.{key}", value)


def check_runtime(runtime) -> None:
    """The processes of one run: a coordinator to join them, and ids below their count; the
    package of each enabled metric writer (jaxcap.training.writers), which the core install leaves out."""
    for field, module, extra in (("tensorboard", "tensorboardX", "tracking"), ("wandb", "wandb", "wandb")):
        if runtime.get(field) and importlib.util.find_spec(module) is None:
            raise ConfigError(
                f"config.runtime.{field}: got {runtime.get(field)!r} but {module} is not installed; "
                f"allowed: pip install 'jaxcap[{extra}]', or leave it off"
            )
    if runtime.coordinator == "auto":  # the cluster assigns them
        return
    if runtime.process_id >= runtime.num_processes:
        raise ConfigError(
            f"config.runtime.process_id: got {runtime.process_id}; allowed: 0 … {runtime.num_processes - 1} "
            "(config.runtime.num_processes - 1)"
        )
    if runtime.num_processes > 1 and not runtime.coordinator:
        raise ConfigError(
            f"config.runtime.coordinator: got ''; allowed: 'host:port' of process 0 or 'auto' when "
            f"config.runtime.num_processes is {runtime.num_processes} (alone, each process would run it all)"
        )

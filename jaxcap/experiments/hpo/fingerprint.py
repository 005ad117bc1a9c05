"""What a study's trials were trained with: the config a study carries, and the check that every
worker joining the study trains its trials the same way.

Workers on one storage share a study by its name, and a worker with another model, step count
or task would add trials not comparable with the others'. So the first writer records its
config's fingerprint as the study's user attribute `config`, and a worker whose fingerprint
differs is refused, in one line naming the fields, before it trains anything. What a worker may
set for itself (searched values, `config.runtime`, `LOCAL_FIELDS`) is left out.

Details: docs/design/hpo.md#one-config-per-study.
"""

from __future__ import annotations

import json
from typing import Any

import optuna

from jaxcap.experiments.hpo.search_space import parse_space
from jaxcap.fields import ConfigError

ATTR = "config"  # the study user attribute that holds the fingerprint
LOCAL_FIELDS = (
    "runtime",
    "note",
    "study.n_trials",  # a budget grows (jaxcap/experiments/hpo/study.py)
    "study.batch_trials",
    "study.storage",
    "study.name",  # the study's name is its identity already
    "study.baseline",  # read by the creator only
)
SHOWN = 4  # differing fields named in the refusal; the rest counted


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def _local(field: str, searched: set[str]) -> bool:
    return field in searched or any(field == f or field.startswith(f + ".") for f in LOCAL_FIELDS)


def fingerprint(config: Any) -> dict[str, Any]:
    """The fields of `config` that define what a trial is, flattened (`{"train.steps": 20}`), as
    JSON holds them (tuples are lists), so that one read back from a storage compares equal."""
    searched = {f"{p.target}.{p.name}" for p in parse_space(config.search)}
    flat = _flatten(json.loads(json.dumps(config.to_dict())))
    return {k: v for k, v in sorted(flat.items()) if not _local(k, searched)}


def differences(stored: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """`config.a.b (x in the study, y here)` for every field that differs."""
    return [
        f"config.{k} ({stored.get(k, '(absent)')!r} in the study, {mine.get(k, '(absent)')!r} here)"
        for k in sorted(set(stored) | set(mine))
        if stored.get(k) != mine.get(k)
    ]


def check(study: optuna.Study, mine: dict[str, Any]) -> None:
    """Record this config's fingerprint `mine` on a study that has none (the first writer wins),
    or refuse a config whose fingerprint differs from the study's, naming the fields."""
    stored = study.user_attrs.get(ATTR)
    if stored is None:
        study.set_user_attr(ATTR, mine)
        return
    diffs = differences(stored, mine)
    if diffs:
        more = f" and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
        raise ConfigError(
            f"config.study.name: study {study.study_name} holds trials of another config: "
            f"{'; '.join(diffs[:SHOWN])}{more}; allowed: the study's values, or a new study "
            "(--config.study.name=NEW: one name for every worker of that config)"
        )

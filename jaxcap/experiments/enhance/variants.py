"""Variant lists of the enhance experiment: combinations of switches, and HPO on instead of a grid.

Details: docs/design/enhance.md#variants-and-combinations.

[1] Akiba et al. 2019, "Optuna: A Next-generation Hyperparameter Optimization Framework",
    arXiv:1907.10902.
[2] Melis, Dyer & Blunsom 2018, "On the state of the art of evaluation in neural language
    models", arXiv:1707.05589.
"""

from __future__ import annotations

import itertools

import ml_collections

from jaxcap.config.plan import parse_overrides
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.experiments.hpo.search_space import add_level_search
from jaxcap.fields import ConfigError
from jaxcap.models.config import MODEL_FIELDS


def combine(*variants: str) -> str:
    """One override string for several variants, checked (see the module docstring)."""
    seen: dict[str, object] = {}
    parts = []
    for variant in variants:
        for path, value in parse_overrides(variant):
            name = ".".join(path)
            if path[0] == "model" and (len(path) != 2 or path[1] not in MODEL_FIELDS):
                raise ConfigError(
                    f"config.calibrate.architectures: {name} is not a model field; "
                    f"allowed: {', '.join(MODEL_FIELDS)}"
                )
            if name in seen and seen[name] != value:
                raise ConfigError(
                    f"config.calibrate.architectures: {name} set to {seen[name]!r} and {value!r} "
                    f"in one combination ({' + '.join(variants)})"
                )
            if name not in seen:
                seen[name] = value
                parts.append(f"{name}={value}")
    return ",".join(parts)


def check(config: ml_collections.ConfigDict, plan=None):
    """The enhance experiment's checks before anything is written: a multiplier is C_variant /
    C_baseline, so the architectures are the baseline and at least one variant, no two alike, each
    a combination `combine` accepts; then the calibrate check (the registry's), whose
    `Calibration` it returns: every family parsed, each variant one of its architectures."""
    archs = tuple(config.calibrate.architectures)
    if len(archs) < 2 or len(set(archs)) < len(archs):
        raise ConfigError(
            f"config.calibrate.architectures: got {archs}; allowed: the baseline first, then at least "
            "one other variant, no two alike (a multiplier is C_variant / C_baseline)"
        )
    for arch in archs:
        combine(arch)
    return resolve(EXPERIMENTS["calibrate"].check)(config, plan)


def combinations(best: tuple[str, ...], sizes: tuple[int, ...] = (2,)) -> tuple[str, ...]:
    """Every combination of `sizes` variants of `best` (in their order), e.g. the pairs."""
    return tuple(combine(*c) for k in sizes for c in itertools.combinations(best, k))


def with_combinations(variants: tuple[str, ...], best: tuple[str, ...], sizes=(2,)) -> tuple[str, ...]:
    """`variants` (the baseline first) followed by the combinations of `best` not already in it."""
    combos = [c for c in combinations(best, sizes) if c not in variants]
    return (*variants, *dict.fromkeys(combos))


def with_hpo(config: ml_collections.ConfigDict, smoke: bool) -> ml_collections.ConfigDict:
    """Turn HPO on: one Optuna study per level and variant (configs/calibrate.py:hpo's space)
    instead of the fixed hparams; the experiment stays "enhance"."""
    add_level_search(config, smoke)
    config.note += "; HPO on: one Optuna study per level and variant"
    return config

"""Difficulty covariates of the meta-model, and the test that each is monotone in difficulty.

The meta-model reads a level's difficulty from one number b per level and assumes success
falls as b grows within a family. The task's nominal `complexity_bits` is that number unless
`COVARIATES` (jaxcap/meta/covariates.py) names a structural one: modulo's nominal log2 N is not
monotone with decimal inputs (moduli dividing 10^k depend on the last k digits only), so its
covariate is `Modulo.lookup_bits` (derivation in jaxcap/tasks/modular.py). Nominal bits stay in
every table next to the covariate.

Details: docs/design/meta-model.md#difficulty-covariates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.optimize import isotonic_regression

from jaxcap.meta.covariates import NOMINAL, covariate_name

ALPHA = 0.05  # a family "is not monotone" below this bootstrap p-value
BOOTSTRAP = 400


def _build(cls, task: dict):
    """The task of a row's task fields (fields the class does not have are ignored)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in task.items() if k in names})


def covariate(family: str, task: dict, complexity_bits: float) -> tuple[str, float]:
    """(name, bits) of a level's difficulty covariate (its family, its task's fields with the
    knobs, its nominal bits): the family's structural rule, else nominal."""
    name = covariate_name(family)
    if name == NOMINAL:
        return name, float(complexity_bits)
    return name, float(getattr(_build(task_class(family, task), task), name)(task))


def isotonic_decreasing(rate: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-increasing fit (pool adjacent violators, scipy's); for binomial
    rates with weights = trials it is also the maximum-likelihood non-increasing fit."""
    weight = np.asarray(weight, np.float64)
    # scipy wants weights > 0: a level with no trials gets a weight too small to move its pool
    weight = np.maximum(weight, 1e-12 * max(float(weight.max(initial=0.0)), 1.0))
    return isotonic_regression(np.asarray(rate, np.float64), weights=weight, increasing=False).x


def _loglik(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(np.sum(k * np.log(p) + (n - k) * np.log1p(-p)))


def lr_statistic(k: np.ndarray, n: np.ndarray) -> tuple[float, np.ndarray]:
    """2 (log L(free rates) − log L(non-increasing rates)) and the non-increasing fit."""
    rate = k / np.maximum(n, 1)
    fit = isotonic_decreasing(rate, n)
    return 2.0 * (_loglik(k, n, rate) - _loglik(k, n, fit)), fit


def monotone_test(bits: np.ndarray, k: np.ndarray, n: np.ndarray, seed: int = 0) -> dict:
    """Is the success rate non-increasing in `bits`? Levels with equal bits are pooled."""
    order = np.argsort(bits, kind="stable")
    ub, inv = np.unique(np.asarray(bits)[order], return_inverse=True)
    kk = np.bincount(inv, np.asarray(k, np.float64)[order])
    nn = np.bincount(inv, np.asarray(n, np.float64)[order])
    stat, fit = lr_statistic(kk, nn)
    rng = np.random.default_rng(seed)
    null = [lr_statistic(rng.binomial(nn.astype(int), fit), nn)[0] for _ in range(BOOTSTRAP)]
    p_value = (1 + sum(s >= stat - 1e-9 for s in null)) / (1 + BOOTSTRAP)
    rate = kk / np.maximum(nn, 1)
    violations = int(sum(rate[j] > rate[i] for i in range(len(rate)) for j in range(i + 1, len(rate))))
    return {
        "levels": len(ub),
        "lr": stat,
        "p_value": float(p_value),
        "violations": violations,  # level pairs where the harder one was learned more often
        "monotone": bool(p_value >= ALPHA),
        "bits": ub.tolist(),
        "rate": rate.tolist(),
        "isotonic": fit.tolist(),
    }


def family_checks(table) -> list[dict]:
    """monotone_test per (family, architecture) on the covariate and on the nominal bits."""
    out = []
    for f, name in enumerate(table.families):
        for a in range(len(table.archs)):
            cells: dict[int, list[int]] = {}
            for r in table.rows:
                if r.family == f and r.arch == a:
                    cells.setdefault(r.level, []).append(int(r.success))
            if len(cells) < 2:
                continue
            lv = sorted(cells)
            k = np.array([sum(cells[i]) for i in lv])
            n = np.array([len(cells[i]) for i in lv])
            test = {"family": name, "arch": a, "covariate": table.levels[lv[0]].covariate}
            test["test"] = monotone_test(np.array([table.levels[i].bits for i in lv]), k, n)
            test["nominal"] = monotone_test(np.array([table.levels[i].complexity_bits for i in lv]), k, n)
            out.append(test)
    return out


def task_class(family: str, fields: Mapping[str, Any] | None = None):
    """The task class behind a family: the path a level's fields name (`task_name`, which the rows
    of a task from outside jaxcap record), else the registered task of the family name
    (`binop:add` -> binop), or None."""
    from jaxcap import tasks

    if fields and fields.get("task_name"):
        return tasks.task_class(fields["task_name"])
    return tasks.TASKS.get(family.split(":")[0])


def family_info(family: str, level_fields: list[dict]) -> dict:
    """What predict needs to turn a level value or a complexity into a query for one family: the
    task, its level field and fixed fields, the covariate of a level value, and the range of
    covariates the task can produce with those fixed fields (a query outside is an error)."""
    cls = task_class(family, level_fields[0])
    varying = sorted(k for k in level_fields[0] if len({repr(f[k]) for f in level_fields}) > 1)
    info = {"task": None, "field": None, "fixed": {}, "bits_range": None, "values_range": None}
    if cls is None or len(varying) != 1:
        return info
    field = varying[0]
    fixed = {k: v for k, v in level_fields[0].items() if k != field}
    rule = cls.SCHEMA.get(field)
    low, high = getattr(rule, "low", None), getattr(rule, "high", None)
    if not all(isinstance(f[field], int) for f in level_fields) or low is None or high is None:
        return {**info, "task": family.split(":")[0], "field": field, "fixed": fixed}
    # every value of a small range, else a geometric sample (the ends of the range are in it)
    values = (
        range(low, high + 1) if high - low <= 2000 else np.unique(np.geomspace(low, high, 2000).astype(int))
    )
    bits = {}
    for v in values:
        b = level_bits(family, fixed, field, int(v))
        if b is not None:
            bits[int(v)] = b
    return {
        "task": family.split(":")[0],
        "field": field,
        "fixed": fixed,
        "bits_range": [min(bits.values()), max(bits.values())] if bits else None,
        "values_range": [min(bits), max(bits)] if bits else None,
    }


def level_bits(family: str, fixed: dict, field: str, value) -> float | None:
    """The covariate of one level value (None if the task does not allow it)."""
    from jaxcap.fields import ConfigError

    try:
        return checked_level_bits(family, fixed, field, value)
    except (ConfigError, ValueError, TypeError):
        return None


def nominal_level_bits(family: str, fixed: dict, field: str, value) -> float:
    """The task's nominal complexity_bits of one (valid) level value."""
    task = _build(task_class(family, fixed), {**fixed, field: value})
    return float(task.complexity_bits({k: getattr(task, k) for k in task.spec.knobs}))


def checked_level_bits(family: str, fixed: dict, field: str, value) -> float:
    """The covariate of one level value; ConfigError (naming the allowed values) if invalid."""
    cls = task_class(family, fixed)
    rule = cls.SCHEMA.get(field)
    if rule is not None:
        rule(f"config.task.{field}", value)
    task = _build(cls, {**fixed, field: value})  # checks itself
    knobs = {k: getattr(task, k) for k in task.spec.knobs}
    fields = {**dataclasses.asdict(task), **knobs}
    return covariate(family.split(":")[0], fields, task.complexity_bits(knobs))[1]

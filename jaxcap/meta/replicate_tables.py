"""Validation scores over independent calibrate runs: mean and range, so noise reads as noise.

    python -m jaxcap.main.replicates runs/cal_seed0 runs/cal_seed1 runs/cal_seed2 [--markdown]

One run's Brier or coverage mixes the meta-model's quality with the luck of its seeds, so the
table reports, per split and method, the mean and [min, max] over runs with different data seeds
(replicated over training runs, not bootstrap resamples: Bouthillier et al. 2021,
arXiv:2103.03098), and PIT coverage pooled over runs with a Jeffreys interval.

Details: docs/design/meta-model.md#replicated-validation.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.scores import coverage_interval
from jaxcap.meta.validation import Validation

METRICS = ("brier", "auc", "pit_coverage90", "median_width90")
METHODS = ("meta_model", "base_rate", "family_intercepts", "pooled_logistic", "per_family_logistic")


def collect(validations: list[Validation]) -> dict:
    """{split: {method: {metric: [value per run that scored it]}}} over the runs' validations."""
    out: dict = {}
    for valid in validations:
        for split, scores in valid.scores.items():
            for method in METHODS:
                for metric in METRICS:
                    value = getattr(scores.methods[method], metric) if method in scores.methods else None
                    if value is not None:
                        out.setdefault(split, {}).setdefault(method, {}).setdefault(metric, []).append(value)
    return out


def spread(values: list[float]) -> dict:
    """Mean, min and max of one metric over runs, and how many runs."""
    x = np.asarray(values, np.float64)
    return {"mean": float(x.mean()), "min": float(x.min()), "max": float(x.max()), "runs": len(x)}


def replicate_table(validations: list[Validation]) -> dict:
    """{split: {method: {metric: spread}}}."""
    return {
        split: {m: {k: spread(v) for k, v in metrics.items()} for m, metrics in methods.items()}
        for split, methods in collect(validations).items()
    }


def pooled_coverage(validations: list[Validation], mass: int = 90) -> dict:
    """{split: covered cells, cells, rate and its Jeffreys 90 % interval} of the meta-model's
    randomized-PIT coverage over every run's held-out cells (a run's rate times its n_cells)."""
    counts: dict = {}
    for valid in validations:
        for split, scores in valid.scores.items():
            rate = scores.meta_model.coverage(mass) if "meta_model" in scores.methods else None
            n = scores.n_cells
            if rate is not None and n:
                k, total = counts.get(split, (0, 0))
                counts[split] = (k + round(rate * n), total + n)
    out = {}
    for split, (k, n) in counts.items():
        lo, hi = coverage_interval(k, n)
        out[split] = {"covered": k, "cells": n, "rate": k / n, "lo": lo, "hi": hi}
    return out


def _cell(s: dict | None) -> str:
    return "" if s is None else f"{s['mean']:.3f} [{s['min']:.3f}, {s['max']:.3f}]"


def markdown(table: dict, label: str) -> list[str]:
    """One row per split and method: each metric's mean [min, max] over runs."""
    out = [
        f"Mean [min, max] over independent calibrate runs ({label}).",
        "",
        "| split | method | runs | Brier | AUC | PIT cov. 90% | median width 90% |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, methods in table.items():
        for method, metrics in methods.items():
            runs = max(s["runs"] for s in metrics.values())
            cells = " | ".join(_cell(metrics.get(k)) for k in METRICS)
            out.append(f"| {split} | {method} | {runs} | {cells} |")
    return out


def pooled_markdown(pooled: dict, mass: int = 90) -> list[str]:
    """The pooled coverage per split, and whether its interval holds the nominal rate."""
    out = [
        f"Meta-model PIT coverage {mass}%, every run's held-out cells pooled (Jeffreys 90% interval).",
        "",
        "| split | cells | covered | coverage [90% interval] | holds the nominal rate |",
        "|---|---|---|---|---|",
    ]
    for split, c in pooled.items():
        holds = "yes" if c["lo"] <= mass / 100 <= c["hi"] else "no"
        rate = f"{c['rate']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"
        out.append(f"| {split} | {c['cells']} | {c['covered']} | {rate} | {holds} |")
    return out

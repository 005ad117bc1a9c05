"""Seconds and diagnostics of the meta-model's NUTS fit on a simulated table of a given size.

`python -m jaxcap.main.meta_bench` (jaxcap/main/meta_bench.py) parses its flags, reserves the
chains' devices before JAX starts and prints; this module builds the table (simulated from known
parameters, jaxcap/meta/simulate.py) and times the fits. The first fit includes the XLA
compile; later ones reuse the persistent compilation cache when one is set. The target
(docs/meta-model.md, "Against the targets"): 2,000 rows in <= 60 s on a 2-core CPU, R-hat <=
1.01, no divergences. Nothing here asserts a time.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import simulate as meta_simulate

TARGET = {"seconds": 60, "max_rhat": 1.01, "divergences": 0}


def simulated_table(rows: int, families: int, seeds: int) -> meta_data.Table:
    """About `rows` result rows: 2 architectures x `families` x `seeds` a cell, as many levels as
    make up the rows (at least one)."""
    n_levels = max(1, round(rows / (2 * families * seeds)))
    truth = meta_simulate.default_truth(n_levels=n_levels, n_families=families)
    simulated, _ = meta_simulate.simulate_rows(truth, seeds=seeds, rng=np.random.default_rng(0))
    return meta_data.build_table(simulated)


def time_fits(table: meta_data.Table, nuts: dict, repeats: int) -> list[dict]:
    """`repeats` fits of `table` in this process (seed i for the i-th): seconds and diagnostics."""
    runs = []
    for i in range(repeats):
        posterior, _ = meta_fit.fit(table, meta_fit.NutsSettings(**{**nuts, "seed": i}))
        diag = posterior.meta.diagnostics
        runs.append(
            {
                "seconds": round(posterior.meta.seconds, 2),
                "max_rhat": round(diag.max_rhat, 4),
                "worst_rhat_site": max(diag.rhat, key=diag.rhat.get) if diag.rhat else None,
                "min_ess": round(diag.min_ess, 1),
                "divergences": diag.divergences,
                "mean_leapfrog_steps": round(diag.mean_steps, 1),
            }
        )
    return runs


def describe(table: meta_data.Table, nuts: dict, runs: list[dict]) -> dict:
    """The benchmark's JSON: the table's sizes, the NUTS settings, the fits, and the machine (its
    devices and load average: other jobs share a small machine, read the seconds against it)."""
    return {
        "rows": len(table.rows),
        "cells": len({(r.arch, r.level) for r in table.rows}),
        "levels": len(table.levels),
        "families": len(table.families),
        "archs": len(table.archs),
        "nuts": {**nuts, "chain_method": meta_fit.chain_method(nuts["chains"])},
        "runs": runs,
        "devices": f"{len(jax.devices('cpu'))} x cpu (NUTS's; default backend {jax.default_backend()})",
        "cpu_count": os.cpu_count(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "target": TARGET,
    }

"""The experiments a config can name in `config.experiment`.

Each is a `run(config, store)` that trains (resumably) and writes its results and report, and a
`report(store) -> [paths]` that rebuilds the report from the workdir alone (what
`python -m jaxcap.report --workdir D` calls). `population` trains the grid of every bucket
and summarizes it per difficulty level; capacity sweeps, Optuna studies and the meta-model
pipeline register here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxcap.calibrate import calibrate_experiment, calibrate_report
from jaxcap.capacity_report import write_report as capacity_report
from jaxcap.capacity_run import capacity_experiment
from jaxcap.enhance import enhance_experiment, enhance_report
from jaxcap.hpo_report import hpo_report
from jaxcap.run import population_experiment, population_report
from jaxcap.sweep import hpo_experiment


@dataclasses.dataclass(frozen=True)
class Experiment:
    run: Callable[[Any, Any], Any]  # (config, store) -> results
    report: Callable[[Any], list[Path]]  # store -> files written under report/


EXPERIMENTS: dict[str, Experiment] = {
    "population": Experiment(run=population_experiment, report=population_report),
    "hpo": Experiment(run=hpo_experiment, report=hpo_report),  # Optuna studies, jaxcap/sweep.py
    "capacity": Experiment(run=capacity_experiment, report=capacity_report),  # jaxcap/capacity_run.py
    "calibrate": Experiment(run=calibrate_experiment, report=calibrate_report),  # jaxcap/calibrate.py
    "enhance": Experiment(run=enhance_experiment, report=enhance_report),  # multipliers, jaxcap/enhance.py
}

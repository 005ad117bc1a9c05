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

from jaxcap.run import population_experiment, population_report


@dataclasses.dataclass(frozen=True)
class Experiment:
    run: Callable[[Any, Any], Any]  # (config, store) -> results
    report: Callable[[Any], list[Path]]  # store -> files written under report/


EXPERIMENTS: dict[str, Experiment] = {
    "population": Experiment(run=population_experiment, report=population_report),
}

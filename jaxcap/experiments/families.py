"""What the experiments that train task families share (calibrate, pilot, enhance): the level
searches, the training of a family's runs into sub-workdirs, and the difficulty covariate of
every candidate level.

A family is a typed `jaxcap.config.family.Family`, parsed once; these functions train and
measure it. They live below the three experiments so that none imports another's internals:
calibrate trains its grid and boundary rounds with `train_runs`, the pilot its pilot rounds,
and enhance is a calibrate run whose architectures are the variants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from jaxcap import tasks
from jaxcap.config.family import Family, FamilyRun
from jaxcap.config.plan import Plan
from jaxcap.experiments.population_experiment import population_experiment
from jaxcap.meta.difficulty import covariate
from jaxcap.results.store import Store


def grid_search(plan: Plan, store: Store) -> None:
    """Train every member of the family's grid (resumable), print its per-level table, report."""
    population_experiment(plan, store)


def optuna_search(plan: Plan, store: Store) -> None:
    """One Optuna study per level (resumable), then best_trials.jsonl and the HPO report."""
    from jaxcap.experiments.hpo.sweep import hpo_experiment  # imports optuna: only when asked for

    hpo_experiment(plan, store)


# the level searches config.calibrate.search chooses from (jaxcap.config.family.SEARCHES)
SEARCHES: dict[str, Callable[[Plan, Store], None]] = {"grid": grid_search, "optuna": optuna_search}


def train_runs(search: str, root: Path, runs: list[FamilyRun], what: str = "family") -> list[Path]:
    """Train one pass's runs under `root` with the level search `search` (each resumes on its
    own); their workdirs. `what` names the pass in the log ("family", "pilot")."""
    out = []
    for run in runs:
        sub = Store(root / run.part)
        sub.write_config(run.record)
        print(f"== {what} pass {sub.root}", flush=True)
        SEARCHES[search](run.plan, sub)
        out.append(sub.root)
    return out


def level_fields(bucket) -> dict:
    """A level's task fields with its knobs, as a members.jsonl row records them."""
    return {**dataclasses.asdict(bucket.task), **bucket.members[0].knobs}


def candidate_bits(family: Family) -> tuple[float, ...]:
    """Each candidate level's difficulty covariate, as the meta-model table will compute it from
    the rows of that level (jaxcap/meta/difficulty.py)."""
    out = []
    for v in family.values:
        cfg = {**family.task, family.field: v}
        task = tasks.build(cfg)
        knobs = {k: cfg[k] for k in task.spec.knobs}
        fields = {**dataclasses.asdict(task), **knobs}
        out.append(covariate(task.spec.family, fields, task.complexity_bits(knobs))[1])
    return tuple(out)


def with_bits(family: Family) -> Family:
    """The family with its candidates' covariates (`Family.bits`)."""
    return dataclasses.replace(family, bits=candidate_bits(family))

"""Optuna plumbing of a sweep: storage, sampler, pruner, one study per task level, the budget as
a queue of trials that workers claim, and the objective with its seed aggregation; and the hpo
experiment's checked section (`Sweep`, what its registry `check` returns as `plan.section`).

Details: docs/design/hpo.md#a-studys-budget.

[1] Akiba et al. 2019, "Optuna", arXiv:1907.10902.
[2] Bergstra et al. 2011, "Algorithms for Hyper-Parameter Optimization" (TPE), NeurIPS.
[3] Li et al. 2018, "Hyperband", JMLR 18(185), arXiv:1603.06560.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
import optuna
from sqlalchemy.exc import SQLAlchemyError

from jaxcap.config.base import schema
from jaxcap.config.plan import Plan
from jaxcap.core.train import TrainSettings
from jaxcap.experiments.hpo import fingerprint
from jaxcap.experiments.hpo.search_space import (
    Param,
    StudySettings,
    baseline_params,
    check_search,
    parse_space,
)
from jaxcap.fields import ConfigError, from_section
from jaxcap.results.study_storage import make_storage, private  # noqa: F401 (re-exported)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """The hpo experiment's typed section (`plan.section`): what the sweep and its studies read."""

    study: StudySettings  # config.study
    space: tuple[Param, ...]  # config.search, parsed once
    levels: tuple[dict[str, Any], ...]  # one study per level of the config.sweep.task grid
    seeds: int  # members per trial
    seed: int  # config.seed: every trial's sampler seed derives from it
    train: TrainSettings  # the pruner's resources: eval every chunk_steps, up to steps
    select_metric: str  # the task's selection metric, the objective's first value
    baseline: dict[str, Any]  # the config's own values of the searched parameters (trial 0)
    fingerprint: dict[str, Any]  # what a trial is (fingerprint.py): a study refuses another's


def check(config: ml_collections.ConfigDict, plan: Plan) -> Sweep:
    """The hpo section of a config whose bucket `plan` holds: its `Sweep`, once the search and
    study sections pass together and every shape a search may choose builds its bucket."""
    for name, value in check_search(config, schema(config)):
        try:
            plan.buckets[0].with_model(**{name: value})
        except ConfigError as e:
            raise ConfigError(f"config.search.{name}: choice {value!r}: {e}") from None
    bucket, space = plan.buckets[0], tuple(parse_space(config.search))
    return Sweep(
        study=from_section(StudySettings, config.study),
        space=space,
        levels=tuple(levels(config.sweep.task.to_dict())),
        seeds=config.sweep.seeds,
        seed=config.seed,
        train=bucket.settings,
        select_metric=bucket.task.spec.select_metric,
        baseline=baseline_params(config.to_dict(), list(space)),
        fingerprint=fingerprint.fingerprint(config),
    )


def sampler_seed(seed: int, level: int, trial: int) -> int:
    """The sampler seed of one trial's draw: a function of its number, so a resumed round draws
    what the killed one drew and two workers (disjoint trials) never draw alike."""
    return int(np.random.SeedSequence([seed, level, trial]).generate_state(1)[0])


class TrialQMCSampler(optuna.samplers.QMCSampler):
    """Point i of the (scrambled) sequence for trial i, instead of Optuna's counter in the storage,
    which a redraw would advance: a resumed round gets the points the killed one drew."""

    def sample_relative(self, study, trial, search_space):
        self._number = trial.number
        return super().sample_relative(study, trial, search_space)

    def _find_sample_id(self, study, search_space) -> int:
        return self._number


def make_sampler(study_cfg: Any, seed: int, level: int, trial: int) -> optuna.samplers.BaseSampler:
    """The sampler that draws trial number `trial` of level `level` (one per trial, see rounds.py)."""
    kind, trial_seed = study_cfg.sampler, sampler_seed(seed, level, trial)
    if kind == "qmc":  # one scrambled sequence for every round and worker of a level
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            independent = optuna.samplers.RandomSampler(seed=trial_seed)
            return TrialQMCSampler(scramble=True, seed=seed + level, independent_sampler=independent)
    if kind == "tpe":  # constant liar (the v5 default) repels the other trials of a batch
        return optuna.samplers.TPESampler(
            seed=trial_seed, n_startup_trials=study_cfg.n_startup_trials, constant_liar=True
        )
    if kind == "gp":
        return optuna.samplers.GPSampler(seed=trial_seed, n_startup_trials=study_cfg.n_startup_trials)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=max(2, study_cfg.batch_trials), seed=trial_seed)
    return optuna.samplers.RandomSampler(seed=trial_seed)


def make_pruner(study_cfg: Any, train_cfg: Any) -> optuna.pruners.BasePruner:
    """Intermediate values are reported in training steps, one per eval (every chunk)."""
    if study_cfg.pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=study_cfg.prune_startup_trials, n_warmup_steps=study_cfg.prune_warmup_steps
        )
    if study_cfg.pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=train_cfg.chunk_steps, reduction_factor=3)
    if study_cfg.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=train_cfg.chunk_steps, max_resource=train_cfg.steps, reduction_factor=3
        )
    return optuna.pruners.NopPruner()


def levels(knob_grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task levels of a config's `config.sweep.task` grid; one study each."""
    grid = {k: tuple(v) for k, v in knob_grid.items() if len(v)}
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def study_name(study_cfg: Any, family: str, level: dict[str, Any]) -> str:
    prefix = study_cfg.name or family
    return prefix + ("/" + ",".join(f"{k}={v}" for k, v in level.items()) if level else "")


def directions(study_cfg: Any, higher_is_better: bool) -> list[str]:
    first = "maximize" if higher_is_better else "minimize"
    return [first, "minimize"] if study_cfg.objective == "multi" else [first]


def metric_names(study_cfg: Any, select_metric: str) -> list[str]:
    """What each objective is (`member_values`), so optuna-dashboard and the report name it
    rather than saying "Objective 0"."""
    if study_cfg.objective == "multi":
        return [select_metric, "gap"]
    if study_cfg.objective == "val" or select_metric.startswith("train_"):
        return [select_metric]
    return [f"{select_metric} - {study_cfg.gap_penalty:g} x gap"]


# The creator of a study queues its budget right after creating it; a worker that lost the creation
# race waits this long for the first queued trial before concluding the creator was killed.
BUDGET_WAIT_S = 15.0


def _budget_appears(study: optuna.Study) -> bool:
    deadline = time.monotonic() + BUDGET_WAIT_S
    while not study.get_trials(deepcopy=False):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def open_studies(sweep: Sweep, root: Path, family: str, higher_is_better: bool) -> list[optuna.Study]:
    """Load (or create, with its budget queued) the study of every level."""
    try:
        storage = make_storage(sweep.study.storage, root)
        return [
            _open_study(sweep, storage, i, study_name(sweep.study, family, level), higher_is_better)
            for i, level in enumerate(sweep.levels)
        ]
    except (SQLAlchemyError, ValueError, OSError) as e:  # a damaged study.db or journal file
        if isinstance(e, ConfigError):
            raise
        where = sweep.study.storage or "study.db in the workdir"
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise ConfigError(
            f"config.study.storage: cannot open {where} as an Optuna storage ({type(e).__name__}: {reason}); "
            "allowed: an intact storage (move a damaged file away to start afresh)"
        ) from None


def _queue(study: optuna.Study, n: int, every: int = 500) -> None:
    """Enqueue n trials (milliseconds each), saying how far it got when that takes a while."""
    start = time.monotonic()
    for i in range(1, n + 1):
        study.enqueue_trial({})
        if i % every == 0 and i < n and time.monotonic() - start > 2.0:
            print(f"study {study.study_name}: queued {i} of {n} trials", flush=True)


def _open_study(sweep: Sweep, storage, i: int, name: str, higher_is_better: bool) -> optuna.Study:
    n = sweep.study.n_trials
    try:
        created_study = optuna.create_study(
            study_name=name, storage=storage, directions=directions(sweep.study, higher_is_better)
        )
        created = True
        fingerprint.check(created_study, sweep.fingerprint)  # first: a worker that sees the budget sees it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            created_study.set_metric_names(metric_names(sweep.study, sweep.select_metric))
    except optuna.exceptions.DuplicatedStudyError:
        created = False
    pruner, sampler = make_pruner(sweep.study, sweep.train), make_sampler(sweep.study, sweep.seed, i, 0)
    study = optuna.load_study(study_name=name, storage=storage, pruner=pruner, sampler=sampler)
    budget_queued = created or _budget_appears(study)
    fingerprint.check(study, sweep.fingerprint)  # a worker of another config is refused before it trains
    if created or not budget_queued:  # the creator queues it (or was killed first)
        if sweep.study.baseline:
            study.enqueue_trial(dict(sweep.baseline), user_attrs={"baseline": True})
        _queue(study, n - int(sweep.study.baseline))
        study.set_user_attr("budget", n)  # after the queue: a worker that sees it sees the whole budget
        return study
    budget = study.user_attrs.get("budget")  # None: a creator still queueing (or an older study)
    if budget is not None and n < budget:
        raise ConfigError(
            f"config.study.n_trials: got {n}, but study {name} already has a budget of {budget} trials; "
            f"allowed: {budget} or more (a budget grows, never shrinks)"
        )
    if budget is not None and n > budget:
        _queue(study, n - budget)
        study.set_user_attr("budget", n)
        print(f"study {name}: budget extended from {budget} to {n} trials", flush=True)
    return study


def create_studies(plan: Plan, root: Path) -> list[str]:
    """Create the study of every level with its budget queued (once: rerunning changes nothing)
    and describe each in one line. Run it before starting several workers on one storage: when
    fresh workers create one schema together they race (optuna#4621), and a worker that loses a
    study's creation race waits up to BUDGET_WAIT_S for the creator's budget."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the lines below say what was created
    sweep, spec = plan.section, plan.buckets[0].task.spec
    existing = set(optuna.get_all_study_names(make_storage(sweep.study.storage, root)))
    lines = []
    for study in open_studies(sweep, root, spec.family, spec.higher_is_better):
        states = collections.Counter(t.state.name.lower() for t in study.get_trials(deepcopy=False))
        what = "exists " if study.study_name in existing else "created"
        counts = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        lines.append(f"{what} {study.study_name}: {sum(states.values())} trials ({counts})")
    return lines


def member_values(final: dict[str, Any], spec: Any, study_cfg: Any) -> tuple[float, ...] | None:
    """The objective of one member from its metrics, read on val (selection never reads test);
    None when a value is missing (diverged)."""
    val, gap = final.get(spec.select_metric), final.get("gap")
    if val is None or gap is None or not (np.isfinite(val) and np.isfinite(gap)):
        return None
    if study_cfg.objective == "multi":
        return (float(val), float(gap))
    if study_cfg.objective == "val" or spec.select_metric.startswith("train_"):
        return (float(val),)  # memorization tasks succeed on train: a gap is what they measure
    # generalization gap: positive when train beats val (oriented by higher_is_better)
    sign = 1.0 if spec.higher_is_better else -1.0
    return (float(val) - sign * study_cfg.gap_penalty * max(float(gap), 0.0),)


def aggregate(per_seed: list[tuple[float, ...]], finals: list[dict], spec: Any) -> tuple[list[float], dict]:
    """Mean over seeds (what `tell` receives) and the seed spread (trial user attributes), with
    the per-seed selection (val) and outcome (test) metrics: reports quote the outcome."""
    values = np.asarray(per_seed, np.float64)  # [S, objectives]
    ddof = 1 if len(values) > 1 else 0
    attrs = {
        "seed_values": values.tolist(),
        "seed_std": values.std(0, ddof=ddof).tolist(),
        "seed_min": values.min(0).tolist(),
        "seed_max": values.max(0).tolist(),
        spec.select_metric: [f.get(spec.select_metric) for f in finals],
        spec.success_metric: [f.get(spec.success_metric) for f in finals],
        "gap": [f["gap"] for f in finals],
    }
    return values.mean(0).tolist(), attrs

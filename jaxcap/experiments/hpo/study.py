"""Optuna plumbing of a sweep: storage, sampler, pruner, one study per task level, the budget as
a queue of trials that workers claim, and the objective with its seed aggregation; and the hpo
experiment's checked section (`Sweep`, what its registry `check` returns as `plan.section`).

The budget of a study is created once, with the study, as `n_trials` WAITING trials (the first
is the baseline: the config's own hyperparameters), and recorded as the study's user attribute
`budget`. A worker claims waiting trials exactly as `Study.ask` pops enqueued ones — an atomic
RUNNING transition in the storage — but never creates new ones, so any number of workers on one
storage finish the budget with no trial run twice and none beyond it (jaxcap/experiments/hpo/rounds.py). A
larger `n_trials` on an existing study extends its budget; a smaller one is refused. A study
records the config its trials are trained with, and refuses a worker of another config
(jaxcap/experiments/hpo/fingerprint.py).

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
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
import optuna
from sqlalchemy.exc import SQLAlchemyError

from jaxcap.config.search_space import Param, StudySettings, baseline_params, parse_space
from jaxcap.config.storage import storage_file
from jaxcap.experiments.hpo import fingerprint
from jaxcap.fields import ConfigError, from_section


@dataclasses.dataclass(frozen=True)
class Sweep:
    """The hpo experiment's checked section (`plan.section`): what the sweep reads, typed."""

    study: StudySettings  # config.study
    space: tuple[Param, ...]  # config.search, parsed once
    levels: tuple[dict[str, Any], ...]  # one study per level of the config.sweep.task grid
    seeds: int  # members per trial
    # The one ConfigDict of a sweep, for the two things derived from the whole config: a round's
    # buckets (each shape is the config's model section with a trial's model fields, built as any
    # bucket is: jaxcap.config.plan.make_bucket) and the Optuna studies (`open_studies`, which
    # --create_studies and the report also call, on a config or a config.json).
    config: ml_collections.ConfigDict


def check(config: ml_collections.ConfigDict) -> Sweep:
    """The registry check of an hpo config (validate has checked the search and study sections
    together): its `Sweep`."""
    study = from_section(StudySettings, config.study)
    return Sweep(study, tuple(parse_space(config.search)), tuple(levels(config)), config.sweep.seeds, config)


def private(spec: str) -> bool:
    """Whether a storage spec names the workdir's own file ('' or 'journal'): no other worker
    reaches it, so nothing is claimed from or taken over by one."""
    return spec in ("", "journal")


def make_storage(spec: str, root: Path) -> optuna.storages.BaseStorage:
    """'' -> sqlite study.db in the workdir; 'journal' -> study.log there; an RDB URL; a path
    ending in .db (SQLite) or .log (journal file, the simplest choice for several workers). The
    folder of a file (a path, a sqlite URL) is created."""
    if private(spec):
        spec = str(Path(root).resolve() / ("study.log" if spec == "journal" else "study.db"))
    file = storage_file(spec)  # checked writable by validate (jaxcap.config.storage)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    if spec.endswith(".log") and "://" not in spec:
        return optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(Path(spec).resolve()))
        )
    url = spec if "://" in spec else f"sqlite:///{Path(spec).resolve()}"
    # several processes on one SQLite file wait for its lock instead of failing (optuna#820)
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)


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


def levels(config: Any) -> list[dict[str, Any]]:
    """The task levels of a config (the grid of config.sweep.task); one study each."""
    grid = {k: tuple(v) for k, v in config.sweep.task.items() if len(v)}
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def study_name(config: Any, family: str, level: dict[str, Any]) -> str:
    prefix = config.study.name or family
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


def open_studies(config: Any, root: Path, family: str, higher_is_better: bool) -> list[optuna.Study]:
    """Load (or create, with its budget queued) the study of every level."""
    from jaxcap import tasks

    select = tasks.build(config.task.to_dict(), config.sweep.task.to_dict()).spec.select_metric
    try:
        storage = make_storage(config.study.storage, root)
        return [
            _open_study(config, storage, i, study_name(config, family, level), higher_is_better, select)
            for i, level in enumerate(levels(config))
        ]
    except (SQLAlchemyError, ValueError, OSError) as e:  # a damaged study.db or journal file
        if isinstance(e, ConfigError):
            raise
        where = config.study.storage or "study.db in the workdir"
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


def _open_study(
    config: Any, storage, i: int, name: str, higher_is_better: bool, select_metric: str
) -> optuna.Study:
    n = config.study.n_trials
    try:
        created_study = optuna.create_study(
            study_name=name, storage=storage, directions=directions(config.study, higher_is_better)
        )
        created = True
        fingerprint.check(created_study, config)  # first: a worker that sees the budget sees it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            created_study.set_metric_names(metric_names(config.study, select_metric))
    except optuna.exceptions.DuplicatedStudyError:
        created = False
    pruner, sampler = make_pruner(config.study, config.train), make_sampler(config.study, config.seed, i, 0)
    study = optuna.load_study(study_name=name, storage=storage, pruner=pruner, sampler=sampler)
    budget_queued = created or _budget_appears(study)
    fingerprint.check(study, config)  # a worker of another config is refused before it trains
    if created or not budget_queued:  # the creator queues it (or was killed first)
        if config.study.baseline:
            study.enqueue_trial(
                baseline_params(config, parse_space(config.search)), user_attrs={"baseline": True}
            )
        _queue(study, n - int(config.study.baseline))
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


def create_studies(config: Any, root: Path) -> list[str]:
    """Create the study of every level with its budget queued (once: rerunning changes nothing)
    and describe each in one line. Run it before starting several workers on one storage: when
    fresh workers create one schema together they race (optuna#4621), and a worker that loses a
    study's creation race waits up to BUDGET_WAIT_S for the creator's budget."""
    from jaxcap import tasks

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the lines below say what was created
    spec = tasks.build(config.task.to_dict(), config.sweep.task.to_dict()).spec
    existing = set(optuna.get_all_study_names(make_storage(config.study.storage, root)))
    lines = []
    for study in open_studies(config, root, spec.family, spec.higher_is_better):
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

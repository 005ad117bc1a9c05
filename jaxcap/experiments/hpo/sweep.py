"""Batched Optuna search: a round of trials is one population (evosax-style ask/tell).

Each round claims up to `study.batch_trials` trials from every level's study, expands each
trial into `sweep.seeds` members whose HParams are the trial's suggestions (traced arrays, so
rounds never recompile), groups the members by the shape-changing suggestions (model fields)
into buckets, and trains each bucket as one population with `run.train_bucket`. Levels share a
population: x mod 5 and x mod 640 trials of one round are members of one program.

Details: docs/design/hpo.md#pruning-inside-a-population.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from pathlib import Path

import optuna

from jaxcap.config import plan as plan_lib
from jaxcap.config.plan import Bucket
from jaxcap.core.population import Member
from jaxcap.experiments.hpo import claims, holdings, telling
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo import worker_rounds as rounds
from jaxcap.experiments.hpo.level_table import HpoLevel
from jaxcap.experiments.hpo.search_space import suggest
from jaxcap.experiments.hpo.telling import Slot
from jaxcap.results import told
from jaxcap.results.store import Store, clean, write_atomic
from jaxcap.training.loop import train_bucket


def _slot(level: int, study: optuna.Study, frozen: optuna.trial.FrozenTrial, space) -> Slot:
    if frozen.state.is_finished():
        hparams = {p.name: float(frozen.params[p.name]) for p in space if p.target == "hparams"}
        model = {p.name: frozen.params[p.name] for p in space if p.target == "model"}
        return Slot(level, study, frozen.number, None, hparams, model, set(frozen.intermediate_values))
    trial = optuna.Trial(study, frozen._trial_id)
    return Slot(level, study, frozen.number, trial, *suggest(trial, space), set(frozen.intermediate_values))


def make_bucket(
    sweep: study_lib.Sweep, base: Bucket, name: str, model: dict, slots: list[Slot], levels
) -> Bucket:
    """The population of one shape: every slot's trial x seeds, ordered slot by slot, on the plan's
    bucket `base` with the trials' model fields."""
    bucket = base.with_model(**model) if model else base
    members = []
    for slot in slots:
        slot.members = []
        for seed in range(sweep.seeds):
            slot.members.append(len(members))
            members.append(
                Member(
                    index=len(members),
                    seed=seed,
                    hparams={**base.grid.hparams, **slot.hparams},
                    knobs={**bucket.task.default_knobs(), **levels[slot.level]},
                    trial=slot.number,
                    study=slot.study.study_name,  # in its members.jsonl row
                )
            )
    # a searched dropout keeps the dropout path in every round: one compile, not two
    bucket = bucket.with_members(members, dropout=any(p.name == "dropout" for p in sweep.space))
    label = ",".join(f"model.{k}={v}" for k, v in sorted(model.items()))
    return dataclasses.replace(bucket, name=name, label=label)


def plan_round(plan: plan_lib.Plan, studies, round_id: str, trials) -> list[tuple[Bucket, list[Slot]]]:
    """The buckets of one round: its trials grouped by their shape-changing suggestions. Trial by
    trial, its suggestions are drawn once (jaxcap/experiments/hpo/worker_rounds.py) before its slot
    records them."""
    sweep = plan.section
    space, slots = list(sweep.space), []
    for level, frozen in sorted(trials, key=lambda lt: (lt[0], lt[1].number)):
        if not frozen.state.is_finished():
            sampler = study_lib.make_sampler(sweep.study, plan.seed, level, frozen.number)
            rounds.fix_suggestions(studies[level], frozen._trial_id, space, sampler)
        slots.append(_slot(level, studies[level], frozen, space))
    groups: dict[tuple, list[Slot]] = {}
    for slot in slots:
        groups.setdefault(tuple(sorted(slot.model.items())), []).append(slot)
    return [
        (
            make_bucket(sweep, plan.buckets[0], f"r{round_id}g{j}", dict(key), groups[key], sweep.levels),
            groups[key],
        )
        for j, key in enumerate(sorted(groups, key=repr))
    ]


def run_round(plan: plan_lib.Plan, store: Store, studies, round_id: str, trials, owner: str) -> None:
    """Train the trials of one round (grouped into buckets by shape) and tell the results of
    those this worker still holds (a trial released meanwhile is another worker's now)."""
    sweep = plan.section
    for bucket, group in plan_round(plan, studies, round_id, trials):
        spec, names = bucket.task.spec, {slot.study.study_name for slot in group}
        print(
            f"[round {round_id}] {len(group)} trials of {len(names)} studies x {sweep.seeds} seeds "
            f"= {len(bucket.members)} members" + (f" ({bucket.label})" if bucket.label else ""),
            flush=True,
        )
        if store.complete(bucket.name, len(bucket.members)):  # trained before a kill, not yet told
            rows = [r for r in store.members() if r.bucket == bucket.name]
            if any(r.study is None for r in rows):  # trained by a jaxcap that wrote the study later
                study = {i: slot.study.study_name for slot in group for i in slot.members}
                rows = [dataclasses.replace(r, study=study[r.member]) for r in rows]
                store.add_member_rows(rows)
        else:
            on_eval = telling.make_on_eval(group, spec, sweep.study, bucket.settings.steps, owner)
            with bucket.numerics():
                rows = train_bucket(bucket, store, plan.runtime, stop_fn=telling.all_stopped, on_eval=on_eval)
        rows = sorted(rows, key=lambda r: r.member)
        # a lost trial's rows leave members.jsonl at the next round (holdings.forget_lost)
        counts = telling.tell(group, rows, spec, sweep.study, owner)
        pruned = sum(r.status == "pruned" for r in rows) // sweep.seeds
        print(
            f"[round {round_id}] told {counts['complete']} complete, {pruned} pruned, "
            f"{counts['fail']} failed",
            flush=True,
        )
        shutil.rmtree(store.ckpt_path / bucket.name, ignore_errors=True)  # told: nothing to resume


def run_sweep(plan: plan_lib.Plan, store: Store) -> list[optuna.Study]:
    """Claim and train rounds until every trial of this plan's studies is finished: a worker
    whose queue is empty waits for the trials other workers hold, and takes over those of a
    worker silent past `config.runtime.worker_grace_minutes` (jaxcap/experiments/hpo/claims.py).
    `plan.section` is the `Sweep` of an hpo config (`jaxcap.run.prepare` builds the plan)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sweep, owner = plan.section, str(store.root.resolve())
    private = study_lib.private(sweep.study.storage)
    grace_s = None if private else 60.0 * plan.runtime.worker_grace_minutes
    [bucket] = plan.buckets  # the config's own shape (hpo refuses config.sweep.buckets)
    spec = bucket.task.spec
    studies = study_lib.open_studies(sweep, store.root, spec.family, spec.higher_is_better)
    if not private:  # the tag it tells trials with (its studies accepted it), kept should the workdir move
        told.record_worker(store.root, owner)
    n_rounds, waiting = 0, False
    while True:
        trained = store.finished_buckets() | (
            {p.name for p in store.ckpt_path.iterdir()} if store.ckpt_path.is_dir() else set()
        )
        round_id, trials, resumed = rounds.next_trials(
            studies, owner, sweep.study.batch_trials, private, trained, grace_s
        )
        if resumed and holdings.lost_trials(studies, owner, round_id):
            n = holdings.give_back(studies, owner, round_id)
            print(
                f"[round {round_id}] another worker took over some of its trials: its checkpoints no "
                f"longer fit, {n} trial(s) it still held go back to the queue",
                flush=True,
            )
            holdings.forget_lost(store, studies, owner, None)
            continue
        if not private:
            holdings.forget_lost(store, studies, owner, round_id)
        if resumed:
            print(f"[round {round_id}] resuming {len(trials)} trials left by a killed run", flush=True)
        if not trials:
            others = [] if private else rounds.held_by_others(studies, owner)
            if others:
                if not waiting:
                    print(
                        f"waiting for {len(others)} trial(s) other workers hold (taken over if their "
                        "workers stay silent past their own grace period)",
                        flush=True,
                    )
                waiting = True
                time.sleep(min(30.0, grace_s / 4))
                continue
            if not n_rounds:
                print("finished: no study of this config has a trial left to run", flush=True)
            break
        n_rounds, waiting = n_rounds + 1, False
        start = time.time()
        held = [(studies[level], t._trial_id) for level, t in trials if not t.state.is_finished()]
        beat = contextlib.nullcontext() if private else claims.Heartbeat(held, min(60.0, grace_s / 4), owner)
        with beat:
            run_round(plan, store, studies, round_id, trials, owner)
        print(f"[round {round_id}] {time.time() - start:.0f} s", flush=True)
    return studies


def write_best_trials(
    store: Store, levels: list[HpoLevel], studies: list[optuna.Study], owner: str | set[str] | None
) -> Path:
    """best_trials.jsonl: the members.jsonl rows of each level's best trial, if this workdir's
    worker told it (`told.told_rows`: another worker's workdir has the rows that count)."""
    best = {(lv.study, lv.best.trial) for lv in levels if lv.best}
    chosen = [r for r in told.told_rows(store.members(), studies, owner) if (r.study, r.trial) in best]
    path = store.root / "best_trials.jsonl"
    write_atomic(path, "".join(json.dumps(clean(r.to_json()), sort_keys=True) + "\n" for r in chosen))
    return path


def hpo_experiment(plan: plan_lib.Plan, store: Store) -> list[HpoLevel]:
    """Run (or resume) every level's study, then write best_trials.jsonl and the HPO report. Its
    rounds are buckets of their own (`plan_round`), shapes of the plan's checked `Sweep`."""
    from jaxcap.experiments.hpo import report

    start, before = time.time(), len(store.member_rows())
    run_sweep(plan, store)
    if not store.members():  # every trial was told by other workers: their workdirs hold the rows
        print(f"{store.root}: this worker told no trial (others' workdirs hold its rows)", flush=True)
        return []
    levels, studies = report.summarize(store)
    write_best_trials(store, levels, studies, report.owner(store, plan.section.study.storage))
    written = report.hpo_report(store)
    print(report.format_table(levels), flush=True)
    added = len(store.member_rows()) - before  # a finished rerun trains nothing: say so
    rows = f"members.jsonl (+{added} rows)" if added else "reused members.jsonl (trained before)"
    print(
        f"wrote best_trials.jsonl, {', '.join(str(p.relative_to(store.root)) for p in written)} in "
        f"{store.root}; {rows} ({time.time() - start:.0f} s)",
        flush=True,
    )
    return levels

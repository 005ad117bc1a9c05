"""The rounds of a sweep worker: which trials it trains together, and what each trial is.

A worker claims up to `study.batch_trials` waiting trials of every level's study (an atomic
RUNNING transition, as `Study.ask` pops enqueued trials) and tags each with the worker (its
workdir) and the round, because ask/tell records no heartbeats: a rerun of a killed worker
finds its own RUNNING trials and resumes that round from its checkpoint, so no trial is lost
and none is failed. Rounds are numbered per worker, so a rerun names its buckets exactly as an
uninterrupted run does.

What a trial is — its suggestions — is drawn once and stored in one write (the trial's
`fixed_params`, which Optuna's `suggest` then returns), trial by trial in a fixed order, each
with a sampler seeded by the trial's own number. A kill between two draws, or between two
parameters of one draw, leaves every trial either whole or undrawn, and a redraw sees the same
seed and the same history: a resumed round trains exactly the trials the killed one would have.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from jaxcap.experiments.hpo import claims

Trials = list[tuple[int, FrozenTrial]]  # (level, trial)


def claim(
    study: optuna.Study, n: int, owner: str, round_id: str, grace_s: float | None = None
) -> list[FrozenTrial]:
    """Up to n waiting trials of `study`, now RUNNING and tagged as this worker's round (with its
    grace period, when it shares the storage), each in one atomic claim
    (jaxcap/experiments/hpo/claims.py)."""
    trials = []
    for frozen in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        if len(trials) >= n:
            break
        if claims.claim(study, frozen._trial_id, owner, round_id, grace_s):
            trials.append(study._storage.get_trial(frozen._trial_id))
    return trials


def release_stale(studies: list[optuna.Study], owner: str, grace_s: float) -> int:
    """Give back to the queue the RUNNING trials of workers silent past their own grace period
    (grace_s for a claim that recorded none): dead."""
    released = 0
    for study in studies:
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if claims.stale(trial, owner, grace_s) and claims.release(study, trial):
                released += 1
    return released


def _tag(study: optuna.Study, trial: FrozenTrial, owner: str, round_id: str) -> None:
    study._storage.set_trial_user_attr(trial._trial_id, "worker", owner)
    study._storage.set_trial_user_attr(trial._trial_id, "round", round_id)


# A claim writes RUNNING, then its two tags, milliseconds apart; an untagged RUNNING trial younger
# than this may be another worker's claim in flight (the race CI once hit), not a killed one's.
ADOPT_AFTER = datetime.timedelta(minutes=2)


def _orphan(trial: FrozenTrial, owner: str, private: bool) -> bool:
    """A RUNNING trial whose claimer died before tagging it with its round: this worker's to
    adopt when it tagged it as its own, when no other worker can reach the storage (`private`:
    the storage lives in this worker's locked workdir), or when its claim is old."""
    attrs = trial.user_attrs
    if "round" in attrs or attrs.get("worker", owner) != owner:
        return False
    start = trial.datetime_start
    old = start is None or datetime.datetime.now() - start > ADOPT_AFTER
    return "worker" in attrs or private or old


def next_round(studies: list[optuna.Study], owner: str, used: set[str] = frozenset()) -> str:
    """The number of this worker's next round: how many rounds it has claimed so far, past any
    round its workdir already used (a round whose trials were all released keeps its buckets'
    names from being reused)."""
    rounds = {
        t.user_attrs.get("round")
        for s in studies
        for t in s.get_trials(deepcopy=False)
        if t.user_attrs.get("worker") == owner
    }
    n = len(rounds - {None})
    released = {t.user_attrs.get(f"released:{owner}") for s in studies for t in s.get_trials(deepcopy=False)}
    while str(n) in used or str(n) in rounds or str(n) in released:  # never a round id twice
        n += 1
    return str(n)


def leftover_round(
    studies: list[optuna.Study], owner: str, private: bool = False, used: set[str] = frozenset()
) -> tuple[str, Trials] | None:
    """A round this worker left unfinished (a RUNNING trial of its own), with all its trials;
    orphaned claims (see `_orphan`) join it."""
    running = [(s, t) for s in studies for t in s.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    mine = [
        t.user_attrs["round"]
        for _, t in running
        if t.user_attrs.get("worker") == owner and "round" in t.user_attrs
    ]
    orphans = [(s, t) for s, t in running if _orphan(t, owner, private)]
    if not mine and not orphans:
        return None
    round_id = mine[0] if mine else next_round(studies, owner, used)
    for study, trial in orphans:
        _tag(study, trial, owner, round_id)
    return round_id, _members(studies, owner, round_id)


def _members(studies: list[optuna.Study], owner: str, round_id: str) -> Trials:
    return [
        (level, t)
        for level, s in enumerate(studies)
        for t in s.get_trials(deepcopy=False)
        if t.user_attrs.get("round") == round_id and t.user_attrs.get("worker") == owner
    ]


def held_by_others(studies: list[optuna.Study], owner: str) -> list[FrozenTrial]:
    """The RUNNING trials of other workers (alive, or silent until their grace period ends)."""
    return [
        t
        for s in studies
        for t in s.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if t.user_attrs.get("worker") != owner
    ]


def used_rounds(trained: set[str]) -> set[str]:
    """The rounds named by bucket names `r<round>g<j>` in a workdir."""
    return {name[1:].split("g")[0] for name in trained if name.startswith("r") and "g" in name}


def next_trials(
    studies: list[optuna.Study],
    owner: str,
    batch: int,
    private: bool,
    trained: set[str],
    grace_s: float | None = None,
) -> tuple[str, Trials, bool]:
    """(round, its trials, whether it was left by a killed run). A round that trained nothing yet
    (no bucket `r<round>g*` in `trained`) is filled up to `batch` trials per level, so a kill
    in the middle of claiming resumes to the round an uninterrupted run claims. Trials of dead
    workers (silent past their grace period) go back to the queue first; this worker's claims
    record its own grace_s."""
    used = used_rounds(trained)
    left = leftover_round(studies, owner, private, used)
    round_id, trials = left if left is not None else (next_round(studies, owner, used), [])
    if not any(name.startswith(f"r{round_id}g") for name in trained):
        if grace_s is not None and not private:
            release_stale(studies, owner, grace_s)
        for level, study in enumerate(studies):
            have = sum(lv == level for lv, _ in trials)
            trials += [(level, t) for t in claim(study, batch - have, owner, round_id, grace_s)]
    return round_id, sorted(trials, key=lambda lt: (lt[0], lt[1].number)), left is not None


class _DraftStorage:
    """A storage that forwards everything but parameter writes: a draft trial draws, unrecorded."""

    def __init__(self, storage: optuna.storages.BaseStorage):
        self._storage = storage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def set_trial_param(self, *args: Any, **kwargs: Any) -> None:
        return None


def fix_suggestions(
    study: optuna.Study, trial_id: int, space: list, sampler: optuna.samplers.BaseSampler
) -> None:
    """Draw the values of one trial's searched parameters (`space`) with `sampler`, unless they
    are drawn already, and store them in one write as its `fixed_params`."""
    fixed = study._storage.get_trial(trial_id).system_attrs.get("fixed_params", {})
    if all(p.name in fixed for p in space):  # drawn before a kill, or enqueued (the baseline)
        return
    study.sampler = sampler
    draft = optuna.Trial(study, trial_id)  # Optuna's own suggest logic (relative, fixed, independent)
    draft.storage = _DraftStorage(study._storage)
    # the draft notes its values in its copy of the trial; a journal storage hands out its own
    draft._cached_frozen_trial = copy.deepcopy(draft._cached_frozen_trial)
    values = {p.name: p.suggest(draft) for p in space}
    study._storage.set_trial_system_attr(trial_id, "fixed_params", values)

"""Which worker holds a trial: an atomic claim that records its holder, heartbeats, and release.

A trial belongs to exactly one worker: claiming is one WAITING -> RUNNING transition only one
worker can win (one SQL transaction on an RDB storage, the log's order on a journal file), and
the claim records its holder and round. A holder writes heartbeats while it trains; a RUNNING
trial whose newest heartbeat is older than its holder's own grace period belongs to a dead worker
and is released (RUNNING -> WAITING) for another to claim, keeping its number, parameters and
seeds (where Optuna's heartbeat would fail it and enqueue a copy).

Details: docs/design/hpo.md#claims-and-heartbeats.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial, TrialState

RELEASED = ""  # the holder of a trial given back to the queue


def _rdb(study: optuna.Study) -> RDBStorage | None:
    backend = getattr(study._storage, "_backend", study._storage)  # Optuna wraps RDB in a cache
    return backend if isinstance(backend, RDBStorage) else None


@contextmanager
def _transaction(rdb: RDBStorage) -> Iterator:
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(rdb.scoped_session) as session:
        yield session


def _utc(local: datetime.datetime | None) -> datetime.datetime | None:
    """A naive local time as Optuna's RDB column holds it: naive UTC."""
    return None if local is None else local.astimezone(datetime.UTC).replace(tzinfo=None)


def _conditional_update(rdb: RDBStorage, trial_id: int, old: dict, new: dict, tags: dict) -> bool:
    """One transaction: set `new` columns where the trial's columns equal `old`, then `tags`
    (column names as in Optuna's TrialModel: a start time is `_datetime_start_utc`)."""
    from optuna.storages._rdb import models

    trial = models.TrialModel
    with _transaction(rdb) as session:
        query = session.query(trial).filter(trial.trial_id == trial_id)
        for column, value in old.items():
            query = query.filter(getattr(trial, column) == value)
        if query.update({getattr(trial, c): v for c, v in new.items()}, synchronize_session=False) != 1:
            return False
        for key, value in tags.items():
            rdb._set_trial_attr_without_commit(session, models.TrialUserAttributeModel, trial_id, key, value)
    return True


def claim(
    study: optuna.Study, trial_id: int, owner: str, round_id: str, grace_s: float | None = None
) -> bool:
    """Make a waiting trial this worker's (RUNNING, tagged with the holder's grace period when it
    has one); False when another worker was first."""
    tags = {"worker": owner, "round": round_id, "heartbeat": time.time()}
    if grace_s is not None:
        tags["grace_s"] = float(grace_s)
    rdb = _rdb(study)
    if rdb is not None:
        new = {"state": TrialState.RUNNING, "_datetime_start_utc": _utc(datetime.datetime.now())}
        return _conditional_update(rdb, trial_id, {"state": TrialState.WAITING}, new, tags)
    try:  # Study.ask's own claim (_pop_waiting_trial_id): the journal's order decides
        if not study._storage.set_trial_state_values(trial_id, state=TrialState.RUNNING):
            return False
    except UpdateFinishedTrialError:
        return False
    for key, value in tags.items():
        study._storage.set_trial_user_attr(trial_id, key, value)
    return True


def release(study: optuna.Study, trial: FrozenTrial) -> bool:
    """Give a RUNNING trial back to the queue (holder cleared); False if it changed meanwhile."""
    # `released:<holder>` names the holder's round: its rerun learns that the round lost a trial
    holder = trial.user_attrs.get("worker")
    tags = {"worker": RELEASED, "round": RELEASED, f"released:{holder}": trial.user_attrs.get("round")}
    rdb = _rdb(study)
    if rdb is not None:  # only the claim we saw: not one another worker made since
        old = {"state": TrialState.RUNNING, "_datetime_start_utc": _utc(trial.datetime_start)}
        return _conditional_update(rdb, trial._trial_id, old, {"state": TrialState.WAITING}, tags)
    try:
        study._storage.set_trial_state_values(trial._trial_id, state=TrialState.WAITING)
        for key, value in tags.items():
            study._storage.set_trial_user_attr(trial._trial_id, key, value)
    except UpdateFinishedTrialError:
        return False
    return True


def last_sign_of_life(trial: FrozenTrial) -> float:
    """Unix time of a RUNNING trial's newest heartbeat, or of its claim."""
    start = trial.datetime_start.timestamp() if trial.datetime_start else 0.0
    return max(float(trial.user_attrs.get("heartbeat") or 0.0), start)


def stale(trial: FrozenTrial, owner: str, grace_s: float) -> bool:
    """A RUNNING trial another worker holds (or claimed and died before tagging) and has not
    beaten for its holder's grace period (`grace_s`, this worker's, when the claim recorded none)."""
    if trial.state != TrialState.RUNNING or trial.user_attrs.get("worker") in (owner, RELEASED):
        return False
    holder_grace = trial.user_attrs.get("grace_s")
    return time.time() - last_sign_of_life(trial) > (grace_s if holder_grace is None else holder_grace)


def holds(study: optuna.Study, trial_id: int, owner: str) -> bool:
    """Whether this worker still holds the trial (RUNNING and tagged as its own)."""
    trial = study._storage.get_trial(trial_id)
    return trial.state == TrialState.RUNNING and trial.user_attrs.get("worker") == owner


class Heartbeat:
    """A thread writing `heartbeat` every `every_s` on every trial in `held` (study, trial id) that
    `owner` still holds (without an owner: on every one); a trial lost or finished leaves `held`,
    so a worker never beats for the trial another worker took over."""

    def __init__(self, held: list[tuple[optuna.Study, int]], every_s: float, owner: str | None = None):
        self.held, self.every_s, self.owner, self._stop = list(held), every_s, owner, threading.Event()
        self._thread = threading.Thread(target=self._run, name="jaxcap-heartbeat", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for study, trial_id in list(self.held):
                try:
                    if self.owner is not None and not holds(study, trial_id, self.owner):
                        self.held.remove((study, trial_id))
                        continue
                    study._storage.set_trial_user_attr(trial_id, "heartbeat", time.time())
                except UpdateFinishedTrialError:  # told or pruned meanwhile
                    self.held.remove((study, trial_id))
                except Exception:  # noqa: BLE001 — a storage hiccup: the next beat tries again
                    pass

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

"""What a round tells its studies: each trial's seed-mean objective at every eval, PRUNED for what
the pruner prunes (its members frozen inside the running population), and at the end the seed
mean (or FAIL), only for the trials this worker still holds (`Slot`: one trial of a round).

A worker that was silent past its grace period may have lost a trial to another worker
(jaxcap/experiments/hpo/claims.py): a worker stopped or starved for longer than it promised.
So it checks at every eval and before every tell that it still holds each trial; a lost trial
is dropped (its members frozen, nothing more reported or told, one line says so) and the round
goes on with the others. Telling a trial another worker released meanwhile raised `Cannot tell a
WAITING trial` and ended the worker; telling one another worker claimed since would have told
that worker's trial. The rows the worker trained for a lost trial leave its members.jsonl at its
next round (jaxcap/experiments/hpo/holdings.py); the worker that holds the trial now trains and
tells it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from jaxcap.experiments.hpo import claims
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.results.records import Cursor, MemberRow


@dataclasses.dataclass
class Slot:
    """One trial of a round: its level, study and trial, its values, and its members."""

    level: int
    study: optuna.Study
    number: int
    trial: optuna.Trial | None  # None when it finished before a resume (pruned or told)
    hparams: dict[str, float]
    model: dict[str, Any]
    reported: set[int]
    members: list[int] = dataclasses.field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.trial is None


def _lost(slot: Slot, owner: str | None) -> bool:
    """Whether another worker took the slot's trial over; if so it is dropped, untold (said once)."""
    if owner is None or slot.finished or claims.holds(slot.study, slot.trial._trial_id, owner):
        return False
    print(
        f"{slot.study.study_name} trial {slot.number}: another worker took it over (this one was "
        "silent past its grace period); dropped, not told",
        flush=True,
    )
    slot.trial = None
    return True


def make_on_eval(slots: list[Slot], spec, study_cfg, final_step: int, owner: str | None = None):
    """Report each trial's seed-mean objective; freeze and tell PRUNED what the pruner prunes.
    With an `owner`, a trial it no longer holds is frozen and dropped instead (`_lost`)."""

    def on_eval(cursor: Cursor, host: dict[str, np.ndarray]) -> np.ndarray:
        frozen = np.asarray(cursor.is_frozen(len(host["diverged"])), bool)
        step = cursor.step
        for slot in slots:
            idx = slot.members
            if slot.finished or _lost(slot, owner):  # pruned before a resume, or lost: frozen
                frozen[idx] = True
                continue
            per_seed = [
                study_lib.member_values({k: v[i] for k, v in host.items()}, spec, study_cfg) for i in idx
            ]
            if study_cfg.objective == "multi" or any(
                v is None or host["diverged"][i] for v, i in zip(per_seed, idx)
            ):
                continue  # Optuna prunes single-objective trials only; diverged trials FAIL at the end
            try:
                if step not in slot.reported:
                    slot.trial.report(float(np.mean([v[0] for v in per_seed])), step)
                    slot.reported.add(step)
                if step < final_step and slot.trial.should_prune():
                    slot.study.tell(slot.trial, state=TrialState.PRUNED)
                    slot.trial = None
                    frozen[idx] = True
            except (UpdateFinishedTrialError, ValueError) as e:  # released or told since it looked
                if not _lost(slot, owner) and not isinstance(e, UpdateFinishedTrialError):
                    raise
                slot.trial = None
                frozen[idx] = True
        return frozen

    return on_eval


def all_stopped(cursor: Cursor) -> bool:
    """A round's `stop_fn`: every member frozen (its trial pruned, finished or lost) or diverged."""
    diverged = np.asarray(cursor.last["diverged"]) > 0
    inactive = np.asarray(cursor.is_frozen(len(diverged)), bool) | diverged
    return bool(inactive.all())


def tell(
    slots: list[Slot], rows: list[MemberRow], spec, study_cfg, owner: str | None = None
) -> dict[str, int]:
    """Tell every unfinished trial its seed-aggregated values (or FAIL); count the outcomes. With
    an `owner`, only the trials it still holds: a lost one is dropped, untold (`_lost`)."""
    counts = {"complete": 0, "fail": 0}
    for slot in slots:
        if slot.finished or _lost(slot, owner):
            continue
        members = [rows[i] for i in slot.members]
        per_seed = [study_lib.member_values(r.final, spec, study_cfg) for r in members]
        try:
            if any(r.status == "diverged" for r in members) or any(v is None for v in per_seed):
                diverged = [r.seed for r in members if r.status == "diverged"]
                slot.trial.set_user_attr("diverged_seeds", diverged)
                slot.study.tell(slot.trial, state=TrialState.FAIL)
                counts["fail"] += 1
            else:
                values, attrs = study_lib.aggregate(per_seed, [r.final for r in members], spec)
                for key, value in attrs.items():
                    slot.trial.set_user_attr(key, value)
                slot.study.tell(slot.trial, values)
                counts["complete"] += 1
        except (UpdateFinishedTrialError, ValueError) as e:
            # released since it looked ("Cannot tell a WAITING trial"), or told by another worker
            if not _lost(slot, owner) and not isinstance(e, UpdateFinishedTrialError):
                raise
        slot.trial = None
    return counts

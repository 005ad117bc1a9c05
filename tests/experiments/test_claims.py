"""A trial belongs to exactly one worker (jaxcap/experiments/hpo/claims.py): processes claiming
one queue together take every trial once on SQLite, a journal file and PostgreSQL; a silent
worker's trials go back to the queue after the grace period, and its rerun forgets them."""

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna
import pytest
from helpers import ROOT, member_row
from optuna.trial import TrialState

from jaxcap.experiments.hpo import claims, holdings
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo import worker_rounds as rounds
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store

pytestmark = pytest.mark.slow  # end-to-end launches and multi-process runs: the full tier

# one claimer: waits for the start signal (a file), then claims one trial at a time until none is left
CLAIMER = """
import json, os, sys, time
import optuna
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo import worker_rounds as rounds
optuna.logging.set_verbosity(optuna.logging.WARNING)
spec, name, owner, go = sys.argv[1:5]
study = optuna.load_study(study_name=name, storage=study_lib.make_storage(spec, "."))
while not os.path.exists(go):
    time.sleep(0.001)
got = []
while True:
    trials = rounds.claim(study, 1, owner, str(len(got)))
    if not trials:
        break
    got += [t.number for t in trials]
print(json.dumps(got))
"""


def _storage(kind: str, tmp_path: Path, postgres_url: str | None = None) -> str:
    return {"sqlite": f"sqlite:///{tmp_path / 'shared.db'}", "journal": str(tmp_path / "shared.log")}.get(
        kind, postgres_url
    )


@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgresql"])
def test_workers_claiming_together_take_every_trial_exactly_once(tmp_path, kind, request):
    spec = _storage(kind, tmp_path, request.getfixturevalue("postgres") if kind == "postgresql" else None)
    name = f"claims-{uuid.uuid4().hex[:8]}"
    study = optuna.create_study(study_name=name, storage=study_lib.make_storage(spec, tmp_path))
    n = 60
    for _ in range(n):
        study.enqueue_trial({})
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, spec, name, f"w{i}", str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    time.sleep(3.0)  # every claimer imported and waiting
    go.write_text("")
    got = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    numbers = [t for worker in got for t in worker]
    assert sorted(numbers) == list(range(n)), f"claimed twice or never: {got}"
    owners = {t.number: t.user_attrs["worker"] for t in study.get_trials(deepcopy=False)}
    assert all(
        owners[t] == f"w{i}" for i, worker in enumerate(got) for t in worker
    )  # recorded with the claim
    assert all(t.state == TrialState.RUNNING for t in study.get_trials(deepcopy=False))


def _study(tmp_path, n=3):
    study = optuna.create_study(storage=study_lib.make_storage(str(tmp_path / "s.db"), tmp_path))
    for _ in range(n):
        study.enqueue_trial({})
    return study


def test_a_silent_workers_trials_go_back_to_the_queue_after_the_grace_period(tmp_path):
    study = _study(tmp_path)
    mine = rounds.claim(study, 2, "dead", "0")
    assert [t.number for t in mine] == [0, 1]
    assert rounds.release_stale([study], "alive", grace_s=1.0) == 0  # claimed just now
    with claims.Heartbeat([(study, mine[1]._trial_id)], every_s=0.1):  # only trial 1's holder beats
        time.sleep(1.5)
    assert rounds.release_stale([study], "dead", grace_s=1.0) == 0  # never its own
    assert rounds.release_stale([study], "alive", grace_s=1.0) == 1
    released = study.get_trials(deepcopy=False)[0]
    assert released.state == TrialState.WAITING and released.user_attrs["released:dead"] == "0"
    taken = rounds.claim(study, 3, "alive", "0")
    assert [t.number for t in taken] == [0, 2]  # the released one first, then the queue
    assert not claims.holds(study, released._trial_id, "dead") and claims.holds(
        study, released._trial_id, "alive"
    )


def test_a_release_loses_to_a_claim_made_since_it_looked(tmp_path):
    study = _study(tmp_path, n=1)
    [trial] = rounds.claim(study, 1, "dead", "0")
    assert claims.release(study, trial)
    rounds.claim(study, 1, "alive", "0")
    assert not claims.release(study, trial)  # the claim it saw is gone: "alive" keeps the trial
    assert claims.holds(study, trial._trial_id, "alive")


def test_a_rerun_gives_back_a_round_that_lost_trials_and_forgets_their_rows(tmp_path):
    study = _study(tmp_path)
    owner = str(tmp_path / "w")
    store = Store(tmp_path / "w")
    trials = rounds.claim(study, 2, owner, "0")
    store.add_member_rows(
        [
            MemberRow.from_json(member_row(bucket="r0g0", member=i, study=study.study_name, trial=t.number))
            for i, t in enumerate(trials)
        ]
    )
    (store.ckpt_path / "r0g0").mkdir(parents=True)
    study._storage.set_trial_user_attr(trials[0]._trial_id, "heartbeat", 0.0)
    study._storage.set_trial_user_attr(trials[1]._trial_id, "heartbeat", 0.0)
    claims.release(study, study._storage.get_trial(trials[0]._trial_id))  # another worker took one
    assert holdings.lost_trials([study], owner, "0") == 1
    assert holdings.give_back([study], owner, "0") == 1  # the other one: the round cannot resume
    holdings.forget_lost(store, [study], owner, None)
    assert store.member_rows() == [] and not (store.ckpt_path / "r0g0").exists()
    assert [t.state for t in study.get_trials(deepcopy=False)] == [TrialState.WAITING] * 3

"""A trial taken over from a worker (jaxcap/experiments/hpo/claims.py, telling.py, holdings.py,
jaxcap/results/told.py):
only a holder silent past its own grace period loses its trials, a worker that lost one drops it
untold and goes on, and a reader counts each finished trial's rows once, from the workdir of the
worker that told it. In process, on a SQLite file, with rows written by hand: nothing trains."""

import time
import types

import numpy as np
import optuna
from helpers import member_row
from optuna.trial import TrialState

from jaxcap.experiments.hpo import claims, sweep, telling
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo import worker_rounds as rounds
from jaxcap.experiments.hpo.level_table import HpoLevel, TrialResult
from jaxcap.results import told
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store

SPEC = types.SimpleNamespace(
    select_metric="val_accuracy", success_metric="test_accuracy", higher_is_better=True
)
STUDY_CFG = types.SimpleNamespace(objective="val")


def _study(tmp_path, n=2):
    storage = study_lib.make_storage(str(tmp_path / "shared.db"), tmp_path)
    study = optuna.create_study(storage=storage, direction="maximize", pruner=optuna.pruners.NopPruner())
    for _ in range(n):
        study.enqueue_trial({})
    return study


def test_a_worker_with_a_shorter_grace_does_not_take_over_a_live_workers_trials(tmp_path):
    study = _study(tmp_path, n=3)
    live = rounds.claim(study, 2, "live", "0", grace_s=600.0)  # beats every minute: alive
    [dead] = rounds.claim(study, 1, "dead", "0", grace_s=0.05)  # promised to beat every 12 ms
    time.sleep(0.2)  # older than 0.05 s and 0.1 s, far younger than 600 s
    assert rounds.release_stale([study], "short", grace_s=0.1) == 1  # only the silent one
    assert all(claims.holds(study, t._trial_id, "live") for t in live)
    assert study._storage.get_trial(dead._trial_id).state == TrialState.WAITING
    assert rounds.release_stale([study], "long", grace_s=600.0) == 0  # nothing silent is left


def _slots(study, trials):
    return [
        telling.Slot(0, study, t.number, optuna.Trial(study, t._trial_id), {}, {}, set(), [2 * i, 2 * i + 1])
        for i, t in enumerate(trials)
    ]


def _rows(slots):
    return [
        MemberRow.from_json(
            member_row(member=m, seed=m % 2, study=s.study.study_name, trial=s.number, final=FINAL)
        )
        for s in slots
        for m in s.members
    ]


FINAL = {"val_accuracy": 0.5, "test_accuracy": 0.5, "gap": 0.0}


def test_a_worker_that_lost_a_trial_drops_it_untold_and_goes_on(tmp_path, capsys):
    """The live worker's eval callback and tell meet its trial released (WAITING: Optuna raised
    'Cannot tell a WAITING trial') or claimed by another worker (its tell would have told that
    worker's trial): it drops the trial, says so, and tells the others."""
    study = _study(tmp_path, n=3)
    slots = _slots(study, rounds.claim(study, 3, "A", "0", grace_s=600.0))
    lost_waiting, lost_claimed, kept = slots
    claims.release(study, study._storage.get_trial(lost_waiting.trial._trial_id))
    claims.release(study, study._storage.get_trial(lost_claimed.trial._trial_id))
    [taken] = rounds.claim(study, 1, "B", "0", grace_s=600.0)
    assert taken.number == lost_waiting.number  # B took one; the other waits for a claimer
    lost_waiting, lost_claimed = lost_claimed, lost_waiting  # named for what they are now

    on_eval = telling.make_on_eval(slots, SPEC, STUDY_CFG, final_step=20, owner="A")
    host = {"diverged": np.zeros(6), "val_accuracy": np.full(6, 0.5), "gap": np.zeros(6)}
    cursor = types.SimpleNamespace(step=10, is_frozen=lambda n: [False] * n)
    frozen = on_eval(cursor, host)
    assert frozen.tolist() == [True] * 4 + [False] * 2 and lost_waiting.finished and lost_claimed.finished
    counts = telling.tell(slots, _rows(slots), SPEC, STUDY_CFG, owner="A")
    assert counts == {"complete": 1, "fail": 0}

    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    assert trials[kept.number].state == TrialState.COMPLETE and trials[kept.number].values == [0.5]
    assert trials[lost_waiting.number].state == TrialState.WAITING
    assert trials[lost_claimed.number].state == TrialState.RUNNING  # B's, untouched by A
    assert not trials[lost_claimed.number].intermediate_values
    assert claims.holds(study, trials[lost_claimed.number]._trial_id, "B")
    out = capsys.readouterr().out
    assert out.count("another worker took it over") == 2, out


def test_a_trial_taken_over_counts_only_in_the_workdir_of_the_worker_that_told_it(tmp_path):
    """Worker A trained two trials and was killed before telling them; B took them over, trained
    and told them. Until A's rerun, both workdirs hold their rows: readers count B's only."""
    study = _study(tmp_path, n=2)
    a, b = Store(tmp_path / "a"), Store(tmp_path / "b")
    owner_a, owner_b = str(a.root.resolve()), str(b.root.resolve())
    slots_a = _slots(study, rounds.claim(study, 2, owner_a, "0", grace_s=0.0))  # silent at once
    a.add_member_rows(_rows(slots_a))  # killed here: trained, not told
    assert rounds.release_stale([study], owner_b, grace_s=600.0) == 2
    slots_b = _slots(study, rounds.claim(study, 2, owner_b, "0", grace_s=600.0))
    b.add_member_rows(_rows(slots_b))
    assert telling.tell(slots_b, _rows(slots_b), SPEC, STUDY_CFG, owner_b)["complete"] == 2

    keys = lambda rows: sorted((r.study, r.trial, r.seed) for r in rows)
    assert len(keys(a.members()) + keys(b.members())) == 2 * 4  # on disk: each trial twice
    counted = [
        *told.told_rows(a.members(), [study], owner_a),
        *told.told_rows(b.members(), [study], owner_b),
    ]
    assert keys(counted) == keys(b.members())  # as read: each trial once, from B
    assert told.told_rows(a.members(), [study], None) == a.members()  # private: every finished trial

    levels = [HpoLevel(study=study.study_name, best=TrialResult(trial=0))]
    for store, owner, n in ((a, owner_a, 0), (b, owner_b, 2)):
        path = sweep.write_best_trials(store, levels, [study], owner)
        assert len(path.read_text().splitlines()) == n  # the meta-model's input: B's rows only

"""Batched Optuna studies: a round is trials x seeds members with the suggested values, tell gets
the seed means, pruned members stop updating, a search beats a bad baseline, and a killed or
shared sweep ends with exactly its budget of trials."""

import json
import threading

import numpy as np
import optuna
import pytest
from helpers import HPO_SMOKE as SMOKE
from helpers import check_budget as _check_budget
from helpers import finish as _finish
from helpers import hpo_smoke_config as _smoke_config
from helpers import killer, run_killed_then_resumed, start
from helpers import objective as _objective
from optuna.trial import TrialState

from jaxcap.config.base import base_config, build_plan, checked_plan, validate
from jaxcap.core.population import HPARAM_NAMES, hparam_code, stack
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo import sweep
from jaxcap.experiments.hpo import worker_rounds as rounds
from jaxcap.experiments.hpo.search_space import add_study
from jaxcap.fields import ConfigError
from jaxcap.results.store import Store


def _config(moduli=(10,), n_trials=4, batch=4, steps=40):
    """x mod N on 2-digit numbers (N = 10 is the last digit: learnable in ~100 steps)."""
    c = add_study(base_config("modulo"))
    c.task.update(base=10, digits=2, train_fraction=0.5, n_eval=256)
    c.sweep.task.modulus = moduli
    c.sweep.seeds = 2
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    c.train.update(steps=steps, chunk_steps=steps // 4, batch_size=32)
    c.eval.batch_size = 256
    c.search.learning_rate = ("float", 1e-4, 3e-2, True)
    c.study.update(n_trials=n_trials, batch_trials=batch, n_startup_trials=batch, storage="journal")
    c.runtime.progress = False
    return c


def test_a_round_is_trials_times_seeds_members_with_the_suggested_values(tmp_path):
    c = _config(moduli=(10, 5), n_trials=6, batch=3)
    c.search.update(dropout=("float", 0.0, 0.3), b2=("float", 0.9, 0.999))
    c.search.pos_encoding = ("categorical", "sinusoidal", "learned")
    validate(c)
    studies = study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)
    trials = [(lv, t) for lv, s in enumerate(studies) for t in rounds.claim(s, 3, "me", "r0")]
    assert len(trials) == 2 * 3  # levels x batch
    planned = sweep.plan_round(checked_plan(c), studies, "r0", trials)
    assert sum(len(b.members) for b, _ in planned) == 2 * 3 * 2  # x seeds
    shapes = set()
    for bucket, group in planned:
        keys, hp = stack(bucket.members, c.seed)
        for slot in group:
            params = slot.study.trials[slot.number].params
            assert bucket.model.pos_encoding == params["pos_encoding"]
            shapes.add(params["pos_encoding"])
            assert [bucket.members[i].seed for i in slot.members] == [0, 1]
            for i in slot.members:
                member = bucket.members[i]
                assert member.trial == slot.number
                assert (
                    member.knobs["modulus"] == c.sweep.task.modulus[slot.level] == int(hp.task["modulus"][i])
                )
                for name in HPARAM_NAMES:
                    expected = params.get(name, c.hparams[name])  # not searched: the config's value
                    assert member.hparams[name] == expected
                    assert np.float32(getattr(hp, name)[i]) == np.float32(hparam_code(name, expected))
            if slot.number == 0:  # the enqueued baseline is the config's own values
                assert params["learning_rate"] == c.hparams.learning_rate
                assert params["pos_encoding"] == c.model.pos_encoding
    assert len(planned) == len(shapes)  # one population per shape


class PruneOddTrials(optuna.pruners.BasePruner):
    def prune(self, study, trial):
        return trial.number % 2 == 1 and trial.last_step >= 20


def test_a_claim_in_flight_is_not_adopted_but_an_abandoned_one_is(tmp_path, monkeypatch):
    """A claim writes RUNNING before its worker/round tags: another worker looking for its own
    leftovers in between must leave it alone (CI once raced here); a stale untagged one is adopted."""
    [study] = study_lib.open_studies(build_plan(_config(n_trials=2)).section, tmp_path, "modulo", True)
    [waiting, _] = study.get_trials(deepcopy=False)
    study._storage.set_trial_state_values(waiting._trial_id, state=TrialState.RUNNING)  # no tags yet
    assert rounds.leftover_round([study], "other") is None
    monkeypatch.setattr(rounds, "ADOPT_AFTER", rounds.datetime.timedelta(0))
    round_id, [(level, trial)] = rounds.leftover_round([study], "other")
    assert level == 0 and trial.number == waiting.number
    assert (trial.user_attrs["worker"], trial.user_attrs["round"]) == ("other", round_id)


@pytest.mark.slow
def test_a_study_left_empty_by_a_killed_creator_gets_its_budget_once(tmp_path, monkeypatch):
    """The creator queues the budget; a worker that finds the study empty waits for it, then
    (the creator killed in between) queues it itself; a third finds it and queues nothing."""
    c = _config(n_trials=3)
    storage = study_lib.make_storage(c.study.storage, tmp_path)
    for name, creator_alive in (("modulo/modulus=10", True), ("modulo/modulus=7", False)):
        created = optuna.create_study(study_name=name, storage=storage, direction="maximize")
        c.sweep.task.modulus = (int(name.split("=")[1]),)
        if creator_alive:  # still queueing when the worker looks
            late = threading.Timer(0.5, lambda s=created: [s.enqueue_trial({}) for _ in range(3)])
            late.start()
        monkeypatch.setattr(study_lib, "BUDGET_WAIT_S", 5.0 if creator_alive else 0.1)
        [study] = study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)
        assert len(study.get_trials(deepcopy=False)) == 3  # one budget, never two
        [again] = study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)
        assert len(again.get_trials(deepcopy=False)) == 3


def test_tell_gets_seed_means_and_pruned_trials_stop_updating(tmp_path, monkeypatch):
    monkeypatch.setattr(study_lib, "make_pruner", lambda *a: PruneOddTrials())
    c = _config()
    c.search.weight_decay = ("float", 0.0, 0.5)
    validate(c)
    store = Store(tmp_path)
    (study,) = sweep.run_sweep(checked_plan(c), store)
    rows = store.member_rows()
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.PRUNED] * 2
    for trial in study.trials:
        mine = sorted((r for r in rows if r["trial"] == trial.number), key=lambda r: r["seed"])
        assert [r["seed"] for r in mine] == [0, 1] and {r["study"] for r in mine} == {study.study_name}
        if trial.state == TrialState.COMPLETE:
            per_seed = [_objective(r) for r in mine]
            assert trial.values[0] == pytest.approx(np.mean(per_seed), rel=1e-12)
            assert np.ravel(trial.user_attrs["seed_values"]) == pytest.approx(per_seed, rel=1e-12)
            assert {r["status"] for r in mine} == {"ok"}
        else:
            assert {r["status"] for r in mine} == {"pruned"} and max(trial.intermediate_values) == 20
    names, curves = store.curves(rows[0]["bucket"])  # [member, eval at 10/20/30/40, metric]
    loss, chunk_loss = curves[:, :, names.index("train_loss")], curves[:, :, names.index("chunk_loss")]
    for r in rows:
        m = r["member"]
        if r["status"] == "pruned":  # frozen after the eval at step 20: parameters never move again
            assert loss[m, 1] == loss[m, 2] == loss[m, 3] and np.isnan(chunk_loss[m, 2:]).all()
        else:
            assert loss[m, 2] != loss[m, 1] and (chunk_loss[m] > 0).all()


def test_a_batched_study_beats_a_bad_baseline_learning_rate(tmp_path):
    c = _config(n_trials=8, batch=4, steps=100)
    c.hparams.learning_rate = 1e-5  # deliberately bad: nothing moves in 100 steps
    c.search.learning_rate = ("float", 1e-5, 3e-2, True)
    c.study.pruner = "none"
    validate(c)
    (study,) = sweep.run_sweep(checked_plan(c), Store(tmp_path))
    baseline = next(t for t in study.trials if t.user_attrs.get("baseline"))
    best = study.best_trial
    assert baseline.params["learning_rate"] == 1e-5 and len(study.trials) == 8
    assert np.mean(best.user_attrs["val_accuracy"]) > np.mean(baseline.user_attrs["val_accuracy"]) + 0.5
    assert best.params["learning_rate"] > 30 * baseline.params["learning_rate"]


def test_diverged_members_fail_their_trial_without_stopping_the_others(tmp_path):
    c = _config(n_trials=4, batch=4)
    c.hparams.learning_rate = 1e35  # the baseline trial diverges at its first step
    c.search.learning_rate = ("categorical", 1e-3, 1e35)
    c.study.sampler = "random"
    validate(c)
    store = Store(tmp_path / "mixed")
    (study,) = sweep.run_sweep(checked_plan(c), store)
    for trial in study.trials:
        bad = trial.params["learning_rate"] == 1e35
        assert trial.state == (TrialState.FAIL if bad else TrialState.COMPLETE)
        assert trial.user_attrs.get("diverged_seeds", []) == ([0, 1] if bad else [])
    assert {r["status"] for r in store.member_rows() if r["trial"] == 0} == {"diverged"}
    assert {t.state for t in study.trials} == {TrialState.FAIL, TrialState.COMPLETE}  # seeded draws
    diverged = {(r["bucket"], r["member"]) for r in store.member_rows() if r["status"] == "diverged"}
    evals = {True: [], False: []}
    for r in store.eval_rows():
        evals[(r["bucket"], r["member"]) in diverged].append(r)
    assert evals[True] and all(r["chunk_loss"] is None and r["grad_norm"] is None for r in evals[True])
    assert all(r["chunk_loss"] > 0 and r["grad_norm"] > 0 for r in evals[False])  # never 0.0 for a gap
    c.search.learning_rate = ("categorical", 1e35, 1e36)  # every member diverges: the round ends
    (study,) = sweep.run_sweep(checked_plan(c), store := Store(tmp_path / "all"))
    assert {t.state for t in study.trials} == {TrialState.FAIL}
    assert {r["steps"] for r in store.member_rows()} == {10}  # stopped at the first eval


@pytest.mark.parametrize(
    "sampler,pruner,objective",
    [("nsga2", "none", "multi"), ("qmc", "hyperband", "val"), ("random", "halving", "penalized")],
)
def test_samplers_pruners_and_objectives_finish_their_budget(tmp_path, sampler, pruner, objective):
    from jaxcap.experiments.hpo.report import hpo_report

    c = _config(moduli=(10, 5), n_trials=4, batch=2)
    c.study.update(sampler=sampler, pruner=pruner, objective=objective)
    validate(c)
    store = Store(tmp_path)
    store.write_config(c.to_dict())
    for study in sweep.run_sweep(checked_plan(c), store):
        assert len(study.trials) == 4 and all(t.state.is_finished() for t in study.trials)
        for t in study.trials:
            if t.state == TrialState.COMPLETE:
                rows = [
                    r
                    for r in store.member_rows()
                    if r["study"] == study.study_name and r["trial"] == t.number
                ]
                val = np.mean([r["final"]["val_accuracy"] for r in rows])
                expected = {"multi": [val, np.mean([r["final"]["gap"] for r in rows])], "val": [val]}
                assert t.values == pytest.approx(
                    expected.get(objective, [np.mean([_objective(r) for r in rows])])
                )
    assert all(p.exists() for p in hpo_report(store))


# Dies like SIGKILL (nothing flushed or closed) right after the 6th eval was stored: inside the
# second round (4 evals per round), after its first checkpoint.
KILLER = killer(6)


def _launch(*args, killer=False):
    return start(*SMOKE, *args, killer_code=KILLER if killer else "")


@pytest.mark.slow
def test_kill_and_resume_finishes_the_budget_with_no_lost_or_duplicated_trials(tmp_path):
    _finish(_launch("--workdir", str(tmp_path), killer=True), code=137)
    assert len((tmp_path / "evals.jsonl").read_text().splitlines()) == 6 * 12  # 6 evals x 12 members
    out = _finish(_launch("--workdir", str(tmp_path)))
    assert "trials left by a killed run" in out
    _check_budget(_smoke_config(), tmp_path, [tmp_path])
    assert not any((tmp_path / "ckpt").iterdir())  # every round told, its checkpoints removed
    best = [json.loads(line) for line in (tmp_path / "best_trials.jsonl").read_text().splitlines()]
    assert len(best) == 3 * 2 and set(best[0]) == set(Store(tmp_path).member_rows()[0])
    for name in ("hpo.md", "hpo_history.png", "hpo_importance.png", "hpo_best_vs_difficulty.png"):
        assert (tmp_path / "report" / name).exists()
    assert "members.jsonl (+" in out  # the resumed run trained the rest
    again = _finish(_launch("--workdir", str(tmp_path)))  # finished: nothing trained, and it says so
    assert "reused members.jsonl (trained before)" in again


def _phases_config():
    """One level, two rounds of three trials x two seeds; TPE draws at random in round 0 and from
    the history (constant liar) in round 1."""
    c = _config(n_trials=6, batch=3, steps=20)
    c.search.weight_decay = ("float", 0.0, 0.5)
    c.study.n_startup_trials = 3
    validate(c)
    return c


def _trials(workdir):
    c = _phases_config()
    storage = study_lib.make_storage(c.study.storage, workdir)
    study = optuna.load_study(
        study_name=study_lib.study_name(c.study, "modulo", {"modulus": 10}), storage=storage
    )
    return [(t.number, t.state, t.params, t.values, t.intermediate_values) for t in study.trials]


@pytest.fixture(scope="module")
def straight_sweep(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("straight")
    sweep.run_sweep(checked_plan(_phases_config()), Store(workdir))
    return workdir


def _sweep_phases():
    from jaxcap.core import checkpoint
    from jaxcap.experiments.hpo import search_space

    return {
        "budget queued": (study_lib, "open_studies", 1),
        # a trial RUNNING but not yet tagged: a journal claim is three lines (hpo/claims.py)
        "claim half done": (optuna.storages.JournalStorage, "set_trial_user_attr", 1, True),
        "between the suggestions of a round": (sweep, "suggest", 2),
        "between two parameters of a trial": (search_space.Param, "suggest", 5),
        "training, evals stored": (Store, "append_evals", 1),
        "training, checkpoint in flight": (checkpoint.PopulationCheckpoints, "save", 1),
        "trained, not told": (Store, "add_member_rows", 1),
        "told in part": (optuna.Study, "tell", 1),
        "next round claimed": (rounds, "next_trials", 2),
        "between the suggestions of round 1": (sweep, "suggest", 5),
    }


@pytest.mark.slow
@pytest.mark.parametrize("phase", list(_sweep_phases()))
def test_a_sweep_killed_at_any_phase_resumes_to_the_same_trials(tmp_path, monkeypatch, straight_sweep, phase):
    """Kill anywhere in a round, rerun: the same trials (params, values), byte-identical tables."""
    run_killed_then_resumed(
        monkeypatch,
        lambda w: sweep.run_sweep(checked_plan(_phases_config()), Store(w)),
        tmp_path,
        _sweep_phases()[phase],
    )
    assert _trials(tmp_path) == _trials(straight_sweep)
    for name in ("members.jsonl", "evals.jsonl"):
        assert (tmp_path / name).read_bytes() == (straight_sweep / name).read_bytes(), name


def test_a_larger_n_trials_extends_a_study_a_smaller_one_is_refused(tmp_path, capsys):
    c = _config(n_trials=2)
    c.study.storage = str(tmp_path / "shared.log")
    [study] = study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)
    assert len(study.trials) == 2 and study.user_attrs["budget"] == 2
    c.study.n_trials = 5
    for _ in range(2):  # extended once, not twice
        [study] = study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)
        assert len(study.trials) == 5 and study.user_attrs["budget"] == 5
    assert capsys.readouterr().out == "study modulo/modulus=10: budget extended from 2 to 5 trials\n"
    c.study.n_trials = 3
    with pytest.raises(
        ConfigError, match="config.study.n_trials: got 3, but study modulo/modulus=10 already has"
    ):
        study_lib.open_studies(build_plan(c).section, tmp_path, "modulo", True)

"""Which rows of a workdir count (jaxcap/results/told.py), as every reader reads them: three sweep
workers of one SQLite storage, one killed before telling (its trials taken over and told by
another) and one killed with its trial still RUNNING. Built as the workers leave them (claims,
rows, tells made in process, nothing trains), so the rows on disk hold each taken-over trial
twice and the readers must count it once. Moved workdirs keep their rows and fingerprint."""

import json
import shutil

import numpy as np
import optuna
import pytest
from helpers import member_row

from jaxcap.experiments.hpo import worker_rounds as rounds
from jaxcap.meta import data as meta_data
from jaxcap.meta import simulate as meta_simulate
from jaxcap.results import study_storage, told
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store, WorkdirError

SEEDS, MODULI = 2, (5, 7)


def _row(modulus: int, study: str, trial: int, seed: int, worker: str) -> MemberRow:
    task = {"name": "modulo", "modulus": modulus, "base": 10, "digits": 4, "max_modulus": 640, "n_eval": 2048}
    accuracy, number = (0.99 if modulus == 5 else 0.3), trial or 0
    return MemberRow.from_json(
        member_row(
            bucket=f"r{worker}g0",
            member=2 * number + seed,
            seed=seed,
            study=study,
            trial=trial,
            knobs={"modulus": modulus},
            task=task,
            complexity_bits=float(np.log2(modulus)),
            hparams={"learning_rate": 1e-3 * (number + 1)},
            success=accuracy > 0.95,
            final={"val_accuracy": accuracy, "test_accuracy": accuracy},
            model=meta_simulate.arch_model(0),
        )
    )


def _worker(root, spec: str) -> Store:
    store = Store(root)
    store.write_config({"experiment": "hpo", "study": {"storage": spec, "name": "modulo"}})
    return store


def _trained(store: Store, study: optuna.Study, modulus: int, trials) -> None:
    """The worker wrote its rows of `trials` (a round trained); it has not told them yet."""
    name, worker = study.study_name, store.root.name
    rows = [_row(modulus, name, t.number, s, worker) for t in trials for s in range(SEEDS)]
    store.add_member_rows([*store.members(), *rows])


@pytest.fixture
def three_workers(tmp_path):
    """w1 trained two trials of every study and was killed before telling; w2 took them over
    (w1 silent past its grace), trained and told them; w3 trained the third and was killed with
    it RUNNING. On disk: each told trial's rows in w1 and w2, the running one's in w3."""
    spec = str(tmp_path / "shared.db")
    storage = study_storage.make_storage(spec, tmp_path)
    w1, w2, w3 = (_worker(tmp_path / f"w{i}", spec) for i in (1, 2, 3))
    for w in (w1, w2, w3):
        told.record_worker(w.root, str(w.root.resolve()))
    tag = lambda w: str(w.root.resolve())
    for modulus in MODULI:
        name = f"modulo/modulus={modulus}"
        study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
        for _ in range(3):
            study.enqueue_trial({})
        _trained(w1, study, modulus, rounds.claim(study, 2, tag(w1), "0", grace_s=0.0))
        assert rounds.release_stale([study], tag(w2), grace_s=600.0) == 2
        taken = rounds.claim(study, 2, tag(w2), "0", grace_s=600.0)
        _trained(w2, study, modulus, taken)
        for t in taken:
            study.tell(t.number, 0.99 if modulus == 5 else 0.3)
        _trained(w3, study, modulus, rounds.claim(study, 1, tag(w3), "0", grace_s=600.0))
    return tmp_path, [w1, w2, w3]


def _keys(rows):
    return sorted((r.study, r.trial, r.seed) for r in rows)


def test_every_reader_counts_each_trial_once_from_the_worker_that_told_it(three_workers, capsys):
    _, workers = three_workers
    on_disk = [k for w in workers for k in _keys(w.members())]
    assert len(on_disk) == 2 * len(MODULI) * 5  # taken-over trials twice, the running one once
    counted = {w.root.name: _keys(meta_data.read_rows(w.root)) for w in workers}
    assert counted["w1"] == [] and counted["w3"] == []  # told by another worker; still running
    assert counted["w2"] == _keys(workers[1].members())
    assert "4 row(s) of 2 trial(s) left out" in capsys.readouterr().err  # w3's: said, not silent

    table = meta_data.load_table([w.root for w in workers])  # calibrate.workdirs, out_of_grid
    cells = [(r.arch, r.family, r.level, r.seed, json.dumps(r.hparams)) for r in table.rows]
    assert len(cells) == len(set(cells))  # no seed of modulus=5 twice
    five = [r for r in table.rows if table.levels[r.level].fields["modulus"] == 5]
    assert sorted(r.seed for r in five) == list(range(SEEDS)) and {r.source for r in five} == {
        str(workers[1].root)
    }


def test_a_moved_workdir_keeps_its_rows_and_the_tables_fingerprint(three_workers):
    root, workers = three_workers
    before = meta_data.load_table([w.root for w in workers])
    moved = root / "elsewhere" / "w2"
    moved.parent.mkdir()
    shutil.move(workers[1].root, moved)
    assert _keys(meta_data.read_rows(moved)) == _keys(Store(moved).members())
    after = meta_data.load_table([workers[0].root, moved, workers[2].root])
    assert after.fingerprint == before.fingerprint and len(after.rows) == len(before.rows)


def test_a_private_storage_counts_finished_trials_only(tmp_path):
    """A workdir's own study.db: no other worker, but a kill before telling leaves RUNNING rows."""
    store = _worker(tmp_path / "w", "")
    storage = study_storage.make_storage("", store.root)
    study = optuna.create_study(study_name="modulo/modulus=5", storage=storage, direction="maximize")
    for _ in range(2):
        study.enqueue_trial({})
    trials = rounds.claim(study, 2, str(store.root.resolve()), "0")
    _trained(store, study, 5, trials)
    study.tell(trials[0].number, 0.99)
    told_one = [(study.study_name, trials[0].number, s) for s in range(SEEDS)]
    assert _keys(meta_data.read_rows(store.root)) == told_one


def test_a_workdir_without_a_study_reads_as_written(tmp_path):
    plain = Store(tmp_path / "plain")
    plain.add_member_rows([_row(5, None, None, s, "p") for s in range(SEEDS)])  # no config.json
    assert _keys(meta_data.read_rows(plain.root)) == _keys(plain.members())


def test_an_unreachable_storage_is_one_line_unless_best_trials_holds_the_rows(three_workers):
    root, workers = three_workers
    (root / "shared.db").rename(root / "gone.db")
    with pytest.raises(WorkdirError, match=r"w2: its rows name Optuna trials, whose storage .*shared.db"):
        meta_data.read_rows(workers[1].root)
    assert not (root / "shared.db").exists()  # a reader never creates a storage
    best = [r.to_json() for r in workers[1].members()[:2]]  # written through the rule by its worker
    (workers[1].root / "best_trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in best))
    assert len(meta_data.read_rows(workers[1].root)) == 2

"""The meta-model's table: best setting per level, pruned/diverged handling, families, levels,
architectures, cell counts and held-out masks, and reading workdirs (best_trials.jsonl first)."""

import copy
import json

import numpy as np

from jaxcap.meta import data as meta_data
from jaxcap.meta import simulate as meta_simulate


def member(**overrides):
    row = {
        "bucket": "b0",
        "member": 0,
        "seed": 0,
        "trial": None,
        "status": "ok",
        "family": "modulo",
        "knobs": {"modulus": 10},
        "task": {"name": "modulo", "modulus": 10, "base": 10, "digits": 4, "max_modulus": 97, "n_eval": 2048},
        "hparams": {"learning_rate": 1e-3},
        "complexity_bits": np.log2(10),
        "chance": 0.1,
        "success_metric": "val_accuracy",
        "success_threshold": 0.95,
        "higher_is_better": True,
        "success": True,
        "final": {"val_accuracy": 0.99},
        "metric": "accuracy",
        "n_params": 1000,
        "model": meta_simulate.arch_model(0),
    }
    for key, value in overrides.items():
        row[key] = value
    return row


def level(modulus, **kw):
    task = {"name": "modulo", "modulus": modulus, "base": 10, "digits": 4, "max_modulus": 640, "n_eval": 2048}
    return member(knobs={"modulus": modulus}, task=task, complexity_bits=float(np.log2(modulus)), **kw)


def test_best_setting_per_level_is_kept_with_all_its_seeds():
    good = {"learning_rate": 3e-3}
    rows = [
        level(10, seed=0, final={"val_accuracy": 0.5}, success=False),
        level(10, seed=1, final={"val_accuracy": 0.6}, success=False),
        level(10, seed=0, hparams=good, final={"val_accuracy": 0.99}),
        level(10, seed=1, hparams=good, final={"val_accuracy": 0.2}, success=False),
        level(10, seed=2, hparams=good, final={"val_accuracy": 0.98}),
    ]
    kept = meta_data.best_setting_rows(rows)
    assert len(kept) == 3 and all(r["hparams"] == good for r in kept)  # median 0.98 > 0.55


def test_pruned_dropped_diverged_is_a_failure_and_levels_merge_across_head_sizes():
    rows = [
        level(10, seed=0),
        level(10, seed=1, status="diverged", success=False, final={"val_accuracy": None}),
        level(10, seed=2, status="pruned", success=False),
        level(20, seed=0, final={"val_accuracy": 0.3}, success=False),
    ]
    rows[0]["task"]["max_modulus"] = 10  # same level, trained with another head size
    table = meta_data.build_table(rows)
    assert len(table.rows) == 3 and len(table.levels) == 2 and table.families == ["modulo"]
    assert [r["success"] for r in table.rows if r["level"] == 0] == [True, False]
    assert [lv["label"] for lv in table.levels] == ["modulus=10", "modulus=20"]


def test_families_and_architectures():
    add = member(family="binop", task={"name": "binop", "operation": "add", "p": 7}, complexity_bits=2.8)
    mul = member(family="binop", task={"name": "binop", "operation": "mul", "p": 7}, complexity_bits=2.8)
    wide = copy.deepcopy(add)
    wide["model"] = meta_simulate.arch_model(1)
    other_vocab = copy.deepcopy(add)
    other_vocab["model"]["vocab_size"] += 5  # task-dependent fields do not make a new architecture
    table = meta_data.build_table([add, mul, wide, other_vocab])
    assert table.families == ["binop:add", "binop:mul"] and len(table.archs) == 2
    assert sorted(r["arch"] for r in table.rows) == [0, 0, 0, 1]  # rows come grouped by level
    assert table.arch_label(1).startswith("a1: 2L d64 4x16 ff128 float32")
    b = table.budgets(0)
    assert b["attention_bits"] == 4 * 8 * 32 and b["param_bits"] == b["body_params"] * 32


def test_cells_count_runs_and_held_out_levels_get_no_trials():
    rows, _ = meta_simulate.simulate_rows(meta_simulate.default_truth(), 3, np.random.default_rng(1))
    table = meta_data.build_table(rows)
    data, obs = meta_data.cell_data(table, reference=0)
    assert data["trials"].shape == (1, 2 * 4 * 8) and np.all(data["trials"] == 3)
    assert obs.sum() == sum(r["success"] for r in table.rows)
    held = np.zeros(len(table.levels), bool)
    held[[0, 5]] = True
    data2, obs2 = meta_data.cell_data(table, reference=1, held_out=held)
    out = np.isin(data2["cell_level"], [0, 5])
    assert np.all(data2["trials"][0][out] == 0) and np.all(obs2[0][out] == 0)
    assert np.all(data2["trials"][0][~out] == 3) and data2["reference"].tolist() == [1]
    stacked, obs3 = meta_data.stack_folds([(data, obs), (data2, obs2)])
    assert stacked["trials"].shape == (2, 64) and obs3.shape == (2, 64)


def test_workdirs_prefer_best_trials_and_table_round_trips(tmp_path):
    plain, study = tmp_path / "plain", tmp_path / "study"
    plain.mkdir()
    study.mkdir()
    (plain / "members.jsonl").write_text(json.dumps(level(10)) + "\n")
    (study / "members.jsonl").write_text(json.dumps(level(40)) + "\n" + json.dumps(level(80)) + "\n")
    (study / "best_trials.jsonl").write_text(json.dumps(level(40, success=False)) + "\n")
    table = meta_data.load_table([plain, study])
    assert [lv["complexity_bits"] for lv in table.levels] == [np.log2(10), np.log2(40)]
    assert [r["source"] for r in table.rows] == [str(plain), str(study)]
    again = meta_data.read_table(meta_data.save_table(table, tmp_path / "table.json"))
    assert again.fingerprint == table.fingerprint and again.rows == table.rows

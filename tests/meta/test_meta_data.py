"""The meta-model's table: best setting per level, pruned/diverged handling, families, levels,
architectures, cell counts and held-out masks, and reading workdirs (best_trials.jsonl first)."""

import copy
import dataclasses
import hashlib
import json
import shutil

import numpy as np
import pytest

from jaxcap.meta import cells as meta_cells
from jaxcap.meta import data as meta_data
from jaxcap.meta import design as meta_design
from jaxcap.meta import simulate as meta_simulate
from jaxcap.meta.model import PRIOR
from jaxcap.meta.records import LevelInfo
from jaxcap.results.records import MemberRow


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
    return MemberRow.from_json(row)


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
    assert len(kept) == 3 and all(r.hparams == good for r in kept)  # median 0.98 > 0.55


def test_pruned_dropped_diverged_is_a_failure_and_levels_merge_across_head_sizes():
    rows = [
        level(10, seed=0),
        level(10, seed=1, status="diverged", success=False, final={"val_accuracy": None}),
        level(10, seed=2, status="pruned", success=False),
        level(20, seed=0, final={"val_accuracy": 0.3}, success=False),
    ]
    rows[0].task["max_modulus"] = 10  # same level, trained with another head size
    table = meta_data.build_table(rows)
    assert len(table.rows) == 3 and len(table.levels) == 2 and table.families == ["modulo"]
    assert [r.success for r in table.rows if r.level == 0] == [True, False]
    assert [lv.label for lv in table.levels] == ["modulus=10", "modulus=20"]
    # nominal bits stay next to the model's covariate (modulo: the lookup table, 10 x 2 x log2 20)
    assert [lv.complexity_bits for lv in table.levels] == [np.log2(10), np.log2(20)]
    assert table.levels[1].covariate == "lookup_bits" and table.levels[1].bits == 20 * np.log2(20)


def test_families_and_architectures():
    add = member(family="binop", task={"name": "binop", "operation": "add", "p": 7}, complexity_bits=2.8)
    mul = member(family="binop", task={"name": "binop", "operation": "mul", "p": 7}, complexity_bits=2.8)
    wide = dataclasses.replace(add, model=meta_simulate.arch_model(1))
    other_vocab = copy.deepcopy(add)
    other_vocab.model["vocab_size"] += 5  # task-dependent fields do not make a new architecture
    table = meta_data.build_table([add, mul, wide, other_vocab])
    assert table.families == ["binop:add", "binop:mul"] and len(table.archs) == 2
    assert sorted(r.arch for r in table.rows) == [0, 0, 0, 1]  # rows come grouped by level
    assert table.arch_label(1).startswith("a1: 2L d64 4x16 ff128 float32")
    b = table.budgets(0)
    assert b["attention_bits"] == 4 * 8 * 32 and b["param_bits"] == b["body_params"] * 32


def test_cells_count_runs_and_held_out_cells_get_no_trials():
    rows, _ = meta_simulate.simulate_rows(meta_simulate.default_truth(), 3, np.random.default_rng(1))
    table = meta_data.build_table(rows)
    data, obs = meta_cells.cell_data(table, reference=0)
    assert data["trials"].shape == (2 * 4 * 8,) and np.all(data["trials"] == 3)
    assert obs.sum() == sum(r.success for r in table.rows)
    assert data["family_fitted"].all() and data["arch_fitted"].all() and bool(data["arch_saturated"])
    ref_bits = [lv.bits for lv in table.levels if lv.family == 0]
    assert data["log_C_center"] == np.mean(np.log(ref_bits))  # μ_C's prior: the reference's levels
    held = np.isin(data["cell_level"], [0, 5]) | (data["cell_family"] == 3)
    data2, obs2 = meta_cells.cell_data(table, reference=1, held=held)
    assert np.all(data2["trials"][held] == 0) and np.all(obs2[held] == 0)
    assert np.all(data2["trials"][~held] == 3) and int(data2["reference"]) == 1
    assert data2["family_fitted"].tolist() == [True, True, True, False]
    stacked, obs3 = meta_cells.stack_folds([(data, obs), (data2, obs2)])
    assert stacked["trials"].shape == (2, 64) and obs3.shape == (2, 64)
    assert stacked["cell_level"].shape == (64,)  # shared, not stacked


def test_architecture_covariates_are_centred_and_rotated():
    rows, _ = meta_simulate.simulate_rows(
        meta_simulate.default_truth(n_levels=2), 1, np.random.default_rng(1)
    )
    table = meta_data.build_table(rows)
    design = meta_cells.arch_design(table)
    x, rot = design["arch_x"], design["arch_rot"]
    np.testing.assert_allclose(x.sum(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(rot.T @ rot, np.eye(4), atol=1e-12)
    # only the first rotated direction separates the two architectures (in prior units)
    scaled = x * np.array(PRIOR["beta_scale"])
    np.testing.assert_allclose((scaled @ rot)[:, 1:], 0, atol=1e-12)
    only_one = meta_cells.arch_design(table, np.array([True, False]))
    assert bool(only_one["arch_saturated"]) and np.allclose(only_one["arch_x"][0], 0)


def test_workdirs_prefer_best_trials_and_table_round_trips(tmp_path):
    plain, study = tmp_path / "plain", tmp_path / "study"
    plain.mkdir()
    study.mkdir()
    (plain / "members.jsonl").write_text(json.dumps(level(10).to_json()) + "\n")
    (study / "members.jsonl").write_text(
        json.dumps(level(40).to_json()) + "\n" + json.dumps(level(80).to_json()) + "\n"
    )
    (study / "best_trials.jsonl").write_text(json.dumps(level(40, success=False).to_json()) + "\n")
    table = meta_data.load_table([plain, study])
    assert [lv.complexity_bits for lv in table.levels] == [np.log2(10), np.log2(40)]
    assert [r.source for r in table.rows] == [str(plain), str(study)]
    again = meta_data.read_table(meta_data.save_table(table, tmp_path / "table.json"))
    assert again.fingerprint == table.fingerprint and again.rows == table.rows
    saved = json.loads((tmp_path / "table.json").read_text())["rows"]
    assert [r["source"] for r in saved] == ["plain", "study"]  # relative to the table's own folder
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path, moved, ignore=shutil.ignore_patterns("moved"))
    elsewhere = meta_data.read_table(moved / "table.json")
    assert elsewhere.fingerprint == table.fingerprint
    assert [r.source for r in elsewhere.rows] == [str(moved / "plain"), str(moved / "study")]
    saved[0]["source"] = "/abs/from/an/older/version"  # an older table.json: read as it is
    older = {**json.loads((tmp_path / "table.json").read_text()), "rows": saved}
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert meta_data.read_table(tmp_path / "old.json").rows[0].source == "/abs/from/an/older/version"


def test_table_row_reads_and_writes_the_keys_of_table_json():
    written = meta_data.build_table([level(10), level(20, success=False)]).to_json()
    table = meta_data.Table.from_json(json.loads(json.dumps(written)))
    assert table.to_json() == written and table.rows[1].success is False and table.rows[1].level == 1
    with_extra = {**written["rows"][0], "note": "hand-added"}  # an unknown column is kept, not dropped
    assert meta_data.TableRow.from_json(with_extra).to_json() == with_extra
    short = {k: v for k, v in written["rows"][0].items() if k != "source"}
    with pytest.raises(ValueError, match="missing key.*source"):
        meta_data.TableRow.from_json(short)


def test_levels_are_records_written_as_the_dicts_they_were(tmp_path):
    """Levels are LevelInfo records; table.json and the fingerprint keep the bytes and key order
    of the dicts they replace (a fit stamped with the old fingerprint does not refit)."""
    table = meta_data.build_table([level(10), level(20, success=False)])
    meta_design.tag_levels(table, {""})  # rows made in memory have source "": every level a boundary
    assert all(isinstance(lv, LevelInfo) for lv in table.levels)
    dicts = [
        {
            "family": 0,
            "complexity_bits": float(np.log2(m)),
            "bits": m * float(np.log2(m)),  # modulo's lookup table (difficulty.py)
            "covariate": "lookup_bits",
            "fields": {"base": 10, "digits": 4, "modulus": m, "name": "modulo"},
            "label": f"modulus={m}",
            "design": "boundary",
        }
        for m in (10, 20)
    ]
    assert json.dumps(table.to_json()["levels"]) == json.dumps(dicts)  # key order included
    rows = [r.to_json() for r in table.rows]
    old = json.dumps([rows, table.archs, table.families, dicts], sort_keys=True)
    assert table.fingerprint_with_sources == hashlib.sha1(old.encode()).hexdigest()[:16]
    unplaced = [{k: v for k, v in r.items() if k != "source"} for r in rows]  # where rows were read
    new = json.dumps([unplaced, table.archs, table.families, dicts], sort_keys=True)
    assert table.fingerprint == hashlib.sha1(new.encode()).hexdigest()[:16]
    path = meta_data.save_table(table, tmp_path / "table.json")
    text = path.read_text()
    again = meta_data.read_table(path)
    assert again.levels == table.levels and meta_data.save_table(again, path).read_text() == text
    odd = {**dicts[0], "note": "hand-added"}  # a key this version does not know is kept
    assert LevelInfo.from_json(odd).to_json() == odd


def test_a_family_brackets_its_boundary_only_with_a_learned_and_a_failed_cell():
    """θ is centred only where the fitted cells bound the boundary on both sides (model.py):
    a family learned at every level (>= half its seeds), or failed at every level, does not;
    held-out cells (0 trials) do not count."""
    family = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    trials = np.array([4, 4, 4, 4, 4, 4, 0, 4], np.float64)
    successes = np.array([4, 3, 2, 4, 0, 4, 0, 0], np.float64)
    got = meta_cells.bracketed(family, trials, successes, 5)
    # 0: 4/4, 3/4, 2/4 all >= 1/2; 1: 4/4 and 0/4; 2: its failure is held out; 3: only 0/4; 4: no cells
    np.testing.assert_array_equal(got, [False, True, False, False, False])

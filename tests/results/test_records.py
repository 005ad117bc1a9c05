"""The typed host records (jaxcap.results.records): each reads what the code writes and what
older code wrote, and writes it back unchanged, so members.jsonl, capacity.jsonl and checkpoints
keep their format."""

import dataclasses
import json

import pytest

from jaxcap.results.records import CapacityRow, Cursor, LevelSummary, MemberRow

# the first row of a `configs/modmod.py:smoke` run's members.jsonl
REAL_ROW = {
    "baselines": {
        "chance": {"test_accuracy": 0.19921875, "train_accuracy": 0.18359375, "val_accuracy": 0.203125}
    },
    "best_val": 0.29296875,
    "bucket": "b0",
    "bucket_label": "",
    "chance": 0.19921875,
    "chance_nominal": 0.2,
    "complexity_bits": 2.321928094887362,
    "family": "modulo",
    "final": {
        "chunk_loss": 1.625365972518921,
        "diverged": 0.0,
        "gap": -0.02734375,
        "grad_norm": 1.4960834980010986,
        "test_accuracy": 0.296875,
        "test_entropy": 2.28279185295105,
        "test_exact": 0.296875,
        "test_loss": 1.5852465629577637,
        "train_accuracy": 0.265625,
        "train_entropy": 2.275871753692627,
        "train_exact": 0.265625,
        "train_loss": 1.5932003259658813,
        "val_accuracy": 0.29296875,
        "val_entropy": 2.276798725128174,
        "val_exact": 0.29296875,
        "val_loss": 1.5764806270599365,
    },
    "higher_is_better": True,
    "hparams": {
        "b2": 0.98,
        "decay_steps": 0.0,
        "dropout": 0.0,
        "init_scale": 1.0,
        "label_smoothing": 0.0,
        "learning_rate": 0.002,
        "warmup_steps": 100.0,
        "weight_decay": 0.1,
    },
    "knobs": {"modulus": 5},
    "member": 0,
    "metric": "accuracy",
    "model": {
        "activation": "gelu",
        "angular": "none",
        "angular_n": 0,
        "angular_tokens": 0,
        "attention": "bidirectional",
        "compute_dtype": "float32",
        "d_ff": 32,
        "d_head": 8,
        "d_model": 16,
        "embed_sqrt_d": True,
        "embed_std": 1.0,
        "input_dim": 0,
        "mlp": True,
        "n_heads": 2,
        "n_kv_heads": 0,
        "n_layers": 1,
        "n_outputs": 97,
        "norm": "pre",
        "norm_type": "layer",
        "param_dtype": "float32",
        "pos_encoding": "sinusoidal",
        "qat_activations": False,
        "qat_bits": 0,
        "qk_norm": False,
        "readout": "last",
        "residual": "standard",
        "seq_len": 5,
        "vocab_size": 11,
    },
    "n_params": 4065,
    "overlap": {"guaranteed": True, "test": 0.0, "val": 0.0},
    "seed": 0,
    "select_metric": "val_accuracy",
    "shortcut": None,
    "shortcut_name": None,
    "status": "ok",
    "steps": 40,
    "steps_to_train_threshold": None,
    "steps_to_val_threshold": None,
    "success": False,
    "success_metric": "test_accuracy",
    "success_threshold": 0.95,
    "task": {
        "base": 10,
        "digits": 4,
        "max_modulus": 97,
        "modulus": 5,
        "n_eval": 256,
        "train_fraction": 0.5,
        "train_size": 0,
    },
    "trial": None,
}

# a cursor as `configs/modmod.py:smoke` checkpointed it (two of its six members)
OLD_CURSOR = {
    "step": 40,
    "n_evals": 4,
    "first_train": [None, None],
    "first_val": [None, None],
    "best_val": [0.29296875, 0.22265625],
    "last": {
        "chunk_loss": [1.625365972518921, 1.697751760482788],
        "diverged": [0.0, 0.0],
        "grad_norm": [1.4960834980010986, 2.3901476860046387],
        "test_accuracy": [0.296875, 0.234375],
        "test_entropy": [2.28279185295105, 2.2489490509033203],
        "test_exact": [0.296875, 0.234375],
        "test_loss": [1.5852465629577637, 1.628248929977417],
        "train_accuracy": [0.265625, 0.17578125],
        "train_entropy": [2.275871753692627, 2.248199224472046],
        "train_exact": [0.265625, 0.17578125],
        "train_loss": [1.5932003259658813, 1.602026343345642],
        "val_accuracy": [0.29296875, 0.22265625],
        "val_entropy": [2.276798725128174, 2.2484896183013916],
        "val_exact": [0.29296875, 0.22265625],
        "val_loss": [1.5764806270599365, 1.6106513738632202],
        "gap": [-0.02734375, -0.046875],
    },
    "stopped": False,
}

NEWER = (
    "bucket_label",
    "task",
    "select_metric",
    "metric",
    "chance_nominal",
    "shortcut",
    "shortcut_name",
    "baselines",
    "overlap",
)  # keys added after the first rows


def test_a_real_row_reads_and_writes_back_unchanged():
    row = MemberRow.from_json(REAL_ROW)
    assert json.dumps(row.to_json(), sort_keys=True) == json.dumps(REAL_ROW, sort_keys=True)  # as on disk
    assert row.status == "ok" and row.final["test_accuracy"] == row.value and row.extra == {}
    assert row.selects == "val_accuracy" and row.study is None


def test_an_old_row_gets_defaults_and_unknown_keys_are_kept():
    old = {k: v for k, v in REAL_ROW.items() if k not in NEWER and k != "select_metric"}
    row = MemberRow.from_json({**old, "note": "hand-added"})
    assert row.bucket_label == "" and row.task == {} and row.chance_nominal is None
    assert row.selects == row.success_metric  # before the test split: selected on its success metric
    assert row.extra == {"note": "hand-added"} and row.to_json()["note"] == "hand-added"


def test_a_sweep_row_writes_its_study():
    row = dataclasses.replace(MemberRow.from_json(REAL_ROW), study="modulo_l0", trial=3)
    assert MemberRow.from_json(row.to_json()) == row and row.to_json()["study"] == "modulo_l0"


def test_a_row_missing_an_original_key_says_which():
    with pytest.raises(ValueError, match="missing key.*status"):
        MemberRow.from_json({k: v for k, v in REAL_ROW.items() if k != "status"})


def test_the_cursor_of_an_old_checkpoint_reads_and_writes_back():
    cursor = Cursor.from_json(OLD_CURSOR)
    assert cursor.step == 40 and cursor.n_evals == 4 and cursor.stopped is False
    assert cursor.is_frozen(2) == [False, False] and cursor.to_json() == OLD_CURSOR
    hooked = {**OLD_CURSOR, "frozen": [True, False], "exposure": {"step": 40}}  # a sweep's, capacity's
    cursor = Cursor.from_json(hooked)
    assert cursor.is_frozen(2) == [True, False] and cursor.extra == {"exposure": {"step": 40}}
    assert cursor.to_json() == hooked


def test_a_fresh_cursor_writes_no_hook_keys():
    assert Cursor.fresh(2).to_json() == {
        "step": 0,
        "n_evals": 0,
        "first_train": [None, None],
        "first_val": [None, None],
        "best_val": [None, None],
        "last": {},
    }


def test_a_level_summary_round_trips():
    names = [f.name for f in dataclasses.fields(LevelSummary)]
    data = {n: None for n in names} | {"knobs": {"modulus": 5}, "values": [0.3], "n": 2}
    assert LevelSummary.from_json(data).to_json() == data


# the first row of `configs/capacity.py:smoke`'s capacity.jsonl (a budget passed before the first
# eval is null), as written before CapacityRow
CAPACITY_ROW = {
    "anneal_budget": None,
    "arch": 0,
    "arch_label": "model.d_model=8,model.n_heads=1,model.d_ff=16",
    "batch_size": 8,
    "bits_at": [None, None, 56.83879753207444, 120.65514685954415],
    "bits_stored": 120.65514685954415,
    "bucket": "b0n4",
    "ce_bits_per_item": 23.15721321105957,
    "dataset_bits": 240.0,
    "dataset_size": 4,
    "diverged": False,
    "exact_at": [None, None, 0.0, 0.0],
    "exact_fraction": 0.0,
    "exposures": [10.0, 20.0, 50.0, 100.0],
    "family": "random_tokens",
    "final_exposures": 120.0,
    "learning_rate": 0.01,
    "member": 0,
    "model": {
        "activation": "gelu",
        "angular": "none",
        "angular_n": 0,
        "angular_tokens": 0,
        "attention": "causal",
        "compute_dtype": "float32",
        "d_ff": 16,
        "d_head": 8,
        "d_model": 8,
        "embed_sqrt_d": False,
        "embed_std": 0.02,
        "input_dim": 0,
        "mlp": True,
        "n_heads": 1,
        "n_kv_heads": 0,
        "n_layers": 1,
        "n_outputs": 16,
        "norm": "pre",
        "norm_type": "layer",
        "param_dtype": "float32",
        "pos_encoding": "learned",
        "qat_activations": False,
        "qat_bits": 0,
        "qk_norm": False,
        "readout": "all",
        "residual": "standard",
        "seq_len": 16,
        "vocab_size": 16,
    },
    "n_params": 1008,
    "net_bits": 120.65514685954415,
    "net_bits_at": [None, None, 56.83879753207444, 120.65514685954415],
    "recipe": {
        "b2": 0.999,
        "init_scale": 1.0,
        "learning_rate": 0.01,
        "warmup_steps": 50.0,
        "weight_decay": 0.0,
    },
    "round": 0,
    "saturated": False,
    "schedule": "constant",
    "seed": 0,
    "steps": 60,
}
CAPACITY_LINE = json.dumps(CAPACITY_ROW, sort_keys=True)  # as on disk
RECIPE_KEYS = ("recipe", "schedule", "anneal_budget")  # added with the memorization recipe
EXPOSURE_KEYS = ("batch_size", "exposures", "bits_at", "net_bits_at", "exact_at", "final_exposures")


def test_a_capacity_row_reads_and_writes_back_the_same_bytes():
    row = CapacityRow.from_json(CAPACITY_ROW)
    assert json.dumps(row.to_json(), sort_keys=True) == CAPACITY_LINE and row.extra == {}
    assert row.bits_stored == row.bits_at[-1] and row.bits_at[0] is None and row.schedule == "constant"
    assert row.trained_recipe == row.recipe and row.recipe["learning_rate"] == row.learning_rate


def test_an_old_capacity_row_gets_defaults_and_unknown_keys_are_kept():
    data = dict(CAPACITY_ROW)
    old = {k: v for k, v in data.items() if k not in RECIPE_KEYS}  # before the recipe: constant rate
    row = CapacityRow.from_json({**old, "note": "hand-added"})
    assert (row.schedule, row.anneal_budget, row.recipe) == ("constant", None, None)
    assert row.trained_recipe == {"learning_rate": 0.01}
    assert row.extra == {"note": "hand-added"} and row.to_json()["note"] == "hand-added"
    again = json.dumps(row.to_json(), sort_keys=True)  # written again: the defaults, and the note
    assert json.loads(again) == {**data, "recipe": None, "note": "hand-added"}
    capped = CapacityRow.from_json({k: v for k, v in old.items() if k not in EXPOSURE_KEYS})
    assert capped.exposures is None and capped.bits_at is None and capped.bits_stored == row.bits_stored


def test_a_capacity_row_missing_an_original_key_says_which():
    with pytest.raises(ValueError, match="capacity.jsonl row: missing key.*bits_stored"):
        CapacityRow.from_json({k: v for k, v in CAPACITY_ROW.items() if k != "bits_stored"})

"""The results store: JSON never holds NaN, curves append and cut back, torn lines are dropped,
a workdir of another config is refused."""

import json

import numpy as np
import pytest

from jaxcap.store import Store, WorkdirMismatch, clean


def test_clean_turns_non_finite_into_none():
    assert clean({"a": float("nan"), "b": [np.float32(1.5), np.inf], "c": np.int64(3)}) == {
        "a": None,
        "b": [1.5, None],
        "c": 3,
    }


def test_evals_and_curves_append_then_truncate(tmp_path):
    store = Store(tmp_path)
    for step in (10, 20, 30):
        store.append_evals(
            "b0", step, {"val_accuracy": np.array([0.1, step / 100]), "loss": np.array([1.0, np.nan])}
        )
    names, curves = store.curves("b0")
    assert names == ["step", "val_accuracy", "loss"] and curves.shape == (2, 3, 3)
    np.testing.assert_allclose(curves[1, :, 1], [0.1, 0.2, 0.3])
    assert store.eval_rows("b0")[1]["loss"] is None  # NaN stored as null, not as invalid JSON
    with open(store.evals_path, "a") as f:
        f.write('{"bucket": "b0", "mem')  # a kill in the middle of an append
    store.truncate("b0", 2)
    assert sorted({r["step"] for r in store.eval_rows()}) == [10, 20]
    assert store.curves("b0")[1].shape == (2, 2, 3)
    store.append_evals("b0", 30, {"val_accuracy": np.array([0.5, 0.5]), "loss": np.array([1.0, 1.0])})
    assert [r["step"] for r in store.eval_rows()] == [10, 10, 20, 20, 30, 30]
    assert all(json.loads(line) for line in store.evals_path.read_text().splitlines())


def test_member_rows_are_replaced_per_bucket(tmp_path):
    store = Store(tmp_path)
    store.add_member_rows([{"bucket": "b0", "member": 0}, {"bucket": "b0", "member": 1}])
    store.add_member_rows([{"bucket": "b1", "member": 0}])
    store.add_member_rows([{"bucket": "b0", "member": 0, "x": 1}])
    assert store.finished_buckets() == {"b0", "b1"}
    assert len(store.member_rows()) == 2


def test_config_mismatch_names_the_field(tmp_path):
    Store(tmp_path).write_config({"a": {"b": 1}, "c": 2})
    Store(tmp_path).write_config({"a": {"b": 1}, "c": 2})  # same config: resume is fine
    with pytest.raises(WorkdirMismatch, match=r"config.a.b: 1 in the workdir, 5 now"):
        Store(tmp_path).write_config({"a": {"b": 5}, "c": 2})

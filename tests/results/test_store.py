"""The results store and checkpoints: JSON never holds NaN, curves append and cut back, torn lines
are quarantined (never a valid row lost), one writer per workdir, a workdir of another config is
refused, the saved cursor is a copy, a corrupt newest checkpoint falls back to an intact one."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import HOLD, delay_json_saves, member_row

from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store, WorkdirError, WorkdirLocked, WorkdirMismatch, clean


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


def _row(bucket: str, member: int, **extra) -> MemberRow:
    return MemberRow.from_json(member_row(bucket=bucket, member=member, **extra))


def test_member_rows_are_replaced_per_bucket(tmp_path):
    store = Store(tmp_path)
    store.add_member_rows([_row("b0", 0), _row("b0", 1)])
    store.add_member_rows([_row("b1", 0)])
    store.add_member_rows([_row("b0", 0, x=1)])
    assert store.finished_buckets() == {"b0", "b1"}
    assert len(store.member_rows()) == 2 and store.members()[0].extra == {"x": 1}


def test_config_mismatch_names_the_field(tmp_path):
    Store(tmp_path).write_config({"a": {"b": 1}, "c": 2})
    Store(tmp_path).write_config({"a": {"b": 1}, "c": 2})  # same config: resume is fine
    (tmp_path / "evals.jsonl").write_text("")  # a run that started (one with only config.json is replaced)
    with pytest.raises(WorkdirMismatch, match=r"config.a.b: 1 in the workdir, 5 now"):
        Store(tmp_path).write_config({"a": {"b": 5}, "c": 2})
    # the note describes a run, it does not define it (jaxcap.main.launch.annotate_note changes it)
    Store(tmp_path).write_config({"a": {"b": 1}, "c": 2, "note": "changed on the command line: c=2"})


def _evals(store, steps=(10, 20, 30), members=2):
    for step in steps:
        store.append_evals("b0", step, {"loss": np.arange(members) + step})


def test_a_torn_line_is_quarantined_and_no_valid_row_is_dropped(tmp_path, capsys):
    """A line that does not parse (here line 3 of 6) is skipped, never ends the read: the resume
    keeps every valid row and moves the bad line, with its number, to evals.jsonl.quarantine."""
    store = Store(tmp_path)
    _evals(store)
    lines = store.evals_path.read_text().splitlines()
    lines[2] = lines[2][:17]  # torn in the middle of the file
    store.evals_path.write_text("\n".join(lines) + "\n")
    assert len(store.eval_rows()) == 5
    assert "evals.jsonl line 3 does not parse" in capsys.readouterr().err
    store.truncate("b0", 3)
    assert [json.loads(line) for line in store.evals_path.read_text().splitlines()] == [
        json.loads(line) for i, line in enumerate(lines) if i != 2
    ]
    quarantined = [
        json.loads(line) for line in (tmp_path / "evals.jsonl.quarantine").read_text().splitlines()
    ]
    assert quarantined == [{"line": 3, "text": lines[2]}]
    assert "moved line(s) 3" in capsys.readouterr().err


def test_a_row_appended_after_a_torn_last_line_is_not_glued_to_it(tmp_path):
    store = Store(tmp_path)
    _evals(store, steps=(10,))
    with open(store.evals_path, "a") as f:
        f.write('{"bucket": "b0", "mem')  # a kill in the middle of an append, no resume since
    _evals(store, steps=(20,))
    assert [(r["step"], r["member"]) for r in store.eval_rows()] == [(10, 0), (10, 1), (20, 0), (20, 1)]


def test_a_torn_member_row_is_quarantined_when_the_table_is_rewritten(tmp_path):
    store = Store(tmp_path)
    store.add_member_rows([_row("b0", m) for m in range(3)])
    text = store.members_path.read_text().splitlines()
    store.members_path.write_text("\n".join([text[0], "{broken", *text[1:]]) + "\n")
    assert not store.complete("b0", 4) and store.complete("b0", 3)
    store.add_member_rows([_row("b1", 0)])
    assert [r.member for r in store.members()] == [0, 1, 2, 0]
    assert "{broken" in (tmp_path / "members.jsonl.quarantine").read_text()


def test_one_writer_per_workdir_and_a_kill_releases_the_lock(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        with (
            pytest.raises(WorkdirLocked, match=rf"is being written by process {holder.pid} on "),
            Store(tmp_path).writer(),
        ):
            pass
    finally:
        holder.kill()  # SIGKILL: the kernel releases the flock, no stale lock is left
        holder.wait()
    second = pytest.raises(WorkdirLocked, match=rf"process {os.getpid()} ")  # even in one process
    with Store(tmp_path).writer(), second, Store(tmp_path).writer():
        pass


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda d: d.write_text("x"), "is a file; allowed: a directory"),
        (lambda d: d.parent.joinpath("f").write_text("x"), "is under a file"),
    ],
)
def test_a_workdir_that_cannot_be_one_is_named_in_one_line(tmp_path, make, message):
    workdir = tmp_path / "w"
    make(workdir)
    target = workdir if message.startswith("is a file") else tmp_path / "f" / "w"
    with pytest.raises(WorkdirError, match=message):
        Store(target)


def test_a_corrupt_config_json_is_one_line(tmp_path):
    (tmp_path / "config.json").write_text('{"a": ')
    with pytest.raises(WorkdirError, match="config.json does not parse"):
        Store(tmp_path).write_config({"a": 1})


STATE = {"w": np.arange(6.0, dtype=np.float32)}


def test_the_cursor_saved_is_a_copy_even_when_the_save_is_late(tmp_path, monkeypatch):
    """Orbax serializes the cursor on its own thread; the host loop mutates its cursor right after
    handing it over (as run.py does): the checkpoint must hold the cursor as it was."""
    from jaxcap.core.checkpoint import PopulationCheckpoints

    delay_json_saves(monkeypatch, 0.3)
    ckpts = PopulationCheckpoints(tmp_path)
    cursor = {"step": 10, "last": {"loss": [1.0]}}
    ckpts.save(10, STATE, cursor)
    cursor["step"], cursor["last"]["loss"][0] = 20, 2.0  # the next chunk, in place
    ckpts.close()
    state, restored = PopulationCheckpoints(tmp_path).restore(STATE)
    assert restored == {"step": 10, "last": {"loss": [1.0]}}


@pytest.mark.parametrize("damage", ["cursor", "state"])
def test_a_corrupt_latest_checkpoint_falls_back_to_the_newest_intact_one(tmp_path, capsys, damage):
    from jaxcap.core.checkpoint import CheckpointError, PopulationCheckpoints

    ckpts = PopulationCheckpoints(tmp_path / "b0")
    for step in (10, 20):
        ckpts.save(step, {"w": STATE["w"] + step}, {"step": step})
    ckpts.close()
    for path in (tmp_path / "b0" / "20" / damage).rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    ckpts = PopulationCheckpoints(tmp_path / "b0")
    state, cursor = ckpts.restore(STATE)
    assert cursor == {"step": 10} and (np.asarray(state["w"]) == STATE["w"] + 10).all()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "checkpoint b0 step 20 (" in out[0] and "resuming from step 10" in out[0]
    ckpts.save(20, {"w": STATE["w"] + 20}, {"step": 20})  # the step number saves again
    ckpts.close()
    assert (tmp_path / "b0.corrupt" / "20").is_dir()
    assert PopulationCheckpoints(tmp_path / "b0").restore(STATE)[1] == {"step": 20}
    for path in (tmp_path / "b0").rglob("metadata"):  # no intact step left: one line, no resume
        path.write_text("{")
    with pytest.raises(CheckpointError, match=r"no checkpoint restores \(step 20 \(JSONDecodeError"):
        PopulationCheckpoints(tmp_path / "b0").restore(STATE)


def test_curves_open_in_xarray_and_zarr(tmp_path):
    """curves.zarr is a zarr v3 store that xarray reads with named dims and coordinates, and
    that zarr-python lists from the root (consolidated metadata: no warning)."""
    import warnings

    xr = pytest.importorskip("xarray")
    zarr = pytest.importorskip("zarr")
    store = Store(tmp_path)
    for step in (10, 20, 30):
        store.append_evals("b0", step, {"val_accuracy": np.array([0.1, step / 100]), "loss": np.ones(2)})
    store.append_evals("b1", 10, {"loss": np.zeros(3)})
    store.truncate("b0", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ds = xr.open_zarr(store.curves_path, group="b0")
    assert ds.curves.dims == ("member", "step", "metric") and "step" in ds.indexes
    assert list(ds.metric.values) == ["val_accuracy", "loss"]
    assert list(ds.member.values) == [0, 1] and list(ds.step.values) == [10, 20]
    np.testing.assert_allclose(ds.curves.sel(metric="val_accuracy", member=1), [0.1, 0.2])
    assert sorted(zarr.open_group(store.curves_path, mode="r").group_keys()) == ["b0", "b1"]
    assert xr.open_zarr(store.curves_path, group="b1", consolidated=False).curves.shape == (3, 1, 1)


def test_curves_refresh_their_consolidated_metadata_only_when_asked(tmp_path):
    """The root's consolidated metadata walks every bucket, so the loop refreshes it at saves:
    an eval appended without it is on disk but not yet in the root, a new group always is."""
    store = Store(tmp_path)

    def consolidated_steps(bucket: str) -> int:
        root = json.loads((store.curves_path / "zarr.json").read_text())
        return root["consolidated_metadata"]["metadata"][f"{bucket}/curves"]["shape"][1]

    store.append_evals("b0", 10, {"loss": np.ones(2)}, consolidate=False)
    assert consolidated_steps("b0") == 1  # the group was created: consolidated anyway
    store.append_evals("b0", 20, {"loss": np.ones(2)}, consolidate=False)
    assert consolidated_steps("b0") == 1 and store.curves("b0")[1].shape == (2, 2, 2)
    store.append_evals("b0", 30, {"loss": np.ones(2)})
    assert consolidated_steps("b0") == 3

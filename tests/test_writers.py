"""Metric writers and the formats other tools read, on one smoke run: TensorBoard event files
with a scalar per member and per level (read back from the file), curves.zarr opened by
xarray with named dims and coordinates, a W&B writer wired to a stand-in module, and one-line
config errors for a writer whose package is missing."""

import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from jaxcap.config.base import load_config, validate
from jaxcap.config.fields import ConfigError
from jaxcap.training import writers

ROOT = Path(__file__).resolve().parents[1]


def smoke(**overrides):
    c = load_config(f"{ROOT / 'configs' / 'modmod.py'}:smoke")
    c.runtime.update(progress=False, **overrides)
    return c


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    """The modmod smoke run with TensorBoard on (its workdir)."""
    pytest.importorskip("tensorboardX")
    from jaxcap.run import run

    workdir = tmp_path_factory.mktemp("tracked")
    run(smoke(tensorboard=True), str(workdir))
    return workdir


def read_events(logdir: Path) -> list:
    """Every event of the event files under `logdir`: TFRecord framing (uint64 length, uint32
    crc, payload, uint32 crc) around Event protos, read without TensorFlow or TensorBoard."""
    from tensorboardX.proto.event_pb2 import Event

    events = []
    for path in sorted(logdir.rglob("events.out.tfevents.*")):
        data, at = path.read_bytes(), 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            events.append(Event.FromString(data[at + 12 : at + 12 + length]))
            at += 12 + length + 4
    return events


def test_tensorboard_event_file_holds_members_levels_and_config(tracked_run):
    events = read_events(tracked_run / "tensorboard")
    scalars: dict[str, list[tuple[int, float]]] = {}
    tags = set()
    for e in events:
        for v in e.summary.value:
            tags.add(v.tag)
            if v.HasField("simple_value"):
                scalars.setdefault(v.tag, []).append((e.step, v.simple_value))
    assert any(t.startswith("config") for t in tags)  # the run's config, once
    assert [s for s, _ in scalars["b0/val_accuracy/member0"]] == [10, 20, 30, 40]
    assert {"b0/val_accuracy/modulus_5", "b0/val_accuracy/modulus_7", "b0/chunk_loss/member5"} <= set(scalars)
    assert len(scalars["b0/train_accuracy/modulus_10"]) == 4


def test_tensorboard_scalars_match_the_results_store(tracked_run):
    from jaxcap.results.store import Store

    rows = [r for r in Store(tracked_run).eval_rows("b0") if r["member"] == 1 and r["step"] == 40]
    events = read_events(tracked_run / "tensorboard")
    value = [
        v.simple_value
        for e in events
        for v in e.summary.value
        if v.tag == "b0/val_accuracy/member1" and e.step == 40
    ]
    assert value == pytest.approx([rows[0]["val_accuracy"]], abs=1e-6)


def test_smoke_curves_open_in_xarray(tracked_run):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    ds = xr.open_zarr(tracked_run / "curves.zarr", group="b0")
    assert ds.curves.dims == ("member", "eval", "metric")
    assert ds.sizes["member"] == 6 and list(ds.step.values) == [10, 20, 30, 40]
    assert "val_accuracy" in list(ds.metric.values)
    acc = ds.curves.sel(metric="val_accuracy").values
    assert np.all((acc >= 0) & (acc <= 1))


def test_eval_scalars_take_the_median_of_each_level():
    host = {"loss": np.array([1.0, 3.0, np.nan, 4.0])}
    out = writers.eval_scalars("b0", host, ["n_5", "n_5", "n_7", "n_7"])
    assert out["b0/loss/n_5"] == 2.0 and out["b0/loss/n_7"] == 4.0  # NaN (diverged) left out
    assert out["b0/loss/member2"] != out["b0/loss/member2"]  # a member's NaN stays NaN
    assert writers.level_name({}) == "all" and writers.level_name({"b": 1, "a": 2}) == "a_2-b_1"


def test_wandb_writer_logs_with_a_step_per_bucket(monkeypatch, tmp_path):
    logged, defined = [], []
    run = types.SimpleNamespace(
        config=types.SimpleNamespace(update=lambda c, allow_val_change: logged.append(("config", c))),
        define_metric=lambda name, step_metric: defined.append((name, step_metric)),
        log=lambda d: logged.append(("log", d)),
        finish=lambda: logged.append(("finish", None)),
    )
    fake = types.SimpleNamespace(init=lambda **kw: logged.append(("init", kw)) or run)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    with writers.tracking(smoke(wandb="proj").runtime, tmp_path, {"seed": 0}):
        writers.active().write_eval("b0", 10, {"loss": np.array([1.0, 2.0])}, ["all", "all"])
    init = logged[0][1]
    assert init["project"] == "proj" and init["resume"] == "allow"
    assert logged[1] == ("config", {"seed": 0})
    assert logged[2][1] == {"b0/loss/member0": 1.0, "b0/loss/member1": 2.0, "b0/loss/all": 1.5, "b0/step": 10}
    assert defined == [("b0/*", "b0/step")] and logged[-1][0] == "finish"
    assert writers.active().writers == []  # closed and gone after the run


@pytest.mark.parametrize(
    "field, value, module", [("tensorboard", True, "tensorboardX"), ("wandb", "p", "wandb")]
)
def test_a_writer_without_its_package_is_a_config_error(monkeypatch, field, value, module):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else find_spec(name, *a)
    )
    with pytest.raises(ConfigError, match=rf"^config.runtime.{field}: .*pip install 'jaxcap\["):
        validate(smoke(**{field: value}))


def test_writer_fields_are_checked():
    """(A wrong type is refused by ml_collections when set; None reaches the schema.)"""
    with pytest.raises(ConfigError, match=r"config.runtime.tensorboard: got None; allowed: True or False"):
        validate(smoke(tensorboard=None))
    with pytest.raises(ConfigError, match=r"config.runtime.wandb: got None; allowed: a string"):
        validate(smoke(wandb=None))

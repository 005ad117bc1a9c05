"""Metric writers and the formats other tools read, on one smoke run: TensorBoard event files
with a run per member named by family, level and seed, tags named by metric, HParams for the
sweep views, two families' runs and tables apart, test written once at the end and a members'
table (read back from the files), curves.zarr opened by xarray with member coordinates, W&B
runs per member wired to a stand-in module, and one-line config errors for a writer whose
package is missing."""

import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, member_row

from jaxcap.config.base import load_config, validate
from jaxcap.core.population import Member
from jaxcap.fields import ConfigError
from jaxcap.results.records import MemberRow
from jaxcap.training import writers


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


def _scalars(events) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for e in events:
        for v in e.summary.value:
            if v.HasField("simple_value"):
                out.setdefault(v.tag, []).append((e.step, v.simple_value))
    return out


@pytest.mark.slow
def test_tensorboard_has_a_run_per_member_named_by_level_and_seed(tracked_run):
    logdir = tracked_run / "tensorboard"
    runs = sorted(str(p.parent.relative_to(logdir)) for p in logdir.rglob("events.out.tfevents.*"))
    members = [f"modulo/modulus={n}/seed{s}" for n in (10, 5, 7) for s in (0, 1)]
    assert runs == sorted(["summary", *members])
    scalars = _scalars(read_events(logdir / "modulo" / "modulus=5" / "seed0"))
    assert [s for s, _ in scalars["val/accuracy"]] == [10, 20, 30, 40]  # streamed at every eval
    assert {"train/accuracy", "train/loss", "training/grad_norm", "training/gap"} <= set(scalars)
    assert [s for s, _ in scalars["test/accuracy"]] == [40]  # test: once, at the end
    assert scalars["success"] == [(40, 0.0)] and not any("member" in t for t in scalars)


@pytest.mark.slow
def test_tensorboard_runs_carry_hparams_for_the_sweep_views(tracked_run):
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData

    events = read_events(tracked_run / "tensorboard" / "modulo" / "modulus=7" / "seed1")
    plugin = [
        HParamsPluginData.FromString(v.metadata.plugin_data.content)
        for e in events
        for v in e.summary.value
        if v.metadata.plugin_data.plugin_name == "hparams"
    ]
    session = next(p.session_start_info for p in plugin if p.HasField("session_start_info"))
    assert session.hparams["modulus"].number_value == 7 and session.hparams["seed"].number_value == 1
    assert session.hparams["level"].string_value == "modulus=7"
    assert session.hparams["family"].string_value == "modulo"
    assert session.hparams["learning_rate"].number_value == pytest.approx(2e-3)
    experiment = next(p.experiment for p in plugin if p.HasField("experiment"))
    assert {m.name.tag for m in experiment.metric_infos} >= {"test/accuracy", "val/accuracy", "success"}


@pytest.mark.slow
def test_tensorboard_summary_run_holds_config_and_the_members_table(tracked_run):
    events = read_events(tracked_run / "tensorboard" / "summary")
    texts = {
        v.tag: v.tensor.string_val[0].decode() for e in events for v in e.summary.value if v.tensor.string_val
    }
    assert any(t.startswith("config") for t in texts)
    table = next(text for t, text in texts.items() if t.startswith("members/modulo/b0"))
    assert "| modulo/modulus=5/seed0 | ok | no |" in table and table.count("\n") == 1 + 6


@pytest.mark.slow
def test_tensorboard_scalars_match_the_results_store(tracked_run):
    from jaxcap.results.store import Store

    rows = [r for r in Store(tracked_run).eval_rows("b0") if r["member"] == 1 and r["step"] == 40]
    scalars = _scalars(read_events(tracked_run / "tensorboard" / "modulo" / "modulus=5" / "seed1"))
    assert dict(scalars["val/accuracy"])[40] == pytest.approx(rows[0]["val_accuracy"], abs=1e-6)


@pytest.mark.slow
def test_smoke_curves_open_in_xarray(tracked_run):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    ds = xr.open_zarr(tracked_run / "curves.zarr", group="b0")
    assert ds.curves.dims == ("member", "step", "metric")
    assert ds.sizes["member"] == 6 and list(ds.step.values) == [10, 20, 30, 40]
    assert "val_accuracy" in list(ds.metric.values) and list(ds.modulus.values) == [5, 5, 7, 7, 10, 10]
    acc = ds.curves.sel(metric="val_accuracy").values
    assert np.all((acc >= 0) & (acc <= 1))


def test_tags_and_run_names():
    assert [writers.tag(m) for m in ("val_accuracy", "val_long_exact", "test_excess_bits", "grad_norm")] == [
        "val/accuracy",
        "val_long/exact",
        "test/excess_bits",
        "training/grad_norm",
    ]
    members = [
        Member(index=i, seed=i % 2, hparams={"learning_rate": lr, "dropout": 0.0}, knobs={"p": 7}, trial=None)
        for i, lr in enumerate((1e-3, 1e-3, 3e-3, 3e-3))
    ]
    runs = writers.member_runs("b1", members, "task.operation=add")
    assert [r.name for r in runs][:3] == [
        "operation=add,p=7,learning_rate=0.001/seed0",
        "operation=add,p=7,learning_rate=0.001/seed1",
        "operation=add,p=7,learning_rate=0.003/seed0",
    ]
    assert runs[0].config == {
        "level": "operation=add, p=7",
        "seed": 0,
        "p": 7,
        "learning_rate": 1e-3,
        "dropout": 0.0,
        "bucket": "b1",
    }


def test_two_families_in_one_workdir_keep_apart(monkeypatch, tmp_path):
    """calibrate trains every family into one workdir's tracking, each family's first pass a
    bucket b0: each family's runs sit under its own prefix, name their family in HParams, keep
    their own writers and W&B ids, and write their members' tables to tags of their own."""
    members = [Member(index=0, seed=0, hparams={"learning_rate": 1e-3}, knobs={"n": 2})]
    modulo = writers.member_runs("b0", members, "", "modulo")
    labels = writers.member_runs("b0", members, "", "random_labels")
    assert [modulo[0].name, labels[0].name] == ["modulo/n=2/seed0", "random_labels/n=2/seed0"]
    assert modulo[0].config["family"] == "modulo" and modulo[0].key != labels[0].key
    assert [writers.summary_tag(r[0]) for r in (modulo, labels)] == [
        "members/modulo/b0",
        "members/random_labels/b0",
    ]
    inits = []
    monkeypatch.setitem(
        sys.modules,
        "wandb",
        types.SimpleNamespace(
            init=lambda **kw: inits.append(kw) or types.SimpleNamespace(log=lambda *a, **k: None, finish=list)
        ),
    )
    with writers.tracking(smoke(wandb="proj").runtime, tmp_path, {}):
        for runs in (modulo, labels):
            writers.active().write_eval(10, {"val_loss": np.array([1.0])}, runs)
        assert len(inits) == 2 and inits[0]["id"] != inits[1]["id"]


def test_wandb_writer_opens_a_run_per_member_grouped_by_workdir(monkeypatch, tmp_path):
    logged, inits = [], []

    def init(**kw):
        inits.append(kw)
        name = kw["name"]
        return types.SimpleNamespace(
            log=lambda d, step: logged.append((name, step, d)),
            summary={},
            finish=lambda: logged.append((name, "finish", None)),
        )

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init))
    members = [
        Member(index=i, seed=i, hparams={"learning_rate": 1e-3}, knobs={"modulus": 5}) for i in range(2)
    ]
    runs = writers.member_runs("b0", members, "")
    rows = [
        MemberRow.from_json(
            member_row(steps=10, success=True, final={"val_accuracy": 0.9, "test_accuracy": 0.8 + i / 10})
        )
        for i in range(2)
    ]
    with writers.tracking(smoke(wandb="proj").runtime, tmp_path, {"seed": 0}):
        writers.active().write_eval(10, {"val_loss": np.array([1.0, 2.0]), "test_loss": np.ones(2)}, runs)
        writers.active().write_final(rows, runs)
    assert [i["name"] for i in inits] == ["modulus=5/seed0", "modulus=5/seed1"]
    assert {i["group"] for i in inits} == {tmp_path.name} and inits[0]["reinit"] == "create_new"
    assert inits[1]["config"]["seed"] == 1 and inits[1]["config"]["run"] == {"seed": 0}
    assert logged[0] == ("modulus=5/seed0", 10, {"val/loss": 1.0})  # no test metric while training
    assert ("modulus=5/seed1", "finish", None) in logged
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

"""The workdir's tables in the tools analyses use, with no join by hand: curves.zarr with member
coordinates and step as its index (xarray), evals.jsonl rows with level and seed, members.csv
flat (pandas); CF units on every metric, a root that names its buckets; and an older curves.zarr
layout still reads."""

import json

import numpy as np
import pytest
from helpers import member_row

from jaxcap.core.population import DEFAULT_HPARAMS, Member
from jaxcap.results import tables
from jaxcap.results.curves import Curves
from jaxcap.results.curves import metric_attrs as curves_metric_attrs
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")

MEMBERS = [
    Member(index=2 * i + seed, seed=seed, hparams=dict(DEFAULT_HPARAMS), knobs={"modulus": modulus})
    for i, modulus in enumerate((5, 97))
    for seed in (0, 1)
]


def _row(member: int, m: Member) -> MemberRow:
    row = member_row(
        bucket_label="",
        member=member,
        seed=m.seed,
        trial=None,
        success=m.knobs["modulus"] == 5,
        knobs=m.knobs,
        hparams=m.hparams,
        complexity_bits=float(np.log2(m.knobs["modulus"])),
        final={"val_accuracy": 0.5, "test_accuracy": 0.25},
    )
    return MemberRow.from_json(row)


def _write(tmp_path, coords=True) -> Store:
    store = Store(tmp_path)
    bits = [float(np.log2(m.knobs["modulus"])) for m in MEMBERS]
    c = tables.member_coords(MEMBERS, "", bits) if coords else None
    fields = tuple(tables.eval_fields(c, tuple(DEFAULT_HPARAMS))) if coords else ()
    for step in (10, 20, 30):
        accuracy = np.array([step / 100 + i for i in range(len(MEMBERS))])
        store.append_evals("b0", step, {"val_accuracy": accuracy, "val_loss": np.ones(4)}, c, fields)
    store.add_member_rows([_row(i, m) for i, m in enumerate(MEMBERS)])
    return store


def test_curves_have_member_coordinates_and_step_as_index(tmp_path):
    store = _write(tmp_path)
    raw = xr.open_zarr(store.curves_path, group="b0")
    assert raw.curves.dims == ("member", "step", "metric") and "step" in raw.indexes
    assert list(raw.seed.values) == [0, 1, 0, 1] and list(raw.modulus.values) == [5, 5, 97, 97]
    assert list(raw.level.values) == ["modulus=5"] * 2 + ["modulus=97"] * 2
    assert raw.learning_rate.values[0] == pytest.approx(DEFAULT_HPARAMS["learning_rate"])
    assert raw.complexity_bits.values[2] == pytest.approx(np.log2(97))
    ds = tables.open_dataset(tmp_path)
    picked = ds.sel(modulus=97, seed=0)
    np.testing.assert_allclose(picked.val_accuracy.sel(step=20), 2.2)  # member 2 at step 20
    assert set(ds.data_vars) == {"val_accuracy", "val_loss"}


def test_eval_rows_carry_level_and_seed(tmp_path):
    store = _write(tmp_path)
    evals = pd.read_json(store.evals_path, lines=True)
    row = evals[(evals.modulus == 97) & (evals.seed == 1) & (evals.step == 30)]
    assert (
        len(row) == 1 and row.level.item() == "modulus=97" and row.val_accuracy.item() == pytest.approx(3.3)
    )
    assert "learning_rate" not in evals.columns  # hyperparameters live in members.csv and the curves


def test_members_csv_is_flat_for_pandas(tmp_path):
    store = _write(tmp_path)
    df = pd.read_csv(store.members_csv_path)
    assert list(df.columns[:4]) == ["bucket", "member", "level", "seed"]
    assert {"knobs.modulus", "hparams.learning_rate", "final.test_accuracy"} <= set(df.columns)
    assert df[df["knobs.modulus"] == 97].seed.tolist() == [0, 1]
    assert len(df) == len(store.member_rows()) == 4


def test_an_older_curves_layout_reads_with_coordinates_from_members(tmp_path):
    """Before this layout: the second dimension was `eval` and members had no coordinates."""
    store = _write(tmp_path, coords=False)
    for name in ("curves", "step"):
        path = store.curves_path / "b0" / name / "zarr.json"
        meta = json.loads(path.read_text())
        meta["dimension_names"] = [("eval" if d == "step" else d) for d in meta["dimension_names"]]
        path.write_text(json.dumps(meta))
    Curves(store.curves_path).consolidate()
    assert xr.open_zarr(store.curves_path, group="b0").curves.dims == ("member", "eval", "metric")
    ds = tables.open_dataset(tmp_path)
    np.testing.assert_allclose(ds.sel(modulus=5, seed=1).val_accuracy.values, [1.1, 1.2, 1.3])
    assert store.curves("b0")[1].shape == (4, 3, 3)  # the loop's own reader too


def test_every_metric_carries_cf_units_and_a_long_name(tmp_path):
    """Loss in nats and entropy in bits no longer look alike: per metric in the store (for a
    reader of the raw zarr) and as each variable's CF attributes in `open_dataset`, which xarray's
    plots put on their axes; a metric whose name does not say its units gets none."""
    store = Store(tmp_path)
    coords = tables.member_coords(MEMBERS, "", [1.0] * len(MEMBERS))
    metrics = {"val_loss": np.ones(4), "train_entropy": np.ones(4), "val_accuracy": np.ones(4)}
    store.append_evals("b0", 10, {**metrics, "gap": np.zeros(4)}, coords)
    raw = xr.open_zarr(store.curves_path, group="b0")
    assert list(raw.metric_units.values) == ["nat", "bit", "1", ""]
    assert raw.step.attrs == {"long_name": "training step", "units": "1"}
    assert raw.complexity_bits.attrs["units"] == "bit"
    ds = tables.open_dataset(tmp_path)
    assert ds.val_loss.attrs == {"long_name": "cross-entropy on the val split", "units": "nat"}
    assert ds.train_entropy.attrs["units"] == "bit" and ds.val_accuracy.attrs["units"] == "1"
    assert "units" not in ds.gap.attrs  # in the primary metric's units, which the name does not say


def test_metric_units_follow_the_name():
    names = ["val_long_exact", "val_ood_bits", "test_soft_accuracy", "chunk_loss", "grad_norm"]
    got = [a.get("units") for a in curves_metric_attrs(names)]
    assert got == ["1", "bit", "1", "nat", "1"]
    assert curves_metric_attrs(["val_ood_bits"])[0]["long_name"].endswith(
        "out-of-distribution validation split"
    )
    regress = curves_metric_attrs(["val_loss", "val_nmse"])  # a regression task: squared error
    assert regress[0] == {"long_name": "mean squared error on the val split", "units": "1"}


def test_the_root_of_curves_zarr_opens_and_names_its_buckets(tmp_path):
    """`xr.open_zarr(curves.zarr)` without `group=` reads the root: its attributes name the
    buckets and how to open them (buckets differ in members and steps, so no array sits there);
    `xr.open_datatree` opens every bucket at once."""
    store = Store(tmp_path)
    store.append_evals("b0", 10, {"val_loss": np.ones(2)})
    store.append_evals("b1", 10, {"val_loss": np.ones(3)})
    root = xr.open_zarr(store.curves_path)
    assert root.attrs["buckets"] == ["b0", "b1"] and "group=" in root.attrs["open_with"]
    tree = xr.open_datatree(store.curves_path, engine="zarr")
    assert tree["b1"].dataset.curves.shape == (3, 1, 1)

"""curves.zarr: the dense copy of evals.jsonl, one Zarr v3 group per bucket, with units.

TensorStore appends the numbers one eval at a time; zarr-python writes the groups, string arrays
and consolidated metadata in the layout xarray reads, so the curves open in common tools:

    xr.open_zarr("<workdir>/curves.zarr", group="b0")  # curves (member, step, metric), with units
    jaxcap.results.tables.open_dataset("<workdir>").sel(modulus=97, seed=0).val_accuracy

Details: docs/design/results.md#curves-in-zarr.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import tensorstore as ts
import zarr

_CHUNK_EVALS = 64
SPLITS = ("val_long", "val_ood", "train", "val", "test")  # metric name prefixes, longest first
SPLIT_WORDS = {"val_long": "longer-input validation", "val_ood": "out-of-distribution validation"}
UNITS = {  # metric name ending -> (CF units, what it is); longer endings first where they overlap
    "excess_bits": ("bit", "excess code length over the true process per token"),
    "bayes_accuracy": ("1", "Bayes-optimal accuracy"),
    "bayes_fraction": ("1", "accuracy as a fraction of the Bayes-optimal accuracy"),
    "macro_f1": ("1", "macro-averaged F1"),
    "chunk_loss": ("nat", "mean training loss over the last chunk"),
    "grad_norm": ("1", "global gradient norm"),
    "perplexity": ("1", "perplexity"),
    "accuracy": ("1", "accuracy (fraction of scored positions right)"),
    "entropy": ("bit", "mean entropy of the predicted distribution"),
    "exact": ("1", "exact-match fraction (every scored position right)"),
    "nmse": ("1", "mean squared error over the target variance"),
    "bits": ("bit", "code length per scored token"),
    "loss": ("nat", "cross-entropy"),
    "diverged": ("1", "diverged (1) or not (0)"),
    "gap": ("", "generalization gap of the primary metric (train better than val by)"),
}
ROOT_ATTRS = {
    "title": "jaxcap training curves: one group per bucket",
    "open_with": "xr.open_zarr(path, group=<bucket>) or xr.open_datatree(path, engine='zarr')",
}


def metric_attrs(names: list[str]) -> list[dict[str, str]]:
    """CF `long_name` and `units` of each metric, from its name (no `units` where the name does
    not say: `gap` is in the primary metric's). A loss is a cross-entropy in nats, or a squared
    error where the task regresses (its metrics include an `nmse`)."""
    regress = any(n.endswith("nmse") for n in names)
    out = []
    for name in names:
        split = next((s for s in SPLITS if name.startswith(f"{s}_")), "")
        rest = name[len(split) + 1 :] if split else name
        soft = rest.startswith("soft_")  # sentiment scores a soft-labelled copy of each split
        rest = rest.removeprefix("soft_")
        ending = next((k for k in UNITS if rest == k or rest.endswith(f"_{k}")), None)
        units, words = UNITS.get(ending, ("", name.replace("_", " ")))
        if ending in ("loss", "chunk_loss") and regress:
            units, words = "1", words.replace("cross-entropy", "mean squared error")
        if split:
            words += f" on the {SPLIT_WORDS.get(split, split)} split" + (" (soft labels)" if soft else "")
        out.append({"long_name": words, **({"units": units} if units else {})})
    return out


def write_atomic(path: Path, text: str) -> None:
    """Temp file + rename: a reader sees the old metadata or the new, never half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _strings(group: zarr.Group, name: str, values: list[str], dim: str) -> None:
    """A 1-d array of strings in one chunk (zarr v3 `string`, vlen-utf8: TensorStore has no
    string type) along dimension `dim`."""
    array = group.create_array(
        name,
        shape=(len(values),),
        dtype=str,
        chunks=(max(len(values), 1),),
        dimension_names=[dim],
        compressors=None,
        fill_value="",
        overwrite=True,
    )
    array[:] = np.asarray(values, dtype=object)


class Curves:
    """Appends, cuts back and reads the curves of the buckets of one workdir."""

    def __init__(self, root: Path):
        self.root = root

    def _spec(self, bucket: str, name: str, **metadata) -> dict:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(self.root / bucket / name)}}
        return {**spec, "metadata": metadata} if metadata else spec

    def _open(self, bucket: str, name: str):
        if not (self.root / bucket / name / "zarr.json").exists():
            return None
        return ts.open(self._spec(bucket, name), open=True).result()

    def _create(self, bucket: str, names: list[str], n_members: int, coords: dict[str, list] | None):
        """The bucket's group and arrays, before its first eval."""
        root = zarr.open_group(self.root, mode="a", zarr_format=3)
        root.attrs.update({**ROOT_ATTRS, "buckets": sorted({*root.attrs.get("buckets", []), bucket})})
        group = root.require_group(bucket)
        group.attrs["bucket"] = bucket
        coords = coords or {}
        for name, values in coords.items():
            self._coordinate(group, bucket, name, values)
        described = metric_attrs(names)
        _strings(group, "metric", names, "metric")
        _strings(group, "metric_units", [a.get("units", "") for a in described], "metric")
        _strings(group, "metric_long_name", [a["long_name"] for a in described], "metric")
        attrs = {
            "coordinates": " ".join(["step", "metric_units", "metric_long_name", *coords]),
            "metrics": names,
            "long_name": "metric value (units per metric: metric_units)",
        }
        dims = ["member", "step", "metric"]
        spec = self._spec(bucket, "curves", dimension_names=dims, attributes=attrs, data_type="float32")
        spec["metadata"]["fill_value"] = "NaN"  # an eval not written reads as missing, never as 0
        layout = ts.ChunkLayout(write_chunk_shape=[n_members, _CHUNK_EVALS, len(names)])
        ts.open(spec, create=True, shape=[n_members, 0, len(names)], chunk_layout=layout).result()
        step_attrs = {"long_name": "training step", "units": "1"}
        spec = self._spec(bucket, "step", dimension_names=["step"], attributes=step_attrs)
        layout = ts.ChunkLayout(write_chunk_shape=[_CHUNK_EVALS])
        ts.open(spec, create=True, dtype=ts.int64, shape=[0], chunk_layout=layout).result()
        spec = self._spec(bucket, "member", dimension_names=["member"])
        members = ts.open(spec, create=True, dtype=ts.int32, shape=[n_members]).result()
        members.write(np.arange(n_members, dtype=np.int32)).result()

    def _coordinate(self, group: zarr.Group, bucket: str, name: str, values: list) -> None:
        """One per-member coordinate: numbers through TensorStore, anything else as strings."""
        if all(isinstance(v, (bool, int, np.integer)) for v in values):
            dtype, array = ts.int64, np.asarray(values, np.int64)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
            dtype, array = ts.float64, np.asarray(values, np.float64)
        else:
            return _strings(group, name, [str(v) for v in values], "member")
        attrs = {"long_name": "task complexity", "units": "bit"} if name == "complexity_bits" else {}
        spec = self._spec(bucket, name, dimension_names=["member"], attributes=attrs)
        ts.open(spec, create=True, dtype=dtype, shape=[len(values)]).result().write(array).result()

    def consolidate(self) -> None:
        """Every group's and array's metadata inline in the root's zarr.json (zarr-python's
        consolidated metadata), so readers open the store without listing it."""
        with warnings.catch_warnings():  # zarr-python's own format, as xarray reads it: no news
            warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
            zarr.consolidate_metadata(str(self.root), zarr_format=3)

    def _legacy(self, bucket: str) -> bool:
        """A bucket written before curves were groups: one bare array with `step` as metric 0."""
        meta = self.root / bucket / "zarr.json"
        return meta.exists() and json.loads(meta.read_text()).get("node_type") == "array"

    def append(
        self,
        bucket: str,
        step: int,
        names: list[str],
        table: np.ndarray,
        coords: dict[str, list] | None = None,
        consolidate: bool = True,
    ) -> None:
        """One eval: `table` is [member, metric] in the order of `names`; `coords` (per-member
        values by name) are written when the bucket's group is created. `consolidate=False` leaves
        the root's consolidated metadata as it was unless the group is new: it walks every bucket,
        so the training loop refreshes it only when it checkpoints."""
        if self._legacy(bucket):  # rewrite it in today's layout, then go on appending
            old_names, old = self.read(bucket)
            shutil.rmtree(self.root / bucket)
            for k in range(old.shape[1]):
                self.append(bucket, int(old[0, k, 0]), old_names[1:], old[:, k, 1:], coords)
        curves = self._open(bucket, "curves")
        if curves is None:
            self._create(bucket, names, table.shape[0], coords)
            curves, consolidate = self._open(bucket, "curves"), True
        steps = self._open(bucket, "step")
        n = curves.shape[1]
        curves = curves.resize(exclusive_max=[curves.shape[0], n + 1, curves.shape[2]]).result()
        curves[:, n : n + 1, :].write(table[:, None, :].astype(np.float32)).result()
        steps = steps.resize(exclusive_max=[n + 1]).result()
        steps[n : n + 1].write(np.array([step], np.int64)).result()
        if consolidate:
            self.consolidate()

    def truncate(self, bucket: str, n_evals: int) -> None:
        """Keep the first `n_evals` evals of a bucket (resume)."""
        if self._legacy(bucket):
            array = ts.open(self._spec(bucket, ""), open=True).result()
            if array.shape[1] > n_evals:
                array.resize(exclusive_max=[array.shape[0], n_evals, array.shape[2]]).result()
            return
        curves, steps = self._open(bucket, "curves"), self._open(bucket, "step")
        if curves is not None and curves.shape[1] > n_evals:
            curves.resize(exclusive_max=[curves.shape[0], n_evals, curves.shape[2]]).result()
            steps.resize(exclusive_max=[n_evals]).result()
            self.consolidate()

    def read(self, bucket: str) -> tuple[list[str], np.ndarray]:
        """(names, array [member, eval, metric]) with the step as metric 0, named 'step'."""
        if self._legacy(bucket):
            array = ts.open(self._spec(bucket, ""), open=True).result()
            return array.spec().to_json()["metadata"]["attributes"]["metrics"], array.read().result()
        curves = self._open(bucket, "curves")
        if curves is None:
            return [], np.zeros((0, 0, 0), np.float32)
        names = curves.spec().to_json()["metadata"]["attributes"]["metrics"]
        values, steps = curves.read().result(), self._open(bucket, "step").read().result()
        n = min(values.shape[1], steps.shape[0])  # a kill between the two resizes
        step = np.broadcast_to(steps[None, :n, None].astype(np.float32), (values.shape[0], n, 1))
        return ["step", *names], np.concatenate([step, values[:, :n]], axis=2)

"""curves.zarr: the dense copy of evals.jsonl, one Zarr v3 group per bucket.

TensorStore writes the numbers (it appends one eval at a time without rewriting what is there),
but the layout is the one xarray and zarr-python read, so the curves open in the tools people
already use:

    xr.open_zarr("<workdir>/curves.zarr", group="b0")
    # Dataset: curves (member, step, metric) float32; coordinates step (an index), metric, member
    # and, per member, level, seed, the task knobs (modulus), complexity_bits and the hparams
    jaxcap.results.curves.open_dataset("<workdir>").sel(modulus=97, seed=0).val_accuracy
    # one variable per metric, members indexed by their level knobs and seed

Per bucket group: `curves` [member, step, metric] (NaN where a member has no value), `step`
[step] (the training step of each eval, the dimension's index), `member` [member] and `metric`
[metric] (names), and one [member] array per member coordinate. Zarr v3 names dimensions in
`dimension_names`; a one-dimensional array named like its dimension is that dimension's
coordinate, and the `coordinates` attribute makes the member arrays coordinates. TensorStore has
no string type, so string arrays (`metric`, `level`) are written directly in the zarr v3
"string" format (vlen-utf8 codec). The root's `zarr.json` carries consolidated metadata,
rewritten after every change, so `xr.open_zarr` opens it in one read and without a warning.

Older workdirs still read: groups whose second dimension is `eval` and which carry no member
coordinates (`open_dataset` takes those from members.jsonl), and the bare arrays before groups.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import tensorstore as ts

_GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}
_CHUNK_EVALS = 64


def write_atomic(path: Path, text: str) -> None:
    """Temp file + rename: a reader sees the old metadata or the new, never half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _string_array(path: Path, names: list[str], dim: str) -> None:
    """A 1-d zarr v3 array of strings in one chunk: the vlen-utf8 encoding is a little-endian
    uint32 count, then each item as a uint32 byte length and its UTF-8 bytes."""
    (path / "c").mkdir(parents=True, exist_ok=True)
    encoded = [n.encode() for n in names]
    chunk = struct.pack("<I", len(encoded)) + b"".join(struct.pack("<I", len(e)) + e for e in encoded)
    (path / "c" / "0").write_bytes(chunk)
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [len(names)],
        "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [max(len(names), 1)]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "",
        "codecs": [{"name": "vlen-utf8", "configuration": {}}],
        "attributes": {},
        "dimension_names": [dim],
    }
    write_atomic(path / "zarr.json", json.dumps(meta))


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
        group = self.root / bucket
        group.mkdir(parents=True, exist_ok=True)
        write_atomic(self.root / "zarr.json", json.dumps(_GROUP))
        write_atomic(group / "zarr.json", json.dumps({**_GROUP, "attributes": {"bucket": bucket}}))
        coords = coords or {}
        for name, values in coords.items():
            self._coordinate(bucket, name, values)
        dims = ["member", "step", "metric"]
        attrs = {"coordinates": " ".join(["step", *coords]), "metrics": names}
        spec = self._spec(bucket, "curves", dimension_names=dims, attributes=attrs, data_type="float32")
        spec["metadata"]["fill_value"] = "NaN"  # an eval not written reads as missing, never as 0
        layout = ts.ChunkLayout(write_chunk_shape=[n_members, _CHUNK_EVALS, len(names)])
        ts.open(spec, create=True, shape=[n_members, 0, len(names)], chunk_layout=layout).result()
        spec = self._spec(bucket, "step", dimension_names=["step"])
        layout = ts.ChunkLayout(write_chunk_shape=[_CHUNK_EVALS])
        ts.open(spec, create=True, dtype=ts.int64, shape=[0], chunk_layout=layout).result()
        spec = self._spec(bucket, "member", dimension_names=["member"])
        members = ts.open(spec, create=True, dtype=ts.int32, shape=[n_members]).result()
        members.write(np.arange(n_members, dtype=np.int32)).result()
        _string_array(group / "metric", names, "metric")

    def _coordinate(self, bucket: str, name: str, values: list) -> None:
        """One per-member coordinate: numbers through TensorStore, anything else as strings."""
        if all(isinstance(v, (bool, int, np.integer)) for v in values):
            dtype, array = ts.int64, np.asarray(values, np.int64)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
            dtype, array = ts.float64, np.asarray(values, np.float64)
        else:
            return _string_array(self.root / bucket / name, [str(v) for v in values], "member")
        spec = self._spec(bucket, name, dimension_names=["member"])
        ts.open(spec, create=True, dtype=dtype, shape=[len(values)]).result().write(array).result()

    def _consolidate(self) -> None:
        """Every group's and array's metadata inline in the root's zarr.json (zarr-python's
        consolidated metadata), so readers open the store without listing it."""
        metadata = {}
        for group in sorted(p for p in self.root.iterdir() if (p / "zarr.json").exists()):
            metadata[group.name] = json.loads((group / "zarr.json").read_text())
            for array in sorted(a for a in group.iterdir() if (a / "zarr.json").exists()):
                metadata[f"{group.name}/{array.name}"] = json.loads((array / "zarr.json").read_text())
        inline = {"kind": "inline", "must_understand": False, "metadata": metadata}
        write_atomic(self.root / "zarr.json", json.dumps({**_GROUP, "consolidated_metadata": inline}))

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
    ) -> None:
        """One eval: `table` is [member, metric] in the order of `names`; `coords` (per-member
        values by name) are written when the bucket's group is created."""
        if self._legacy(bucket):  # rewrite it in today's layout, then go on appending
            old_names, old = self.read(bucket)
            shutil.rmtree(self.root / bucket)
            for k in range(old.shape[1]):
                self.append(bucket, int(old[0, k, 0]), old_names[1:], old[:, k, 1:], coords)
        curves = self._open(bucket, "curves")
        if curves is None:
            self._create(bucket, names, table.shape[0], coords)
            curves = self._open(bucket, "curves")
        steps = self._open(bucket, "step")
        n = curves.shape[1]
        curves = curves.resize(exclusive_max=[curves.shape[0], n + 1, curves.shape[2]]).result()
        curves[:, n : n + 1, :].write(table[:, None, :].astype(np.float32)).result()
        steps = steps.resize(exclusive_max=[n + 1]).result()
        steps[n : n + 1].write(np.array([step], np.int64)).result()
        self._consolidate()

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
            self._consolidate()

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

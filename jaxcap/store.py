"""The results store of one workdir (DESIGN.md "Results store").

config.json is written first; evals.jsonl is append-only (one row per member per eval);
curves.zarr holds the same numbers densely as one TensorStore zarr3 array per bucket,
[member, eval, metric]; members.jsonl is rewritten atomically (temp file + rename) whenever a
bucket finishes. On resume everything past the last checkpoint is cut back, so a kill at any
moment loses at most the chunk in flight.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np
import tensorstore as ts


def clean(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to None (never a silent NaN)."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a torn last line from a kill mid-append
                break
    return rows


def _differences(a: Any, b: Any, path: str = "config") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _differences(a.get(key), b.get(key), f"{path}.{key}")
        return out
    return [] if a == b else [f"{path}: {b!r} in the workdir, {a!r} now"]


class WorkdirMismatch(ValueError):
    pass


class Store:
    """Reads and writes the files of one workdir.

    In a multi-process run every process runs the same host loop on the same gathered metrics;
    process 0 writes the workdir, process k > 0 an identical mirror in `<workdir>/.process<k>`
    (its own Optuna storage and tables, so nothing collides), while the checkpoints are shared:
    each process saves the shards of its own devices into the one `<workdir>/ckpt`.
    """

    def __init__(self, workdir: str | os.PathLike):
        k = jax.process_index()
        tag = f".process{k}"
        shared = Path(*[p for p in Path(workdir).parts if p != tag])  # sub-stores of a mirror
        self.root = shared if k == 0 else shared / tag
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_path = self.root / "config.json"
        self.members_path = self.root / "members.jsonl"
        self.evals_path = self.root / "evals.jsonl"
        self.curves_path = self.root / "curves.zarr"
        self.ckpt_path = shared / "ckpt"
        self.report_path = self.root / "report"

    # config --------------------------------------------------------------------------------
    def write_config(self, config: dict) -> None:
        """Write config.json, or check that the workdir holds a run of this same config."""
        config = clean(config)
        if self.config_path.exists():
            old = json.loads(self.config_path.read_text())
            diffs = _differences(config, old)
            if diffs:
                raise WorkdirMismatch(
                    f"{self.root} holds a run of a different config ({diffs[0]}); use another --workdir"
                )
            return
        write_atomic(self.config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")

    # members -------------------------------------------------------------------------------
    def member_rows(self) -> list[dict]:
        return read_jsonl(self.members_path)

    def finished_buckets(self) -> set[str]:
        return {row["bucket"] for row in self.member_rows()}

    def add_member_rows(self, rows: list[dict]) -> None:
        bucket = {row["bucket"] for row in rows}
        kept = [r for r in self.member_rows() if r["bucket"] not in bucket]
        text = "".join(json.dumps(clean(r), sort_keys=True) + "\n" for r in kept + rows)
        write_atomic(self.members_path, text)

    # evals ---------------------------------------------------------------------------------
    def eval_rows(self, bucket: str | None = None) -> list[dict]:
        rows = read_jsonl(self.evals_path)
        return rows if bucket is None else [r for r in rows if r["bucket"] == bucket]

    def append_evals(self, bucket: str, step: int, metrics: dict[str, np.ndarray]) -> None:
        """One row per member for this eval point, and the same numbers into curves.zarr."""
        names = list(metrics)
        table = np.stack([np.asarray(metrics[n], np.float64) for n in names], axis=1)  # [P, M]
        lines = []
        for member, values in enumerate(table):
            row = {"bucket": bucket, "member": member, "step": step, **dict(zip(names, values))}
            lines.append(json.dumps(clean(row), sort_keys=True) + "\n")
        with open(self.evals_path, "a") as f:
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
        self._append_curve(bucket, step, names, table)

    def truncate(self, bucket: str, n_evals: int) -> None:
        """Cut this bucket's evals back to its first `n_evals` eval points (resume)."""
        rows = read_jsonl(self.evals_path)
        steps = sorted({r["step"] for r in rows if r["bucket"] == bucket})
        keep_steps = set(steps[:n_evals])
        kept = [r for r in rows if r["bucket"] != bucket or r["step"] in keep_steps]
        # Always rewrite: this also drops a line torn by a kill in the middle of an append.
        write_atomic(self.evals_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
        array = self._open_curve(bucket)
        if array is not None and array.shape[1] > n_evals:
            array.resize(exclusive_max=[array.shape[0], n_evals, array.shape[2]]).result()

    # curves --------------------------------------------------------------------------------
    def _curve_spec(self, bucket: str) -> dict:
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(self.curves_path / bucket)}}

    def _open_curve(self, bucket: str):
        if not (self.curves_path / bucket).exists():
            return None
        return ts.open(self._curve_spec(bucket), open=True).result()

    def _append_curve(self, bucket: str, step: int, names: list[str], table: np.ndarray) -> None:
        columns = ["step", *names]
        block = np.concatenate([np.full((table.shape[0], 1), step, np.float64), table], axis=1)
        array = self._open_curve(bucket)
        if array is None:
            spec = self._curve_spec(bucket)
            spec["metadata"] = {"attributes": {"metrics": columns}}
            array = ts.open(
                spec,
                create=True,
                dtype=ts.float32,
                shape=[table.shape[0], 0, len(columns)],
                chunk_layout=ts.ChunkLayout(write_chunk_shape=[table.shape[0], 64, len(columns)]),
            ).result()
        n = array.shape[1]
        array = array.resize(exclusive_max=[table.shape[0], n + 1, len(columns)]).result()
        array[:, n : n + 1, :].write(block[:, None, :].astype(np.float32)).result()

    def curves(self, bucket: str) -> tuple[list[str], np.ndarray]:
        """(metric names, array [member, eval, metric]) of a bucket; names[0] is 'step'."""
        array = self._open_curve(bucket)
        if array is None:
            return [], np.zeros((0, 0, 0), np.float32)
        names = array.spec().to_json()["metadata"]["attributes"]["metrics"]
        return names, array.read().result()

"""The results store of one workdir (its files: docs/population.md).

config.json is written first; evals.jsonl is append-only (one row per member per eval, with
its level and seed); curves.zarr holds the same numbers densely, one xarray-readable zarr v3
group per bucket with per-member coordinates (jaxcap.results.curves); members.jsonl is rewritten
atomically (temp file + rename) whenever a bucket finishes, and members.csv with it (the same
rows flat, jaxcap.results.tables). On resume everything past the last checkpoint is cut back, so
a kill at any moment loses at most the chunk in flight.

Nothing is lost silently: one process writes a workdir at a time (`Store.writer`, a kernel lock
that dies with its process), and a line that does not parse (a kill in the middle of a write, a
damaged disk) is skipped with a warning on reading and moved, with its line number, to
`<table>.quarantine` when the writer next rewrites the table, never ending the read early.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxcap.results import lock
from jaxcap.results.curves import Curves, write_atomic
from jaxcap.results.lock import WorkdirError, WorkdirLocked, make_dir  # noqa: F401 (re-exported)
from jaxcap.results.records import Cursor, MemberRow
from jaxcap.results.tables import members_csv


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


_warned: set[tuple[str, int, str]] = set()


def read_jsonl(path: Path, torn: list[tuple[int, str]] | None = None) -> list[dict]:
    """The rows of a JSON-lines table. A line that does not parse (or is not UTF-8) is skipped with
    a one-line warning (once per process) and, when `torn` is given, collected there as (line
    number, text, undecodable bytes shown as \\xNN escapes)."""
    if not path.exists():
        return []
    rows = []
    # bytes, split on newlines only: a line that is not UTF-8 is torn like any other damage
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        line = raw.decode("utf-8", errors="backslashreplace")  # quarantined as read, never lost
        try:
            rows.append(json.loads(raw.decode("utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError):  # a kill mid-append, or a damaged file
            if torn is not None:
                torn.append((number, line))
            if (str(path), number, line) not in _warned:
                _warned.add((str(path), number, line))
                print(f"warning: {path} line {number} does not parse; skipped", file=sys.stderr, flush=True)
    return rows


def rewrite_jsonl(path: Path, rows: list[dict], torn: list[tuple[int, str]]) -> None:
    """Replace a table by `rows`, first moving its `torn` lines (from read_jsonl) to
    `<table>.quarantine` with their line numbers, so that no text is ever dropped."""
    if torn:
        quarantine = path.with_name(path.name + ".quarantine")
        with open(quarantine, "a") as f:
            f.write("".join(json.dumps({"line": n, "text": text}) + "\n" for n, text in torn))
            f.flush()
            os.fsync(f.fileno())
        lines = ", ".join(str(n) for n, _ in torn)
        print(f"warning: moved line(s) {lines} of {path} to {quarantine.name}", file=sys.stderr, flush=True)
    write_atomic(path, "".join(json.dumps(clean(r), sort_keys=True) + "\n" for r in rows))


def _differences(a: Any, b: Any, path: str = "config") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _differences(a.get(key), b.get(key), f"{path}.{key}")
        return out
    return [] if a == b else [f"{path}: {b!r} in the workdir, {a!r} now"]


class WorkdirMismatch(WorkdirError):
    """The workdir holds a run of another config."""


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
        make_dir(self.root)
        self.config_path = self.root / "config.json"
        self.members_path = self.root / "members.jsonl"
        self.members_csv_path = self.root / "members.csv"
        self.evals_path = self.root / "evals.jsonl"
        self.curves_path = self.root / "curves.zarr"
        self.ckpt_path = shared / "ckpt"
        self.report_path = self.root / "report"

    @contextlib.contextmanager
    def writer(self) -> Iterator[None]:
        """Hold the workdir's lock (jaxcap.results.lock): a second writer fails at once, naming
        this process; each process of a multi-process run locks its own root (its mirror)."""
        with lock.hold(self.root):
            yield

    # config --------------------------------------------------------------------------------
    def write_config(self, config: dict) -> None:
        """Write config.json, or check that the workdir holds a run of this same config (a run
        that never started, only its config.json there, is replaced)."""
        config = clean(config)
        if self.config_path.exists():
            try:
                old = json.loads(self.config_path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise WorkdirError(
                    f"{self.config_path} does not parse ({e}); allowed: a workdir written by jaxcap "
                    "(move this one away, or use another --workdir)"
                ) from None
            # the note describes the run, it does not define it: a note written before the
            # launcher named the command line's changes in it (jaxcap.main.launch.annotate_note) resumes
            diffs = _differences({**config, "note": None}, {**old, "note": None})
            if diffs and self._never_started():
                print(
                    f"note: {self.root} held only the config of a run that never started "
                    f"({diffs[0]}); replaced by this one",
                    flush=True,
                )
            elif diffs:
                raise WorkdirMismatch(
                    f"{self.root} holds a run of a different config ({diffs[0]}); use another --workdir"
                )
            else:
                return
        write_atomic(self.config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")

    def _never_started(self) -> bool:
        """Only config.json (and the lock): a launch that failed before writing anything else, whose
        corrected command must not be refused as "a different config"."""
        return {p.name for p in self.root.iterdir()} <= {self.config_path.name, lock.LOCK}

    # members -------------------------------------------------------------------------------
    def member_rows(self) -> list[dict]:
        """members.jsonl as written (JSON dicts): for copying rows on and for tests. Readers take
        `members()`."""
        return read_jsonl(self.members_path)

    def members(self) -> list[MemberRow]:
        """members.jsonl as typed rows (jaxcap.results.records)."""
        return [MemberRow.from_json(r) for r in read_jsonl(self.members_path)]

    def reported_members(self) -> list[MemberRow]:
        """members.jsonl's rows for a report, or one line saying why there are none (a report of
        no rows would be an empty table and blank figures)."""
        rows = self.members()
        if rows:
            return rows
        state = "empty" if self.members_path.exists() else "missing"
        why = (
            f"; {self.evals_path.name} holds evals of a launch that stopped before a population finished "
            "(every member diverged, or killed)"
            if self.evals_path.exists()
            else ""
        )
        raise WorkdirError(
            f"{self.root}: no member rows ({self.members_path.name} {state}){why}; allowed: a workdir a "
            "finished launch wrote (rerun its launch command to finish it)"
        )

    def finished_buckets(self) -> set[str]:
        return {row.bucket for row in self.members()}

    def complete(self, bucket: str, n_members: int) -> bool:
        """Whether members.jsonl holds every row of this bucket (a torn line loses one)."""
        return sum(row.bucket == bucket for row in self.members()) == n_members

    def add_member_rows(self, rows: list[MemberRow]) -> None:
        """Put these rows in place of their buckets' rows (where the first of them was), or last.
        The other buckets' rows are kept as they were read, so rewriting the table never changes
        a row that an older jaxcap wrote."""
        buckets, torn, out, placed = {row.bucket for row in rows}, [], [], False
        for raw in read_jsonl(self.members_path, torn):
            if MemberRow.from_json(raw).bucket not in buckets:
                out.append(raw)
            elif not placed:
                out, placed = out + [r.to_json() for r in rows], True
        rewrite_jsonl(self.members_path, out if placed else out + [r.to_json() for r in rows], torn)
        self.write_members_csv()

    def write_members_csv(self) -> None:
        """members.csv: members.jsonl flattened for pandas (`jaxcap.results.tables`)."""
        write_atomic(self.members_csv_path, members_csv([clean(r) for r in self.member_rows()]))

    # evals ---------------------------------------------------------------------------------
    def eval_rows(self, bucket: str | None = None) -> list[dict]:
        rows = read_jsonl(self.evals_path)
        return rows if bucket is None else [r for r in rows if r["bucket"] == bucket]

    def append_evals(
        self,
        bucket: str,
        step: int,
        metrics: dict[str, np.ndarray],
        coords: dict[str, list] | None = None,
        fields: tuple[str, ...] = (),
        consolidate: bool = True,
    ) -> None:
        """One row per member for this eval point, and the same numbers into curves.zarr.
        `coords` are per-member coordinates (`jaxcap.results.tables.member_coords`, written into
        curves.zarr); each row also carries those named in `fields` (its level and seed);
        `consolidate` refreshes curves.zarr's consolidated metadata (`Curves.append`)."""
        names = list(metrics)
        table = np.stack([np.asarray(metrics[n], np.float64) for n in names], axis=1)  # [P, M]
        lines = []
        for member, values in enumerate(table):
            who = {f: coords[f][member] for f in fields} if coords else {}
            row = {"bucket": bucket, "member": member, "step": step, **who, **dict(zip(names, values))}
            lines.append(json.dumps(clean(row), sort_keys=True) + "\n")
        text = "".join(lines)
        with open(self.evals_path, "ab+") as f:
            if f.seek(0, os.SEEK_END):
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    text = "\n" + text  # a torn last line stays one line, never glued to a row
            f.write(text.encode())
            f.flush()
            os.fsync(f.fileno())
        Curves(self.curves_path).append(bucket, step, names, table, coords, consolidate)

    def truncate(self, bucket: str, n_evals: int) -> None:
        """Cut this bucket's evals back to its first `n_evals` eval points (resume)."""
        torn: list[tuple[int, str]] = []
        rows = read_jsonl(self.evals_path, torn)
        steps = sorted({r["step"] for r in rows if r["bucket"] == bucket})
        keep_steps = set(steps[:n_evals])
        kept = [r for r in rows if r["bucket"] != bucket or r["step"] in keep_steps]
        # Always rewrite: this also moves a line torn by a kill in the middle of an append.
        rewrite_jsonl(self.evals_path, kept, torn)
        Curves(self.curves_path).truncate(bucket, n_evals)

    def check_tables(self, bucket: str, n_members: int, cursor: Cursor | None) -> None:
        """Say so when a bucket's tables hold fewer rows than its checkpoint's `cursor` recorded."""
        if cursor is None:
            return
        counts = {
            self.members_path.name: (sum(r.bucket == bucket for r in self.members()), n_members),
            self.evals_path.name: (len(self.eval_rows(bucket)), n_members * cursor.n_evals),
        }
        for name, (held, expected) in counts.items():
            if held < expected:  # more: a newer step whose cursor did not read (latest_cursor)
                print(
                    f"warning: [{bucket}] {name} holds {held} of the {expected} rows that its checkpoint "
                    f"(step {cursor.step}) recorded",
                    flush=True,
                )

    # curves --------------------------------------------------------------------------------
    def curves(self, bucket: str) -> tuple[list[str], np.ndarray]:
        """(metric names, array [member, eval, metric]) of a bucket; names[0] is 'step'."""
        return Curves(self.curves_path).read(bucket)

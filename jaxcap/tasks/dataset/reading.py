"""Files to columns: NumPy `.npz`, Parquet, CSV and JSONL read into host arrays, one cell a row.

Parquet, CSV and JSONL go through pandas (pyarrow for Parquet); an `.npz` is read without pickle,
each array a column whose first axis is the rows. A cell holds a scalar, a list of token ids (a
list, an array, or a string "3 1 4" in CSV) or a text. Every problem is one `ConfigError` line
naming the config field, the file, the column and the row (rows count from 0, the header not
counted), so a user sees where to look before anything is compiled.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re

import numpy as np

from jaxcap.fields import ConfigError

FORMATS = {".npz": "npz", ".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl"}
_NUMBERS = re.compile(r"[\s,\[\]()]+")  # "3 1 4", "[3, 1, 4]": the separators of an id list in text


def bad(field: str, path: str, column: str, row: int | None, problem: str, allowed: str) -> ConfigError:
    """The one line every data problem reads as: field, file, column, row, what, what is allowed."""
    at = f", row {row}" if row is not None else ""
    return ConfigError(
        f"config.task.{field}: file {path}, column {column!r}{at}: {problem}; allowed: {allowed}"
    )


@dataclasses.dataclass(frozen=True)
class Table:
    """One file's columns: name -> numpy array whose first axis is the rows (object for lists)."""

    path: str
    columns: dict[str, np.ndarray]
    n_rows: int

    def column(self, field: str, name: str) -> np.ndarray:
        if name not in self.columns:
            raise ConfigError(
                f"config.task.{field}: file {self.path} has no column {name!r}; "
                f"allowed: one of its columns: {', '.join(self.columns)}"
            )
        return self.columns[name]


def read_table(path: str, field: str = "path") -> Table:
    """The columns of one file, its format named by its suffix."""
    p = pathlib.Path(path)
    kind = FORMATS.get(p.suffix.lower())
    if kind is None:
        raise ConfigError(
            f"config.task.{field}: got {path!r}; allowed: a file ending in {', '.join(FORMATS)}"
        )
    if not p.is_file():
        raise ConfigError(
            f"config.task.{field}: file {path} does not exist; allowed: an existing {kind} file"
        )
    try:
        columns = _read_npz(p) if kind == "npz" else _read_pandas(p, kind)
    except ConfigError:
        raise
    except Exception as e:  # a parser's own exception: any of several libraries' types
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"config.task.{field}: file {path} does not read as {kind}: {message}") from None
    sizes = {name: len(a) for name, a in columns.items()}
    if len(set(sizes.values())) > 1:
        first = next(iter(sizes))
        odd = next(n for n, s in sizes.items() if s != sizes[first])
        raise bad(
            field,
            path,
            odd,
            None,
            f"{sizes[odd]} rows, column {first!r} has {sizes[first]}",
            "columns of one length",
        )
    return Table(path, columns, next(iter(sizes.values()), 0))


def _read_npz(p: pathlib.Path) -> dict[str, np.ndarray]:
    with np.load(p, allow_pickle=False) as z:
        columns = {name: z[name] for name in z.files}
    for name, a in columns.items():
        if a.ndim == 0:
            raise bad("path", str(p), name, None, "a scalar array", "arrays whose first axis is the rows")
    return columns


def _read_pandas(p: pathlib.Path, kind: str) -> dict[str, np.ndarray]:
    import pandas as pd

    if kind == "parquet":
        frame = pd.read_parquet(p)
    elif kind == "csv":
        frame = pd.read_csv(p)
    else:
        frame = pd.read_json(p, lines=True)
    out = {}
    for name in frame.columns:
        series = frame[name]
        numeric = series.dtype.kind in "iufb"
        out[str(name)] = series.to_numpy() if numeric else series.to_numpy(dtype=object)
    return out


def _ids(field, path, column, row, cell) -> np.ndarray:
    """One cell as 1-D int64 token ids (or class ids)."""
    if isinstance(cell, str):
        parts = [t for t in _NUMBERS.split(cell) if t]
        try:
            return np.asarray([int(t) for t in parts], np.int64)
        except ValueError:
            raise bad(
                field, path, column, row, f"got {cell[:40]!r}", "integer ids ('3 1 4' or a list)"
            ) from None
    values = np.asarray(cell if isinstance(cell, (list, tuple, np.ndarray)) else [cell])
    if values.dtype == object or values.dtype.kind not in "iufb":
        raise bad(field, path, column, row, f"got {cell!r}"[:80], "integer ids")
    return _integral(field, path, column, row, values.reshape(-1))


def _integral(field, path, column, row, values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        if not np.isfinite(values).all():
            raise bad(field, path, column, row, "NaN or infinite value", "integer ids (no missing values)")
        if (values != np.round(values)).any():
            raise bad(field, path, column, row, f"got {values[values != np.round(values)][0]}", "integer ids")
    return values.astype(np.int64)


def id_rows(field: str, table: Table, column: str) -> list[np.ndarray]:
    """The column's cells as id lists (a 1-D numeric column: one id per row)."""
    a = table.column(field, column)
    if a.dtype != object and a.dtype.kind in "iufb":
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad_rows = ~np.isfinite(a.reshape(len(a), -1)).all(axis=1)
            raise bad(
                field, table.path, column, int(np.argmax(bad_rows)), "NaN or infinite value", "integer ids"
            )
        flat = a.reshape(len(a), -1)
        for row in np.nonzero((flat != np.round(flat)).any(axis=1))[0][:1]:
            _integral(field, table.path, column, int(row), flat[row])
        return list(flat.astype(np.int64))
    if a.dtype.kind in "US":  # an .npz array of strings: "3 1 4" per row
        a = a.astype(object)
    if a.dtype != object:
        raise bad(field, table.path, column, None, f"an array of {a.dtype}", "integer ids")
    return [_ids(field, table.path, column, i, cell) for i, cell in enumerate(a)]


def text_rows(field: str, table: Table, column: str) -> list[str]:
    """The column's cells as strings (a missing value is an error, not an empty text)."""
    a = table.column(field, column)
    out = []
    for i, cell in enumerate(a):
        if isinstance(cell, np.str_):
            cell = str(cell)
        if not isinstance(cell, str):
            raise bad(field, table.path, column, i, f"got {cell!r}"[:80], "a text (no missing values)")
        out.append(cell)
    return out


def float_rows(field: str, table: Table, column: str) -> np.ndarray:
    """The column as float64 [N, K] (a scalar per row: K = 1); NaN is an error naming its row."""
    a = table.column(field, column)
    if a.dtype == object:
        try:
            cells = [np.asarray(c, np.float64).reshape(-1) for c in a]
        except (TypeError, ValueError):
            raise bad(field, table.path, column, None, "a value that is not a number", "numbers") from None
        widths = {len(c) for c in cells}
        if len(widths) > 1:
            row = next(i for i, c in enumerate(cells) if len(c) != len(cells[0]))
            raise bad(
                field,
                table.path,
                column,
                row,
                f"{len(cells[row])} values, row 0 has {len(cells[0])}",
                "one width",
            )
        a = np.stack(cells) if cells else np.zeros((0, 1))
    if a.dtype.kind not in "iufb":
        raise bad(field, table.path, column, None, f"an array of {a.dtype}", "numbers")
    a = a.astype(np.float64).reshape(len(a), -1)
    finite = np.isfinite(a).all(axis=1)
    if not finite.all():
        raise bad(
            field, table.path, column, int(np.argmin(finite)), "NaN or infinite value", "finite numbers"
        )
    return a


def split_labels(field: str, table: Table, column: str) -> np.ndarray:
    """The split column as int8 (0 train, 1 val, 2 test)."""
    names = ("train", "val", "test")
    out = np.empty(table.n_rows, np.int8)
    for i, cell in enumerate(table.column(field, column)):
        if str(cell) not in names:
            raise bad(field, table.path, column, i, f"got {cell!r}", ", ".join(names))
        out[i] = names.index(str(cell))
    return out


def describe(values: np.ndarray) -> str:
    """'1 … 5': the range of a column's values, for an error."""
    if values.size == 0:
        return "none"
    lo, hi = float(values.min()), float(values.max())
    fmt = (lambda v: str(int(v))) if all(math.isclose(v, round(v)) for v in (lo, hi)) else "{:g}".format
    return f"{fmt(lo)} … {fmt(hi)}"

"""The workdir's tables as analysis tools take them: members.csv for pandas, curves for xarray.

members.jsonl nests (knobs, hparams, final metrics, model), so every analysis started with
`pd.json_normalize`; members.csv is the same rows flattened once (`knobs.modulus`,
`hparams.learning_rate`, `final.test_accuracy`), identity columns first, written beside
members.jsonl whenever that is rewritten. `open_dataset` gives curves.zarr as one xarray
Dataset per workdir: one variable per metric over (member, step), each with CF `units` and
`long_name` (so `ds.val_loss.plot()` labels its axis "cross-entropy on the val split [nat]"),
the members indexed by their level knobs and seed (and trial, bucket where they vary), so

    ds = open_dataset(workdir); ds.sel(modulus=97, seed=0).val_accuracy

needs no join. It reads every curves.zarr layout jaxcap has written, taking the member
coordinates from members.jsonl where the store predates them.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from jaxcap.core.population import HPARAM_NAMES
from jaxcap.results.curves import metric_attrs
from jaxcap.results.records import MemberRow

FIRST = ("bucket", "member", "level", "seed", "trial", "status", "success", "complexity_bits", "family")


def level_words(knobs: dict, bucket_label: str = "") -> str:
    """A member's level in words: its bucket's overrides and task knobs, `operation=add, p=7`."""
    label = [p.strip().removeprefix("task.") for p in (bucket_label or "").split(",") if p.strip()]
    return ", ".join([*label, *(f"{k}={v}" for k, v in knobs.items())]) or "all"


def flatten(row: dict, prefix: str = "") -> dict[str, Any]:
    """One level of columns per nesting (`final.test_accuracy`); lists stay JSON text."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = json.dumps(value) if isinstance(value, list) else value
    return out


def members_csv(rows: list[dict]) -> str:
    """members.jsonl's rows (as JSON, so that every key on disk gets its column) as one flat CSV
    table (empty cells for missing values)."""
    level = lambda row: level_words(row.knobs, row.bucket_label)  # noqa: E731
    flat = [{"level": level(MemberRow.from_json(r)), **flatten(r)} for r in rows]
    names = list(dict.fromkeys(k for row in flat for k in row))
    names = [n for n in FIRST if n in names] + sorted(n for n in names if n not in FIRST)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)
    return text.getvalue()


def member_coords(members: list, bucket_label: str, complexity_bits: list[float]) -> dict[str, list]:
    """Per-member coordinates of a bucket (`jaxcap.core.population.Member`s): level in words,
    seed, trial (where there is one), each task knob, complexity in bits, each hyperparameter.
    A knob or hyperparameter named like a fixed coordinate gets a `task_`/`hparam_` prefix."""
    out: dict[str, list] = {
        "level": [level_words(m.knobs, bucket_label) for m in members],
        "seed": [m.seed for m in members],
    }
    if any(m.trial is not None for m in members):
        out["trial"] = [-1 if m.trial is None else m.trial for m in members]
    reserved = {"member", "step", "metric", "curves", "bucket", "complexity_bits", *out}
    for name in members[0].knobs:
        out[f"task_{name}" if name in reserved else name] = [m.knobs.get(name) for m in members]
    out["complexity_bits"] = list(complexity_bits)
    for name in members[0].hparams:
        out[f"hparam_{name}" if name in out or name in reserved else name] = [
            m.hparams[name] for m in members
        ]
    return out


EVAL_FIELDS_SKIP = ("complexity_bits",)  # evals.jsonl carries the level's identity, not every coordinate


def eval_fields(coords: dict[str, list], hparam_names: tuple[str, ...]) -> list[str]:
    """The coordinates each evals.jsonl row carries: level, seed, trial and the task knobs."""
    return [n for n in coords if n not in EVAL_FIELDS_SKIP and n.removeprefix("hparam_") not in hparam_names]


def open_dataset(workdir: str | Path, bucket: str | None = None):
    """curves.zarr of a workdir as one xarray Dataset (see the module docstring); `bucket`
    picks one bucket's group, else every bucket is concatenated along `member`."""
    import xarray as xr

    root = Path(workdir)
    groups = sorted(p.name for p in (root / "curves.zarr").iterdir() if (p / "zarr.json").exists())
    if bucket is not None and bucket not in groups:
        raise ValueError(f"bucket: {bucket!r} is not in {root / 'curves.zarr'}; allowed: {', '.join(groups)}")
    rows = _member_rows(root / "members.jsonl")
    parts = [_bucket_dataset(xr, root, name, rows) for name in ([bucket] if bucket else groups)]
    ds = (
        parts[0]
        if len(parts) == 1
        else xr.concat(parts, dim="member", join="outer", combine_attrs="drop_conflicts")
    )
    keys = [k for k in ds.coords if ds[k].dims == ("member",) and _is_key(k)]
    varying = [k for k in keys if len(np.unique(ds[k].values.astype(str))) > 1] or ["seed"]
    ds = ds.assign_coords(member_id=("member", ds["member"].values)).drop_vars("member")
    return ds.set_xindex(varying)


def _is_key(name: str) -> bool:
    """Whether a member coordinate identifies a member (bucket, seed, trial, a task knob) rather
    than describing it (level in words, complexity, a hyperparameter)."""
    described = ("level", "complexity_bits", "member", *HPARAM_NAMES)
    return name not in described and not name.startswith("hparam_")


def _member_rows(path: Path) -> list[MemberRow]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [MemberRow.from_json(json.loads(line)) for line in lines if line.strip().startswith("{")]


def _bucket_dataset(xr, root: Path, bucket: str, rows: list[MemberRow]):
    """One bucket's group: metrics as variables, step as the index, member coordinates (from
    members.jsonl where the group has none)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        raw = xr.open_zarr(root / "curves.zarr", group=bucket, consolidated=False)
    if "eval" in raw.dims:  # the layout before step was the dimension
        raw = raw.swap_dims({"eval": "step"})
    per_metric = [k for k in raw.coords if k != "metric" and "metric" in raw[k].dims]  # units
    ds = raw.curves.drop_vars(per_metric).to_dataset("metric")
    for name, attrs in zip(list(ds.data_vars), metric_attrs(list(ds.data_vars))):
        ds[name].attrs = attrs  # CF units and long_name per variable (older stores: from the name)
    ds = ds.assign_coords({k: v for k, v in raw.coords.items() if "metric" not in v.dims})
    mine = sorted((r for r in rows if r.bucket == bucket), key=lambda r: r.member)
    if "seed" not in ds.coords and len(mine) == ds.sizes["member"]:
        ds = ds.assign_coords(
            level=("member", [level_words(r.knobs, r.bucket_label) for r in mine]),
            seed=("member", [r.seed for r in mine]),
            complexity_bits=("member", [r.complexity_bits for r in mine]),
            **{k: ("member", [r.knobs[k] for r in mine]) for k in mine[0].knobs},
            **{k: ("member", [r.hparams[k] for r in mine]) for k in mine[0].hparams},
        )
    return ds.assign_coords(bucket=("member", [bucket] * ds.sizes["member"]))

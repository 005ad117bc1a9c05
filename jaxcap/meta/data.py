"""The meta-model's table: one row per (architecture, task family, difficulty level, seed).

Built from one or more workdirs. A workdir holding `best_trials.jsonl` (an Optuna study's best
trials per level, same row schema as members.jsonl) is read from that file, any other from
`members.jsonl`; a sweep worker's rows count only for the trials it told (`jaxcap.results.told`).
Within each (architecture, family, level) the hyperparameter setting with the best median val
metric over its seeds is kept (`jaxcap.results.outcomes`, as in the run's table): the question is
whether the architecture can learn the level, not whether one learning rate can.
Its seeds are the rows; each seed's outcome is its `success` flag, read on test.

Details: docs/design/meta-model.md#the-data-table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxcap.meta.difficulty import covariate
from jaxcap.meta.records import LevelInfo
from jaxcap.models import ModelConfig, param_count
from jaxcap.models.config import PRECISION_BITS
from jaxcap.results import outcomes, told
from jaxcap.results.records import MemberRow
from jaxcap.results.store import clean, read_jsonl, write_atomic

IGNORED_TASK_FIELDS = ("n_eval",)  # the eval subset size; and every max_* field (see level_fields)
FAMILY_FIELDS = {"binop": ("operation",)}
# family -> its max_* fields that are levels, not sizes (the dataset task's keep-at-most knobs)
LEVEL_MAX_FIELDS = {"dataset": ("max_difficulty", "max_length")}


def arch_fields(row: MemberRow) -> dict:
    """The architecture of a row (ModelConfig.arch_of: older rows' missing switches are off)."""
    return ModelConfig.arch_of(row.model)


def family_name(row: MemberRow) -> str:
    extra = [str(row.task[f]) for f in FAMILY_FIELDS.get(row.family, ()) if f in row.task]
    return ":".join([row.family, *extra])


def is_level_field(family: str, name: str) -> bool:
    """Whether a task field defines a level. `max_*` fields are sizes set from a sweep so that
    every level shares one program (head size, padding, examples drawn), not the level itself,
    except those `LEVEL_MAX_FIELDS` names."""
    if name in IGNORED_TASK_FIELDS:
        return False
    return not name.startswith("max_") or name in LEVEL_MAX_FIELDS.get(family.split(":")[0], ())


def level_fields(row: MemberRow) -> dict:
    """The task fields that define a level (`is_level_field`)."""
    fields = {k: v for k, v in sorted(row.task.items()) if is_level_field(row.family, k)}
    # a task from outside jaxcap: its path, so that the fit rebuilds it (jaxcap.meta.difficulty.task_class)
    return fields | ({"task_name": row.task_name} if row.task_name else {})


def _key(value) -> str:
    return json.dumps(value, sort_keys=True)


def read_rows(workdir: str | Path) -> list[MemberRow]:
    """A workdir's result rows that count: best_trials.jsonl when present, else members.jsonl,
    each trial's rows only from the worker that told it (`jaxcap.results.told`, the one rule); each
    carries the workdir it came from as `extra["source"]` (the table's `source`)."""
    root = Path(workdir)
    best = root / "best_trials.jsonl"
    rows = read_jsonl(best if best.exists() else root / "members.jsonl")
    typed = [MemberRow.from_json({**r, "source": str(root)}) for r in rows]
    return told.counted_rows(root, typed, by_rule=best.exists())


def source(row: MemberRow) -> str:
    """The workdir a row was read from (`read_rows`); empty for a row made in memory."""
    return row.extra.get("source", "")


def best_setting_rows(rows: list[MemberRow]) -> list[MemberRow]:
    """Per (architecture, family, level): the rows of the best hyperparameter setting, chosen on
    val by the one rule of `jaxcap.results.outcomes` (pruned members have no outcome and are left out)."""
    key = lambda r: (_key(arch_fields(r)), family_name(r), _key(level_fields(r)))
    return [r for best in outcomes.best_settings(rows, key).values() for r in best]


@dataclasses.dataclass(frozen=True)
class TableRow:
    """One seed's outcome in the table, coded: which architecture, family and level (indices into
    `Table.archs`, `.families`, `.levels`), and what the member reached.

    The row of table.json, typed (cf. `jaxcap.results.records.MemberRow`): ONE reader,
    `from_json`, and ONE writer, `to_json`, with the keys table.json has always had, so a table
    read and written again is the same bytes; keys this version does not know are kept in `extra`.
    """

    arch: int
    family: int
    level: int
    seed: int
    success: bool  # the member's success flag (jaxcap.results.outcomes), read on test
    status: str  # "ok" or "diverged" (pruned members are not in the table)
    complexity_bits: float  # the task's nominal complexity (the level's `bits` is the covariate)
    chance: float | None
    metric: str  # the success metric
    value: float | None  # its final value
    threshold: float
    hparams: dict[str, float]
    n_params: int
    source: str  # the workdir the member's row was read from
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableRow:
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
        absent = [n for n in names if n not in data]
        if absent:
            raise ValueError(
                f"table.json row: missing key(s) {', '.join(absent)}; present: {', '.join(sorted(data))}"
            )
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**{n: data[n] for n in names}, extra=extra)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**out, **self.extra}


@dataclasses.dataclass
class Table:
    """Seed-level outcomes with integer codes for architecture, family and level."""

    rows: list[TableRow]
    archs: list[dict]  # the model fields of each architecture
    families: list[str]
    levels: list[LevelInfo]  # family (int), complexity_bits (nominal), bits + covariate, fields, label

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Table:
        rows = [TableRow.from_json(r) for r in data["rows"]]
        return cls(rows, data["archs"], data["families"], [LevelInfo.from_json(lv) for lv in data["levels"]])

    def to_json(self) -> dict[str, Any]:
        rows = [r.to_json() for r in self.rows]
        levels = [lv.to_json() for lv in self.levels]
        return {"rows": rows, "archs": self.archs, "families": self.families, "levels": levels}

    @property
    def fingerprint(self) -> str:
        """What a fit of the table depends on: its rows, architectures, families and levels, but
        not where the rows were read (`source`), so a moved workdir keeps its fit."""
        return self._hash(lambda r: {k: v for k, v in r.to_json().items() if k != "source"})

    @property
    def fingerprint_with_sources(self) -> str:
        """The fingerprint as earlier versions computed it (sources included): a fit stamped with
        it resumes without a refit while its workdirs stay where they were."""
        return self._hash(TableRow.to_json)

    def _hash(self, row_json) -> str:
        levels = [lv.to_json() for lv in self.levels]
        text = _key([[row_json(r) for r in self.rows], self.archs, self.families, levels])
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def arch_label(self, a: int) -> str:
        m = self.archs[a]
        return (
            f"a{a}: {m['n_layers']}L d{m['d_model']} {m['n_heads']}x{m['d_head']} "
            f"ff{m['d_ff']} {m['param_dtype']}"
        ) + "".join(f" {k}={v}" for k, v in m.items() if a and v != self.archs[0][k] and k not in _SHOWN)

    def budgets(self, a: int) -> dict:
        """The capacity issue's budgets: heads x d_head x precision, and parameters x precision
        (parameters of the body: embedding and head depend on the task and are left out)."""
        m = self.archs[a]
        bits, body = arch_precision_bits(m), arch_body_params(m)
        totals = [r.n_params for r in self.rows if r.arch == a]
        return {
            "attention_bits": m["n_heads"] * m["d_head"] * bits,
            "body_params": body,
            "param_bits": body * bits,
            "n_params_range": (min(totals), max(totals)) if totals else None,
        }


def arch_precision_bits(m: dict) -> int:
    return m.get("qat_bits") or PRECISION_BITS[m["param_dtype"]]  # k-bit QAT stores k bits


def arch_body_params(m: dict) -> int:
    return param_count(ModelConfig(vocab_size=0, seq_len=0, n_outputs=0, **m))


_SHOWN = ("n_layers", "d_model", "n_heads", "d_head", "d_ff", "param_dtype")


def build_table(rows: list[MemberRow]) -> Table:
    """Code the kept rows (the best setting per level: `best_setting_rows`, called here only);
    levels with complexity <= 0 cannot enter a log-scale model (dropped)."""
    rows = [
        r
        for r in best_setting_rows(rows)
        if r.complexity_bits and covariate(r.family, r.task, r.complexity_bits)[1] > 0
    ]
    archs: dict[str, int] = {}
    families: dict[str, int] = {}
    levels: dict[tuple, int] = {}
    level_info: list[LevelInfo] = []
    out = []
    for r in rows:  # codes in order of first appearance: workdirs in the order given
        a = archs.setdefault(_key(arch_fields(r)), len(archs))
        f = families.setdefault(family_name(r), len(families))
        fields = level_fields(r)
        lk = (f, _key(fields))
        if lk not in levels:
            levels[lk] = len(levels)
            name, bits = covariate(r.family, r.task, r.complexity_bits)
            # `bits` is the model's difficulty covariate (jaxcap/meta/difficulty.py)
            level_info.append(LevelInfo(f, float(r.complexity_bits), bits, name, fields))
        out.append(
            TableRow(
                arch=a,
                family=f,
                level=levels[lk],
                seed=r.seed,
                success=bool(r.success),
                status=r.status,
                complexity_bits=float(r.complexity_bits),
                chance=r.chance,
                metric=r.success_metric,
                value=r.value,
                threshold=r.success_threshold,
                hparams=r.hparams,
                n_params=r.n_params,
                source=source(r),
            )
        )
    for f in range(len(families)):  # label each level by the task fields that vary in its family
        mine = [i for i, lv in enumerate(level_info) if lv.family == f]
        first = level_info[mine[0]].fields
        varying = sorted(k for k in first if len({_key(level_info[i].fields[k]) for i in mine}) > 1)
        for i in mine:
            lv = level_info[i]
            label = ",".join(f"{k}={lv.fields[k]}" for k in varying) or f"{lv.complexity_bits:.3g}b"
            level_info[i] = dataclasses.replace(lv, label=label)
    arch_list = [json.loads(k) for k in archs]
    return Table(out, arch_list, list(families), level_info)


def load_table(workdirs: list[str | Path]) -> Table:
    rows = [r for w in workdirs for r in read_rows(w)]
    if not rows:
        raise ValueError(f"no result rows in {', '.join(map(str, workdirs))}")
    return build_table(rows)


def save_table(table: Table, path: str | Path) -> Path:
    """table.json: the coded rows and the labels behind them (what the report reads). A row's
    `source` inside the table's own folder is written relative to it, so a moved workdir reads the
    same (`read_table` joins it back)."""
    path = Path(path)
    rows = [dataclasses.replace(r, source=_relative(r.source, path.parent)) for r in table.rows]
    data = dataclasses.replace(table, rows=rows).to_json()
    write_atomic(path, json.dumps(clean(data), sort_keys=True) + "\n")
    return path


def _relative(source: str, folder: Path) -> str:
    if not source:
        return source
    try:
        return Path(source).resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:  # outside the folder: as it was given
        return source


def read_table(path: str | Path) -> Table:
    """A table.json written by `save_table`, this version's or an earlier one's (same keys; an
    absolute `source` an earlier one wrote reads as it is)."""
    path = Path(path)
    table = Table.from_json(json.loads(path.read_text()))
    return dataclasses.replace(table, rows=[_joined(r, path.parent) for r in table.rows])


def _joined(row: TableRow, folder: Path) -> TableRow:
    if not row.source or Path(row.source).is_absolute():
        return row
    return dataclasses.replace(row, source=str(folder / row.source))

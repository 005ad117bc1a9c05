"""Bits measured from a level's examples as the covariate of a calibrate table, cached per workdir.

Each level of table.json (its family, task fields with the knobs, `task_name` for a user's task) is
rebuilt (closed_form.build_task) and its training split drawn once at key KEY_SEED (a stream's
fixed training sample: the task's own `make_data`) and measured by every measure of
jaxcap.tasks.complexity (`level_measures`). The covariates are `data_lookup`, `data_compressed`,
`data_prequential`. A level below FLOOR_BITS (LZMA is blind below a byte, so `compressed` reads 0
for parity and small moduli) counts as FLOOR_BITS, the least a level with two answers costs, since
the model reads log bits (`floored_levels` counts them). The bits go to
<workdir>/data_bits.json, stamped with the levels and the key, so a rerun reads them back.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax

from jaxcap.fields import ConfigError
from jaxcap.meta.data import Table
from jaxcap.results.store import write_atomic
from jaxcap.tasks import complexity
from studies.measures import closed_form

KEY_SEED = 0  # the key of every level's training split
FLOOR_BITS = 1.0
CACHE = "data_bits.json"
DATA_MEASURES = {f"data_{m}": m for m in complexity.MEASURES}  # covariate name -> measure
NAMES = (*closed_form.MEASURES, *DATA_MEASURES)  # every measure a table can be scored with


@dataclasses.dataclass(frozen=True)
class DataBits:
    """A table's levels measured from examples: `bits[measure][i]` of level i (raw, unfloored);
    `levels` ([family, fields] of each, in table order) and `key_seed` are the cache's stamp."""

    levels: list[list]
    key_seed: int
    bits: dict[str, list[float]]
    seconds: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DataBits:
        return cls(list(data["levels"]), int(data["key_seed"]), dict(data["bits"]), float(data["seconds"]))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_names(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise ValueError(f"measures: got {','.join(names) or '(none)'}; allowed: {', '.join(NAMES)}")
    return names


def table_levels(table: Table) -> list[list]:
    """The stamp of a table's levels: [family name, task fields] of each, in table order."""
    return json.loads(json.dumps([[table.families[lv.family], lv.fields] for lv in table.levels]))


def measure_level(family: str, fields: dict, key_seed: int = KEY_SEED) -> dict[str, float]:
    """Every data measure of one level (its family name and task fields), one training split."""
    try:
        task = closed_form.build_task(family, fields)
        return complexity.level_measures(task, {}, jax.random.key(key_seed), tuple(complexity.MEASURES))
    except ConfigError as e:  # e.g. a regression task: no discrete answers to count
        raise ValueError(f"measures: data bits of {family} level {fields}: {e}") from None


def _read(path: Path, levels: list[dict], key_seed: int) -> DataBits | None:
    try:
        data = DataBits.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):  # absent or damaged: measured again
        return None
    fresh = data.levels == levels and data.key_seed == key_seed
    return data if fresh and set(data.bits) == set(complexity.MEASURES) else None


def data_bits(table: Table, cache: str | Path | None = None, key_seed: int = KEY_SEED) -> DataBits:
    """Every data measure of every level of `table`: read from `cache` when it holds these levels
    at this key, else measured (and written there)."""
    levels = table_levels(table)
    if cache is not None and (found := _read(Path(cache), levels, key_seed)) is not None:
        return found
    start = time.time()
    measured = [measure_level(table.families[lv.family], lv.fields, key_seed) for lv in table.levels]
    bits = {m: [row[m] for row in measured] for m in complexity.MEASURES}
    out = DataBits(levels, key_seed, bits, time.time() - start)
    if cache is not None:
        write_atomic(Path(cache), json.dumps(out.to_json()) + "\n")
    return out


def floored(bits: list[float]) -> list[float]:
    return [max(b, FLOOR_BITS) for b in bits]


def floored_levels(table: Table, name: str) -> int:
    """How many levels of a table scored with data measure `name` sit at FLOOR_BITS."""
    return sum(lv.bits == FLOOR_BITS for lv in table.levels) if name in DATA_MEASURES else 0


def measure_tables(table: Table, names: list[str], cache: str | Path | None = None) -> dict[str, Table]:
    """{name: `table` with that measure as its covariate}; the data measures from `data_bits`."""
    out = {n: closed_form.with_measure(table, n) for n in check_names(names) if n in closed_form.MEASURES}
    if any(n in DATA_MEASURES for n in names):
        measured = data_bits(table, cache)
        for n in names:
            if n in DATA_MEASURES:
                out[n] = closed_form.with_bits(table, n, floored(measured.bits[DATA_MEASURES[n]]))
    return {n: out[n] for n in names}

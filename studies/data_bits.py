"""Bits measured from examples alone against the closed forms, on built-in levels: the table of
docs/meta-model.md#bits-from-data.

    python -m studies.data_bits            # a Markdown table
    python -m studies.data_bits --json     # one JSON object per level

Each level's training split comes from its task's own `make_data` at key 0; every measure of
jaxcap.tasks.complexity reads it (`level_bits`), beside the task's `complexity_bits` and, for the
five calibrate families, `table_bits` of its relevant-input table (studies/measures/closed_form.py). The
seconds are each measure's host time on the split, data generation excluded.
"""

from __future__ import annotations

import json
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import flags as absl_flags

from jaxcap import tasks
from jaxcap.main import cli
from jaxcap.tasks import complexity
from jaxcap.tasks.complexity import table
from studies.measures import closed_form as measures

RANDOM = {"name": "random_labels", "vocab_size": 16, "seq_len": 16}
LEVELS = [  # (label, task section)
    ("random_labels n=512 K=16", {**RANDOM, "n_classes": 16, "dataset_size": 512}),
    ("random_labels n=4096 K=2", {**RANDOM, "n_classes": 2, "dataset_size": 4096}),
    ("random_labels n=65536 K=16", {**RANDOM, "n_classes": 16, "dataset_size": 65536}),
    ("parity n=10 k=3 (half of 2^10)", {"name": "parity", "n": 10, "k": 3, "train_fraction": 0.5}),
    ("parity n=12 k=6 (half of 2^12)", {"name": "parity", "n": 12, "k": 6, "train_fraction": 0.5}),
    ("parity n=20 k=4 (4,096 sampled)", {"name": "parity", "n": 20, "k": 4, "train_size": 4096}),
    ("modulo N=5 (half of 10^4)", {"name": "modulo", "modulus": 5}),
    ("modulo N=100 (half of 10^4)", {"name": "modulo", "modulus": 100}),
    ("modulo N=97 (half of 10^4)", {"name": "modulo", "modulus": 97}),
    ("copying L=4 V=4 (256 sampled)", {"name": "copying", "length": 4, "vocab": 4, "train_size": 256}),
    ("recall 2 pairs V=4 (512 sampled)", {"name": "recall", "n_pairs": 2, "vocab": 4, "train_size": 512}),
]
CALIBRATE = ("random_labels", "modulo", "parity", "copying", "recall")  # families with a table_bits


def measure(label: str, cfg: dict) -> dict:
    """One level's row: closed forms, each measure's bits and host seconds, the columns kept."""
    task = tasks.build(cfg)
    knobs = task.default_knobs()
    train = jax.device_get(task.make_data(jax.random.key(0), {k: jnp.asarray(v) for k, v in knobs.items()}))
    arrays = [np.asarray(a) for a in (train["train"].inputs, train["train"].targets, train["train"].weights)]
    row = {"level": label, "complexity_bits": task.complexity_bits(knobs)}
    fields = {k: v for k, v in cfg.items() if k != "name"}
    row["table_bits"] = measures.table_bits(cfg["name"], fields) if cfg["name"] in CALIBRATE else None
    t = table.build(*arrays, task.spec.kind, task.spec.n_outputs, task.causal)
    restricted = complexity.restrict(t)
    row.update(rows=t.rows, columns=f"{len(restricted.columns)} of {t.columns}", entries=restricted.entries)
    for name in complexity.MEASURES:
        start = time.perf_counter()
        row[name] = complexity.data_bits(
            *arrays, task.spec.kind, task.spec.n_outputs, name, causal=task.causal
        )
        row[f"{name}_s"] = time.perf_counter() - start
    return row


def fmt(bits: float | None) -> str:
    if bits is None:
        return "—"
    return f"{bits:,.0f}" if bits >= 100 else f"{bits:.1f}"


def markdown(rows: list[dict]) -> str:
    names = list(complexity.MEASURES)
    head = ["level", "answers", "columns kept", "entries", "complexity_bits", "table_bits", *names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["level"], f"{r['rows']:,}", r["columns"], f"{r['entries']:,}"]
        cells += [fmt(r["complexity_bits"]), fmt(r["table_bits"])]
        cells += [f"{fmt(r[n])} ({r[f'{n}_s']:.2f} s)" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


FLAGS = absl_flags.FlagValues()  # this command's own: importing it defines no global flag
absl_flags.DEFINE_bool(
    "json", False, "Print one JSON object per level instead of the table.", flag_values=FLAGS
)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("data_bits", package="studies"), *argv], __doc__, FLAGS)
    rows = [measure(label, cfg) for label, cfg in LEVELS]
    if FLAGS.json:
        for r in rows:
            print(
                json.dumps(
                    {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in r.items()}
                )
            )
    else:
        print(markdown(rows), end="")


if __name__ == "__main__":
    main()

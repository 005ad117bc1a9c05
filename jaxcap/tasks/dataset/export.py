"""A built-in task's examples written to files, and the `dataset` config section that reads them back.

`export(task_cfg, path)` writes every example of an enumerable built-in task (one with a
train_fraction: modulo, binop, parity) in file order, as columns `inputs` (token ids) and
`target`, in the format its suffix names (.npz, .parquet, .csv, .jsonl). It returns the task
section of a `dataset` task that reads the file back with the same spec (vocabulary, seq_len,
outputs, readout, metric) and the same train_fraction, so a member with the same key draws the
same split permutation and trains bit-identically (tests/tasks/test_dataset_roundtrip.py):

    python -c "from jaxcap.tasks.dataset.export import export; print(export({'name': 'modulo', \\
        'digits': 3, 'modulus': 7}, 'modulo.parquet'))"
"""

from __future__ import annotations

import pathlib
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxcap import tasks
from jaxcap.fields import ConfigError
from jaxcap.tasks.dataset.reading import FORMATS


def export(task_cfg: dict[str, Any], path: str, knobs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the examples of the task of `task_cfg` (at `knobs`, default its own) to `path`; returns
    the `dataset` task section that reads them back as the same task."""
    task = tasks.build(task_cfg)
    spec = task.spec
    values = {**task.default_knobs(), **(knobs or {})}
    split = None if task.is_stream else task.examples({k: jnp.asarray(v) for k, v in values.items()})
    if split is None:
        raise ConfigError(
            f"config.task.name: task {spec.family} samples its examples; allowed: an enumerable task with "
            "config.task.train_fraction > 0 (modulo, binop, parity)"
        )
    if spec.input_dim or spec.kind == "regress" or not np.all(np.asarray(split.weights) == 1):
        raise ConfigError(
            f"config.task.name: task {spec.family} has vector inputs, regression targets or unscored "
            "answers; allowed: a token task whose every answer is scored"
        )
    fmt = FORMATS.get(pathlib.Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(f"export path: got {path!r}; allowed: a file ending in {', '.join(FORMATS)}")
    write(path, fmt, np.asarray(split.inputs, np.int32), np.asarray(split.targets, np.int32))
    return {
        "name": "dataset",
        "path": str(path),
        "inputs": "inputs",
        "target": "target",
        "kind": spec.kind,
        "input": "ids",
        "vocab_size": spec.vocab_size,
        "seq_len": spec.seq_len,
        "n_classes": spec.n_outputs,
        "train_fraction": task.train_fraction,
        "n_eval": task.n_eval,
    }


def write(path: str, fmt: str, inputs: np.ndarray, targets: np.ndarray) -> None:
    """Columns `inputs` ([N, T] ids) and `target` ([N] or [N, T]) in format `fmt` (FORMATS)."""
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    if fmt == "npz":
        with open(path, "wb") as f:  # np.savez would append '.npz' to a path without it
            np.savez(f, inputs=inputs, target=targets)
        return
    import pandas as pd

    as_cells = lambda a: list(a) if a.ndim > 1 else a
    frame = pd.DataFrame({"inputs": as_cells(inputs), "target": as_cells(targets)})
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    elif fmt == "csv":  # id lists as "3 1 4"
        text = lambda a: [" ".join(map(str, r)) for r in a] if a.ndim > 1 else a
        pd.DataFrame({"inputs": text(inputs), "target": text(targets)}).to_csv(path, index=False)
    else:
        as_lists = {"inputs": inputs.tolist(), "target": targets.tolist()}
        pd.DataFrame(as_lists).to_json(path, orient="records", lines=True)

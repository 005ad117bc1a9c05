"""Complexity in bits measured from a task's examples alone: no closed form, any task or dataset.

`data_bits(inputs, targets, weights, kind, n_outputs, measure)` measures host arrays (a training
split); `level_bits(task, knobs, key, measure)` measures a level of any Task from its own
`make_data` (`level_measures`: several measures of one draw). The measures (`MEASURES`, each a
function of the table over the relevant columns): `lookup` (entries x log2 outputs,
jaxcap/tasks/complexity/lookup.py), `compressed` (LZMA) and `prequential` (an online code; both
jaxcap/tasks/complexity/codes.py): numpy and lzma on the host, well under a second for 65k
examples. docs/meta-model.md#bits-from-data has them against closed forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError
from jaxcap.tasks.complexity import table as table_lib
from jaxcap.tasks.complexity.codes import compressed_bits, prequential_bits
from jaxcap.tasks.complexity.lookup import Restricted, lookup_bits, relevant_columns, restrict
from jaxcap.tasks.contract import Task

# name -> bits of a table read through its relevant columns
MEASURES: dict[str, Callable[[Restricted], float]] = {
    "lookup": lookup_bits,
    "compressed": compressed_bits,
    "prequential": prequential_bits,
}


def check_measure(measure: str) -> Callable[[Restricted], float]:
    if measure not in MEASURES:
        raise ConfigError(f"complexity.measure: got {measure!r}; allowed: {', '.join(MEASURES)}")
    return MEASURES[measure]


def data_bits(
    inputs: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    kind: str,
    n_outputs: int,
    measure: str = "lookup",
    causal: bool = True,
) -> float:
    """Bits of the labels given the inputs, by `measure`, from the examples alone.

    Args:
      inputs: [N, T] integer tokens.
      targets: [N] labels (classify) or [N, T] (sequence: one per position, read from the prefix
        up to it, as a next-token task's are; `causal` = False: from the whole input).
      weights: the shape of targets; an answer with weight > 0 is scored, the rest ignored.
      kind: classify or sequence (regress is refused: no discrete answers to count).
      n_outputs: the label range, [0, n_outputs).
      measure: a key of MEASURES.
    """
    fn = check_measure(measure)
    return float(fn(restrict(table_lib.build(inputs, targets, weights, kind, n_outputs, causal))))


def level_measures(
    task: Task, knobs: dict[str, Any], key: jax.Array, measures: tuple[str, ...] = tuple(MEASURES)
) -> dict[str, float]:
    """Each of `measures` of one level of `task` (any Task), from ONE draw of its training split:
    `task.make_data(key, knobs)` (knobs missing from `knobs` take the task's defaults; a stream's
    fixed training sample), measured on the host."""
    for measure in measures:
        check_measure(measure)
    values = {name: jnp.asarray(v) for name, v in {**task.default_knobs(), **knobs}.items()}
    train = task.make_data(key, values)["train"]
    spec = task.spec
    arrays = [np.asarray(a) for a in (train.inputs, train.targets, train.weights)]
    return {m: data_bits(*arrays, spec.kind, spec.n_outputs, m, causal=task.causal) for m in measures}


def level_bits(task: Task, knobs: dict[str, Any], key: jax.Array, measure: str = "lookup") -> float:
    """The bits of one level of `task` by `measure` (`level_measures`, one measure)."""
    return level_measures(task, knobs, key, (measure,))[measure]


__all__ = [
    "MEASURES",
    "Restricted",
    "data_bits",
    "level_bits",
    "level_measures",
    "relevant_columns",
    "restrict",
]

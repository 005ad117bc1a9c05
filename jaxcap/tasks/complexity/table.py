"""A task's examples as one labelled table: a row per scored answer, an integer key and a label.

Every measure reads the same table, built once from host arrays (the training split): a
`classify` example is a row (key: its tokens); a `sequence` example gives a row per scored
position t (key: t, then the tokens the answer may read; for next-token tasks the prefix up to t,
since with teacher forcing the later tokens hold the answer). A weight > 0 marks an answer as
scored; its size does not matter. Labels are renumbered 0..K-1 over the K outputs that occur.
`regress` targets have no table of discrete answers and are refused, as are float inputs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcap.fields import ConfigError

KINDS = ("classify", "sequence")  # the kinds with discrete answers; `regress` is refused


@dataclasses.dataclass(frozen=True)
class Table:
    """keys [M, D] int64: one row per scored answer, values >= 0 (a token read is its id + 1, a
    token the answer may not read is 0); labels [M] int64 in [0, outputs); `positional`: column 0
    is the answer's position (sequence kinds)."""

    keys: np.ndarray
    labels: np.ndarray
    outputs: int
    positional: bool

    @property
    def rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def columns(self) -> int:
        return int(self.keys.shape[1])


def _fail(field: str, got: str, allowed: str) -> None:
    raise ConfigError(f"complexity.{field}: got {got}; allowed: {allowed}")


def _check(inputs, targets, weights, kind: str, n_outputs: int) -> None:
    if kind not in KINDS:
        why = " (regression targets have no table of discrete answers)" if kind == "regress" else ""
        _fail("kind", repr(kind), f"{', '.join(KINDS)}{why}")
    if isinstance(n_outputs, bool) or not isinstance(n_outputs, (int, np.integer)) or n_outputs < 1:
        _fail("n_outputs", repr(n_outputs), "an integer >= 1")
    if inputs.ndim != 2 or not np.issubdtype(inputs.dtype, np.integer):
        _fail("inputs", f"shape {inputs.shape} {inputs.dtype}", "[N, T] integer tokens")
    if inputs.shape[0] < 1 or (inputs.size and inputs.min() < 0):
        _fail("inputs", f"{inputs.shape[0]} rows, least token {inputs.min(initial=0)}", "rows of ids >= 0")
    shape = inputs.shape[:1] if kind == "classify" else inputs.shape
    name = "[N]" if kind == "classify" else "[N, T]"
    if targets.shape != shape or not np.issubdtype(targets.dtype, np.integer):
        _fail(
            "targets",
            f"shape {targets.shape} {targets.dtype}",
            f"{name} integer labels ({kind}, inputs {inputs.shape})",
        )
    if weights.shape != shape:
        _fail("weights", f"shape {weights.shape}", f"{name}, the shape of targets")
    if not np.all(np.isfinite(weights)) or weights.min() < 0:
        _fail("weights", f"least {np.nanmin(weights)} (or NaN)", "finite weights >= 0")
    if not np.any(weights > 0):
        _fail("weights", "no weight > 0", "at least one scored answer")
    scored = targets[weights > 0]
    bad = (scored < 0) | (scored >= n_outputs)
    if np.any(bad):
        row = int(np.argwhere((weights > 0) & ((targets < 0) | (targets >= n_outputs)))[0][0])
        _fail("targets", f"label {int(scored[bad][0])} in row {row}", f"0 <= label < n_outputs ({n_outputs})")


def build(
    inputs: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    kind: str,
    n_outputs: int,
    causal: bool = True,
) -> Table:
    """The table of the scored answers (`causal`: a sequence position reads its prefix only)."""
    inputs, targets, weights = (np.asarray(a) for a in (inputs, targets, weights))
    _check(inputs, targets, weights, kind, n_outputs)
    tokens = inputs.astype(np.int64) + 1
    if kind == "classify":
        keep = weights > 0
        keys, labels = tokens[keep], targets[keep]
    else:
        n, t = np.nonzero(weights > 0)  # row-major: example by example, position by position
        rows = tokens[n]
        if causal:  # position t reads tokens 0..t; what follows holds the answer (teacher forcing)
            rows = np.where(np.arange(inputs.shape[1])[None, :] <= t[:, None], rows, 0)
        keys, labels = np.concatenate([t[:, None].astype(np.int64), rows], axis=1), targets[n, t]
    outputs, labels = np.unique(labels.astype(np.int64), return_inverse=True)
    return Table(keys, labels.reshape(-1).astype(np.int64), int(outputs.size), kind == "sequence")

"""The one rule for "did this member learn its task?" and "which setting is a level's best?".

Both questions are asked by the run's table, the report, the Optuna summary and the meta-model;
they are answered here only, so the answers cannot disagree (docs/design.md, "Contracts"):

- **Selection reads val.** A level's best hyperparameter setting is the one with the best median
  *selection* metric (`TaskSpec.select_metric`, a val metric) over its seeds; a diverged seed
  counts as the worst possible value (diverging is a property of the setting), a pruned one has
  no outcome and is left out.
- **Outcomes read test.** A member succeeded when it did not diverge and its *success* metric
  (`TaskSpec.success_metric`, a test metric; the training set itself for memorization tasks)
  reached the task's threshold. A diverged member is a failure everywhere.
- A level is **learned** when a strict majority of its best setting's seeds succeeded (with two
  seeds: both), so one lucky seed does not make a level learnable.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Hashable

from jaxcap.results.records import MemberRow


def reached(value: float | None, threshold: float, higher_is_better: bool) -> bool:
    """Whether a metric value is at least as good as `threshold` (None, NaN: no)."""
    if value is None or value != value:
        return False
    return value >= threshold if higher_is_better else value <= threshold


def member_success(status: str, value: float | None, threshold: float, higher_is_better: bool) -> bool:
    """THE success rule: not diverged (nor pruned), and the success metric reached its threshold."""
    return status == "ok" and reached(value, threshold, higher_is_better)


def selection_score(rows: list[MemberRow]) -> float:
    """Median selection value over a setting's seeds, signed so that higher is better; a diverged
    seed is the worst value, pruned seeds are left out (-inf when none is left)."""
    sign = 1.0 if rows[0].higher_is_better else -1.0
    values = []
    for r in rows:
        value = r.final.get(r.selects) if r.status == "ok" else None
        if r.status == "diverged" or (r.status == "ok" and (value is None or value != value)):
            values.append(-float("inf"))
        elif r.status == "ok":
            values.append(sign * value)
    return statistics.median(values) if values else -float("inf")


def _setting(row: MemberRow) -> str:
    return json.dumps(row.hparams, sort_keys=True)


def best_settings(
    rows: list[MemberRow], level_key: Callable[[MemberRow], Hashable]
) -> dict[Hashable, list[MemberRow]]:
    """{level: the rows of its best setting (pruned members left out)}, levels in first-seen
    order. A setting is a member's whole `hparams`."""
    groups: dict[Hashable, dict[str, list[MemberRow]]] = {}
    for r in rows:
        groups.setdefault(level_key(r), {}).setdefault(_setting(r), []).append(r)
    out = {}
    for level, settings in groups.items():
        best = max(settings.values(), key=selection_score)  # first on ties: the config's order
        out[level] = [r for r in best if r.status != "pruned"]
    return out


def learned(rows: list[MemberRow]) -> bool:
    """A level's verdict from its best setting's seeds: a strict majority succeeded."""
    return 2 * sum(bool(r.success) for r in rows) > len(rows) > 0

"""Which rows of a workdir count: for one an Optuna worker wrote, only those of trials it told.

A sweep worker's members.jsonl may hold rows that are not its to count: those of a trial still
RUNNING or WAITING (a worker killed between writing its rows and telling, a trial given back to
the queue) and those of a trial another worker took over and told (that worker's workdir holds
the rows that count). ONE rule, applied by every reader of a workdir (the hpo report and
best_trials.jsonl, the meta-model's table and so calibrate, out_of_grid and enhance, and
`python -m jaxcap.report`): a row counts when it names no trial (a grid run), or its trial is
finished and was told by this workdir's worker. The worker's tag is the resolved workdir it ran
in, which the sweep records in workers.txt, so that a moved workdir keeps its rows. On a storage
private to the workdir no other worker exists: finished is enough. A workdir whose config has no
study reads as written.

Details: docs/design/hpo.md#rows-a-worker-may-count.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection
from pathlib import Path

from jaxcap.results import study_storage
from jaxcap.results.curves import write_atomic
from jaxcap.results.lock import WorkdirError
from jaxcap.results.records import MemberRow

WORKERS = "workers.txt"  # the tags a workdir's worker claimed and told with, one a line


def worker_tags(root: str | Path) -> set[str]:
    """The tags of the workdir `root`'s worker: those workers.txt records, and the workdir as it
    resolves now (a workdir an older jaxcap wrote records none)."""
    path = Path(root) / WORKERS
    recorded = path.read_text().split("\n") if path.is_file() else []
    return {t for t in recorded if t} | {str(Path(root).resolve())}


def record_worker(root: str | Path, owner: str) -> None:
    """Add `owner`, the tag a worker claims and tells with, to the workdir's workers.txt."""
    path = Path(root) / WORKERS
    tags = [t for t in (path.read_text().split("\n") if path.is_file() else []) if t]
    if owner not in tags:
        write_atomic(path, "".join(f"{t}\n" for t in [*tags, owner]))


def told_rows(rows: list[MemberRow], studies: list, owner: str | Collection[str] | None) -> list[MemberRow]:
    """The rows that count (the module's rule). `studies`: every study the rows name; `owner`: the
    tag (or tags) of the workdir's worker, None on a storage private to the workdir."""
    owners = None if owner is None else {owner} if isinstance(owner, str) else set(owner)
    trials = {(s.study_name, t.number): t for s in studies for t in s.get_trials(deepcopy=False)}
    return [r for r in rows if r.study is None or _counts(trials.get((r.study, r.trial)), owners)]


def _counts(trial, owners: set[str] | None) -> bool:
    if trial is None or not trial.state.is_finished():  # untold, or a trial its storage lacks
        return False
    # a trial told before claims recorded their holder counts for whoever holds its rows
    return owners is None or trial.user_attrs.get("worker") in owners | {None}


def study_spec(root: str | Path) -> str | None:
    """The workdir's `config.study.storage`; None for a workdir whose config has no study (or no
    config.json: rows copied by hand read as written)."""
    path = Path(root) / "config.json"
    try:
        config = json.loads(path.read_text()) if path.is_file() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # whoever reads the config says what is wrong with it
    study = config.get("study") if isinstance(config, dict) else None
    return study.get("storage", "") if isinstance(study, dict) else None


def counted_rows(root: str | Path, rows: list[MemberRow], by_rule: bool = False) -> list[MemberRow]:
    """The rows of the workdir `root` that count (the module's rule), said in one line when some
    are left out. `by_rule`: rows its worker wrote through this rule (best_trials.jsonl), kept as
    they are when the storage is out of reach; otherwise an unreachable storage is one line."""
    names = sorted({r.study for r in rows if r.study is not None})
    spec = study_spec(root) if names else None
    if spec is None:
        return rows
    try:
        storage = study_storage.open_for_reading(spec, Path(root))
    except WorkdirError:
        if by_rule:
            return rows
        raise
    import optuna

    missing = sorted(set(names) - set(optuna.get_all_study_names(storage)))
    if missing:
        raise WorkdirError(
            f"{root}: its rows name study {missing[0]!r}, which its storage "
            f"{spec or 'study.db'} does not hold; allowed: the workdir with the storage its workers used"
        )
    studies = [optuna.load_study(study_name=n, storage=storage) for n in names]
    owner = None if study_storage.private(spec) else worker_tags(root)
    kept = told_rows(rows, studies, owner)
    if len(kept) < len(rows):
        left = {(r.study, r.trial) for r in rows} - {(r.study, r.trial) for r in kept}
        print(
            f"note: {root}: {len(rows) - len(kept)} row(s) of {len(left)} trial(s) left out: not told by "
            "this workdir's worker (still running or waiting, or told by another worker)",
            file=sys.stderr,
            flush=True,
        )
    return kept

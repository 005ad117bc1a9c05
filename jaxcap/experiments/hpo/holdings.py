"""What a worker's workdir may keep: only the rows of trials it holds or told.

A trial another worker released (its holder silent past the grace period, see
jaxcap/experiments/hpo/claims.py) is trained again by whoever claims it next, so the released
holder's own record of it must go: its rerun drops the trial's member rows, the checkpoints of
rounds it no longer resumes and their evals. A round that lost some of its trials cannot resume
from its checkpoint (its populations had more members), so its rerun gives the trials it still
holds back to the queue and claims afresh. Together: every finished trial has its rows in exactly
one workdir, the one of the worker that told it; and every reader counts only those
(jaxcap/results/told.py: the one rule of which rows count).

Details: docs/design/hpo.md#rows-a-worker-may-count.
"""

from __future__ import annotations

import shutil

import optuna
from optuna.trial import TrialState

from jaxcap.experiments.hpo import claims
from jaxcap.results import told
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store, read_jsonl, rewrite_jsonl


def lost_trials(studies: list[optuna.Study], owner: str, round_id: str) -> int:
    """How many trials of this worker's round `round_id` another worker released."""
    key = f"released:{owner}"
    return sum(t.user_attrs.get(key) == round_id for s in studies for t in s.get_trials(deepcopy=False))


def give_back(studies: list[optuna.Study], owner: str, round_id: str) -> int:
    """Release this worker's RUNNING trials of `round_id` to the queue; how many."""
    n = 0
    for study in studies:
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            attrs = trial.user_attrs
            if (
                attrs.get("worker") == owner
                and attrs.get("round") == round_id
                and claims.release(study, trial)
            ):
                n += 1
    return n


def forget_lost(store: Store, studies: list[optuna.Study], owner: str, resume: str | None) -> None:
    """Drop the member rows of trials this worker no longer holds, and the checkpoints and evals of
    every round but `resume` (the one it resumes) that no told trial of it keeps."""
    tags = told.worker_tags(store.root) | {owner}  # a moved workdir keeps what it told before
    mine = {
        (s.study_name, t.number)
        for s in studies
        for t in s.get_trials(deepcopy=False)
        if t.user_attrs.get("worker") in tags
    }
    torn: list[tuple[int, str]] = []
    raw = read_jsonl(store.members_path, torn)  # rewritten as read: only whole rows leave
    rows = [MemberRow.from_json(r) for r in raw]
    keep = [r.study is None or (r.study, r.trial) in mine for r in rows]
    if not all(keep) or torn:
        lost = {(r.study, r.trial) for r, k in zip(rows, keep) if not k}
        print(
            f"{len(lost)} trial(s) another worker took over: their rows left {store.members_path.name}",
            flush=True,
        )
        rewrite_jsonl(store.members_path, [r for r, k in zip(raw, keep) if k], torn)
    held = {r.bucket for r, k in zip(rows, keep) if k}
    ckpts = [p for p in store.ckpt_path.iterdir() if p.is_dir()] if store.ckpt_path.is_dir() else []
    for path in ckpts:
        bucket = path.name.removesuffix(".corrupt")
        if bucket.startswith(f"r{resume}g") or not bucket.startswith("r"):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if bucket not in held:
            store.truncate(bucket, 0)

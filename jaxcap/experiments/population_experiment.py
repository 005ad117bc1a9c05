"""The population experiment: train the grid of `config` bucket by bucket, print the per-level
table, write report/ (jaxcap.reports)."""

from __future__ import annotations

import time
from pathlib import Path

import ml_collections

from jaxcap.config.plan import Bucket, Plan
from jaxcap.core import sharding
from jaxcap.core.checkpoint import latest_cursor
from jaxcap.core.population import HPARAM_NAMES
from jaxcap.reports import level_summary as summary
from jaxcap.reports.steps_table import format_steps
from jaxcap.results.records import Cursor, MemberRow
from jaxcap.results.store import Store, write_atomic
from jaxcap.training.loop import StopFn, train_bucket


def identity(config: ml_collections.ConfigDict) -> dict:
    """The part of a config that defines the run (runtime options may change on resume)."""
    out = config.to_dict()
    out.pop("runtime")
    return out


def train_all(plan: Plan, store: Store, stop_fn: StopFn | None = None) -> tuple[Bucket, ...]:
    """Train every bucket of the plan that the store does not hold yet; returns the buckets."""
    buckets = plan.buckets
    for bucket in buckets:  # every population fits the devices, before anything compiles
        sharding.device_count(len(bucket.members), plan.devices)
    finished = {b.name for b in buckets if store.complete(b.name, len(b.members))}
    if len(finished) == len(buckets):
        print(f"finished: {store.root} already holds this run's results", flush=True)
        if not store.members_csv_path.exists():  # a workdir from before members.csv
            store.write_members_csv()
        for b in buckets:  # a table that lost rows (a torn line) says so
            cursor = latest_cursor(store.ckpt_path / b.name)
            store.check_tables(b.name, len(b.members), cursor and Cursor.from_json(cursor))
    for bucket in buckets:
        if bucket.name not in finished:  # (a bucket missing rows rebuilds them from its last checkpoint)
            with bucket.numerics():
                train_bucket(bucket, store, plan.runtime, stop_fn)
    return buckets


def population_report(store: Store) -> list[Path]:
    """report/: the per-level table (report.md) and the figures (jaxcap.reports.population_figures);
    a workdir without member rows is one line, and nothing is written."""
    rows = store.reported_members()
    table = summary.format_table(summary.levels(rows, HPARAM_NAMES), markdown=True)
    steps = format_steps(rows, HPARAM_NAMES, markdown=True)
    table += f"\n{steps}" if steps else ""
    from jaxcap.reports.population_figures import population_figures  # scores, success, dynamics, gap

    figures, section = population_figures(store, rows)
    text = f"# {store.root.name}\n\n{table}\n{section}"
    write_atomic(store.report_path / "report.md", text)
    return [store.report_path / "report.md", *figures]


def population_experiment(plan: Plan, store: Store) -> list[MemberRow]:
    """Train the grid, print the per-level table, write the report."""
    start, before = time.time(), store.members()
    train_all(plan, store)
    rows = store.members()
    print(summary.format_table(summary.levels(rows, HPARAM_NAMES)), flush=True)
    steps = format_steps(rows, HPARAM_NAMES)
    if steps:
        print(steps, flush=True)
    written = population_report(store)
    tables = ", ".join(
        p.name for p in (store.members_path, store.members_csv_path, store.evals_path, store.curves_path)
    )
    done = f"reused {tables} (trained before)" if rows and rows == before else f"wrote {tables}"
    print(
        f"{done}; wrote {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root} "
        f"({time.time() - start:.0f} s)",
        flush=True,
    )
    return rows

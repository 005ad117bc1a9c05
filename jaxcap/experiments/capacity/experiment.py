"""The capacity experiment: per architecture, bits stored against exposures per item, for
random datasets grown until the bits stored plateau.

`config.sweep.buckets` lists the architectures. Each round trains dataset sizes bracketing the
architecture's capacity, one population (learning rates x seeds) per size, all sizes of a round
sharing one compiled program (n is a traced knob of `jaxcap.tasks.random_data`); the whole
training set is scored after every chunk, and capacity.jsonl gets one row per member with the
bits at every exposure budget. Rounds grow the sizes until the bits plateau. Rerunning resumes.

Details: docs/design/capacity.md#one-program-for-every-size.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time

import jax
import numpy as np

from jaxcap.config.plan import Bucket, Plan
from jaxcap.core import sharding
from jaxcap.core.checkpoint import PopulationCheckpoints
from jaxcap.core.population import stack
from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.experiments.capacity import recipe as capacity_recipe
from jaxcap.experiments.capacity import report
from jaxcap.experiments.capacity import sizes as capacity
from jaxcap.experiments.capacity.populations import CapacitySettings, check  # noqa: F401
from jaxcap.models import param_count
from jaxcap.results import capacity_curves, capacity_reading
from jaxcap.results.records import CapacityRow, Cursor
from jaxcap.results.store import Store, clean, read_jsonl, write_atomic
from jaxcap.training.loop import population_program, train_bucket

ROWS = "capacity.jsonl"
TIMES = "capacity_time.jsonl"  # wall seconds per size and process (kept out of ROWS: resumes differ)


@functools.lru_cache(maxsize=8)
def _scores(task, model, batch_size: int):
    return capacity.make_scores(task, model, batch_size)  # one compile per round's shapes


def extra_metrics_for(bucket: Bucket):
    """`extra_metrics` for `train_bucket`: every eval also scores each member's training set
    per item (bits stored, net bits, exact recall), summed on the host in float64."""
    scores = _scores(bucket.task, bucket.model, bucket.settings.eval_batch_size)
    sizes = [int(m.knobs["dataset_size"]) for m in bucket.members]

    def extra(state, hparams, data) -> dict[str, np.ndarray]:
        per_member = capacity.totals(sharding.to_host(scores(state.params, hparams, data)), sizes)
        return {k: np.array([t[k] for t in per_member], np.float64) for k in per_member[0]}

    return extra


def measure(
    bucket: Bucket,
    store: Store,
    arch: int,
    round_: int,
    cap: CapacitySettings,
    budget: float | None = None,
    schedule: str = "constant",
    devices: int = 0,
) -> list[CapacityRow]:
    """capacity.jsonl rows of a trained size: the exposure record of its last checkpoint (a
    constant-rate run), or its final eval (an annealed run, measured at its one budget)."""
    mesh = sharding.population_mesh(len(bucket.members), devices)
    program = population_program(bucket.settings, bucket.task, bucket.model, mesh)
    keys, hparams = sharding.put(stack(bucket.members, bucket.seed), mesh)
    ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
    state, saved = ckpts.restore(sharding.abstract(jax.eval_shape(program.init, keys, hparams), mesh))
    ckpts.close()
    cursor = Cursor.from_json(saved)
    batch, step = bucket.settings.batch_size, int(cursor.step)
    if budget is None:
        budgets, at = list(cap.exposures), cursor.extra["exposure"]["at"]
    else:  # past its horizon the rate is 0: the final eval is the model at exactly `budget`
        last = cursor.last
        budgets = [budget]
        at = {m: [[last[m][i]] for i in range(len(bucket.members))] for m in capacity_curve.RECORDED}
    diverged = sharding.to_host(state.diverged)
    rows = []
    for i, member in enumerate(bucket.members):
        n = int(member.knobs["dataset_size"])
        bits = bucket.task.complexity_bits(member.knobs)
        rows.append(
            CapacityRow(
                bucket=bucket.name,
                arch=arch,
                arch_label=bucket.label,
                round=round_,
                member=i,
                seed=member.seed,
                learning_rate=member.hparams["learning_rate"],
                recipe=capacity_recipe.recipe_of(member.hparams),
                schedule=schedule,
                anneal_budget=budget,
                dataset_size=n,
                dataset_bits=float(bits),
                batch_size=batch,
                exposures=budgets,
                bits_at=at["bits_stored"][i],
                net_bits_at=at["net_bits"][i],
                exact_at=at["exact_fraction"][i],
                bits_stored=at["bits_stored"][i][-1],  # at the last budget: C_mem's measure
                net_bits=at["net_bits"][i][-1],
                exact_fraction=at["exact_fraction"][i][-1],
                ce_bits_per_item=cursor.last["ce_bits_per_item"][i],  # at the final eval
                saturated=capacity_curves.member_saturated(
                    budgets, at["bits_stored"][i], bits, cap.saturation_tol
                ),
                diverged=bool(diverged[i]),
                steps=step,
                final_exposures=capacity_curve.exposures(step, batch, n),
                n_params=param_count(bucket.model),
                family=bucket.task.spec.family,
                model=dataclasses.asdict(bucket.model),
            )
        )
    return rows


def read_rows(store: Store) -> list[CapacityRow]:
    """The rows of capacity.jsonl (none before the first size is measured)."""
    return [CapacityRow.from_json(d) for d in read_jsonl(store.root / ROWS)]


def _save_rows(store: Store, rows: list[CapacityRow]) -> None:
    names = {r.bucket for r in rows}
    kept = [r for r in read_rows(store) if r.bucket not in names]
    text = "".join(json.dumps(clean(r.to_json()), sort_keys=True) + "\n" for r in kept + rows)
    write_atomic(store.root / ROWS, text)


def _bpp(points: list[dict]) -> str:
    return ", ".join("—" if p["bits_per_param"] is None else f"{p['bits_per_param']:.2f}" for p in points)


def train_size(
    plan: Plan,
    store: Store,
    bucket: Bucket,
    arch: int,
    round_: int,
    budget: float | None = None,
    schedule: str = "constant",
) -> list[CapacityRow]:
    """Train (or resume) one size to the last exposure budget (or its annealed `budget`) and
    measure it."""
    cap, runtime, tic = plan.section.settings, plan.runtime, time.time()
    sizes = [int(m.knobs["dataset_size"]) for m in bucket.members]
    with bucket.numerics():
        if bucket.name not in store.finished_buckets():
            budgets = cap.exposures if budget is None else (budget,)
            stop_fn = capacity_curve.make_stop_fn(sizes, bucket.settings.batch_size, budgets)
            train_bucket(bucket, store, runtime, stop_fn, extra_metrics=extra_metrics_for(bucket))
        rows = measure(bucket, store, arch, round_, cap, budget, schedule, runtime.devices)
    _save_rows(store, rows)
    with open(store.root / TIMES, "a") as f:
        f.write(json.dumps({"bucket": bucket.name, "wall_s": time.time() - tic}) + "\n")
    return rows


def _rows(plan: Plan, store: Store, bucket: Bucket, arch: int, round_: int, budget=None, schedule="constant"):
    """The rows of one population: read back if measured, else trained (or resumed) now."""
    done = [r for r in read_rows(store) if r.bucket == bucket.name]
    return done or train_size(plan, store, bucket, arch, round_, budget, schedule)


def search(plan: Plan, store: Store, arch: int, label: str, size: int) -> dict:
    """The recipe search of one architecture (`capacity.search_exposures`): its winning recipe."""
    run, cap = plan.section, plan.section.settings
    name = f"b{arch}search"
    bucket = run.size_bucket(arch, label, [size], size, cap.search_exposures, name=name)
    rows = _rows(plan, store, bucket, arch, 0, cap.search_exposures, "search")
    best = capacity_recipe.best_recipe(rows)
    for p in capacity_recipe.search_table(rows):
        mark = "*" if p["recipe"] == best else " "
        print(
            f"[{name}]{mark} {capacity_recipe.recipe_label(p['recipe'])}: {p['median']:,.0f} bits "
            f"[{p['min']:,.0f}, {p['max']:,.0f}] at n = {size}, {cap.search_exposures:g} annealed exposures",
            flush=True,
        )
    return best


def _print_size(bucket: Bucket, rows: list[CapacityRow], size: int, budgets, what: str) -> None:
    mine = [r for r in rows if r.bucket == bucket.name]
    print(
        f"[{bucket.name}] n = {size} ({mine[0].dataset_bits:,.0f} bits), {what}: bits/param at "
        f"{', '.join(f'{e:g}' for e in budgets)} exposures: "
        + _bpp(capacity_curves.curve(mine, mine[0].n_params)),
        flush=True,
    )


def capacity_experiment(plan: Plan, store: Store) -> list[CapacityRow]:
    """Train and measure every architecture until its sizes plateau; print and write the report.
    The plan's buckets are its architectures; its populations are sizes it derives round by round
    from them (`plan.section`, the `CapacityRun` the registry check `populations.check` returns)."""
    run, cap = plan.section, plan.section.settings
    for arch, label in enumerate(b.label for b in plan.buckets):
        sizes, seen = run.first_sizes(label), []
        middle = sorted(sizes)[len(sizes) // 2]
        recipe = search(plan, store, arch, label, middle) if cap.search_exposures else None
        for round_ in range(cap.max_rounds):
            for size in sizes:
                bucket = run.size_bucket(arch, label, sizes, size, recipe=recipe)
                seen += _rows(plan, store, bucket, arch, round_)
                _print_size(bucket, seen, size, cap.exposures, "constant rate")
                for budget in cap.annealed:
                    bucket = run.size_bucket(arch, label, sizes, size, budget, recipe)
                    seen += _rows(plan, store, bucket, arch, round_, budget, "annealed")
                    _print_size(bucket, seen, size, [budget], "annealed")
            [summary] = capacity_reading.summarize(seen, cap.plateau_tol, cap.saturation_tol)
            flat = summary.flat
            gain = "—" if flat.gain is None else f"{flat.gain:+.1%}"
            print(
                f"[b{arch}] {summary.label or 'base model'}: C_mem {summary.c_mem:,.0f} bits "
                f"({summary.bits_per_param:.2f} bits/param) at {flat.to:g} exposures "
                f"({summary.verdict_schedule} rate); gain over the last doubling {gain} "
                f"({'flat' if flat.flat else 'still gaining'}); sizes "
                f"{'plateaued' if summary.plateau else 'not plateaued'}",
                flush=True,
            )
            if summary.plateau:
                break
            sizes = capacity.next_sizes(sizes, cap.growth, cap.extend)
    written = report.write_report(store)
    print(report.format_text(store), flush=True)
    print(f"wrote {ROWS} and {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}")
    return read_rows(store)

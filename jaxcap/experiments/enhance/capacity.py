"""Memorization capacity in bits per variant of an enhance run (docs/enhance.md).

Every enhance fit trains the reference family (uniformly random labels) at several dataset sizes
for every variant; nothing about random labels generalizes, so every bit predicted better than
chance on the training set was memorized (Morris et al. [1]). This module turns those population
rows into capacity rows and hands them, unchanged, to the capacity code the results layer holds
(jaxcap/results/capacity_reading.py). The bits are the unclipped net bits (a conservative lower
bound), and C_mem is a lower bound where the sizes did not plateau.

Details: docs/design/enhance.md#memorized-bits-from-population-rows.

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxcap import tasks
from jaxcap.meta.data import arch_fields, family_name, read_rows, source
from jaxcap.results import capacity_curves, capacity_reading
from jaxcap.results.capacity_summary import CapacitySummary
from jaxcap.results.records import CapacityRow, MemberRow
from jaxcap.results.store import Store

# configs/capacity.py's defaults: the saturation test and the plateau test of the capacity run
SATURATION_WINDOW, SATURATION_TOL, PLATEAU_TOL = 4, 0.02, 0.05


def reference_rows(root: Path, reference: str) -> list[MemberRow]:
    """The rows of `reference` from every family sub-workdir of a calibrate workdir."""
    dirs = sorted({p.parent for name in ("members.jsonl", "best_trials.jsonl") for p in root.rglob(name)})
    rows = [r for d in dirs if (root / "families") in d.parents for r in read_rows(d)]
    return [r for r in rows if family_name(r) == reference]


def _saturated(rows: list[MemberRow]) -> dict[tuple, bool]:
    """(source, bucket, member) -> whether its bits-from-train-loss curve had flattened."""
    out: dict[tuple, bool] = {}
    for where, bucket in sorted({(source(r), r.bucket) for r in rows}):
        names, curves = Store(where).curves(bucket) if Path(where).exists() else ([], None)
        mine = [r for r in rows if (source(r), r.bucket) == (where, bucket)]
        if "train_loss" not in names:
            out.update({(where, bucket, r.member): False for r in mine})
            continue
        loss = curves[:, :, names.index("train_loss")].T.astype(np.float64)  # [eval, member]
        for r in mine:
            if r.member >= loss.shape[1]:  # a row that does not index this curve: unknown
                out[(where, bucket, r.member)] = False
                continue
            bits, targets = _bits_and_targets(r)
            series = capacity_curves.estimated_bits(bits, targets, loss[:, r.member])
            flat = capacity_curves.saturated(
                series[:, None], SATURATION_WINDOW, SATURATION_TOL, bits / targets, np.array([bits])
            )
            out[(where, bucket, r.member)] = bool(flat[0])
    return out


def _bits_and_targets(row: MemberRow) -> tuple[float, float]:
    task = tasks.task_class(row.task_name or row.family)(**row.task)
    return float(row.complexity_bits), float(row.task["dataset_size"] * task.targets_per_example())


def capacity_rows(rows: list[MemberRow], archs: list[dict], labels: list[str]) -> list[CapacityRow]:
    """capacity.jsonl rows (as `capacity_run.measure` writes them, less the exposure record, the
    recipe and the per-item cross-entropy) from population rows; `archs` are the meta table's
    architectures (their order is the posterior's)."""
    saturated = _saturated(rows)
    out = []
    for r in rows:
        if r.status == "pruned" or arch_fields(r) not in archs:
            continue
        a = archs.index(arch_fields(r))
        bits, targets = _bits_and_targets(r)
        diverged = r.status == "diverged" or not np.isfinite(r.final.get("train_loss", np.nan))
        net = 0.0 if diverged else float(capacity_curves.estimated_bits(bits, targets, r.final["train_loss"]))
        out.append(
            CapacityRow(
                bucket=r.bucket,
                arch=a,
                arch_label=labels[a],
                round=0,
                member=r.member,
                seed=r.seed,
                learning_rate=r.hparams["learning_rate"],
                dataset_size=r.task["dataset_size"],
                dataset_bits=bits,
                bits_stored=max(0.0, net),
                net_bits=net,
                exact_fraction=r.final.get("train_exact", r.final.get("train_accuracy", 0.0)),
                saturated=saturated[(source(r), r.bucket, r.member)],
                diverged=diverged,
                n_params=r.n_params,
                family=r.family,
                model=r.model,
            )
        )
    return out


def memorization(rows: list[MemberRow], archs: list[dict], labels: list[str]) -> list[dict]:
    """Per variant: C_mem (median, range over seeds), bits/param and both multipliers over the
    baseline (architecture 0): of the medians, and per seed paired by seed (its range)."""
    summaries = capacity_reading.summarize(capacity_rows(rows, archs, labels), PLATEAU_TOL)
    base = next((s for s in summaries if s.arch == 0), None)
    out = []
    for s in summaries:
        row = {**s.to_json(), "lower_bound": not s.plateau, "multiplier": None, "per_param": None}
        if base and base.c_mem > 0:
            seeds = dict(zip(_seeds(base), base.c_mem_seeds))
            paired = [c / seeds[k] for k, c in zip(_seeds(s), s.c_mem_seeds) if seeds.get(k, 0) > 0]
            scale = base.n_params / s.n_params
            row["multiplier"] = _range(s.c_mem / base.c_mem, paired)
            row["per_param"] = _range(s.c_mem / base.c_mem * scale, [p * scale for p in paired])
        out.append(row)
    return out


def _seeds(summary: CapacitySummary) -> list[int]:
    return sorted({k for p in summary.curve for k in p.seeds})


def _range(point: float, per_seed: list[float]) -> dict:
    return {"point": point, "min": min(per_seed, default=point), "max": max(per_seed, default=point)}


def format_memorization(mem: list[dict]) -> str:
    """The enhance.md table: C_mem, bits/param, multipliers over the baseline with seed ranges."""
    if not mem:
        return "(no rows of the reference family)"
    head = "| variant | params | C_mem bits: median [min, max] | bits/param | C_mem / base [seeds] "
    lines = [head + "| bits/param / base [seeds] | plateau | saturated members |", "|" + "---|" * 8]
    for m in mem:
        lines.append(
            f"| {m['label']} | {m['n_params']:,} | {m['c_mem']:,.0f} [{m['c_min'] or 0:,.0f}, "
            f"{m['c_max'] or 0:,.0f}] | {m['bits_per_param']:.3f} | {_mult(m['multiplier'])} | "
            f"{_mult(m['per_param'])} | {'no: lower bound' if m['lower_bound'] else 'yes'} | "
            f"{m['members'] - m['unsaturated']}/{m['members']} |"
        )
    return "\n".join(lines)


def _mult(r: dict | None) -> str:
    return "—" if r is None else f"{r['point']:.3g} [{r['min']:.3g}, {r['max']:.3g}]"

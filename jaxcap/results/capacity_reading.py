"""From capacity.jsonl rows to `CapacitySummary` records, and a finished capacity workdir's
saturated C_mem: what other experiments read of a capacity run (enhance's memorization table,
calibrate's anchor of the meta-model's scale) without importing the capacity experiment.

Per architecture: its curve over sizes, C_mem over seeds, bits per parameter, the budgets it is
compared with (the seed design's H × d_head × precision, 8 × 32 × 32 = 8,192 bits for the
baseline; n_params × precision), and the flatness and plateau verdicts (capacity_curves.py).
Details: docs/design/capacity.md#bits-stored.

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from jaxcap.models.config import PRECISION_BITS
from jaxcap.results import capacity_curves
from jaxcap.results.capacity_summary import MODEL_FIELDS, CapacitySummary, name
from jaxcap.results.records import CapacityRow
from jaxcap.results.store import read_jsonl


def budgets(model: dict, n_params: int) -> dict[str, float]:
    """The seed design's H × d_head × precision budget and the n_params × precision budget."""
    precision = model.get("qat_bits") or PRECISION_BITS[model["param_dtype"]]  # k-bit QAT stores k
    return {
        "precision_bits": precision,
        "head_budget_bits": float(model["n_heads"] * model["d_head"] * precision),
        "storage_budget_bits": float(n_params * precision),
    }


def embedding_params(model: dict) -> dict[str, int]:
    """Parameters of the token table, learned positions and output head (for bits per
    non-embedding parameter: at 10^3-10^4 parameters they are 10-40 % of the model, at the scale
    of Morris et al. [1] a few percent)."""
    d = model["d_model"]
    table = 0 if model.get("input_dim") else model["vocab_size"] * d
    positions = model["seq_len"] * d if model["pos_encoding"] == "learned" else 0
    return {"embedding": table + positions, "head": d * model["n_outputs"] + model["n_outputs"]}


def summarize(
    rows: list[CapacityRow], plateau_tol: float, saturation_tol: float = 0.05
) -> list[CapacitySummary]:
    """One record per architecture: its curve over sizes, C_mem over seeds, bits/param, budgets,
    utilization, and (rows with exposure budgets) C per budget with the flatness verdict: C_mem
    is a capacity (`is_capacity`) only where C(E) flattened and the sizes plateaued."""
    out = []
    for arch in sorted({r.arch for r in rows}):
        everyone = [r for r in rows if r.arch == arch]
        constant = [r for r in everyone if r.schedule == "constant"]
        annealed = [r for r in everyone if r.schedule == "annealed"]
        searched = [r for r in everyone if r.schedule == "search"]
        by_budget = capacity_curves.annealed_curve(annealed, everyone[0].n_params)
        # the verdict reads the annealed runs when there are any (they store the most at a
        # budget), at their last budget; else the constant-rate run at its last budget
        last = by_budget[-1]["exposures"] if by_budget else None
        members = [r for r in annealed if r.anneal_budget == last] if by_budget else constant
        first, curve = members[0], capacity_curves.size_curve(members)
        seeds = sorted({s for p in curve for s in p["seeds"]})
        c_seed = [
            max((b for p in curve for s, b in zip(p["seeds"], p["bits"]) if s == seed)) for seed in seeds
        ]
        c_mem = float(np.median(c_seed)) if c_seed else float("nan")
        net = [max(r.net_bits for r in members if r.seed == s and not r.diverged) for s in seeds]
        sizes = [p["size"] for p in curve if p["median"] is not None]
        medians = [p["median"] for p in curve if p["median"] is not None]
        data_bits = [p["dataset_bits"] for p in curve if p["median"] is not None]
        budget = budgets(first.model, first.n_params)
        # rows of the step-capped protocol (and the enhance experiment's) have no exposure record
        has_record = constant and constant[0].bits_at is not None
        by_exposure = capacity_curves.curve(constant, first.n_params) if has_record else []
        flat = (
            capacity_curves.flatness(by_budget or by_exposure, saturation_tol)
            if by_exposure or by_budget
            else None
        )
        plateau = capacity_curves.plateaued(sizes, medians, data_bits, plateau_tol)
        summary = {
            "arch": arch,
            "label": first.arch_label,
            "family": first.family,
            **{k: first.model[k] for k in MODEL_FIELDS},
            "n_params": first.n_params,
            "model": first.model,
            "curve": curve,
            "c_mem_seeds": c_seed,
            "c_mem_seed_ids": seeds,
            "c_mem": c_mem,
            "c_min": min(c_seed, default=None),
            "c_max": max(c_seed, default=None),
            "bits_per_param": c_mem / first.n_params,
            **{f"n_{k}_params": v for k, v in embedding_params(first.model).items()},
            "bits_per_body_param": c_mem / (first.n_params - sum(embedding_params(first.model).values())),
            "c_net": float(np.median(net)) if net else float("nan"),
            "plateau": plateau,
            "exposure_curve": by_exposure,
            "annealed_curve": by_budget,
            "verdict_schedule": "annealed" if by_budget else "constant",
            "recipe": first.trained_recipe,
            "searched": bool(searched),
            "flat": flat,
            "is_capacity": bool(plateau and flat and flat["flat"]),
            "rounds": 1 + max(r.round for r in everyone),
            "unsaturated": sum(not r.saturated for r in members),
            "members": len(members),
            **budget,
            "head_utilization": c_mem / budget["head_budget_bits"],
            "storage_utilization": c_mem / budget["storage_budget_bits"],
        }
        out.append(CapacitySummary.from_json(summary))
    return out


def read_summaries(root: Path, exposures: float | None = None) -> tuple[dict, list[CapacitySummary]]:
    """(config, `summarize` per architecture) of a capacity workdir; with `exposures`, as if
    training had ended at the largest budget not above it."""
    config_path, rows_path = root / "config.json", root / "capacity.jsonl"
    if not rows_path.exists() or not config_path.exists():
        raise FileNotFoundError(f"{root}: no capacity run here (config.json and capacity.jsonl)")
    config = json.loads(config_path.read_text())
    rows = [CapacityRow.from_json(d) for d in read_jsonl(rows_path)]
    if exposures is not None:
        constant = [_until(r, exposures) for r in rows if r.schedule == "constant"]
        rows = constant + [r for r in rows if r.anneal_budget and r.anneal_budget <= exposures]
    cap = config["capacity"]
    return config, summarize(rows, cap["plateau_tol"], cap.get("saturation_tol", 0.05))


def _until(row: CapacityRow, exposures: float) -> CapacityRow:
    keep = sum(e <= exposures for e in row.exposures)
    if keep == 0:
        raise ValueError(f"exposures: got {exposures:g}; allowed: at least {row.exposures[0]:g}")
    bits, net, exact = row.bits_at[:keep], row.net_bits_at[:keep], row.exact_at[:keep]
    return dataclasses.replace(
        row,
        exposures=row.exposures[:keep],
        bits_at=bits,
        net_bits_at=net,
        exact_at=exact,
        bits_stored=bits[-1],
        net_bits=net[-1],
        exact_fraction=exact[-1],
    )


def saturated_capacity(workdir: str | Path, arch: int | str | dict, exposures: float | None = None) -> dict:
    """One architecture's memorization capacity in bits, read from a capacity workdir.

    `arch`: its index in `sweep.buckets`, its bucket label, or model fields it must match (e.g.
    {"d_model": 16, "n_layers": 2}). Returns C_mem at the last exposure budget (or the largest
    budget <= `exposures`): `bits` (median over seeds), `min`, `max`, `n_params`, and
    `saturated`: True when the bits-vs-exposures curve had flattened there and the dataset sizes
    had plateaued, i.e. `bits` is the capacity; False: it is only a lower bound.
    """
    _, archs = read_summaries(Path(workdir), exposures)
    if isinstance(arch, int):
        found = [a for a in archs if a.arch == arch]
    elif isinstance(arch, str):
        found = [a for a in archs if a.label == arch]
    else:
        found = [a for a in archs if all(a.model.get(k) == v for k, v in arch.items())]
    if len(found) != 1:
        known = "; ".join(f"{a.arch}: {a.label or name(a)}" for a in archs)
        raise ValueError(
            f"arch: got {arch!r}, which matches {len(found)} architectures; allowed: one of {known}"
        )
    [a] = found
    return {
        "bits": a.c_mem,
        "min": a.c_min,
        "max": a.c_max,
        "seeds": a.c_mem_seeds,
        "workdir": str(workdir),
        "saturated": a.is_capacity,
        "flat": a.flat.flat,
        "plateau": a.plateau,
        "gain": a.flat.gain,
        "exposures": a.flat.to,
        "n_params": a.n_params,
        "bits_per_param": a.bits_per_param,
        "label": a.label,
        "model": a.model,
    }

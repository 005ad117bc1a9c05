"""The size ladder's page: every finished part merged per rung into one capacity summary, the
trend across sizes, the literature beside it, and the plan of what has not run.

    python -m studies.ladder_page docs/results/ladder docs/results    # -> docs/results/ladder.md (+ figure)
    python -m studies.ladder_page /tmp/ladder_out /tmp/ladder_out --small   # the CPU plumbing run's

A rung's parts ran as separate launches, maybe in separate sessions; their capacity.jsonl rows are
one architecture's rows, so `capacity_reading.summarize` over their union gives the same verdict,
C_mem and seed ranges a single run of every budget and size would (the constant-rate stub each
part trains is counted once per size and seed). Bits per parameter across rungs: `capacity.trend`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from pathlib import Path

from jaxcap.experiments.capacity import report as capacity_report
from jaxcap.experiments.capacity import trend as capacity_trend
from jaxcap.results.capacity_reading import summarize
from jaxcap.results.capacity_summary import CapacitySummary
from jaxcap.results.records import CapacityRow
from jaxcap.results.store import read_jsonl
from studies import device_time
from studies import ladder_plan as ladder

FIGURE = "ladder-trend.png"


def load(folder: Path) -> list[dict]:
    """Every part's record (part.json) with its rows, in name order."""
    out = []
    for path in sorted(folder.glob("*/part.json")):
        record = json.loads(path.read_text())
        rows = path.parent / "capacity.jsonl"
        record["rows"] = [CapacityRow.from_json(d) for d in read_jsonl(rows)] if rows.exists() else []
        record["folder"] = path.parent
        out.append(record)
    return out


def merge(
    parts: list[dict], rungs: tuple[ladder.Rung, ...]
) -> list[tuple[ladder.Rung, CapacitySummary, list]]:
    """(rung, its summary over every finished part's rows, those parts) per rung with any."""
    out = []
    for index, rung in enumerate(rungs):
        mine = [p for p in parts if p["rung"] == rung.name and p["rc"] == 0 and p["budgets"]]
        rows: dict[tuple, CapacityRow] = {}
        for part in mine:  # one row per (schedule, budget, size, seed): a later part's wins
            for r in part["rows"]:
                rows[(r.schedule, r.anneal_budget, r.dataset_size, r.seed)] = dataclasses.replace(
                    r, arch=index
                )
        if rows:
            [summary] = summarize(list(rows.values()), plateau_tol=0.05, saturation_tol=0.05)
            out.append((rung, summary, mine))
    return out


def _range(values: list[float], scale: float, spec: str) -> str:
    return f"{format(min(values) / scale, spec)}–{format(max(values) / scale, spec)}"


def rung_table(merged: list) -> list[str]:
    lines = [
        "| rung | params | non-embedding params | annealed budgets run | C_mem bits, median [seeds] "
        "| bits/param [seeds] | bits/non-embedding param [seeds] | verdict | seeds | device-s "
        "| measured on |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rung, a, mine in merged:
        body = a.c_mem / a.bits_per_body_param if a.bits_per_body_param else float("nan")
        budgets = sorted({b for p in mine for b in p["budgets"]})
        where = sorted({f"{p['machine']}, {p['date']}, {p['commit'][:7]}" for p in mine})
        lines.append(
            f"| {rung.name} | {a.n_params:,} | {body:,.0f} | {', '.join(f'{b:,.0f}' for b in budgets)} "
            f"| {a.c_mem:,.0f} [{_range(a.c_mem_seeds, 1, ',.0f')}] "
            f"| **{a.bits_per_param:.2f}** [{_range(a.c_mem_seeds, a.n_params, '.2f')}] "
            f"| {a.bits_per_body_param:.2f} [{_range(a.c_mem_seeds, body, '.2f')}] "
            f"| {capacity_report.verdict(a)} | {len(a.c_mem_seeds)} "
            f"| {sum(p['wall_s'] for p in mine):.0f} | {'; '.join(where)} |"
        )
    return lines


PHASE = re.compile(
    r"^\[(?P<bucket>[^\]]+)\] (?P<rate>[\d,]+) model-steps/s training \((?P<members>\d+) members\)"
    r"(?:, (?P<flops>[\d.,]+) (?P<unit>[TG])FLOP/s model(?: \((?P<mfu>[\d.]+) % of (?P<peak>.+?) peak\))?)?;"
)


def speed_table(parts: list[dict]) -> list[str]:
    """Per finished part, its fastest population's training rate, model FLOP/s and MFU, as its
    phase lines printed them (the training chunks after the first: compiles excluded)."""
    lines = [
        "| part | params | population | members | model-steps/s | model TFLOP/s | MFU | measured on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for part in parts:
        found = [m for m in map(PHASE.match, part.get("phases", [])) if m and m["flops"]]
        if part["rc"] != 0 or not found:
            continue
        tflops = lambda m: float(m["flops"].replace(",", "")) / (1 if m["unit"] == "T" else 1000)  # noqa: E731
        best = max(found, key=tflops)
        mfu = f"{best['mfu']} % of {best['peak']}" if best["mfu"] else "— (no peak for this device)"
        where = f"{part['machine']}, {part['date']}, {part['commit'][:7]}"
        lines.append(
            f"| {part['part']} | {part['n_params']:,} | {best['bucket']} | {best['members']} "
            f"| {best['rate']} | {tflops(best):.3g} | {mfu} | {where} |"
        )
    return lines if len(lines) > 2 else ["No finished part has a phase line yet."]


def plan_table(parts: list[dict], recipe: dict, small: bool) -> list[str]:
    """Every part of the plan: predicted device-seconds, and what ran (rc, measured seconds)."""
    ran = {p["part"]: p for p in parts}
    lines = [
        "| part | params | annealed exposures | sizes (x params in bits) | predicted device-s | status |",
        "|---|---|---|---|---|---|",
    ]
    for part in ladder.parts(recipe, small):
        record = ran.get(part.name)
        if record is None:
            status = "not run"
        else:
            outcome = "finished" if record["rc"] == 0 else f"stopped (rc {record['rc']})"
            status = f"{outcome}: {record['wall_s']:.0f} s on {record['machine']}, {record['date']}"
        budgets = (
            ", ".join(f"{b:,.0f}" for b in part.budgets) or f"recipe search at {ladder.SEARCH_EXPOSURES:g}"
        )
        seconds = ladder.predicted_s(part, recipe, small)
        lines.append(
            f"| {part.name} | {ladder.n_params(part.rung):,} | {budgets} "
            f"| {', '.join(f'{s:g}' for s in part.sizes)} | {seconds:.0f} | {status} |"
        )
    total = sum(
        ladder.predicted_s(p, recipe, small) for p in ladder.parts(recipe, small) if p.name not in ran
    )
    model = device_time.SUSTAINED_TFLOPS["bfloat16"]
    lines += [
        "",
        f"Not yet run: {total:,.0f} predicted device-seconds. Predicted with `studies.device_time` as "
        f"committed with this page ({time.strftime('%Y-%m-%d')}): a {device_time.FLOOR_S * 1e3:.2f} ms floor "
        f"a step, {device_time.BANDWIDTH / 1e12:.2f} TB/s of matmul traffic or {model:.0f} TFLOP/s "
        "in bfloat16 a member, whichever is slower, 20 s a compile, 15 s a process; each part runs "
        "under a timeout of 1.5 x its prediction.",
    ]
    return lines


def markdown(parts: list[dict], small: bool, figure: Path | None) -> str:
    rungs = ladder.SMALL_RUNGS if small else ladder.RUNGS
    merged = merge(parts, rungs)
    searched = next((p for p in parts if p["rc"] == 0 and not p["budgets"]), None)
    recipe = ladder.recipe_of({searched["part"]: searched["folder"]}) if searched else ladder.FIRST_RECIPE
    head = ["# The capacity size ladder", ""]
    if small:
        head += ["**Not a measurement**: tiny rungs on a CPU (`--small`), the plumbing only.", ""]
    head += [
        f"Random tokens (V = 16, T = 16, 60 bits a sequence), bfloat16 compute with float32 weights, "
        f"batch {8 if small else ladder.BATCH}, {ladder.SEEDS} seeds, dataset sizes "
        f"{' and '.join(f'{s:g}' for s in ladder.SIZES)} x the parameter count in bits; each budget "
        "annealed to 0 in its own run. Recipe: "
        + (f"searched on {searched['rung']}: " if searched else "not yet searched; the plan assumes ")
        + f"lr {recipe['learning_rate']:g}, Adam β2 {recipe['b2']:g}"
        + ". Plan and cost model: `python -m studies.ladder plan`; the design: docs/capacity.md.",
        "",
        "## Rungs",
        "",
    ]
    body = (
        rung_table(merged) if merged else ["No rung has a finished part yet: no device has run the ladder."]
    )
    summaries = [a for _, a, _ in merged]
    trend = capacity_trend.size_trend(summaries)
    if trend is not None:
        body += ["", *capacity_trend.trend_lines(summaries, trend)]
    body += [
        "",
        capacity_report.literature(summaries)
        if summaries
        else "The literature it will stand beside: Morris et al. 2025 (arXiv:2505.24832) 3.6 bits per "
        "parameter trained to convergence; Allen-Zhu & Li 2024 (arXiv:2404.05405) about 2 at 1,000 "
        "exposures, 1 at 100.",
    ]
    if trend is not None and figure is not None:
        capacity_trend.plot_size_trend(summaries, trend, figure)
        body += ["", f"![bits per parameter against parameters]({figure.name})"]
    body += ["", "## Speed: model FLOPs utilization", "", *speed_table(parts)]
    body += ["", "## Parts", "", *plan_table(parts, recipe, small)]
    return "\n".join(head + body) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.ladder_page")
    parser.add_argument("results", type=Path, help="a folder of finished parts (<part>/part.json)")
    parser.add_argument("out", type=Path, help="where ladder.md and its figure go")
    parser.add_argument("--small", action="store_true", help="the CPU plumbing run's parts")
    a = parser.parse_args(argv[1:])
    parts = load(a.results)
    a.out.mkdir(parents=True, exist_ok=True)
    name = "ladder-small.md" if a.small else "ladder.md"
    (a.out / name).write_text(markdown(parts, a.small, a.out / FIGURE))
    print(f"wrote {a.out / name} ({len(parts)} parts)")


if __name__ == "__main__":
    main(sys.argv)

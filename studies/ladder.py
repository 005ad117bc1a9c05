"""The capacity size ladder: four architectures from 14k to the 1.6M-parameter seed baseline, each
at annealed budgets up to its verdict, in parts of at most ~7 device-minutes that merge into one page.

    python -m studies.ladder plan                          # every part and its predicted device-seconds
    python -m studies.ladder run --budget 480 --out $OUT   # device: the pending parts that fit 480 s
    python -m studies.ladder run --small --out /tmp/ladder # the same plumbing, tiny rungs, on a CPU
    python -m studies.ladder_page docs/results/ladder docs/results   # the page from every finished part

A device session lasts ~15 minutes, so no rung runs whole: a part is one rung at one annealed budget
for some of its dataset sizes (2 and 4 x its parameter count in bits, both seeds), sized by the
cost model (studies.device_time) to PART_S. Parts are independent launches of configs/capacity.py:full;
each returns its capacity.jsonl, and studies.ladder_page merges a rung's parts into one
`capacity_reading.summarize` (so the verdict, C_mem and the size trend are the capacity
experiment's own).
The recipe is searched once, first, on the 400k rung at 250 annealed exposures (cheap, and the
closest to the seed baseline that is cheap); every later part trains with the recipe it found.
Numerics: bfloat16 compute with float32 weights and Adam state (what Morris et al. 2025 train in;
3 % below float32 on the CPU, docs/capacity.md), so the 1.6M rung fits parts at all.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from studies import ladder_page
from studies.ladder_plan import (
    FIRST_RECIPE,
    RESULTS,
    ROOT,
    Part,
    finished,
    n_params,
    parts,
    predicted_s,
    recipe_of,
)

# what `launch` records in a part.json and the plan and page read back
PART_KEYS = frozenset({"part", "rung", "budgets", "sizes", "rc", "wall_s", "machine", "date"})


def _machine() -> str:
    try:
        found = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True
        )
        return found.stdout.decode().splitlines()[0].strip()
    except (OSError, IndexError):
        return f"CPU ({len(os.sched_getaffinity(0))} cores)"


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    return os.environ.get("COMMIT") or found.stdout.decode().strip() or "unknown"


def launch(
    part: Part, recipe: dict, small: bool, work: Path, out: Path, predicted: float, limit: float = 1e9
) -> int:
    """One part as its own process under a timeout (1.5 x its prediction, at most `limit`);
    its rows, its log and part.json (with every population's phase line: its model-steps/s,
    model FLOP/s and MFU) go to OUT/<part>."""
    workdir, keep = work / part.name, out / part.name
    config, *overrides = part.args(recipe, small)
    command = [sys.executable, "-m", "jaxcap.launch", "--config", config, *overrides]
    command += ["--workdir", str(workdir), "--config.runtime.progress=False"]
    keep.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(keep / "launch.log", "a") as log:
        try:
            timeout = min(max(120.0, 1.5 * predicted), limit)
            rc = subprocess.run(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    wall = time.monotonic() - start
    phases = [
        line for line in (keep / "launch.log").read_text().splitlines() if "model-steps/s training" in line
    ]
    print("\n".join(phases), flush=True)
    for name in ("config.json", "capacity.jsonl", "capacity_time.jsonl", "report/report.md"):
        if (workdir / name).exists():
            shutil.copy(workdir / name, keep / Path(name).name)
    stamp = {"machine": _machine(), "date": time.strftime("%Y-%m-%d"), "commit": _commit(), "small": small}
    record = {"part": part.name, "rung": part.rung.name, "n_params": n_params(part.rung)}
    record |= {"budgets": part.budgets, "sizes": part.sizes, "recipe": recipe, "rc": rc}
    record |= {"wall_s": round(wall, 1), "predicted_s": round(predicted), "phases": phases, **stamp}
    (keep / "part.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{part.name}: rc {rc}, {wall:.0f} s measured, {predicted:.0f} s predicted", flush=True)
    return rc


def run(
    out: Path, budget_s: float, small: bool, results: Path = RESULTS, work: Path = Path("/tmp/ladder")
) -> None:
    """The pending parts, in the plan's order, that the cost model fits into what is left of
    `budget_s` (SMALL: all of them); a part finished in `results` or `out` is not run again.
    SMALL reads `out` only: its tiny parts are never in `results`, nor is their recipe."""
    results = out if small else results
    start, tried, failed = time.monotonic(), set(), []
    while True:
        done = finished(results, out)
        recipe = recipe_of(done) or FIRST_RECIPE
        pending = [p for p in parts(recipe, small) if p.name not in done and p.name not in tried]
        left = budget_s - (time.monotonic() - start)
        timed = [(p, predicted_s(p, recipe, small)) for p in pending]
        if any(not p.budgets for p in pending) or recipe_of(done) is None:
            timed = [(p, s) for p, s in timed if not p.budgets]  # nothing trains an unsearched recipe
        fitting = [(p, s) for p, s in timed if small or s <= left]
        if not fitting:
            print("left for later:", ", ".join(f"{p.name} ({s:.0f} s)" for p, s in timed) or "nothing")
            if failed:  # the others ran; the command's status says that these did not
                sys.exit(f"ladder: part(s) {', '.join(failed)} failed")
            return
        part, seconds = fitting[0]
        tried.add(part.name)
        limit = 1e9 if small else left  # what the budget has left: the command's own timeout is above it
        if launch(part, recipe, small, work, out, seconds, limit) != 0:
            if small or not part.budgets:  # no recipe: the rungs would train an unsearched one
                sys.exit(f"ladder: part {part.name} failed")
            failed.append(part.name)


def bad_budget(seconds: float) -> str | None:
    """Why `--budget` is refused (a plan or a run of no device time, or of negative time), or None."""
    if not seconds > 0:  # NaN too
        return f"--budget: got {seconds:g}; allowed: a positive number of device-seconds, e.g. 480"
    return None


def bad_results(folder: Path | None) -> str | None:
    """Why `--results` is refused, or None: a folder given must exist and hold only finished
    parts (`<part>/part.json`, as `run` writes them); the default may not exist yet (nothing ran)."""
    allowed = "allowed: a folder of finished parts (<part>/part.json, as `run --out` writes them)"
    if folder is None:
        return None
    if not folder.exists():
        return f"--results: {folder} does not exist; {allowed}"
    if not folder.is_dir():
        return f"--results: {folder} is a file; {allowed}"
    records = sorted(folder.glob("*/part.json"))
    if not records and any(folder.iterdir()):
        return f"--results: {folder} holds no <part>/part.json; {allowed}"
    for path in records:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            return f"--results: {path} does not parse ({e}); {allowed}"
        if not isinstance(record, dict) or not set(record) >= PART_KEYS:
            return (
                f"--results: {path} is not a part's record (keys {', '.join(sorted(PART_KEYS))}); {allowed}"
            )
    return None


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.ladder", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("plan", "run"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/ladder_out"), help="where parts' results go")
    parser.add_argument("--budget", type=float, default=480.0, help="device-seconds this command may use")
    parser.add_argument(
        "--small", action="store_true", help="tiny rungs on a CPU: the plumbing, not a measurement"
    )
    parser.add_argument(
        "--results", type=Path, default=None, help=f"finished parts (skipped); default {RESULTS}"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/ladder"), help="the parts' workdirs")
    a = parser.parse_args(argv[1:])
    refusal = bad_budget(a.budget) or bad_results(a.results or (RESULTS if RESULTS.exists() else None))
    if refusal:
        print(f"usage error: {refusal}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    a.results = a.results or RESULTS
    if a.command == "run":
        run(a.out, a.budget, a.small, a.results, a.work)
        return
    recipe = recipe_of(finished(a.results)) or FIRST_RECIPE
    print("\n".join(ladder_page.plan_table(ladder_page.load(a.results), recipe, a.small)))


if __name__ == "__main__":
    main(sys.argv)

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
`capacity.summarize` (so the verdict, C_mem and the size trend are the capacity experiment's own).
The recipe is searched once, first, on the 400k rung at 250 annealed exposures (cheap, and the
closest to the seed baseline that is cheap); every later part trains with the recipe it found.
Numerics: bfloat16 compute with float32 weights and Adam state (what Morris et al. 2025 train in;
3 % below float32 on the CPU, docs/capacity.md), so the 1.6M rung fits parts at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from jaxcap.models import ModelConfig, param_count
from studies import device_time

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "ladder"  # one folder per finished part, committed


@dataclasses.dataclass(frozen=True)
class Rung:
    name: str
    arch: str  # a config.sweep.buckets override: the architecture
    budgets: tuple[float, ...]  # annealed exposures, ascending: the verdict reads the last doubling


NUMERICS = "model.compute_dtype=bfloat16"
RUNGS = (  # 1 layer 14,288 -> 2 layers 100k, 400k -> the seed baseline (1.6M; recipe model positions)
    Rung("14k", "model.d_model=32,model.n_heads=2,model.d_head=16,model.d_ff=128", (4e3, 8e3, 16e3)),
    Rung(
        "100k",
        "model.n_layers=2,model.d_model=64,model.n_heads=4,model.d_head=16,model.d_ff=256",
        (2e3, 4e3, 8e3),
    ),
    Rung(
        "400k",
        "model.n_layers=2,model.d_model=128,model.n_heads=4,model.d_head=32,model.d_ff=512",
        (1e3, 2e3, 4e3),
    ),
    Rung(
        "1.6M",
        "model.n_layers=2,model.d_model=256,model.n_heads=8,model.d_head=32,model.d_ff=1024",
        (500.0, 1e3),
    ),
)
SMALL_RUNGS = (  # SMALL=1: the plumbing on a CPU, three sizes so the trend is drawn
    Rung("s1", "model.d_model=8,model.n_heads=1,model.d_ff=16", (20.0, 40.0)),
    Rung("s2", "model.d_model=8,model.n_heads=1,model.d_ff=32", (20.0, 40.0)),
    Rung("s3", "model.d_model=16", (20.0, 40.0)),
)
SIZES = (2.0, 4.0)  # dataset bits per parameter: the 2x size stored 91 % of its data on the H200
BATCH, SEEDS, PART_S = 512, 2, 400.0
SEARCH_RUNG, SEARCH_EXPOSURES = "400k", 250.0
SEARCH_GRID = {"learning_rate": (1e-3, 3e-3, 1e-2), "b2": (0.98, 0.999)}
FIRST_RECIPE = {"learning_rate": 3e-3, "b2": 0.999}  # the plan's, until the search has run


@dataclasses.dataclass(frozen=True)
class Part:
    rung: Rung
    budgets: tuple[float, ...]  # annealed; (): the recipe search
    sizes: tuple[float, ...]

    @property
    def name(self) -> str:
        if not self.budgets:
            return f"{self.rung.name}-search"
        budgets = "-".join(f"{b:g}" for b in self.budgets)
        return f"{self.rung.name}-a{budgets}-x" + "x".join(f"{s:g}" for s in self.sizes)

    def search(self, small: bool = False) -> float:
        """The search's annealed exposures (SMALL: a few, the plumbing only)."""
        return 10.0 if small else SEARCH_EXPOSURES

    def args(self, recipe: dict, small: bool = False) -> list[str]:
        """The launch's config arguments (configs/capacity.py with overrides)."""
        batch, seeds = (8, 2) if small else (BATCH, SEEDS)
        n = [max(1, round(s * n_params(self.rung) / 60)) for s in self.sizes]  # 60 bits a sequence
        first = 2.0 if small else 20.0  # the constant-rate run's one budget: the verdict reads annealed runs
        search = self.search(small)
        longest = max(*self.budgets, search if not self.budgets else 0.0, first)
        chunk = max(1, min(200, int(first * min(n) // batch)))
        steps = -(-math.ceil(longest * max(n) / batch) // chunk) * chunk
        grid = {k: () for k in SEARCH_GRID} if self.budgets else SEARCH_GRID
        return [
            "configs/capacity.py" if small else "configs/capacity.py:full",
            f"--config.sweep.buckets=('{self.rung.arch},{NUMERICS}',)",
            f"--config.capacity.bits_per_param_grid={tuple(self.sizes)}",
            "--config.capacity.max_rounds=1",
            f"--config.capacity.exposures=({first},)",
            f"--config.capacity.annealed={self.budgets}",
            f"--config.capacity.search_exposures={0.0 if self.budgets else search}",
            f"--config.train.batch_size={batch}",
            f"--config.train.chunk_steps={chunk}",
            f"--config.train.steps={steps}",
            f"--config.sweep.seeds={seeds}",
            *(f"--config.sweep.hparams.{k}={v}" for k, v in grid.items()),
            "--config.sweep.hparams.init_scale=()",
            *(f"--config.hparams.{k}={v}" for k, v in recipe.items()),
            f"--config.note=the size ladder, part {self.name}",
        ]


@functools.cache
def n_params(rung: Rung) -> int:
    """The rung's parameter count: configs/capacity.py's model with the rung's fields."""
    config = device_time.load(["configs/capacity.py"])
    fields = {**config.model.to_dict(), "readout": "all"}
    for item in rung.arch.split(","):
        key, _, value = item.removeprefix("model.").partition("=")
        fields[key] = int(value)
    return param_count(ModelConfig(vocab_size=16, seq_len=16, n_outputs=16, **fields))


def predicted_s(part: Part, recipe: dict, small: bool = False) -> float:
    """The cost model's device-seconds for a part: its launch, compiles, training and report."""
    runs = device_time.capacity_runs(device_time.load(part.args(recipe, small)))
    return device_time.seconds(runs)


def parts(recipe: dict, small: bool = False) -> list[Part]:
    """The search, then per rung the largest pieces that fit PART_S: the whole rung, else one part
    per budget, else one per budget and size (a size alone over PART_S is still one part: the
    plan shows its seconds, and a session runs it with the time it needs)."""
    rungs = SMALL_RUNGS if small else RUNGS
    search = next((r for r in rungs if r.name == SEARCH_RUNG), rungs[len(rungs) // 2])
    out = [Part(search, (), SIZES)]
    for rung in rungs:
        fits = lambda part: small or predicted_s(part, recipe) <= PART_S  # noqa: E731
        whole = Part(rung, rung.budgets, SIZES)
        if fits(whole):
            out.append(whole)
            continue
        for budget in rung.budgets:
            one = Part(rung, (budget,), SIZES)
            out += [one] if fits(one) else [Part(rung, (budget,), (s,)) for s in SIZES]
    return out


def finished(*folders: Path) -> dict[str, Path]:
    """Part name -> its folder, for every part whose launch exited 0, in `folders` (later wins)."""
    out = {}
    for folder in folders:
        for path in sorted(folder.glob("*/part.json")) if folder.is_dir() else []:
            if json.loads(path.read_text())["rc"] == 0:
                out[path.parent.name] = path.parent
    return out


def recipe_of(done: dict[str, Path]) -> dict | None:
    """The searched recipe (lr, β2), from the finished search part's rows; None before it ran."""
    from jaxcap.experiments.capacity.sizes import summarize
    from jaxcap.results.records import CapacityRow
    from jaxcap.results.store import read_jsonl

    folder = next((p for name, p in done.items() if name.endswith("-search")), None)
    if folder is None:
        return None
    [summary] = summarize([CapacityRow.from_json(d) for d in read_jsonl(folder / "capacity.jsonl")], 0.05)
    return {k: summary.recipe[k] for k in SEARCH_GRID}


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
    start, tried = time.monotonic(), set()
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
            return
        part, seconds = fitting[0]
        tried.add(part.name)
        limit = 1e9 if small else left  # what the budget has left: the command's own timeout is above it
        if launch(part, recipe, small, work, out, seconds, limit) != 0 and (small or not part.budgets):
            sys.exit(f"ladder: part {part.name} failed")  # no recipe: the rungs would train an unsearched one


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.ladder", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("plan", "run"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/ladder_out"), help="where parts' results go")
    parser.add_argument("--budget", type=float, default=480.0, help="device-seconds this command may use")
    parser.add_argument(
        "--small", action="store_true", help="tiny rungs on a CPU: the plumbing, not a measurement"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="finished parts (skipped)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ladder"), help="the parts' workdirs")
    a = parser.parse_args(argv[1:])
    if a.command == "run":
        run(a.out, a.budget, a.small, a.results, a.work)
        return
    from studies import ladder_page  # the page's plan table (it imports this module)

    recipe = recipe_of(finished(a.results)) or FIRST_RECIPE
    print("\n".join(ladder_page.plan_table(ladder_page.load(a.results), recipe, a.small)))


if __name__ == "__main__":
    main(sys.argv)

"""The capacity size ladder's plan: its rungs (14k to the 1.6M-parameter seed baseline), the
parts each rung is cut into by the cost model, and what finished parts hold (the searched
recipe). Read by the ladder's command (studies/ladder.py) and its page (studies/ladder_page.py);
the design and its reasons: studies/ladder.py's docstring and docs/capacity.md.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
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
    from jaxcap.results.capacity_reading import summarize
    from jaxcap.results.records import CapacityRow
    from jaxcap.results.store import read_jsonl

    folder = next((p for name, p in done.items() if name.endswith("-search")), None)
    if folder is None:
        return None
    [summary] = summarize([CapacityRow.from_json(d) for d in read_jsonl(folder / "capacity.jsonl")], 0.05)
    return {k: summary.recipe[k] for k in SEARCH_GRID}

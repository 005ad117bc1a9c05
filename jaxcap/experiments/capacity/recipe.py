"""The memorization recipe: capacity is a maximum over training procedures, so the experiment
searches the recipe per architecture and trains each exposure budget the way that stores most.

Recipe search (`capacity.search_exposures` > 0). Before anything else, each architecture trains
one population: every combination of `sweep.hparams` (e.g. learning rate × Adam β2 × init
scale: traced values, so one compiled program) × seeds, on its middle round-0 dataset size,
annealed to `search_exposures`. The recipe whose median bits stored over seeds is highest wins
(`best_recipe`), and every later run of that architecture uses it alone: the search costs one
short population, not a factor on every budget. The search's rows are in capacity.jsonl
(`schedule: "search"`), every row names its recipe, and the report says which one won.

Details: docs/design/capacity.md#annealed-budgets.

[1] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
"""

from __future__ import annotations

import numpy as np

from jaxcap.experiments.capacity import curve as capacity_curve
from jaxcap.fields import ConfigError
from jaxcap.results.records import CapacityRow

# the hyperparameters that make a recipe (written in every row and in the report)
RECIPE_KEYS = ("learning_rate", "b2", "init_scale", "warmup_steps", "weight_decay")


def recipe_of(hparams: dict) -> dict:
    return {k: float(hparams[k]) for k in RECIPE_KEYS if k in hparams}


def recipe_label(recipe: dict) -> str:
    short = {
        "learning_rate": "lr",
        "b2": "β2",
        "init_scale": "init",
        "warmup_steps": "warmup",
        "weight_decay": "wd",
    }
    return ", ".join(f"{short[k]} {recipe[k]:g}" for k in RECIPE_KEYS if k in recipe)


def horizon(budget: float, n: int, batch_size: int) -> int:
    """The step at which n items have had `budget` exposures: where the annealed rate hits 0."""
    return capacity_curve.steps_to(budget, n, batch_size)


def check(cap, grid) -> None:
    """The recipe search and annealed budgets are well posed (before anything compiles): `cap`
    the capacity settings, `grid` the members' grid (jaxcap.config.plan.Grid)."""
    annealed = tuple(cap.annealed)
    if any(b <= a for a, b in zip(annealed, annealed[1:])):
        raise ConfigError(
            f"config.capacity.annealed: got {annealed}; allowed: ascending exposure budgets (or ())"
        )
    if (annealed or cap.search_exposures) and cap.anneal_schedule == "constant":
        raise ConfigError(
            "config.capacity.anneal_schedule: got 'constant'; allowed: linear, cosine (an annealed "
            "budget is a run whose learning rate decays to 0 at that budget)"
        )
    hparams, grid = grid.hparams, {k: tuple(v) for k, v in grid.hparam_grid.items() if len(v)}
    lrs = grid.get("learning_rate", (hparams["learning_rate"],))
    if not any(lr > 0 for lr in lrs):
        raise ConfigError(
            f"config.sweep.hparams.learning_rate: got {lrs}; allowed: at least one value > 0 "
            "(a recipe grid with no member that trains)"
        )
    if cap.search_exposures and not grid:
        raise ConfigError(
            f"config.capacity.search_exposures: got {cap.search_exposures:g} with an empty "
            "config.sweep.hparams; allowed: 0 (no search), or a grid of recipes to search"
        )


def best_recipe(rows: list[CapacityRow]) -> dict:
    """The recipe with the highest median bits stored over seeds (diverged members store 0)."""
    by_recipe: dict[tuple, list[float]] = {}
    for r in rows:
        key = tuple(sorted(r.recipe.items()))
        by_recipe.setdefault(key, []).append(0.0 if r.diverged else r.bits_stored)
    if not by_recipe:
        raise ValueError("best_recipe: no rows")
    key = max(by_recipe, key=lambda k: (float(np.median(by_recipe[k])), -len(str(k))))
    return dict(key)


def search_table(rows: list[CapacityRow]) -> list[dict]:
    """Per recipe of a search: median and range of bits stored over seeds, best first."""
    by_recipe: dict[tuple, list[CapacityRow]] = {}
    for r in rows:
        by_recipe.setdefault(tuple(sorted(r.recipe.items())), []).append(r)
    out = []
    for key, members in by_recipe.items():
        bits = [0.0 if r.diverged else r.bits_stored for r in members]
        out.append(
            {
                "recipe": dict(key),
                "median": float(np.median(bits)),
                "min": min(bits),
                "max": max(bits),
                "diverged": sum(r.diverged for r in members),
                "seeds": len(members),
            }
        )
    return sorted(out, key=lambda p: -p["median"])


def recipe_lines(archs: list[dict], cap: dict) -> list[str]:
    """The report's account of each architecture's recipe: searched (and how) or as configured."""
    lines = []
    for a in archs:
        how = (
            f"the best of the sweep.hparams grid at {cap['search_exposures']:g} annealed exposures "
            "(search rows in capacity.jsonl)"
            if a.searched
            else "as configured (no search)"
        )
        lines.append(f"- recipe of {a.label or 'the base model'}: {recipe_label(a.recipe)}; {how}")
    return lines


def annealed_lines(archs: list[dict], table: list[str]) -> list[str]:
    """The annealed budgets' table with what it means and which curve the verdict reads."""
    if not table:
        return ["The verdict reads the constant-rate run (no annealed budgets configured).", ""]
    return [
        "bits per parameter at each annealed budget (each budget its own run, the learning rate "
        "decaying to 0 exactly there; median [min–max over seeds]). The verdict reads this curve: "
        "C_mem is its value at the last budget, flat when it gained at most the tolerance over the "
        "last doubling.",
        "",
        *table,
        "",
    ]

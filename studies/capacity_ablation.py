"""Why jaxcap stored less: the recipe ablation on the plain-reference case, one change at a time.

    python -m studies.capacity_ablation --workdir runs/capacity_ablation  # docs/capacity.md
    python -m studies.capacity_ablation --workdir D --seeds 1 --rows baseline,positions

The case is `studies.plain_reference`'s (1 layer, d_model 16, 255 random sequences);
`baseline` is jaxcap's recipe before the recipe search, and every other row changes one thing.
Each row is a capacity run in its own sub-workdir, so an interrupted ablation resumes.

Details: docs/design/capacity.md#the-recipe-ablation.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
from absl import flags as absl_flags  # `flags` below builds launch flags

from jaxcap.main import cli

ROOT = Path(__file__).resolve().parents[1]  # the checkout: configs/ lives beside studies/
CASE = {
    "sweep.buckets": ("model.d_model=16",),
    "capacity.bits_per_param_grid": (),
    "sweep.task.dataset_size": (255,),
    "capacity.exposures": (10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0),
    "capacity.annealed": (),
    "capacity.search_exposures": 0.0,
    "sweep.hparams.learning_rate": (),
    "sweep.hparams.b2": (),
    "sweep.hparams.init_scale": (),
    "hparams.learning_rate": 1e-2,
    "hparams.b2": 0.98,
    "model.pos_encoding": "sinusoidal",
    "model.embed_std": 1.0,
    "model.embed_sqrt_d": True,
    "train.steps": 8000,
}
RECIPE = {
    "model.pos_encoding": "learned",
    "model.embed_std": 0.02,
    "model.embed_sqrt_d": False,
    "hparams.b2": 0.999,
}
# (row, factor, what changes, overrides on CASE)
ROWS = (
    ("baseline", "—", "jaxcap before the memorization recipe", {}),
    (
        "positions",
        "position embedding",
        "learned table, N(0, 1) init, instead of sinusoidal",
        {"model.pos_encoding": "learned"},
    ),
    (
        "embed_gpt2",
        "token embedding init",
        "N(0, 0.02²) table read as it is (GPT-2)",
        {"model.embed_std": 0.02, "model.embed_sqrt_d": False},
    ),
    (
        "embed_no_sqrt_d",
        "token embedding multiplier",
        "N(0, 1) table read as it is: no sqrt(d) on its Adam step",
        {"model.embed_sqrt_d": False},
    ),
    ("b2", "Adam β2", "0.999 (optax's default) instead of 0.98", {"hparams.b2": 0.999}),
    ("eps", "Adam ε", "1e-6 instead of 1e-8", {"train.eps": 1e-6}),
    ("warmup0", "warmup", "0 steps instead of 50", {"hparams.warmup_steps": 0.0}),
    ("warmup500", "warmup", "500 steps instead of 50", {"hparams.warmup_steps": 500.0}),
    ("init_half", "init scale", "every matrix (embedding included) x 0.5", {"hparams.init_scale": 0.5}),
    ("rmsnorm", "LayerNorm", "RMSNorm (no centring, no bias)", {"model.norm_type": "rms"}),
    (
        "annealed",
        "schedule",
        "lr decayed linearly to 0 at 1,000 exposures (its own run)",
        {"capacity.annealed": (1000.0,)},
    ),
    ("recipe", "all that helped", "learned positions, GPT-2 embedding, β2 0.999", RECIPE),
    (
        "recipe_annealed",
        "all that helped + annealing",
        "the recipe, decayed to 0 at 1,000 exposures",
        {**RECIPE, "capacity.annealed": (1000.0,)},
    ),
    (
        "recipe_4000",
        "4,000 exposures",
        "the recipe, decayed to 0 at 4,000 exposures (not 1,000)",
        {**RECIPE, "capacity.annealed": (4000.0,), "train.steps": 32000},
    ),
    (
        "recipe_init_half",
        "+ init scale",
        "the recipe with every matrix x 0.5 (the search's choice for the CPU default), annealed",
        {**RECIPE, "hparams.init_scale": 0.5, "capacity.annealed": (1000.0,)},
    ),
    (
        "recipe_init_half_4000",
        "+ init scale, 4,000",
        "the recipe with init x 0.5, decayed to 0 at 4,000 exposures",
        {**RECIPE, "hparams.init_scale": 0.5, "capacity.annealed": (4000.0,), "train.steps": 32000},
    ),
)


def config_for(overrides: dict, seeds: int):
    from jaxcap.config.base import load_config

    config = load_config(ROOT / "configs" / "capacity.py")
    config.sweep.seeds = seeds
    config.runtime.progress = False
    for path, value in {**CASE, **overrides}.items():
        *parents, field = path.split(".")
        node = config
        for part in parents:
            node = node[part]
        node[field] = value
    return config


def flags(overrides: dict, seeds: int) -> list[str]:
    """The launch flags of a row: `configs/capacity.py` with CASE, then the row's overrides."""
    out = [f"--config={ROOT / 'configs' / 'capacity.py'}", f"--config.sweep.seeds={seeds}"]
    out.append("--config.runtime.progress=False")
    for path, value in {**CASE, **overrides}.items():
        out.append(f"--config.{path}={value if isinstance(value, str) else repr(value)}")
    return out


def measure(workdir: Path, row: str, overrides: dict, seeds: int) -> dict:
    """Run (or read back) one row, a launch of its own (so an interrupted row resumes): bits
    stored per seed at 1,000 exposures, constant and annealed."""
    from jaxcap.results.records import CapacityRow
    from jaxcap.results.store import read_jsonl

    where = workdir / row
    if not (where / "report" / "capacity.json").exists():
        command = [sys.executable, "-m", "jaxcap.launch", *flags(overrides, seeds), f"--workdir={where}"]
        subprocess.run(command, check=True)
    rows = [CapacityRow.from_json(d) for d in read_jsonl(where / "capacity.jsonl")]
    out = {}
    for schedule in ("constant", "annealed"):
        mine = sorted((r for r in rows if r.schedule == schedule), key=lambda r: r.seed)
        if mine:
            out[schedule] = [r.bits_stored for r in mine]
            out["n_params"] = mine[0].n_params
    return out


def table(results: dict, seeds: int) -> str:
    base = results["baseline"]["constant"]
    stamp = f"{os.cpu_count()}-core {jax.devices()[0].platform.upper()}, {datetime.date.today()}"
    lines = [
        f"Bits stored at 1,000 exposures per item (rows `*_4000`: 4,000), the plain-reference case, seeds "
        f"0–{seeds - 1} (median [min–max]; Δ: median of the per-seed change against `baseline`). "
        f"Measured on the {stamp}.",
        "",
        "| row | factor | change | params | bits stored | bits/param | Δ vs baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    for row, factor, change, _ in ROWS:
        if row not in results:
            continue
        r = results[row]
        bits = r.get("annealed", r.get("constant"))
        delta = np.median([b / a - 1 for a, b in zip(base, bits)])
        lines.append(
            f"| {row} | {factor} | {change} | {r['n_params']:,} | {np.median(bits):,.0f} "
            f"[{min(bits):,.0f}–{max(bits):,.0f}] | {np.median(bits) / r['n_params']:.2f} | {delta:+.1%} |"
        )
    return "\n".join(lines) + "\n"


FLAGS = absl_flags.FlagValues()  # this command's own: importing it defines no global flag
absl_flags.DEFINE_string("workdir", "runs/capacity_ablation", "Where the rows' runs go.", flag_values=FLAGS)
absl_flags.DEFINE_integer("seeds", 3, "Seeds per row.", lower_bound=1, flag_values=FLAGS)
absl_flags.DEFINE_list("rows", [], "Rows to run (default: all), e.g. baseline,positions.", flag_values=FLAGS)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("capacity_ablation", package="studies"), *argv], __doc__, FLAGS)
    args = FLAGS
    wanted = list(args.rows) or [r[0] for r in ROWS]
    unknown = set(wanted) - {r[0] for r in ROWS}
    if unknown:
        cli.usage_exit(
            f"--rows: unknown {', '.join(sorted(unknown))}; allowed: {', '.join(r[0] for r in ROWS)}"
        )
    workdir = Path(args.workdir)
    results = {
        row: measure(workdir, row, o, args.seeds)
        for row, _, _, o in ROWS
        if row in wanted or row == "baseline"
    }
    text = table(results, args.seeds)
    print(text)
    (workdir / "ablation.md").write_text(text)
    (workdir / "ablation.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

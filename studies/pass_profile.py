"""Where a calibrate family pass spends its time: one grid population of each default family,
timed phase by phase and traced by XLA's own profiler, its ops summed by what they do.

    python -m studies.pass_profile                          # every family of configs/calibrate.py
    python -m studies.pass_profile --families copying --steps 20 --markdown

For each family: the grid pass's population (4 levels x 4 seeds = 16 members) and one of a
boundary round's size (1 level, 4 members); wall time of data generation, a training chunk and
one evaluation; the evaluation's share of a pass (one eval per `train.chunk_steps`); model FLOP/s;
and the chunk's XLA ops (a `jax.profiler` trace, every thunk event matched to its HLO instruction)
summed by the jaxpr path XLA records for it: forward, backward (`transpose(jvp(...))`), the
batch drawn inside the step (`randint`, threefry, gather), and the rest (the AdamW update, the
divergence guard, loop bookkeeping). The table: docs/engine.md, "Where a family pass spends its
time".
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile
import time

import jax

from jaxcap.config.base import build_plan, load_config
from jaxcap.core import flops, sharding
from jaxcap.core.population import stack
from jaxcap.core.runtime import enable_compilation_cache
from jaxcap.experiments.families import with_bits
from jaxcap.meta.design import spanning_grid
from jaxcap.training.loop import population_program

CATEGORIES = ("forward", "backward", "batch", "update and guard")


def category(op_name: str) -> str:
    """What an HLO instruction does, from the jaxpr path in its metadata."""
    if "transpose(jvp(" in op_name:
        return "backward"
    if "jvp(" in op_name:
        return "forward"
    if re.search(r"randint|threefry|random_bits|/gather", op_name):
        return "batch"
    return "update and guard"


def instruction_categories(hlo_text: str) -> dict[str, str]:
    """Every named instruction of an optimized HLO module -> its category."""
    out = {}
    for m in re.finditer(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*?op_name=\"([^\"]+)\"", hlo_text, re.M):
        out[m.group(1)] = category(m.group(2))
    return out


def traced_ms(run, names: dict[str, str]) -> dict[str, float]:
    """Milliseconds of thunk time per category while `run()` executes (all threads summed)."""
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            run()
        [path] = glob.glob(f"{d}/plugins/profile/*/perfetto_trace.json.gz")
        with gzip.open(path) as f:
            events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    out = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("name") in names:
            out[names[e["name"]]] += e.get("dur", 0) / 1e3
    return {c: round(out[c], 1) for c in CATEGORIES}


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    return out, time.perf_counter() - start


def profile_bucket(bucket, steps: int, trace: bool) -> dict:
    """Phase times of one population (its programs compiled first, untimed): a chunk of `steps`
    steps, and the evaluation a pass of the config's own chunk length runs (its sample is sized
    from that chunk's training work, jaxcap.core.train.sampled_task)."""
    mesh = sharding.population_mesh(len(bucket.members), 0)
    full = population_program(bucket.settings, bucket.task, bucket.model, mesh)
    short = bucket.with_settings(chunk_steps=steps)
    program = population_program(short.settings, short.task, short.model, mesh)
    keys, hparams = sharding.put(stack(bucket.members, bucket.seed), mesh)
    state = program.init(keys, hparams)
    data = program.data(keys, hparams)
    (state, _), _ = timed(program.chunk, state, hparams, data)  # compiles
    timed(full.evaluate, state, hparams, data)
    data, data_s = timed(program.data, keys, hparams)
    (state, _), chunk_s = timed(program.chunk, state, hparams, data)
    _, eval_s = timed(full.evaluate, state, hparams, data)
    per_chunk = chunk_s * bucket.settings.chunk_steps / steps
    p, step_flops = len(bucket.members), flops.train_flops(bucket.model, bucket.settings.batch_size)
    out = {
        "members": p,
        "seq_len": bucket.model.seq_len,
        "ms_per_step": round(1e3 * chunk_s / steps, 2),
        "model_steps_per_s": round(p * steps / chunk_s, 1),
        "gflops": round(p * steps * step_flops / chunk_s / 1e9, 1),
        "data_s": round(data_s, 3),
        "eval_s": round(eval_s, 3),
        "eval_share": round(eval_s / (per_chunk + eval_s), 3),
    }
    if trace:
        names = instruction_categories(program.chunk.lower(state, hparams, data).compile().as_text())
        ops = traced_ms(lambda: jax.block_until_ready(program.chunk(state, hparams, data)), names)
        total = sum(ops.values()) or 1.0
        out["ops_ms_per_step"] = {c: round(v / steps, 2) for c, v in ops.items()}
        out["ops_share"] = {c: round(v / total, 3) for c, v in ops.items()}
    return out


def family_profile(family, steps: int, grid: int, per_round: int) -> dict:
    family = with_bits(family)
    levels = [family.values[i] for i in spanning_grid(list(family.bits), grid)]
    [whole] = family.level_buckets(levels)  # the grid pass as one population
    small = family.level_buckets(levels, levels=per_round)[0]  # a round's size
    return {
        "family": family.name,
        "levels": levels,
        "grid": profile_bucket(whole, steps, trace=True),
        "round_size": profile_bucket(small, steps, trace=False),
    }


def markdown(rows: list[dict]) -> str:
    head = (
        "| family | tokens | P = 16 ms/step | GFLOP/s | forward | backward | batch | update, guard "
        "| eval share | data s | P = 4 ms/step | GFLOP/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        g, s = r["grid"], r["round_size"]
        shares = " | ".join(f"{100 * g['ops_share'][c]:.0f} %" for c in CATEGORIES)
        lines.append(
            f"| {r['family']} | {g['seq_len']} | {g['ms_per_step']} | {g['gflops']} | {shares} "
            f"| {100 * g['eval_share']:.0f} % | {g['data_s']} | {s['ms_per_step']} | {s['gflops']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/calibrate.py")
    parser.add_argument("--families", nargs="*", default=None, help="default: every family")
    parser.add_argument("--steps", type=int, default=50, help="steps in the timed chunk")
    parser.add_argument("--compilation_cache", default="", help="persistent XLA cache ('': none)")
    parser.add_argument("--markdown", action="store_true", help="also print the docs table")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps: got {args.steps}; allowed: an integer >= 1")
    cal = build_plan(load_config(args.config)).section
    names = args.families or list(cal.families)
    unknown = [n for n in names if n not in cal.families]
    if unknown:
        parser.error(f"--families: got {unknown[0]!r}; allowed: {', '.join(cal.families)}")
    enable_compilation_cache(args.compilation_cache or "")
    design = cal.settings.design
    rows = []
    for name in names:
        rows.append(family_profile(cal.families[name], args.steps, design.grid or 4, design.per_round))
        print(json.dumps(rows[-1]), flush=True)
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()

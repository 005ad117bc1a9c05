"""Benchmark of the meta-model's NUTS fit: `python -m jaxcap.main.meta_bench` prints JSON.

    python -m jaxcap.main.meta_bench                 # 2,000 simulated result rows, the default NUTS
    python -m jaxcap.main.meta_bench --rows 500 --repeats 1

The table is simulated from known parameters (jaxcap/meta/simulate.py: 2 architectures, 5
families, 4 seeds a cell, as many levels as make `--rows` rows) and fitted with the settings
calibrate uses by default; the fit runs `--repeats` times in one process (the first includes
the XLA compile, later ones reuse the persistent compilation cache when `--cache` is set).
Printed: wall seconds per fit, the NUTS diagnostics (worst R-hat, smallest ESS, divergences),
the sizes, the devices and the load average (other jobs share a small machine: read the
seconds against it). The target (docs/meta-model.md, "Against the targets"): 2,000 rows in
<= 60 s on a 2-core CPU, R-hat <= 1.01, no divergences.
"""

from __future__ import annotations

import json
import sys

from absl import flags

from jaxcap.main import cli  # absl only: JAX starts after the NUTS devices are reserved

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_integer("rows", 2000, "Result rows (seeds x cells).", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer("seeds", 4, "Seeds (rows) per cell.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer("families", 5, "Task families simulated.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer("warmup", None, "NUTS warmup per chain (default: calibrate's).", flag_values=FLAGS)
flags.DEFINE_integer("samples", None, "NUTS draws per chain (default: calibrate's).", flag_values=FLAGS)
flags.DEFINE_integer("chains", None, "NUTS chains (default: calibrate's).", flag_values=FLAGS)
flags.DEFINE_float("target_accept", None, "NUTS target acceptance (default: calibrate's).", flag_values=FLAGS)
flags.DEFINE_integer("repeats", 2, "Fits in this process.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_string("cache", "", "Persistent compilation cache directory ('' = off).", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> int:
    cli.parse([cli.prog("main.meta_bench"), *(sys.argv[1:] if argv is None else argv)], __doc__, FLAGS)
    args = FLAGS
    if args.rows < 2 * args.families * args.seeds:
        cli.usage_exit(
            f"--rows: got {args.rows}; allowed: >= 2 x families x seeds = {2 * args.families * args.seeds}"
        )

    import dataclasses

    from jaxcap.meta import fit as meta_fit

    nuts_cfg = dataclasses.asdict(meta_fit.NutsSettings())  # = configs/calibrate.py's (a test checks)
    overrides = {"warmup": args.warmup, "samples": args.samples, "chains": args.chains}
    overrides["target_accept"] = args.target_accept
    nuts_cfg.update({k: v for k, v in overrides.items() if v is not None})

    meta_fit.reserve_chain_devices(nuts_cfg["chains"])  # before JAX starts, as launch does
    from jaxcap.benchmarks import nuts_fit  # imports JAX: after the devices are reserved
    from jaxcap.core import runtime

    if args.cache:
        runtime.enable_compilation_cache(args.cache)
    table = nuts_fit.simulated_table(args.rows, args.families, args.seeds)
    out = nuts_fit.describe(table, nuts_cfg, nuts_fit.time_fits(table, nuts_cfg, args.repeats))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

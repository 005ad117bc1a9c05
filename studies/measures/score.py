"""Score difficulty measures on a calibrate workdir: does one put the task families on one scale?

    python -m studies.measures.score runs/cal_s0 [--measures nominal,table_bits] [--json | --markdown]

Measures: the closed forms (studies/measures/closed_form.py) and the bits measured from each
level's examples (studies/measures/from_data.py, cached in <workdir>/data_bits.json).

What it measures and why: the module docstring of studies/measures/fits.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from absl import flags

from jaxcap.main import cli
from jaxcap.meta import fit
from jaxcap.meta.data import read_table
from studies.measures import from_data
from studies.measures.fits import markdown, score_measure, text

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_list("measures", list(from_data.NAMES), "Measures to score.", flag_values=FLAGS)
flags.DEFINE_integer("warmup", 1000, "NUTS warmup draws per chain.", flag_values=FLAGS)
flags.DEFINE_integer("samples", 1000, "NUTS draws per chain.", flag_values=FLAGS)
flags.DEFINE_integer("chains", 4, "NUTS chains.", flag_values=FLAGS)
flags.DEFINE_float("target_accept", 0.97, "NUTS target acceptance.", flag_values=FLAGS)
flags.DEFINE_integer("seed", 0, "NUTS seed.", flag_values=FLAGS)
flags.DEFINE_string("reference", "", "Reference family (θ = 1); default as calibrate.", flag_values=FLAGS)
flags.DEFINE_bool("json", False, "Print JSON.", flag_values=FLAGS)
flags.DEFINE_bool("markdown", False, "Print markdown tables.", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> int:
    workdirs = cli.parse(
        [cli.prog("measures.score", package="studies"), *(sys.argv[1:] if argv is None else argv)],
        __doc__,
        FLAGS,
        positionals=True,
    )
    if not workdirs:
        cli.usage_exit("a calibrate workdir is required, e.g. runs/cal_s0")
    try:
        names = from_data.check_names(FLAGS.measures)
    except ValueError as e:
        cli.usage_exit(f"--measures: {e}")
    for name in ("warmup", "samples", "chains"):
        if FLAGS[name].value < 1:
            cli.usage_exit(f"--{name}: got {FLAGS[name].value}; allowed: >= 1")
    if not 0.5 <= FLAGS.target_accept < 1:
        cli.usage_exit(f"--target_accept: got {FLAGS.target_accept}; allowed: 0.5 <= value < 1")
    nuts = fit.NutsSettings(FLAGS.warmup, FLAGS.samples, FLAGS.chains, FLAGS.target_accept, FLAGS.seed)
    paths = [Path(w) / "table.json" for w in workdirs]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        sys.exit(f"measures score error: {', '.join(missing)}: missing (run configs/calibrate.py first)")
    fit.reserve_chain_devices(nuts.chains)  # before JAX starts: chains in parallel
    tables = {}
    for w, path in zip(workdirs, paths):  # every measure of every level before any fit
        table = read_table(path)
        try:
            tables[w] = from_data.measure_tables(table, names, Path(w) / from_data.CACHE)
        except ValueError as e:
            sys.exit(f"measures score error: {w}: {e}")
    results = {
        w: [score_measure(t, n, nuts, FLAGS.reference) for n, t in ts.items()] for w, ts in tables.items()
    }
    if FLAGS.json:
        print(json.dumps({w: [s.to_json() for s in r] for w, r in results.items()}, indent=1))
    elif FLAGS.markdown:
        print("\n\n".join("\n".join(markdown(r, w)) for w, r in results.items()))
    else:
        print("\n".join(line for w, r in results.items() for line in text(r, w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

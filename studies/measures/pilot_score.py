"""Each difficulty measure as the covariate, leave one family out at k = 0 and k = 2 pilots.

    python -m studies.measures.pilot_score runs/cal_s0 [runs/cal_s1 ...] [--measures nominal,data_lookup]
        [--k 2] [--json] [--markdown] [--warmup 500 --samples 1000 --chains 4]

Measures: nominal, the closed forms of studies/measures/closed_form.py and the data measures of
studies/measures/from_data.py (data_lookup, data_compressed, data_prequential; measured once per
workdir into <workdir>/data_bits.json). Scoring: studies/measures/pilots.py (NUTS folds cached per
measure in <workdir>/measure_folds/, results in <workdir>/measure_pilots.json). Every workdir and
every measure of every level is checked before any fit; a refusal is one line on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from absl import flags

from jaxcap.main import cli
from jaxcap.meta import fit as meta_fit
from jaxcap.meta.data import read_table
from jaxcap.results.store import clean
from studies.measures import from_data
from studies.measures.pilots import markdown, score_measures, summary
from studies.pilot.lofo import check_table, define_fold_flags, fold_nuts

DEFAULT = ["nominal", "table_bits", *from_data.DATA_MEASURES]
FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_list(
    "measures", DEFAULT, f"Measures to score, of {', '.join(from_data.NAMES)}.", flag_values=FLAGS
)
define_fold_flags(FLAGS, k=2)


def _refuse(message: str) -> int:
    print(f"measures pilot score error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = [cli.prog("measures.pilot_score", package="studies"), *(sys.argv[1:] if argv is None else argv)]
    workdirs = [Path(w) for w in cli.parse(args, __doc__, FLAGS, positionals=True)]
    if not workdirs:
        return _refuse("workdirs: none given; allowed: calibrate workdirs with table.json")
    try:
        names = from_data.check_names(FLAGS.measures)
    except ValueError as e:
        return _refuse(f"--measures: {e}")
    tables = {}
    for w in workdirs:
        if not (w / "table.json").exists():
            return _refuse(f"{w}: no table.json (a finished calibrate workdir)")
        try:
            check_table(read_table(w / "table.json"))
        except ValueError as e:
            return _refuse(f"{w}: {e}")
    nuts = fold_nuts(FLAGS)
    meta_fit.reserve_chain_devices(nuts.chains)  # before JAX starts: chains in parallel
    for w in workdirs:  # every measure of every level before any fit (the data measures run JAX)
        try:
            tables[w] = from_data.measure_tables(read_table(w / "table.json"), names, w / from_data.CACHE)
        except ValueError as e:
            return _refuse(f"{w}: {e}")
    results = [
        score_measures(w, ts, nuts, FLAGS.k, FLAGS.seed, FLAGS.repeat, FLAGS.reference)
        for w, ts in tables.items()
    ]
    if FLAGS.json:
        print(json.dumps(clean({"runs": results, "summary": summary(results)}), indent=1))
    if FLAGS.markdown or not FLAGS.json:
        print("\n".join(markdown(results, [str(w) for w in workdirs])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

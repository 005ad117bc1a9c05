"""Leave one family out WITH k pilots, on finished calibrate workdirs: prints JSON or markdown.

    python -m studies.pilot.score runs/cal_s0 runs/cal_s1 runs/cal_s2 [--markdown] [--json] [--k 3]

A new task family is predicted from a few pilot levels of it, chosen by expected information
gain under the calibrated families' posterior (the Ψ method, Kontsevich & Tyler 1999; QUEST+,
Watson 2017). Per workdir: each family is held out of a NUTS fit (studies/pilot/lofo.py;
draws cached in <workdir>/pilot_folds.npz, so a rerun does not refit) and scored with k = 0..K
pilots against bisection pilots, a logistic fit on the pilots alone and the base rate
(studies/pilot/holdout.py); the result goes to <workdir>/pilot_score.json. Several
workdirs (independent data seeds) are summarized as mean [min, max] (studies/pilot/score_tables.py).
Every workdir is checked (table.json present, >= 5 families, one architecture) before any fit.
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
from studies.pilot.holdout import score_workdir
from studies.pilot.lofo import check_table, define_fold_flags, fold_nuts
from studies.pilot.score_tables import boundary_table, brier_table, markdown

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
define_fold_flags(FLAGS, k=3)


def main(argv: list[str] | None = None) -> int:
    workdirs = [
        Path(w)
        for w in cli.parse(
            [cli.prog("pilot.score", package="studies"), *(sys.argv[1:] if argv is None else argv)],
            __doc__,
            FLAGS,
            positionals=True,
        )
    ]
    if not workdirs:
        print(
            "usage error: workdirs: none given; allowed: calibrate workdirs with table.json", file=sys.stderr
        )
        return 2
    for w in workdirs:
        if not (w / "table.json").exists():
            print(f"pilot score error: {w}: no table.json (a finished calibrate workdir)", file=sys.stderr)
            return 2
        try:
            check_table(read_table(w / "table.json"))
        except ValueError as e:
            print(f"pilot score error: {w}: {e}", file=sys.stderr)
            return 2
    nuts = fold_nuts(FLAGS)
    meta_fit.reserve_chain_devices(nuts.chains)  # before JAX starts: chains in parallel
    results = [score_workdir(w, nuts, FLAGS.k, FLAGS.seed, FLAGS.repeat, FLAGS.reference) for w in workdirs]
    if FLAGS.json:
        summary = {"brier": brier_table(results), "boundary": boundary_table(results)}
        print(json.dumps(clean({"runs": results, "summary": summary}), indent=1))
    if FLAGS.markdown or not FLAGS.json:
        print("\n".join(markdown(results, [str(w) for w in workdirs])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

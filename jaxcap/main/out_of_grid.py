"""Score a fitted meta-model on a separate population run: levels it never saw, fresh seeds.

    python -m jaxcap.main.out_of_grid --posterior runs/calibrate --workdirs runs/modulo_new [--json]

What it measures and why: the module docstring of jaxcap/meta/out_of_grid_scores.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from absl import flags

from jaxcap.main import cli
from jaxcap.meta import data as meta_data
from jaxcap.meta.out_of_grid_scores import METHODS, score_population
from jaxcap.meta.posterior import load_posterior

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_string("posterior", None, "A calibrate workdir (posterior.nc, table.json).", flag_values=FLAGS)
flags.DEFINE_list(
    "workdirs", [], "Population workdirs to predict (--workdirs a b c or a,b,c).", flag_values=FLAGS
)
flags.DEFINE_bool("json", False, "Print every score and cell as JSON.", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> int:
    argv = cli.gather_lists(sys.argv[1:] if argv is None else argv, ("--workdirs",))
    cli.parse([cli.prog("main.out_of_grid"), *argv], __doc__, FLAGS)
    cli.required(FLAGS, "posterior", "workdirs", example="--posterior runs/calibrate --workdirs runs/x")
    try:
        posterior = load_posterior(FLAGS.posterior)
        fitted = meta_data.read_table(Path(FLAGS.posterior) / "table.json")
        result = score_population(posterior, fitted, meta_data.load_table(FLAGS.workdirs))
    except (OSError, ValueError) as e:
        print(f"out_of_grid error: {e}", file=sys.stderr)
        return 2
    if FLAGS.json:
        print(json.dumps(result, indent=1))
        return 0
    also = result["levels_also_fitted"]
    print(f"{result['n_rows']} runs, {result['n_cells']} cells ({also} level values also in the fit)")
    for m in METHODS:
        s = result[m]
        auc = "—" if s["auc"] is None else f"{s['auc']:.3f}"
        print(f"  {m}: Brier {s['brier']:.4f}, log loss {s['log_loss']:.4f}, AUC {auc}")
    mm = result["meta_model"]
    print(
        f"  meta_model PIT coverage 50% / 90%: {mm['pit_coverage50']:.2f} / {mm['pit_coverage90']:.2f}, "
        f"median width {mm['median_width50']:.2f} / {mm['median_width90']:.2f}"
    )
    print("  by family, Brier of meta_model / base_rate / family_rate:")
    for name, fam in result["families"].items():
        rate = "—" if np.isnan(fam["family_rate"]) else f"{fam['family_rate']:.3f}"  # none: not in the fit
        print(
            f"    {name}: {fam['meta_model']:.3f} / {fam['base_rate']:.3f} / {rate} "
            f"({fam['learned']} of {fam['runs']} runs learned)"
        )
    outside = result["outside90"]
    print(
        f"  cells outside their 90 % predictive count: {len(outside)} of {result['n_cells']}"
        + "".join(
            f"\n    {c['family']} {c['level']}: {c['learned']}/{c['runs']} learned, P {c['p_mean']:.2f} "
            f"[{c['p_lo90']:.2f}, {c['p_hi90']:.2f}]"
            for c in outside
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

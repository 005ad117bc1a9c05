"""Is a task learnable? `python -m jaxcap.predict --posterior D --task F (--level V | --complexity B)`.

    python -m jaxcap.predict --posterior runs/calibrate --task modulo --level 16 40 97
    python -m jaxcap.predict --posterior runs/calibrate --task parity --complexity 8 --arch a0
    python -m jaxcap.predict --posterior runs/calibrate --task parity --level 3 --arch d_model=128 --json
    python -m jaxcap.predict --posterior runs/sort_pilot --task examples/sort_task.py:SortTask --level 3

For each query level of family F: P(learned) with its 50% and 90% credible intervals and every
fitted family's boundary b* = C/θ. A level is a value of the family's level field or its
difficulty covariate in bits; a query outside the fitted range is flagged as an extrapolation.

Details: docs/design/meta-model.md#prediction.
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

from absl import flags

from jaxcap.main import cli
from jaxcap.meta.covariates import covariate_name, describe

if TYPE_CHECKING:  # the query's modules import NumPy, xarray and JAX: only once the flags parse
    from jaxcap.meta.posterior import Posterior
    from jaxcap.meta.prediction import Prediction


def _print(posterior: Posterior, results: list[Prediction]) -> None:
    from jaxcap.meta.prediction import covariate_note

    meta = posterior.meta
    ref = meta.families[meta.reference]
    print(f"families {', '.join(meta.families)} (θ_{ref} = 1, C in bits of {ref})")
    # a boundary is in its family's covariate (the unit of its --complexity), named on its line
    covariates = {meta.families[lv.family]: lv.covariate for lv in meta.levels}
    for r in results:
        where = "in the fit" if r.family_in_fit else "NOT in the fit: predicted from the family population"
        print(f"{r.arch} | task {r.family} ({where}); covariate {covariate_note(posterior, r.family)}")
        if r.pilot:
            print(f"  rests on {r.pilot.pilots} pilot levels, {r.pilot.runs} runs (base fit: {r.pilot.base})")
        for pt in r.points:
            kind = "fitted level" if pt.seen_level else "new level"
            nominal = (  # many levels share one covariate value (modulo: moduli of one lookup_bits)
                f"nominal bits not set by {pt.covariate} alone (query --level for them)"
                if pt.nominal_bits is None
                else f"nominal {pt.nominal_bits:.4g} bits"
            )
            print(
                f"  {pt.level} ({pt.covariate} = {pt.bits:.4g} bits, {nominal}, {kind}): "
                f"P(learned) median {pt.median:.3f} (50%: {pt.lo50:.3f}-{pt.hi50:.3f}, "
                f"90%: {pt.lo90:.3f}-{pt.hi90:.3f}; mean {pt.mean:.3f})"
            )
            if pt.extrapolation:
                print(f"  WARNING: {pt.extrapolation}")
        for name, b in r.boundaries.items():
            unit = covariates.get(name) or covariate_name(name)
            print(f"  boundary b* {name}: {unit} {b.median:.4g} bits (90%: {b.lo90:.4g}-{b.hi90:.4g})")


FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_string("posterior", None, "A calibrate workdir or its posterior.nc.", flag_values=FLAGS)
flags.DEFINE_string(
    "task",
    None,
    "Task family, e.g. modulo or binop:add, or a task's import path (examples/sort_task.py:SortTask).",
    flag_values=FLAGS,
)
flags.DEFINE_list(
    "level", [], "Values of the family's level field (--level 16 40 97 or 16,40,97).", flag_values=FLAGS
)
flags.DEFINE_list(
    "complexity",
    [],
    f"Difficulty in the family's covariate, in bits (--complexity 6 8): {describe()}.",
    flag_values=FLAGS,
)
flags.DEFINE_string("arch", None, "a0, a1, ... or model fields d_model=64,n_heads=4.", flag_values=FLAGS)
flags.DEFINE_bool("new_family", False, "--task names a family the fit has not seen.", flag_values=FLAGS)
flags.DEFINE_integer("seed", 0, "Seed of the posterior predictive draws.", flag_values=FLAGS)
flags.DEFINE_bool("json", False, "Print JSON instead of text.", flag_values=FLAGS)
LISTS = ("--level", "--complexity")


def _gather(argv: list[str]) -> list[str]:
    """`--level 16 40 97` (the form the docs use) -> `--level=16,40,97`."""
    return cli.gather_lists(argv, LISTS)


def _usage(message: str) -> int:
    print(f"usage error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("predict"), *_gather(argv)], __doc__, FLAGS)
    for name in ("posterior", "task"):
        if FLAGS[name].value is None:
            return _usage(f"--{name}: required (--help shows an example)")
    if not FLAGS.level and not FLAGS.complexity:
        return _usage("--level or --complexity: give one, e.g. --level 16 40 97")
    try:
        complexity = [float(b) for b in FLAGS.complexity]
    except ValueError:
        return _usage(f"--complexity: got {','.join(FLAGS.complexity)!r}; allowed: numbers of bits > 0")
    if any(not 0 < b < math.inf for b in complexity):  # nan too
        return _usage(f"--complexity: got {','.join(FLAGS.complexity)!r}; allowed: finite bits > 0")
    # the flags are right: now the query's modules (seconds of imports)
    from jaxcap.meta.arch_query import QueryError, resolve_arch
    from jaxcap.meta.prediction import check_family, predict, read_posterior, resolve_family, resolve_levels

    try:
        posterior = read_posterior(FLAGS.posterior)
        family = resolve_family(posterior, FLAGS.task)  # a task's import path: its family
        check_family(posterior, family, FLAGS.new_family)
        points = resolve_levels(posterior, family, FLAGS.level, complexity)
        results = [
            predict(posterior, family, points, a, FLAGS.seed) for a in resolve_arch(posterior, FLAGS.arch)
        ]
    except (OSError, QueryError) as e:
        print(f"predict error: {e}", file=sys.stderr)
        return 2
    if FLAGS.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        _print(posterior, results)
    return 0


def console() -> None:
    """The `jaxcap-predict` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console()

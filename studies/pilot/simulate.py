"""Runs to a boundary: how many trained runs each pilot rule needs until b* is known within 2x.

    python -m studies.pilot.simulate [--families 40] [--posterior runs/cal_s0] [--json]

What it measures and why: the module docstring of studies/pilot/simulation.py.
"""

from __future__ import annotations

import json
import sys

from absl import flags

from jaxcap.main import cli
from jaxcap.meta.posterior import load_posterior
from studies.pilot.simulation import SIM_RULES, markdown, simulate
from studies.pilot.world import (
    PRIOR_MASS,
    synthetic_posterior,
)

FLAGS = flags.FlagValues()
flags.DEFINE_integer("families", 40, "Simulated families.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_string(
    "posterior", None, "A calibrate workdir or posterior.nc (default: synthetic).", flag_values=FLAGS
)
flags.DEFINE_integer("seed", 0, "Seed of the families, their outcomes and the particles.", flag_values=FLAGS)
flags.DEFINE_integer("repeat", 1, "Prior particles per posterior draw.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer("levels", 24, "Candidate levels per family.", lower_bound=4, flag_values=FLAGS)
flags.DEFINE_float(
    "prior_mass",
    PRIOR_MASS,
    "Candidates span this central mass of the prior b*.",
    0.5,
    0.9999,
    flag_values=FLAGS,
)
flags.DEFINE_list("targets", ["4", "3", "2"], "Factors hi/lo of the 90 % b* interval.", flag_values=FLAGS)
flags.DEFINE_integer("cap", 80, "Most trained runs per family and rule.", lower_bound=1, flag_values=FLAGS)
flags.DEFINE_integer(
    "design_particles",
    1000,
    "Particles the information gain is computed on.",
    lower_bound=10,
    flag_values=FLAGS,
)
flags.DEFINE_integer("arch", 0, "The posterior's architecture.", lower_bound=0, flag_values=FLAGS)
flags.DEFINE_multi_enum(
    "rules",
    list(SIM_RULES),
    list(SIM_RULES),
    "Rules to run (bisection_grid is the baseline).",
    flag_values=FLAGS,
)
flags.DEFINE_bool("json", False, "Print JSON (default: markdown tables).", flag_values=FLAGS)
flags.DEFINE_bool("markdown", False, "Print the markdown tables (also with --json).", flag_values=FLAGS)


def _error(message: str) -> int:
    print(f"pilot simulate error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("pilot.simulate", package="studies"), *argv], __doc__, FLAGS)
    try:
        targets = tuple(float(t) for t in FLAGS.targets)
    except ValueError:
        targets = ()
    if not targets or min(targets) <= 1.0:
        return _error(f"--targets: got {','.join(FLAGS.targets)!r}; allowed: factors > 1, e.g. 4,3,2")
    if FLAGS.posterior is None:
        posterior = synthetic_posterior(seed=FLAGS.seed)
    else:
        try:
            posterior = load_posterior(FLAGS.posterior)
        except FileNotFoundError:
            return _error(f"--posterior {FLAGS.posterior}: no posterior.nc there (run calibrate first)")
        except Exception as e:  # h5py / netCDF / JSON: a damaged or foreign file, said in one line
            return _error(f"--posterior {FLAGS.posterior}: not a readable posterior ({type(e).__name__})")
    n_arch, n_draws = posterior.draws["log_C"].shape[1], len(posterior.draws["mu_log_C"])
    if FLAGS.arch >= n_arch:
        return _error(f"--arch: got {FLAGS.arch}; allowed: 0 to {n_arch - 1}")
    if FLAGS.families > n_draws:
        return _error(f"--families: got {FLAGS.families}; allowed: at most {n_draws} (the posterior's draws)")
    result = simulate(
        posterior,
        FLAGS.families,
        FLAGS.seed,
        FLAGS.repeat,
        FLAGS.levels,
        targets,
        FLAGS.cap,
        FLAGS.design_particles,
        FLAGS.arch,
        rules=tuple(dict.fromkeys(FLAGS.rules)),
        prior_mass=FLAGS.prior_mass,
    )
    if FLAGS.json:
        print(json.dumps(result, indent=1))
    if FLAGS.markdown or not FLAGS.json:
        print("\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

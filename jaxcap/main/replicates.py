"""Validation scores over independent calibrate runs: mean and range, so noise reads as noise.

    python -m jaxcap.main.replicates runs/cal_seed0 runs/cal_seed1 runs/cal_seed2 [--markdown]

What it measures and why: the module docstring of jaxcap/meta/replicate_tables.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from absl import flags

from jaxcap.main import cli
from jaxcap.meta.replicate_tables import markdown, pooled_coverage, pooled_markdown, replicate_table
from jaxcap.meta.validation import Validation

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_bool("markdown", False, "A markdown table instead of JSON.", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    workdirs = cli.parse([cli.prog("main.replicates"), *argv], __doc__, FLAGS, positionals=True)
    if not workdirs:
        cli.usage_exit("workdirs: none given; allowed: calibrate workdirs (each with validation.json)")
    validations = []
    for w in workdirs:
        path = Path(w) / "validation.json"
        if not path.exists():
            print(
                f"replicates error: {path}: missing (run the calibrate config there first)", file=sys.stderr
            )
            return 2
        validations.append(Validation.from_json(json.loads(path.read_text())))
    table, pooled = replicate_table(validations), pooled_coverage(validations)
    if FLAGS.markdown:
        print("\n".join([*markdown(table, ", ".join(workdirs)), "", *pooled_markdown(pooled)]))
    else:
        print(json.dumps(table | {"pooled_pit_coverage90": pooled}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

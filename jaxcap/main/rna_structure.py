"""Structure metrics of a trained RNA run, computed on the host from its workdir.

Details: docs/design/domains.md#base-pair-f1-and-calibration.

    python -m jaxcap.main.rna_structure --workdir runs/rna/...   # writes report/rna_structure.json

[1] Mathews 2019, "How to benchmark RNA secondary structure prediction accuracy", Methods 162.
[2] Guo et al. 2017, "On Calibration of Modern Neural Networks", arXiv:1706.04599.
"""

from __future__ import annotations

import json
import sys

from absl import flags

from jaxcap.main import cli
from jaxcap.reports.rna import evaluate_workdir
from jaxcap.results.store import Store, write_atomic

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_string("workdir", None, "A finished rna run's workdir.", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("main.rna_structure"), *argv], __doc__, FLAGS)
    cli.required(FLAGS, "workdir", example="--workdir runs/rna")
    args = FLAGS
    rows = evaluate_workdir(args.workdir)
    store = Store(args.workdir)
    store.report_path.mkdir(exist_ok=True)
    write_atomic(store.report_path / "rna_structure.json", json.dumps(rows, indent=1) + "\n")
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

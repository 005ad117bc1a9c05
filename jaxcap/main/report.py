"""Rebuild any run's report from its workdir alone: `python -m jaxcap.report --workdir D`.

The command dispatches on the workdir's `config.json` to the report of its experiment
(`jaxcap.config.registry.EXPERIMENTS[config.experiment].report`); nothing is retrained. The
report is written into `<workdir>/report`: a workdir this user cannot write, or one with nothing to
report (no member rows), is one line, and nothing is written. Population
figures: jaxcap.reports.population_figures. Flags as every jaxcap command (jaxcap.main.cli): absl,
`--flagfile`, `--helpfull`; problems are one line (`usage error: ...`, `report error: ...`).
"""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

from absl import flags

from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.main import cli
from jaxcap.results.store import Store, WorkdirError

FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
flags.DEFINE_string("workdir", None, "A run's workdir (holds config.json).", flag_values=FLAGS)


def main(argv: list[str] | None = None) -> list[Path]:
    cli.parse([cli.prog("report"), *(sys.argv[1:] if argv is None else argv)], __doc__, FLAGS)
    cli.required(FLAGS, "workdir", example="--workdir runs/modmod")
    workdir = Path(FLAGS.workdir)
    if not (workdir / "config.json").exists():
        raise SystemExit(f"report error: {workdir} holds no config.json; is it a workdir?")
    store = Store(workdir)
    experiment = experiment_of(store.config_path)
    try:
        written = resolve(EXPERIMENTS[experiment].report)(store)
    except WorkdirError as e:  # nothing to report (no rows; a study storage out of reach)
        raise SystemExit(f"report error: {e}") from None
    except OSError as e:
        raise SystemExit(f"report error: {_os_error(e, store)}") from None
    for path in written:
        print(path)
    return written


def _os_error(e: OSError, store: Store) -> str:
    """What a failed read or write says: permission only where it was refused."""
    where, reason = e.filename or store.report_path, e.strerror or e
    if isinstance(e, PermissionError) or e.errno == errno.EROFS:  # another user's, a mounted archive
        return (
            f"cannot write {where} ({reason}); allowed: a workdir this user can write (copy a "
            "read-only one first: cp -r)"
        )
    if e.errno == errno.ENOSPC:
        return f"cannot write {where} (the disk is full); allowed: free some space, then rerun"
    if isinstance(e, FileNotFoundError):
        return (
            f"{store.root}: {where} is missing ({reason}); allowed: a workdir a finished launch wrote "
            "(rerun its launch command to finish it)"
        )
    return f"{where}: {reason}"


def experiment_of(path: Path) -> str:
    """The experiment a workdir's config.json names, or one line (exit 1) saying what is wrong
    with the file: before anything is imported for its report or written."""
    allowed = "allowed: the config.json a jaxcap launch wrote (a JSON object naming its experiment)"
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SystemExit(f"report error: {path} does not parse as JSON ({e}); {allowed}") from None
    except OSError as e:
        raise SystemExit(f"report error: cannot read {path} ({e.strerror or e}); {allowed}") from None
    if not isinstance(record, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(record), "a number")
        kind = "null" if record is None else kind
        raise SystemExit(f"report error: {path} holds {kind}, not a JSON object; {allowed}")
    experiment = record.get("experiment", "population")
    if not isinstance(experiment, str) or experiment not in EXPERIMENTS:
        raise SystemExit(
            f"report error: {path}: experiment {experiment!r} is not one jaxcap knows; allowed: "
            f"{', '.join(EXPERIMENTS)}"
        )
    return experiment


def console() -> None:
    """The `jaxcap-report` console script (main's list of paths would be read as an exit code)."""
    main()


if __name__ == "__main__":
    console()

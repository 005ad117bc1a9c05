"""`python -m jaxcap.launch --config configs/X.py[:variant] [--config.a.b=v] [--workdir D]`.

(`jaxcap-launch` is the same command.)

A thin absl shell over `jaxcap.run.run`. Config problems (a bad value, a wrong type, an
unknown key) are reported as one line naming the field, before anything is compiled. The
default workdir is derived from the command (runs/<config>[_<variant>][_<hash of overrides>],
`config.runtime` overrides left out: they do not change results, and the processes of one
distributed run differ only there), so rerunning the same command resumes the same run.

Details: docs/design/commands.md#the-launch-the-lock-first-one-line-per-input-problem.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

from jaxcap.main.early_lock import default_workdir, flag, lock_before_imports, lock_root, normalize, overrides
from jaxcap.results import lock

if (
    __name__ == "__main__" or Path(sys.argv[0] if sys.argv else "").name == "jaxcap-launch"
):  # run, not imported (`python -m jaxcap.launch` locks in its shim, jaxcap/launch.py)
    lock_before_imports(sys.argv)

from absl import app, flags, logging  # noqa: E402  (the imports above are light: stdlib and the lock)
from ml_collections import config_flags  # noqa: E402

from jaxcap.errors import disk_full, not_disk_full, one_line, without_closed_loops  # noqa: E402
from jaxcap.fields import ConfigError  # noqa: E402
from jaxcap.main import cli  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Experiment config file[:variant].", lock_config=True
)
_WORKDIR = flags.DEFINE_string("workdir", None, "Results directory; rerunning on it resumes.")
_CREATE = flags.DEFINE_bool(
    "create_studies", False, "Only create the studies of an hpo config on config.study.storage, then exit."
)
_DEBUG = flags.DEFINE_bool("debug", False, "Show the traceback of an input error instead of one line.")


def _check_overrides(argv: list[str]) -> None:
    """Name unknown `--config.x.y` keys in one line (ml_collections would raise a traceback), then
    values that do not parse as their field's type. Each in the config's field order, whatever
    the order on the command line, so a command with two errors names the same one first."""
    from jaxcap.config.base import load_config  # imports JAX: after the workdir lock

    spec = next((a.split("=", 1)[1] for a in argv if a.startswith("--config=")), None)
    if spec is None:
        raise ConfigError("--config: required, e.g. --config configs/modmod.py")
    config = load_config(spec)
    changes = sorted((a for a in argv if a.startswith("--config.")), key=field_order(config))
    for arg in changes:
        node, path = config, "config"
        for part in arg[2:].split("=", 1)[0].split(".")[1:]:
            if not hasattr(node, "keys"):
                raise ConfigError(f"{path}.{part}: unknown field; {path} is a value, not a section")
            if part not in node:
                raise ConfigError(cli.unknown_field(path, part, list(node.keys())))
            node, path = node[part], f"{path}.{part}"
    # a dry run of the `--config.a.b=v` values in that order (the launch's own parse then applies
    # them in the command line's order: a field given twice keeps its last value)
    trial, values = flags.FlagValues(), ["launch", *(a for a in changes if "=" in a)]
    config_flags.DEFINE_config_dict("config", config, flag_values=trial, lock_config=True, sys_argv=values)
    try:
        trial(values)
    except flags.Error as e:
        raise ConfigError(unparsed_value(config, str(e).splitlines()[0])) from None


def unparsed_value(config, line: str) -> str:
    """absl's `flag --config.a.b=v: invalid literal for int() ...` in the convention's words: the
    field's schema rule on the text as given (`config.a.b: got 'v' (str); allowed: an integer >= 1`),
    else the type of the config's own value; other lines as they are."""
    from jaxcap.config.base import schema

    head, _, reason = line.partition(": ")
    path, eq, value = head.removeprefix("flag --").partition("=")
    if not head.startswith("flag --config.") or not eq:
        return line
    try:
        rule = schema(config)
        for part in path.split(".")[1:]:
            rule = rule[part]
    except (ConfigError, KeyError, TypeError):
        rule = None
    if callable(rule):
        try:
            rule(path, value)
        except ConfigError as e:
            return str(e)
    node = config
    for part in path.split(".")[1:]:
        node = node[part]
    return f"{path}: got {value!r}; allowed: a value of the field's type, {type(node).__name__} ({reason})"


def field_order(config):
    """A sort key of `--config.a.b=v` arguments: the order `jaxcap.config.base.schema` declares the
    fields in (the order the config's checks name them), by name where it declares none."""
    from jaxcap.config.base import schema

    try:
        tree = schema(config)
    except ConfigError:  # (named by the checks after the parse)
        tree = {}

    def key(arg: str) -> tuple:
        out, node = [], tree
        for part in arg[2:].split("=", 1)[0].split(".")[1:]:
            names = list(node) if isinstance(node, dict) else []
            out.append((names.index(part), "") if part in names else (len(names), part))
            node = node.get(part) if isinstance(node, dict) else None
        return tuple(out)

    return key


def _parse(argv: list[str]) -> list[str]:
    cli.exit_on_help(argv, __doc__)  # before the config loader asks for --config
    argv = normalize(cli.expand_flagfiles(argv))  # --flagfile: its flags, as if typed
    cli.check_known(argv)  # --confg is an unknown flag, not a missing --config
    try:
        _lock_first(argv)
        _check_overrides(argv)
        rest = flags.FLAGS(argv)
        refuse_unused(_CONFIG.value, argv)
    except ConfigError as e:  # the command line is wrong: exit status 2, as every usage error
        cli.usage_exit(str(e), "config error")
    except lock.WorkdirError as e:
        sys.exit(f"workdir error: {e}")
    except SyntaxError as e:  # the config file itself (absl may wrap it in its own error)
        where = f"{e.filename} line {e.lineno}: {e.msg}"
        cli.usage_exit(f"{where}; allowed: a Python file that parses", "config error")
    except (flags.Error, TypeError, ValueError, AttributeError) as e:
        cli.usage_exit(str(e).splitlines()[0], "config error")
    # absl hands positional arguments to main, which would ignore them
    return cli.flags_only(
        rest, "flags only (--config, --workdir, --config.a.b=value, --create_studies, --debug)"
    )


def refuse_unused(config, argv: list[str]) -> None:
    """A command-line change to a field the config itself makes moot (a pilot's model once its
    posterior gives the model: the experiment's registry `unused`) is refused with the reason,
    not run without it."""
    from jaxcap.config.registry import EXPERIMENTS, resolve

    experiment = EXPERIMENTS.get(config.get("experiment"))
    moot = resolve(experiment.unused)(config) if experiment is not None and experiment.unused else None
    if moot is None:
        return
    fields, why = moot
    for change in overrides(argv):
        path = change.removeprefix("--config.").split("=", 1)[0]
        if path.split(".")[0] in fields:
            raise ConfigError(f"config.{path}: changed on the command line, but {why}")


def _lock_first(argv: list[str]) -> None:
    """Take the workdir's writer lock from the parsed arguments, before JAX is imported (seconds),
    unless `early_lock.lock_before_imports` took it already (jaxcap.results.lock)."""
    if flag(argv, "workdir") == "":
        raise ConfigError("--workdir: got ''; allowed: a directory path, or no --workdir (runs/<config>...)")
    root = lock_root(argv)
    if root is not None:
        lock.take_early(root)


def annotate_note(config, argv: list[str]) -> None:
    """A config file's `note` describes the file's own values: once the command line changes
    some of them, the note says which, so a report does not claim the file's model or budget
    for a run that used others. A note given on the command line is the user's own: kept."""
    changed = [a.removeprefix("--config.") for a in overrides(argv)]
    if config.note and changed and not any(a.startswith("note=") for a in changed):
        config.note += f" (changed on the command line: {', '.join(changed)})"


def main(argv: list[str]) -> None:
    from jaxcap.run import run  # after flag parsing: importing JAX is slow

    # what the imports made lives as long as the process: the collector's passes during tracing
    # skip it (what it saves: docs/tests.md#compile-levels-measured)
    gc.freeze()

    if "--verbosity" not in " ".join(sys.argv) and "-v" not in sys.argv:
        logging.set_verbosity(logging.WARNING)  # orbax logs every checkpoint step at INFO

    argv = normalize(cli.expand_flagfiles(sys.argv))
    workdir = _WORKDIR.value or default_workdir(argv)
    if not _DEBUG.value:  # Orbax's and asyncio's threads log their own failed writes of a full disk
        logging.get_absl_handler().addFilter(not_disk_full)
        sys.excepthook = without_closed_loops(sys.excepthook)
        sys.unraisablehook = without_closed_loops(sys.unraisablehook, unraisable=True)
    try:
        if _CREATE.value:
            return create(_CONFIG.value, workdir)
        annotate_note(_CONFIG.value, argv)
        run(_CONFIG.value, str(workdir))
    except Exception as e:
        message = one_line(e)
        if message is None or _DEBUG.value:
            raise
        if disk_full(e):  # saves still in flight cannot finish: leave before they print at exit
            print(message, file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(1)
        sys.exit(message)


def create(config, workdir: Path) -> None:
    """--create_studies: the studies of every level with their budgets, nothing trained."""
    from jaxcap.config.base import build_plan
    from jaxcap.experiments.hpo.study import create_studies

    if "study" not in config:
        raise ConfigError(f"--create_studies: a {config.experiment!r} config has no Optuna study")
    plan = build_plan(config)
    if config.study.storage in ("", "journal"):
        print(f"note: storage {config.study.storage!r} is private to workdir {workdir}; workers share")
        print("      studies through one storage: --config.study.storage=PATH.log or an RDB URL")
    for line in create_studies(plan, Path(workdir)):
        print(line, flush=True)


def console(argv: list[str] | None = None) -> None:
    """The `jaxcap-launch` console script (`argv`: sys.argv's form, for an in-process launch such
    as jaxcap.main.count_compiles's; absl exits with SystemExit either way)."""
    app.run(main, argv=argv, flags_parser=_parse)


if __name__ == "__main__":
    console()

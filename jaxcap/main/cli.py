"""What every command-line entry point does the same way: help, flag files, errors, its name.

Every `python -m jaxcap...` command parses its own absl flags, so `--help` answers (with the
module's docstring and its own flags) before any required flag is checked; `--helpfull` adds
types, the common flags and exit statuses; `--flagfile` works everywhere. An unknown flag or a
misspelt config field is named with its nearest match; a usage error is one line on stderr and
exit status 2. Console scripts and `python -m jaxcap.X` run the same code.

Details: docs/design/commands.md#one-convention-for-every-command.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable

from absl import flags

HELP_FLAGS = ("-h", "--help", "--helpshort", "--helpfull", "-?")
USAGE = 2  # the exit status of a command line that is wrong (argparse's and absl's)


def usage_exit(message: str, kind: str = "usage error") -> None:
    """One line on stderr and exit status 2: the command line itself is wrong."""
    print(f"{kind}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(USAGE)


def did_you_mean(name: str, known, prefix: str = "--") -> str:
    """`; did you mean --workdir?` for the closest known name (difflib), or ''."""
    near = difflib.get_close_matches(name, [k for k in known if len(k) > 1], n=1)
    return f"; did you mean {prefix}{near[0]}?" if near else ""


def unknown_field(path: str, part: str, known: list[str]) -> str:
    """The message for `--config.<path>.<part>` where `path` has no field `part`: the closest
    field when one is close, else every field of `path`."""
    near = difflib.get_close_matches(part, known, n=1)
    if near:
        return f"{path}.{part}: unknown field; did you mean {path}.{near[0]}?"
    return f"{path}.{part}: unknown field; fields of {path}: {', '.join(sorted(known)) or '(none)'}"


def prog(module: str, package: str = "jaxcap") -> str:
    """The command as typed: `jaxcap-report` from a console script, else `python -m jaxcap.report`
    (`package="studies"`: a study's `python -m studies.<module>`)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name if name.startswith("jaxcap-") else f"python -m {package}.{module}"


def help_text(doc: str, flag_values: flags.FlagValues | None = None, full: bool = False) -> str:
    """The module docstring, then each flag this program defines; with `full` (`--helpfull`) each
    flag's type too, the flags every jaxcap command takes, and absl's own where it reads them."""
    flag_values = flags.FLAGS if flag_values is None else flag_values
    lines = [doc.strip(), "", "flags:"]
    for module, defined in sorted(flag_values.flags_by_module_dict().items()):
        if module.startswith("absl.") and not full:
            continue
        for flag in sorted(defined, key=lambda f: f.name):
            default = "" if flag.default is None else f" (default: {flag.default_as_str})"
            kind = f" [{flag.flag_type()}]" if full else ""
            lines.append(f"  --{flag.name}{kind}: {flag.help}{default}")
    lines.append("  --flagfile: read flags from this file, one per line")
    if full:
        lines += [
            "",
            "every jaxcap command also takes:",
            "  --help, -h: the docstring and the flags above;  --helpfull: this, with types",
            "  --noNAME: a boolean flag set to false (--nojson)",
            f"exit status: 0 done, {USAGE} a usage error (one line on stderr), else it failed (one line)",
        ]
    return "\n".join(lines)


def exit_on_help(argv: list[str], doc: str, flag_values: flags.FlagValues | None = None) -> None:
    if any(a in HELP_FLAGS for a in argv[1:]):
        print(help_text(doc, flag_values, full="--helpfull" in argv[1:]))
        sys.exit(0)


def expand_flagfiles(argv: list[str], flag_values: flags.FlagValues | None = None) -> list[str]:
    """argv with every `--flagfile=F` replaced by the flags in F (absl's own reader)."""
    flag_values = flags.FLAGS if flag_values is None else flag_values
    try:
        return flag_values.read_flags_from_files(argv, force_gnu=True)
    except flags.Error as e:
        usage_exit(str(e).splitlines()[0])


def check_known(argv: list[str], flag_values: flags.FlagValues | None = None, prefixes=("config.",)) -> None:
    """A `--name` that no flag has is a one-line usage error naming it and the nearest flag (before
    a required-flag check could answer for it: `--confg` is not "--config: required")."""
    flag_values = flags.FLAGS if flag_values is None else flag_values
    known = [*flag_values, "flagfile", "undefok"]
    for arg in argv[1:]:
        if not arg.startswith("--") or arg == "--":
            continue
        name = arg[2:].split("=", 1)[0]
        if name in known or name.startswith(prefixes) or (name.startswith("no") and name[2:] in known):
            continue
        usage_exit(f"--{name}: unknown flag{did_you_mean(name, known)} (--help lists the flags)")


def flags_only(rest: list[str], allowed: str = "flags only") -> list[str]:
    """absl's leftover argv: a positional argument is an error, never silently ignored."""
    if len(rest) > 1:
        usage_exit(f"unexpected argument {rest[1]!r}; allowed: {allowed}")
    return rest


def parse(
    argv: list[str], doc: str, flag_values: flags.FlagValues | None = None, positionals: bool = False
) -> list[str]:
    """Help first, flag files, unknown flags named, one-line errors; no positionals, or with
    `positionals` the positional arguments (workdirs) returned."""
    flag_values = flags.FLAGS if flag_values is None else flag_values
    exit_on_help(argv, doc, flag_values)
    if flag_values is not flags.FLAGS:  # a command called again in one process starts afresh
        flag_values.unparse_flags()
    argv = expand_flagfiles(argv, flag_values)
    check_known(argv, flag_values, prefixes=())
    try:
        rest = flag_values(argv)
    except flags.Error as e:
        usage_exit(flag_error(str(e).splitlines()[0]))
    return rest[1:] if positionals else flags_only(rest)


def flag_error(line: str) -> str:
    """absl's `flag --steps=0: 0 is not a positive integer` (a bound a flag declares) in the
    convention's words, `--steps: got 0; allowed: a positive integer`; other lines as they are."""
    head, sep, reason = line.partition(": ")
    name, eq, value = head.removeprefix("flag --").partition("=")
    if head.startswith("flag --") and sep and eq and reason.startswith(f"{value} is not "):
        return f"--{name}: got {value}; allowed: {reason.removeprefix(f'{value} is not ')}"
    return line


def gather_lists(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """`--workdirs a b c` (the form the docs and a shell glob give) -> `--workdirs=a,b,c` for
    absl's list flags `names` (each `--name`)."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg in names:
            values = []
            while i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                values.append(argv[i + 1])
                i += 1
            arg = f"{arg}={','.join(values)}"
        out.append(arg)
        i += 1
    return out


def required(flag_values: flags.FlagValues, *names: str, example: str = "") -> None:
    """A usage error for the first of `names` that was not given."""
    for name in names:
        if flag_values[name].value in (None, []):
            usage_exit(f"--{name}: required" + (f", e.g. {example}" if example else ""))


def make_parser(doc: str) -> Callable[[list[str]], list[str]]:
    """A `flags_parser` for `absl.app.run`: `parse` on absl's global flags."""
    return lambda argv: parse(argv, doc)


def positive_ints(flag: str, values: list[str]) -> list[int]:
    """A list flag of counts (`--sizes 1,8,64`): positive integers, or a one-line usage error."""
    try:
        out = [int(v) for v in values]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        usage_exit(f"--{flag}: got {','.join(values)!r}; allowed: integers >= 1, e.g. 1,8,64")
    return out

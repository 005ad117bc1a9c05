"""What every command-line entry point does the same way: help, flag files, errors, its name.

Every entry point (launch, bench, report, predict) is on absl flags. They parse their own flags
so that `--help` answers before any required flag is checked (absl would first run the config
loader, which says "--config: required") and exits 0 with the module's docstring and its own
flags only (absl's logging flags are noise here; `--helpfull` lists them too). `--flagfile=F`
reads flags from a file, one per line, as absl does everywhere. A flag nobody defines
(`--confg`) is named as unknown, with the nearest known name; a positional argument absl would
hand to `main` and leave unread is a one-line usage error, as is a malformed flag. Report and
predict keep their flags in their own `FlagValues`, so importing every entry point in one
process (tests, notebooks) defines no flag twice. Console scripts (`jaxcap-launch`,
`jaxcap-report`, `jaxcap-predict`, `jaxcap-bench`; pyproject.toml) and `python -m jaxcap.X`
run the same code, and usage lines name whichever was typed.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable

from absl import flags

HELP_FLAGS = ("-h", "--help", "--helpshort", "--helpfull", "-?")


def prog(module: str) -> str:
    """The command as typed: `jaxcap-report` from a console script, else `python -m jaxcap.report`."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name if name.startswith("jaxcap-") else f"python -m jaxcap.{module}"


def help_text(doc: str, flag_values: flags.FlagValues | None = None, full: bool = False) -> str:
    """The module docstring, then each flag this program defines (with `full`, absl's too)."""
    flag_values = flags.FLAGS if flag_values is None else flag_values
    lines = [doc.strip(), "", "flags:"]
    for module, defined in sorted(flag_values.flags_by_module_dict().items()):
        if module.startswith("absl.") and not full:
            continue
        for flag in sorted(defined, key=lambda f: f.name):
            default = "" if flag.default is None else f" (default: {flag.default_as_str})"
            lines.append(f"  --{flag.name}: {flag.help}{default}")
    lines.append("  --flagfile: read flags from this file, one per line")
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
        sys.exit(f"usage error: {str(e).splitlines()[0]}")


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
        near = difflib.get_close_matches(name, [k for k in known if len(k) > 1], n=1)
        hint = f"; did you mean --{near[0]}?" if near else ""
        sys.exit(f"usage error: --{name}: unknown flag{hint} (--help lists the flags)")


def flags_only(rest: list[str], allowed: str = "flags only") -> list[str]:
    """absl's leftover argv: a positional argument is an error, never silently ignored."""
    if len(rest) > 1:
        sys.exit(f"usage error: unexpected argument {rest[1]!r}; allowed: {allowed}")
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
        sys.exit(f"usage error: {str(e).splitlines()[0]}")
    return rest[1:] if positionals else flags_only(rest)


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
        sys.exit(f"usage error: --{flag}: got {','.join(values)!r}; allowed: integers >= 1, e.g. 1,8,64")
    return out

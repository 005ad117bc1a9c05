"""What every command-line entry point does the same way: help, stray arguments, its name.

The absl entry points (launch, bench) parse their own flags so that `--help` answers before
any required flag is checked (absl would first run the config loader, which says
"--config: required") and exits 0 with the module's docstring and its own flags only (absl's
logging flags are noise here); a positional argument absl would hand to `main` and leave
unread is a one-line usage error, as is a malformed flag. Console scripts (`jaxcap-launch`,
`jaxcap-report`, `jaxcap-predict`, `jaxcap-bench`; pyproject.toml) and `python -m jaxcap.X`
run the same code, and usage lines name whichever was typed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from absl import flags

HELP_FLAGS = ("-h", "--help", "--helpshort", "--helpfull", "-?")


def prog(module: str) -> str:
    """The command as typed: `jaxcap-report` from a console script, else `python -m jaxcap.report`."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name if name.startswith("jaxcap-") else f"python -m jaxcap.{module}"


def help_text(doc: str) -> str:
    """The module docstring, then each flag this program defines (not absl's own)."""
    lines = [doc.strip(), "", "flags:"]
    for module, defined in sorted(flags.FLAGS.flags_by_module_dict().items()):
        if module.startswith("absl."):
            continue
        for flag in sorted(defined, key=lambda f: f.name):
            default = "" if flag.default is None else f" (default: {flag.default_as_str})"
            lines.append(f"  --{flag.name}: {flag.help}{default}")
    return "\n".join(lines)


def exit_on_help(argv: list[str], doc: str) -> None:
    if any(a in HELP_FLAGS for a in argv[1:]):
        print(help_text(doc))
        sys.exit(0)


def flags_only(rest: list[str], allowed: str = "flags only") -> list[str]:
    """absl's leftover argv: a positional argument is an error, never silently ignored."""
    if len(rest) > 1:
        sys.exit(f"usage error: unexpected argument {rest[1]!r}; allowed: {allowed}")
    return rest


def make_parser(doc: str) -> Callable[[list[str]], list[str]]:
    """A `flags_parser` for `absl.app.run`: help first, one-line errors, no positionals."""

    def parse(argv: list[str]) -> list[str]:
        exit_on_help(argv, doc)
        try:
            rest = flags.FLAGS(argv)
        except flags.Error as e:
            sys.exit(f"usage error: {str(e).splitlines()[0]}")
        return flags_only(rest)

    return parse


def positive_ints(flag: str, values: list[str]) -> list[int]:
    """A list flag of counts (`--sizes 1,8,64`): positive integers, or a one-line usage error."""
    try:
        out = [int(v) for v in values]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        sys.exit(f"usage error: --{flag}: got {','.join(values)!r}; allowed: integers >= 1, e.g. 1,8,64")
    return out

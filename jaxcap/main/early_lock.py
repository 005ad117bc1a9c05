"""The launcher's first act: the workdir's writer lock, taken from the arguments alone.

A launch on a busy workdir is refused in the time Python takes to start, before absl,
ml_collections and the config checks are imported (0.2 s on an idle 2-core CPU, seconds on a
loaded one). This module therefore imports only the standard library and jaxcap.results.lock.
It also derives the default workdir from the command (runs/<config>[_<variant>][_<hash of
overrides>], `config.runtime` overrides left out: they do not change results, and the processes
of one distributed run differ only there), so rerunning the same command resumes the same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jaxcap.results import lock

# cli.HELP_FLAGS, which imports absl: a launch asking for help is answered, not locked
HELP_FLAGS = ("-h", "--help", "--helpshort", "--helpfull", "-?")


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name=v` / `--name v` / `-name=v` in argv, before absl parses it (None: absent)."""
    for i, arg in enumerate(argv):
        for prefix in (f"--{name}", f"-{name}"):
            if arg.startswith(prefix + "="):
                return arg[len(prefix) + 1 :]
            if arg == prefix and i + 1 < len(argv):
                return argv[i + 1]
    return None


def overrides(argv: list[str]) -> list[str]:
    """The `--config.a.b=v` arguments that can change results (`config.runtime` ones cannot)."""
    return sorted(a for a in argv if a.startswith("--config.") and not a.startswith("--config.runtime."))


def default_workdir(argv: list[str]) -> Path:
    spec = next(a.split("=", 1)[1] for a in argv if a.startswith("--config="))
    path, _, variant = spec.partition(":")
    name = Path(path).stem + (f"_{variant}" if variant else "")
    if overrides(argv):
        import hashlib  # here: openssl's start-up is not paid by a launch that names its --workdir

        name += "_" + hashlib.sha1(" ".join(overrides(argv)).encode()).hexdigest()[:8]
    return Path("runs") / name


def normalize(argv: list[str]) -> list[str]:
    """`--config X` -> `--config=X` so the workdir does not depend on the spelling."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--config" and i + 1 < len(argv):
            out.append(f"--config={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def lock_root(argv: list[str]) -> Path | None:
    """The workdir whose writer lock this launch takes, from the arguments alone (None: none)."""
    create = any(
        a.lstrip("-").partition("=")[::2] in (("create_studies", ""), ("create_studies", "true"))
        for a in argv
    )
    if create or not any(a.startswith("--config=") for a in argv):
        return None  # --create_studies writes no run; without --config the parser says what is missing
    root = Path(flag(argv, "workdir") or default_workdir(argv))
    k = flag(argv, "config.runtime.process_id")
    if k and k.strip().isdigit() and int(k) > 0:  # process k of a distributed run writes a mirror
        root = root / f".process{int(k)}"
    return root


def lock_before_imports(argv: list[str]) -> None:
    """Lock the workdir before the heavy imports. What needs absl to read (a --flagfile, --help,
    an empty --workdir) is left to the launcher's `_lock_first`, after the flags parse."""
    if any(a in HELP_FLAGS or a.startswith(("--flagfile", "-flagfile")) for a in argv[1:]):
        return
    argv = normalize(argv)
    if flag(argv, "workdir") == "" or (root := lock_root(argv)) is None:
        return
    try:
        lock.take_early(root)
    except lock.WorkdirError as e:
        sys.exit(f"workdir error: {e}")

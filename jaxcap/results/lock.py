"""The workdir's writer lock, without JAX: one process writes a workdir at a time.

The lock is a kernel `flock` on `<workdir>/.lock`, released by the kernel when its holder exits or
is killed, so no stale lock is ever left. The launcher takes it first, from its argument list,
before it imports JAX or loads the config (seconds of imports): a second launch on a busy workdir
is refused at once, and `Store.writer` then adopts the lock this process already holds. A
launch refused later (a bad config) removes the workdir it created for the lock when nothing
else was written there, so a crashed launch leaves nothing that blocks the corrected command.
This module imports nothing heavy; jaxcap.results.store builds on it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

LOCK = ".lock"


class WorkdirError(ValueError):
    """A workdir that cannot hold this run, phrased as one line naming it."""


class WorkdirLocked(WorkdirError):
    """Another live process writes the workdir."""


def make_dir(root: Path) -> None:
    """mkdir -p, with a one-line error naming what is in the way."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WorkdirError(f"{root} is a file; allowed: a directory (new, or a run's workdir)") from None
    except NotADirectoryError:
        blocker = next(p for p in root.parents if p.exists())
        raise WorkdirError(f"{root} is under a file ({blocker}); allowed: a path under directories") from None
    except OSError as e:
        raise WorkdirError(f"{root}: cannot create it ({e.strerror}); allowed: a writable location") from None


def _lock(root: Path) -> int:
    """The descriptor of `root`'s lock file, flocked by this process; WorkdirLocked when taken."""
    try:
        fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise WorkdirError(f"{root}: cannot write ({e.strerror}); allowed: a writable directory") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "a process starting up"
        os.close(fd)
        raise WorkdirLocked(
            f"{root} is being written by {holder}; allowed: one run per workdir at a time "
            "(wait for it, or use another --workdir)"
        ) from None
    os.ftruncate(fd, 0)
    host = os.uname().nodename  # socket.gethostname(), without importing socket
    os.pwrite(fd, f"process {os.getpid()} on {host}\n".encode(), 0)
    return fd


_early: dict[str, int] = {}  # root -> descriptor taken by `take_early`, not yet adopted


def take_early(root: Path) -> None:
    """Lock `root` now (the launcher, before any slow import); `hold` adopts it later. A workdir
    created here that holds nothing but the lock when the process exits is removed again. Taking
    it again before `hold` adopts it changes nothing (the launcher locks before its imports and
    once more after parsing, where a --flagfile may name the workdir): a second flock of this
    process's own would fail."""
    root = Path(root)
    if str(root.resolve()) in _early:
        return
    created = not root.exists()
    make_dir(root)
    _early[str(root.resolve())] = _lock(root)
    if created:
        atexit.register(_remove_if_empty, root)


def _remove_if_empty(root: Path) -> None:
    with contextlib.suppress(OSError):
        if [p.name for p in root.iterdir()] == [LOCK]:
            import shutil  # at exit only: the launcher imports this module before anything else

            shutil.rmtree(root)


@contextlib.contextmanager
def hold(root: Path) -> Iterator[None]:
    """Hold `root`'s lock for the block: adopt the one `take_early` took, or take it now. A second
    writer, even in this same process, fails at once naming the holder."""
    fd = _early.pop(str(Path(root).resolve()), None)
    if fd is None:
        fd = _lock(Path(root))
    try:
        yield
    finally:
        os.close(fd)

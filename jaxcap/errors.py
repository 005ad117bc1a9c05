"""What a failed run says: one line for an input problem, a traceback for a bug.

The launcher (jaxcap/main/launch.py) maps the errors a run raises for its inputs (a config, a
workdir, a checkpoint, every member diverged, the file system) to one line naming the kind, and
recognises a full disk however deep in the chain it was raised (ENOSPC, or TensorStore's
RESOURCE_EXHAUSTED on a write), so that its message says how to resume. The log and hook
filters keep the noise of writes a full disk failed off the terminal.
"""

from __future__ import annotations

import errno

from jaxcap.fields import ConfigError


def disk_full(error: BaseException) -> bool:
    """A write that failed for want of space: ENOSPC, or TensorStore's RESOURCE_EXHAUSTED on a
    write (not XLA's out-of-memory, which is also RESOURCE_EXHAUSTED), anywhere in the chain."""
    while error is not None:
        text = str(error)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC or "No space left on device" in text:
            return True
        if "RESOURCE_EXHAUSTED" in text and "writing" in text.lower():
            return True
        error = error.__cause__ or error.__context__
    return False


def without_closed_loops(hook, unraisable: bool = False):
    """TensorStore's threads print (through sys.excepthook, PyErr_Print) each write they could not
    hand back to an asyncio loop that a failed save already closed: noise around the one line,
    never the error itself."""

    def closed_loop(value) -> bool:
        return isinstance(value, RuntimeError) and str(value) == "Event loop is closed"

    def filtered(*args):
        value = args[0].exc_value if unraisable else args[1]
        if not closed_loop(value):
            hook(*args)

    return filtered


def not_disk_full(record) -> bool:
    """A log filter: drop the records (with their tracebacks) of writes a full disk failed."""
    text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info and record.exc_info[1] else "")
    return not (
        "No space left on device" in text or ("RESOURCE_EXHAUSTED" in text and "writing" in text.lower())
    )


def one_line(error: Exception) -> str | None:
    """The one-line message of an input problem; None for anything else (a bug keeps its traceback)."""
    from jaxcap.core.checkpoint import CheckpointError
    from jaxcap.results.store import WorkdirError
    from jaxcap.training.loop import AllDiverged

    kinds = {
        ConfigError: "config error",
        WorkdirError: "workdir error",
        CheckpointError: "checkpoint error",
        AllDiverged: "run error",
        OSError: "error",  # the file system: a full disk, a permission inside the workdir
    }
    if disk_full(error):
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        return (
            f"error: the disk is full ({reason}); allowed: free some space (or use another --workdir), "
            "then rerun the same command: it resumes from its last checkpoint"
        )
    for kind, label in kinds.items():
        if isinstance(error, kind):
            text = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return f"{label}: {text}" + (" (--debug shows the traceback)" if kind is OSError else "")
    return None

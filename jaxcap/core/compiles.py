"""Counting the XLA programs a process compiles, by JAX's own compile events.

Every jitted program JAX hands to the backend, whether XLA compiles it or the persistent cache
(`jaxcap.core.runtime.enable_compilation_cache`) returns it, fires one
`/jax/core/compile/backend_compile_duration` event (jax.monitoring); a program reused from the
in-memory cache fires none. So the events count distinct programs per process (what
`JAX_LOG_COMPILES=1` lists), and their seconds are what compiling cost this time. Each run's
phase line prints its bucket's count; `python -m jaxcap.main.count_compiles` prints a whole
command's as JSON; tests assert the count of a smoke run, so a change that compiles more
programs fails a test rather than a timer.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading

import jax

EVENT = "/jax/core/compile/backend_compile_duration"


@dataclasses.dataclass(eq=False)  # identity: `counting` removes its own log from the active list
class CompileLog:
    """Programs compiled while a `counting()` block ran: count and seconds per program name."""

    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    seconds: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def programs(self) -> int:
        return sum(self.counts.values())

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))

    def as_json(self) -> dict:
        return {
            "programs": self.programs,
            "compile_s": round(self.total_seconds, 2),
            "by_name": dict(self.counts.most_common()),
        }


_active: list[CompileLog] = []
_lock = threading.Lock()
_registered = False


def _listener(event: str, duration: float, **kwargs) -> None:
    if event != EVENT:
        return
    name = kwargs.get("fun_name", "?")
    with _lock:
        for log in _active:
            log.counts[name] += 1
            log.seconds[name] += duration


@contextlib.contextmanager
def counting():
    """`with counting() as log:` records every program compiled inside the block (nested blocks
    each see their own and their children's)."""
    global _registered
    with _lock:
        if not _registered:  # jax.monitoring has no public unregister: one listener, many logs
            jax.monitoring.register_event_duration_secs_listener(_listener)
            _registered = True
        log = CompileLog()
        _active.append(log)
    try:
        yield log
    finally:
        with _lock:
            _active.remove(log)

"""How many XLA programs a command compiles, and what they cost: one JSON document.

    python -m jaxcap.main.count_compiles --config configs/capacity.py:smoke --workdir /tmp/cap
    python -m jaxcap.main.count_compiles --cache /tmp/cold --config configs/calibrate.py:smoke ...

Runs `python -m jaxcap.launch` with the given arguments in this process, counting every program
handed to XLA (compiled, or read from the persistent cache: jaxcap/core/compiles.py), and prints
{"programs", "compile_s", "wall_s", "cpu_s", "by_name", "exit"} (and "error", the launch's one
line, which stderr shows too, when it refused its input). `--cache DIR` points the
persistent compilation cache at DIR first (an empty DIR: a cold run, whose compile seconds are the
real cost; the program count is the same cold or warm). Before/after tables in docs/engine.md
are two such runs of the same command at two commits. Nothing here asserts a number.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--cache"]:
        if len(argv) < 2:
            print("jaxcap.main.count_compiles: --cache needs a directory", file=sys.stderr)
            return 2
        problem = unwritable(argv[1])
        if problem:
            print(f"usage error: --cache: {problem}", file=sys.stderr)
            return 2
        os.environ["JAXCAP_CACHE"] = argv[1]
        argv = argv[2:]
    if not any(a == "--config" or a.startswith("--config=") for a in argv):
        usage = "usage: [--cache DIR] --config CONFIG [launch flags]"
        print(f"jaxcap.main.count_compiles: {usage}", file=sys.stderr)
        return 2
    from jaxcap.core import compiles
    from jaxcap.main import launch  # after JAXCAP_CACHE is set: the launch reads it

    start, cpu = time.perf_counter(), time.process_time()
    code, reason = 0, None
    with compiles.counting() as log:
        try:
            launch.console(["jaxcap.launch", *argv])
        except SystemExit as e:  # absl's app.run ends with sys.exit
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            # the launch's one line (an input problem) is its exit message: say it, as a launch does
            reason = e.code if isinstance(e.code, str) else None
    result = {
        **log.as_json(),
        "wall_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "exit": code,
    }
    if reason:
        print(reason, file=sys.stderr, flush=True)
        result["error"] = reason
    print(json.dumps(result), flush=True)
    return code


def unwritable(directory: str) -> str | None:
    """Why `--cache DIR` cannot hold the compilation cache (created if missing), or None: checked
    before the launch, which would otherwise name the config field the cache stands in for."""
    path = Path(directory).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as e:
        return f"cannot write {path} ({e.strerror or e}); allowed: a directory this user can write"
    return None


if __name__ == "__main__":
    sys.exit(main())

"""How far the raw config travels: the jaxcap functions a `ConfigDict` passes through in one run.

usage: python tests/config_trail.py configs/modmod.py:smoke [WORKDIR]

Runs `jaxcap.run.run(config, workdir)` under a trace (`sys.settrace`, 'call' events only) and
records every jaxcap function called with a `ml_collections.ConfigDict` among its arguments (the
config, a section of it, or a copy derived from it). A *stop* is one such function; its caller
is the nearest enclosing stop on the stack. A *climb* is a caller -> callee edge whose callee sits
in a higher layer than its caller (the layers of tests/test_layers.py): the config going back up.
Prints the stops, the climbing edges and the three counts.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(spec: str, workdir: str) -> None:
    import ml_collections
    from test_layers import layer

    import jaxcap
    from jaxcap import run as run_lib
    from jaxcap.config.base import load_config

    package = str(Path(jaxcap.__file__).resolve().parent)
    stops: dict[str, str] = {}  # function -> module
    edges: set[tuple[str, str]] = set()

    def holds_config(frame) -> bool:
        code = frame.f_code
        n = (
            code.co_argcount
            + code.co_kwonlyargcount
            + bool(code.co_flags & 0x04)
            + bool(code.co_flags & 0x08)
        )
        args = [frame.f_locals.get(name) for name in code.co_varnames[:n]]
        flat = [v for a in args for v in (a if isinstance(a, (tuple, list)) else (a,))]
        return any(isinstance(v, ml_collections.ConfigDict) for v in flat)

    def name_of(frame) -> tuple[str, str]:
        module = frame.f_globals.get("__name__", "?")
        return f"{module}:{frame.f_code.co_qualname}", module

    def tracer(frame, event, arg):
        if not frame.f_code.co_filename.startswith(package) or not holds_config(frame):
            return None
        callee, module = name_of(frame)
        stops[callee] = module
        up = frame.f_back
        while up is not None:
            if up.f_code.co_filename.startswith(package) and holds_config(up):
                caller, caller_module = name_of(up)
                if caller != callee:
                    edges.add((caller, callee))
                break
            up = up.f_back
        return None

    config = load_config(spec)
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        run_lib.run(config, workdir)
    finally:
        sys.settrace(None)
        threading.settrace(None)

    climbs = sorted((a, b) for a, b in edges if layer(stops[b]) > layer(stops[a]))
    print("stops:")
    for function in sorted(stops, key=lambda f: (layer(stops[f]), f)):
        print(f"  [{layer(stops[function])}] {function}")
    print("climbs:")
    for a, b in climbs:
        print(f"  {a} -> {b}")
    print(f"{spec}: {len(stops)} stops in {len(set(stops.values()))} modules, {len(climbs)} climbs")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="trail_"))

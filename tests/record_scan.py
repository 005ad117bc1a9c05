"""The taint analysis tests/test_record_reads.py runs: which expressions hold a record, and which
string-key reads of them name one of its fields.

Over each function's AST (a function's names are its own and its nested functions'): an
expression holds a record when it is a call that returns one, a name bound to one, an attribute
or item that is a part of one, a loop variable over one, or its `.items()`/`.values()`; a read
with a string key (`[...]` or `.get(...)`) of a field of the record on such an expression is a
violation. `Record` says, per record, what holds it and where the scan looks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SKIPPED = ("test_record_reads.py", "record_scan.py")  # the scan's own planted examples


@dataclass(frozen=True)
class Record:
    name: str
    home: tuple[str, ...]  # the record's module(s), relative to the root: they may read keys
    fields: set[str]
    attrs: tuple[str, ...] = ()  # `x.<attr>` holds the record
    calls: tuple[str, ...] = ()  # `f(...)` / `m.f(...)` returns it
    names: tuple[str, ...] = ()  # a name bound to it wherever it appears
    distinct: frozenset[str] = frozenset()
    scope: tuple[str, ...] = ("jaxcap",)  # only files in (or importing) these packages are read
    parts: tuple[str, ...] = ()  # fields that hold records (or lists of them): reads through them count
    keys: tuple[str, ...] = ()  # `x[key]` holds the record whatever x is (a dict read back from JSON)


ITERS = {"enumerate", "zip", "sorted", "reversed", "list", "tuple", "next", "iter", "filter"}


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def _targets(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


class _Scan:
    def __init__(self, record: Record, scope_home: bool):
        self.r, self.home = record, scope_home
        self.tainted: set[str] = set()

    def holds(self, node: ast.AST) -> bool:
        """Whether `node` evaluates to the record (or a part of it)."""
        r = self.r
        if isinstance(node, ast.Name):
            return node.id in self.tainted or node.id in r.names
        if isinstance(node, ast.Attribute):
            return node.attr in r.attrs or (node.attr in r.parts and self.holds(node.value))
        if isinstance(node, ast.Subscript):  # an item of a list of records, or a part read by key
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if isinstance(key, str) and key in r.keys:
                return True
            return (not isinstance(key, str) or key in r.parts) and self.holds(node.value)
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in r.calls:
                return True
            if name == "get" and isinstance(node.func, ast.Attribute) and node.args:
                key = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
                return key in r.parts and self.holds(node.func.value)
            if name in ITERS:
                return any(self.holds(a) for a in node.args)
            if name in ("items", "values") and isinstance(node.func, ast.Attribute):
                return self.holds(node.func.value)  # a dict of records (by design, by family)
            return False
        if isinstance(node, ast.BoolOp):
            return any(self.holds(v) for v in node.values)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            return any(self.holds(g.iter) for g in node.generators)
        if isinstance(node, ast.IfExp):
            return self.holds(node.body) or self.holds(node.orelse)
        return False

    def bind(self, fn: ast.AST) -> None:
        """Taint every name bound (assignment, loop, comprehension) to the record, to a fixpoint."""
        while True:
            before = len(self.tainted)
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    pairs = []
                    for t in node.targets:
                        if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                            pairs += list(zip(t.elts, node.value.elts))
                        else:
                            pairs.append((t, node.value))
                    for t, v in pairs:
                        if self.holds(v):
                            self.tainted |= set(_targets(t))
                elif isinstance(node, (ast.For, ast.comprehension)) and self.holds(node.iter):
                    target = node.target
                    if _call_name(node.iter) == "enumerate" and isinstance(target, ast.Tuple):
                        target = target.elts[-1]  # the index is not the record
                    self.tainted |= set(_targets(target))
            if len(self.tainted) == before:
                return

    def reads(self, fn: ast.AST) -> list[tuple[int, str]]:
        out = []
        for node in ast.walk(fn):
            key, obj = None, None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key, obj = node.slice.value, node.value
            elif _call_name(node) == "get" and isinstance(node.func, ast.Attribute) and node.args:
                arg = node.args[0]
                key, obj = (arg.value if isinstance(arg, ast.Constant) else None), node.func.value
            if not isinstance(key, str):
                continue
            if key in self.r.distinct or (key in self.r.fields and self.holds(obj)):
                out.append((node.lineno, key))
        return out


def in_scope(tree: ast.AST, module: str, record: Record) -> bool:
    """Whether a file belongs to, or imports from, one of the record's packages."""
    names = {module}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return any(n == p or n.startswith(p + ".") for n in names for p in record.scope)


def scan_file(path: Path, record: Record, module: str = "") -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    if not in_scope(tree, module, record):
        return []
    found: set[tuple[int, str]] = set()
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    units = [n for n in ast.walk(tree) if isinstance(n, defs[:2])]
    top = ast.Module(body=[n for n in tree.body if not isinstance(n, defs)], type_ignores=[])
    for unit in [top, *units]:  # a function's names are its own (and its nested functions')
        scan = _Scan(record, False)
        scan.bind(unit)
        found |= set(scan.reads(unit))
    return sorted(found)


def violations(root: Path, record: Record) -> dict[str, list[tuple[int, str]]]:
    files = [*sorted(p for d in ("jaxcap", "studies", "tests") for p in (root / d).rglob("*.py"))]
    out = {}
    for path in files:
        rel = str(path.relative_to(root))
        if rel in record.home or path.name in SKIPPED:
            continue
        hits = scan_file(path, record, ".".join(path.relative_to(root).with_suffix("").parts))
        if hits:
            out[rel] = hits
    return out


def report(found: dict[str, list[tuple[int, str]]]) -> str:
    return "\n".join(f"{f}:{line}: [{key!r}]" for f, hits in found.items() for line, key in hits)

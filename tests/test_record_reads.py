"""No string-key reads of a record's fields outside the record's module: the posterior's metadata
(`meta["families"]`), the meta-model table's levels (`table.levels[i]["bits"]`), the capacity
summary (`summary["c_mem"]`) and the hpo level table (`lv["best"]`) are records read by
attribute, so a renamed field fails at import-time lint, not at the end of a run.

The scan is a small taint analysis over each function's AST: an expression that holds a record
(`x.meta`, `read_meta(...)`, `capacity.summarize(...)`, a name bound to one, an item or field
of one, the loop variable over one) read with a string key naming one of the record's fields
(`[...]` or `.get(...)`) is a violation. Distinctive capacity fields (`c_mem`, `is_capacity`, ...)
are flagged on any expression. Run as a script (`python tests/test_record_reads.py [root]`) it
prints the count per record, the measure before and after the move to records.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers import ROOT

from jaxcap.experiments.hpo.level_table import HpoLevel, TrialResult
from jaxcap.meta.posterior_meta import (
    FamilyInfo,
    FitDiagnostics,
    LevelInfo,
    NutsRecord,
    PilotRecord,
    PosteriorMeta,
)
from jaxcap.results.capacity_summary import BudgetPoint, CapacityReport, CapacitySummary, Flatness, SizePoint


def _fields(*records) -> set[str]:
    return {f.name for r in records for f in dataclasses.fields(r)} - {"extra"}


META_FIELDS = _fields(PosteriorMeta, LevelInfo, FamilyInfo, NutsRecord, FitDiagnostics, PilotRecord)
CAPACITY_DISTINCT = {  # fields only the capacity summary has: flagged on any expression
    *["c_mem_seeds", "c_mem_seed_ids", "bits_per_body_param", "c_net", "verdict_schedule"],
    *["exposure_curve", "annealed_curve", "head_utilization", "storage_utilization"],
}
CAPACITY_FIELDS = _fields(CapacityReport, CapacitySummary, SizePoint, BudgetPoint, Flatness) | {"from"}
HPO_FIELDS = _fields(HpoLevel, TrialResult)


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


RECORDS = (
    Record(
        "posterior meta",
        ("jaxcap/meta/posterior_meta.py",),
        META_FIELDS,
        attrs=("meta",),
        calls=("read_meta", "posterior_meta", "table_meta"),
        names=("meta",),
        parts=("levels", "family_info", "nuts", "diagnostics", "pilot"),
    ),
    Record(
        "table levels",
        ("jaxcap/meta/posterior_meta.py",),
        _fields(LevelInfo),
        attrs=("levels",),
        calls=("build_table", "load_table", "read_table", "with_measure"),
        names=("levels", "level_info"),
        scope=("jaxcap.meta", "jaxcap.experiments.pilot"),
        parts=("levels",),
    ),
    Record(
        "capacity summary",
        ("jaxcap/results/capacity_summary.py",),
        CAPACITY_FIELDS,
        calls=("summarize", "_summaries"),
        names=("archs", "summaries"),
        distinct=frozenset(CAPACITY_DISTINCT),
        scope=(
            "jaxcap.experiments.capacity",
            "jaxcap.results.capacity_summary",
            "studies.device_page",
        ),
        parts=("architectures", "curve", "exposure_curve", "annealed_curve", "flat"),
    ),
    Record(
        "hpo level table",
        ("jaxcap/experiments/hpo/level_table.py",),
        HPO_FIELDS,
        calls=("summarize",),
        names=("levels",),
        scope=("jaxcap.experiments.hpo",),
        parts=("baseline", "best"),
    ),
)
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
        if rel in record.home or path.name == Path(__file__).name:
            continue
        hits = scan_file(path, record, ".".join(path.relative_to(root).with_suffix("").parts))
        if hits:
            out[rel] = hits
    return out


def _report(found: dict[str, list[tuple[int, str]]]) -> str:
    return "\n".join(f"{f}:{line}: [{key!r}]" for f, hits in found.items() for line, key in hits)


def test_no_string_reads_of_record_fields():
    for record in RECORDS:
        found = violations(ROOT, record)
        assert not found, (
            f"string-key reads of {record.name} fields outside {', '.join(record.home)}; read the "
            f"record's attributes instead:\n{_report(found)}"
        )


PLANTED = """
def headline(posterior, path):
    meta = posterior.meta
    info = [lv["label"] for lv in meta.levels]
    old = read_meta(path)
    return meta.families, posterior.meta.get("reference"), old["stamp"], info
"""


def test_the_scan_finds_planted_reads(tmp_path):
    """The scan itself: planted reads of each record are found; attribute reads and unrelated
    dicts are not."""
    (tmp_path / "jaxcap").mkdir()
    (tmp_path / "jaxcap" / "planted.py").write_text(PLANTED)
    (tmp_path / "jaxcap" / "capacity_reader.py").write_text(
        "from jaxcap.experiments.capacity.report import _summaries\n"
        "def line(workdir):\n"
        "    _, archs = _summaries(workdir)\n"
        "    best = max(archs, key=lambda a: a.c_mem)\n"
        "    first = next(a for a in archs if a.arch == 0)\n"
        "    return best.label, first['label'], {'c_mem_seeds': 1}['c_mem_seeds']\n"
    )
    (tmp_path / "jaxcap" / "hpo_reader.py").write_text(
        "from jaxcap.experiments.hpo.report import summarize\n"
        "def gains(store, other):\n"
        "    levels, studies = summarize(store)\n"
        "    rows = {'best': 1}\n"
        "    return [lv['best']['median'] for lv in levels if lv.baseline], rows['best'], other['best']\n"
    )
    (tmp_path / "jaxcap" / "clean.py").write_text(
        "def f(posterior, row, cursor):\n"
        "    meta = posterior.meta\n"
        "    return meta.families[meta.reference], row['label'], cursor['step']\n"
    )
    (tmp_path / "jaxcap" / "level_reader.py").write_text(
        "from jaxcap.meta.data import read_table\n"
        "def hardest(path, table, rows):\n"
        "    first = next(lv for lv in read_table(path).levels if lv.family == 0)\n"
        "    level = table.levels[rows[0].level]\n"
        "    designs = [lv.get('design') for lv in table.levels]\n"
        "    return first['label'], level['fields'], designs, first.bits, rows[0]['label']\n"
    )
    meta, levels, capacity, hpo = (violations(tmp_path, r) for r in RECORDS)
    assert meta == {"jaxcap/planted.py": [(4, "label"), (6, "reference"), (6, "stamp")]}, meta
    assert levels == {"jaxcap/level_reader.py": [(5, "design"), (6, "fields"), (6, "label")]}, levels
    assert capacity == {"jaxcap/capacity_reader.py": [(6, "c_mem_seeds"), (6, "label")]}, capacity
    assert hpo == {"jaxcap/hpo_reader.py": [(5, "best"), (5, "median")]}, hpo


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for record in RECORDS:
        found = violations(root, record)
        print(f"{record.name}: {sum(map(len, found.values()))} reads in {len(found)} files")
        if "-v" in sys.argv:
            print(_report(found))

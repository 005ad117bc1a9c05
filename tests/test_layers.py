"""The package's layers: every import (module level or inside a function) points down or
sideways, never up, and no set of modules imports itself round a cycle.

Bottom to top (docs/design.md, "Layout"): the config vocabulary (`jaxcap.fields`: ConfigError and
the field types every layer checks with) -> tasks and models -> the engine (`core`) -> the
config proper (defaults, schema checks, the bucket plan, the experiment registry of dotted names)
-> results (store, curves, the one success rule) -> training (the host loop) -> meta-model and
reports -> experiments and benchmarks -> the library's entry (`jaxcap.run`, and `jaxcap.errors`:
what a failed run says) -> the commands (`jaxcap.main`, with the four `python -m jaxcap.X` shims
on it). Experiments are reached from below only through `config.registry`'s dotted names,
resolved with importlib on use (not an import), and one experiment imports another's modules
only through the shared ones (families, population_experiment) or a listed few. The studies
(`studies/`, beside the package) are the top layer: they import jaxcap and each other, nothing
else of the checkout (no test helper, no config file), and jaxcap never imports them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

LAYERS = (  # bottom first; a module's layer is its longest matching prefix
    ("jaxcap.fields",),
    ("jaxcap.tasks", "jaxcap.models"),
    ("jaxcap.core",),
    ("jaxcap.config",),
    ("jaxcap.results",),
    ("jaxcap.training",),
    ("jaxcap.meta", "jaxcap.reports"),
    ("jaxcap.experiments", "jaxcap.benchmarks"),
    ("jaxcap.run", "jaxcap.errors"),
    ("jaxcap.main", "jaxcap.launch", "jaxcap.report", "jaxcap.predict", "jaxcap.bench", "jaxcap"),
    ("studies",),
)
PACKAGES = ("jaxcap", "studies")  # the modules the graph holds; other imports are not its business
# Known cycles, each to be broken where it lives; an entry that no longer cycles fails the test,
# so this list only shrinks.
PENDING_CYCLES: list[list[str]] = []
# Experiments share through modules below them (jaxcap/results, jaxcap/meta, ...) and the shared
# modules of jaxcap/experiments, never through each other's internals, so that a change inside one
# breaks no sibling. Each import between two experiments that stays is listed with its reason; an
# entry that no longer holds fails the test.
SHARED_EXPERIMENT_MODULES = ("jaxcap.experiments.families", "jaxcap.experiments.population_experiment")
SIBLING_IMPORTS = {
    # a config helper: the per-level Optuna search of calibrate-style configs fills hpo's own
    # `study` section (its defaults come from hpo's schema), so it lives with that section
    ("jaxcap.experiments.enhance.variants", "jaxcap.experiments.hpo.search_space"),
    # the shared level searches hand a family's plan to the hpo experiment's entry (lazily:
    # optuna is imported only when a config asks for it)
    ("jaxcap.experiments.families", "jaxcap.experiments.hpo.sweep"),
}


def layer(module: str) -> int:
    best = max(
        (
            (len(p), i)
            for i, prefixes in enumerate(LAYERS)
            for p in prefixes
            if module == p or module.startswith(p + ".")
        ),
        default=None,
    )
    assert best is not None, f"{module} is in no layer"
    return best[1]


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path, known: set[str]) -> set[str]:
    """The jaxcap and studies modules `path` imports anywhere in its body (`from a import b`
    counts a.b when a.b is a module, else a)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] in PACKAGES
        ):
            out |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                for a in node.names
            }
    return out


def graph(root: Path) -> dict[str, set[str]]:
    paths = {module_name(p, root): p for package in PACKAGES for p in (root / package).rglob("*.py")}
    return {m: imports(p, root, set(paths)) - {m} for m, p in paths.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets if layer(b) > layer(a))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def experiment(module: str) -> str | None:
    """The experiment a module belongs to (`capacity` for jaxcap.experiments.capacity.sizes);
    None outside jaxcap.experiments and for the package itself."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["jaxcap", "experiments"] and len(parts) > 2 else None


def sibling_imports(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) for each import from one experiment into another's modules."""
    return {
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if experiment(a) and experiment(b) and experiment(a) != experiment(b)
        if b not in SHARED_EXPERIMENT_MODULES
    }


def test_imports_point_down_and_form_no_cycle():
    edges = graph(ROOT)
    assert not upward(edges), "imports up the layer order:\n" + "\n".join(upward(edges))
    assert cycles(edges) == PENDING_CYCLES, f"import cycles: {cycles(edges)} (known: {PENDING_CYCLES})"


def test_no_experiment_imports_another_experiment():
    """Capacity, calibrate, enhance, hpo and pilot meet in the layers below and the shared
    modules; what each reads of another (capacity's summaries, C_mem) lives in jaxcap/results."""
    found = sibling_imports(graph(ROOT))
    assert found <= SIBLING_IMPORTS, "an experiment imports another's modules (move what they share "
    "below both, e.g. to jaxcap/results, or reach it through config.registry):\n" + "\n".join(
        f"{a} -> {b}" for a, b in sorted(found - SIBLING_IMPORTS)
    )
    assert found == SIBLING_IMPORTS, f"no longer imported: drop {sorted(SIBLING_IMPORTS - found)}"


def test_a_planted_sibling_import_fails(tmp_path):
    """The check is not vacuous: enhance importing capacity's module is caught; importing the
    shared families module, its own package, or the results layer is not."""
    for folder in ("jaxcap/experiments/enhance", "jaxcap/experiments/capacity", "jaxcap/results"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "jaxcap" / "experiments" / "families.py").write_text("")
    (tmp_path / "jaxcap" / "experiments" / "capacity" / "sizes.py").write_text("")
    (tmp_path / "jaxcap" / "results" / "capacity_reading.py").write_text("")
    (tmp_path / "jaxcap" / "experiments" / "enhance" / "sections.py").write_text("")
    (tmp_path / "jaxcap" / "experiments" / "enhance" / "capacity.py").write_text(
        "from jaxcap.experiments import families\nfrom jaxcap.experiments.enhance import sections\n"
        "from jaxcap.results import capacity_reading\n"
        "def f():\n    from jaxcap.experiments.capacity.sizes import summarize\n"
    )
    edges = graph(tmp_path)
    assert sibling_imports(edges) == {
        ("jaxcap.experiments.enhance.capacity", "jaxcap.experiments.capacity.sizes")
    }
    assert experiment("jaxcap.experiments") is None and experiment("jaxcap.results.store") is None


def imported_roots(path: Path) -> set[str]:
    """The top-level names `path` imports absolutely anywhere in its body (`jaxcap`, `numpy`)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add((node.module or "").split(".")[0])
    return out


def strays(root: Path) -> set[tuple[str, str]]:
    """(study, name) for each import in studies/ of the checkout's other code: a top-level folder
    or file (configs, launch, ...) or a test helper (tests/ is on pytest's path, not a user's)."""
    local = {p.stem for d in (root, root / "tests") if d.is_dir() for p in d.iterdir()} - set(PACKAGES)
    return {
        (path.relative_to(root).as_posix(), name)
        for path in (root / "studies").rglob("*.py")
        for name in imported_roots(path) & local
    }


def test_the_package_never_imports_a_study():
    """studies/ are campaigns run from the checkout; the package must import without them."""
    for path in (ROOT / "jaxcap").rglob("*.py"):
        assert "studies" not in imported_roots(path), path


def test_studies_import_only_jaxcap_and_studies():
    """A study runs as a user runs it (`python -m studies.pilot.score` from the checkout): jaxcap
    and other studies, never a test helper or a config module."""
    assert not strays(ROOT), strays(ROOT)


def test_a_planted_upward_import_and_cycle_fail(tmp_path):
    """The check is not vacuous: a task importing the host loop is caught, and so is a cycle."""
    (tmp_path / "jaxcap" / "tasks").mkdir(parents=True)
    (tmp_path / "jaxcap" / "training").mkdir()
    (tmp_path / "jaxcap" / "tasks" / "bad.py").write_text("def f():\n    from jaxcap.training import loop\n")
    (tmp_path / "jaxcap" / "training" / "loop.py").write_text("from jaxcap.tasks import bad\n")
    edges = graph(tmp_path)
    assert upward(edges) == ["jaxcap.tasks.bad -> jaxcap.training.loop"]
    assert cycles(edges) == [["jaxcap.tasks.bad", "jaxcap.training.loop"]]


def test_a_planted_study_import_fails_both_ways(tmp_path):
    """A library module importing a study is an upward import; a study importing a test helper is
    a stray; a study importing jaxcap and another study is neither."""
    for folder in ("jaxcap/tasks", "studies/pilot", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "tests" / "helpers.py").write_text("ROOT = None\n")
    (tmp_path / "jaxcap" / "tasks" / "bad.py").write_text("def f():\n    from studies.pilot import score\n")
    study = tmp_path / "studies" / "pilot" / "score.py"
    study.write_text("from helpers import ROOT\nfrom studies import x\n")
    (tmp_path / "studies" / "x.py").write_text("import numpy\nfrom jaxcap.tasks import bad\n")
    edges = graph(tmp_path)
    assert upward(edges) == ["jaxcap.tasks.bad -> studies.pilot.score"]
    assert edges["studies.x"] == {"jaxcap.tasks.bad"} and edges["studies.pilot.score"] == {"studies.x"}
    assert strays(tmp_path) == {("studies/pilot/score.py", "helpers")}


def test_reporting_a_population_imports_neither_optuna_nor_numpyro():
    code = (
        "import sys\nfrom jaxcap import report\nfrom jaxcap.config.registry import EXPERIMENTS, resolve\n"
        "resolve(EXPERIMENTS['population'].report)\n"
        "print(sorted(m for m in ('optuna', 'numpyro') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

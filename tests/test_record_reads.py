"""No string-key reads of a record's fields outside the record's module: the posterior's metadata
(`meta["families"]`), the meta-model table's levels (`table.levels[i]["bits"]`), the capacity
summary (`summary["c_mem"]`), the hpo level table (`lv["best"]`), the validation result
(`valid["scores"]`), a fit's diagnostics (`diag["max_rhat"]`) and a prediction (`r["points"]`)
are records read by attribute, so a renamed field fails at import-time lint, not at the end of a run.

The scan (tests/record_scan.py) is a small taint analysis over each function's AST: an expression
that holds a record (`x.meta`, `read_meta(...)`, `capacity_reading.summarize(...)`, a name bound
to one, an item or field of one, the loop variable over one, its `.items()`/`.values()`) read with
a string key naming one of the record's fields (`[...]` or `.get(...)`) is a violation.
Distinctive capacity fields (`c_mem`, `is_capacity`, ...) are flagged on any expression, and a
record's JSON keys (a fold's diagnostics read back from disk: `fold["diagnostics"]`) hold it
wherever they are read.
Run as a script (`python tests/test_record_reads.py [root] [-v]`) it prints the count per record,
the measure before and after the move to records.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from helpers import ROOT
from record_scan import Record, report, violations

from jaxcap.experiments.hpo.level_table import HpoLevel, TrialResult
from jaxcap.meta.prediction import Interval, PilotBasis, PointPrediction, Prediction, QueryPoint
from jaxcap.meta.records import (
    FamilyInfo,
    FitDiagnostics,
    LevelInfo,
    NutsRecord,
    PilotRecord,
    PosteriorMeta,
)
from jaxcap.meta.validation import (
    Decomposition,
    DesignScores,
    FoldResult,
    HeldoutCell,
    HeldoutRow,
    MethodScores,
    ReliabilityBin,
    Validation,
    ValidationSettings,
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
VALIDATION_PARTS = ("scores", "folds", "cells", "predictions", "settings", "methods", "decomposition")
DESIGN_KINDS = ("levels", "levels:grid", "levels:boundary", "top", "families", "archs")  # keys of scores
METHOD_NAMES = ("meta_model", "base_rate", "family_intercepts", "pooled_logistic", "per_family_logistic")
VALIDATION_FIELDS = _fields(
    Validation, ValidationSettings, FoldResult, HeldoutRow, HeldoutCell, DesignScores, MethodScores
) | _fields(Decomposition, ReliabilityBin)
PREDICTION_FIELDS = _fields(Prediction, PointPrediction, QueryPoint, Interval, PilotBasis)


RECORDS = (
    Record(
        "posterior meta",
        ("jaxcap/meta/records.py",),
        META_FIELDS,
        attrs=("meta",),
        calls=("read_meta", "posterior_meta", "table_meta"),
        names=("meta",),
        parts=("levels", "family_info", "nuts", "diagnostics", "pilot"),
    ),
    Record(
        "table levels",
        ("jaxcap/meta/records.py",),
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
        calls=("summarize", "read_summaries"),
        names=("archs", "summaries"),
        distinct=frozenset(CAPACITY_DISTINCT),
        scope=(
            "jaxcap.experiments.capacity",
            "jaxcap.results.capacity_summary",
            "jaxcap.results.capacity_reading",
            "jaxcap.results.capacity_curves",
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
    Record(
        "validation",
        ("jaxcap/meta/validation.py",),
        VALIDATION_FIELDS - {"diagnostics"},  # read through FoldResult.diagnostics: "fit diagnostics"
        calls=("validate", "distinct", "scores", "cell_record", "method_scores"),
        names=("valid", "validation", "validations"),
        scope=("jaxcap.meta", "jaxcap.main", "jaxcap.experiments.calibrate", "studies.device_page"),
        parts=(*VALIDATION_PARTS, "reliability", *DESIGN_KINDS, *METHOD_NAMES),
    ),
    Record(
        "fit diagnostics",
        ("jaxcap/meta/records.py",),
        _fields(FitDiagnostics),
        calls=("diagnose",),
        names=("diag", "diagnostics"),
        scope=("jaxcap.meta", "jaxcap.main", "jaxcap.benchmarks", "jaxcap.experiments", "studies"),
        keys=("diagnostics",),
    ),
    Record(
        "prediction",
        ("jaxcap/meta/prediction.py",),
        PREDICTION_FIELDS,
        calls=("predict", "resolve_levels"),
        names=("results", "points"),
        scope=("jaxcap.meta.prediction", "jaxcap.main.predict"),
        parts=("points", "boundaries", "pilot"),
    ),
)


def test_no_string_reads_of_record_fields():
    for record in RECORDS:
        found = violations(ROOT, record)
        assert not found, (
            f"string-key reads of {record.name} fields outside {', '.join(record.home)}; read the "
            f"record's attributes instead:\n{report(found)}"
        )


PLANTED = """
def headline(posterior, path):
    meta = posterior.meta
    info = [lv["label"] for lv in meta.levels]
    old = read_meta(path)
    return meta.families, posterior.meta.get("reference"), old["stamp"], info
"""


def test_the_scan_finds_planted_reads(tmp_path):
    """The scan itself: planted reads of each record are found; attribute reads, a design or method
    looked up by name, and unrelated dicts are not."""
    (tmp_path / "jaxcap").mkdir()
    (tmp_path / "jaxcap" / "planted.py").write_text(PLANTED)
    (tmp_path / "jaxcap" / "capacity_reader.py").write_text(
        "from jaxcap.results.capacity_reading import read_summaries\n"
        "def line(workdir):\n"
        "    _, archs = read_summaries(workdir)\n"
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
    (tmp_path / "jaxcap" / "validation_reader.py").write_text(
        "from jaxcap.meta.summary import distinct\n"
        "def card(valid, runs):\n"
        "    grid = valid.scores.get('levels:grid') or valid['scores']['levels']\n"
        "    words = [s['meta_model']['brier'] for s in distinct(valid.scores).values()]\n"
        "    cells = [c['p_mean'] for f in valid.folds for c in f.cells]\n"
        "    return grid['n_cells'], words, cells, runs['scores'], grid.methods['meta_model'].auc\n"
    )
    (tmp_path / "jaxcap" / "diagnostics_reader.py").write_text(
        "from jaxcap.meta.fit import diagnose\n"
        "def health(fam, draws, div, fold):\n"
        "    d = fam['diagnostics']\n"
        "    return d['max_rhat'], diagnose(draws, div)['min_ess'], fold.diagnostics.divergences\n"
    )
    (tmp_path / "jaxcap" / "prediction_reader.py").write_text(
        "from jaxcap.meta.prediction import predict, resolve_levels\n"
        "def line(posterior, arch, row):\n"
        "    points = resolve_levels(posterior, 'modulo', ['5'], [])\n"
        "    r = predict(posterior, 'modulo', points, arch)\n"
        "    bounds = [b['median'] for b in r.boundaries.values()]\n"
        "    return points[0]['bits'], r['points'][0].p, bounds, row['points']\n"
    )
    meta, levels, capacity, hpo, valid, diag, pred = (violations(tmp_path, r) for r in RECORDS)
    assert meta == {"jaxcap/planted.py": [(4, "label"), (6, "reference"), (6, "stamp")]}, meta
    assert levels == {"jaxcap/level_reader.py": [(5, "design"), (6, "fields"), (6, "label")]}, levels
    assert capacity == {"jaxcap/capacity_reader.py": [(6, "c_mem_seeds"), (6, "label")]}, capacity
    assert hpo == {"jaxcap/hpo_reader.py": [(5, "best"), (5, "median")]}, hpo
    want = [(3, "scores"), (4, "brier"), (5, "p_mean"), (6, "n_cells")]
    assert valid == {"jaxcap/validation_reader.py": want}, valid
    assert diag == {"jaxcap/diagnostics_reader.py": [(4, "max_rhat"), (4, "min_ess")]}, diag
    assert pred == {"jaxcap/prediction_reader.py": [(5, "median"), (6, "bits"), (6, "points")]}, pred


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for record in RECORDS:
        found = violations(root, record)
        print(f"{record.name}: {sum(map(len, found.values()))} reads in {len(found)} files")
        if "-v" in sys.argv:
            print(report(found))

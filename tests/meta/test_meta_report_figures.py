"""The meta-model's first screen and figures at smoke size: a design whose scores repeat another's
(every held-out level a grid level) is shown once under the reader's words, the losses are one
line per design under one header, a held-out cell with no success is drawn at 0 and every cell's
90 % interval on a row of its own, and a run without validation draws no empty figure."""

import matplotlib.figure
import pytest

from jaxcap.meta import report, scorecard
from jaxcap.meta.records import FitDiagnostics
from jaxcap.meta.validation import DesignScores, FoldResult, HeldoutCell, Validation

BINS = [  # two of ten probability bins, 3 runs each
    {"lo": 0.2, "hi": 0.3, "n": 3, "predicted": 0.2, "observed": 0.0},
    {"lo": 0.8, "hi": 0.9, "n": 3, "predicted": 0.8, "observed": 1.0},
]


def _scores(meta_brier: float) -> DesignScores:
    def method(brier):
        return {"brier": brier, "log_loss": 3 * brier, "reliability": BINS}

    return DesignScores.from_json(
        {
            "meta_model": method(meta_brier),
            **{b: method(0.01) for b in scorecard.BASELINES},
            "n_rows": 12,
            "n_cells": 6,
        }
    )


@pytest.fixture
def drawn(monkeypatch):
    figures = []
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "savefig",
        lambda fig, *a, **k: figures.append(fig) if fig not in figures else None,
    )
    return figures


def test_repeated_designs_are_shown_once_and_losses_are_one_line_each():
    levels = _scores(0.03)
    scores = {"levels": levels, "levels:grid": _scores(0.03), "top": _scores(0.02)}
    assert list(scorecard.distinct(scores)) == ["held-out levels (= grid levels)", "held-out top levels"]
    lost = scorecard.losses(scores)
    assert len(lost) == 2  # was one line per design and baseline: 12 at smoke size
    assert lost[0].startswith(
        "held-out levels (= grid levels): Brier 0.0300 vs 0.0100, log loss 0.0900 vs 0.0300"
    )
    assert lost[0].endswith("(base rate, family intercepts, pooled logistic, per-family logistic)")
    assert scorecard.losses({"levels": _scores(0.001)}) == []


def test_calibration_has_one_panel_per_distinct_design_in_words(tmp_path, drawn):
    levels = _scores(0.03)
    valid = Validation(scores={"levels": levels, "levels:grid": _scores(0.03), "top": _scores(0.02)})
    report.plot_calibration(tmp_path / "calibration.png", valid)
    titles = [ax.get_title() for ax in drawn[0].axes]
    assert titles == ["held-out levels (= grid levels)", "held-out top levels"]
    labels = drawn[0].axes[0].get_legend_handles_labels()[1]
    assert "meta-model" in labels and "base rate" in labels and "meta_model" not in labels


def test_heldout_draws_a_cell_with_no_success_at_zero(tmp_path, drawn):
    def cell(p, lo, hi, successes):  # a held-out cell of 2 runs with its 90% interval (and a 50% one)
        return HeldoutCell(0, 0, 0, 2, successes, p, 0.5, p, p, True, lo, hi, True)

    cells = [cell(0.1, 0.0, 0.3, 0), cell(0.9, 0.7, 1.0, 2)]
    folds = [
        FoldResult(kind, "fold 0", 1, 2, "a", [], [], FitDiagnostics(1.0, 800, 0), cells)
        for kind in ("levels", "top")
    ]
    valid = Validation(folds=folds)
    report.plot_heldout(tmp_path / "heldout.png", valid)
    ax, rows = drawn[0].axes[:2]
    points = [line for line in ax.lines if line.get_marker() in report.FOLD_MARKERS.values()]
    ys = sorted({float(y) for line in points for y in line.get_ydata()})
    assert ys == [0.0, 1.0]  # not nudged to -0.02 to tell the fold kinds apart (markers do)
    assert ax.get_ylim()[0] < 0.0
    # the intervals: one visible segment per cell, each on its own row, from lo90 to hi90
    segments = [line for line in rows.lines if len(line.get_xdata()) == 2 and line.get_linewidth() >= 1.5]
    assert len(segments) == 4 and len({float(line.get_ydata()[0]) for line in segments}) == 4
    assert sorted(tuple(line.get_xdata()) for line in segments) == [(0.0, 0.3)] * 2 + [(0.7, 1.0)] * 2


def test_a_run_without_validation_writes_no_empty_validation_figure(tmp_path, monkeypatch):
    for name in ("calibration.png", "calibration.pdf", "heldout.png"):  # left by an earlier report
        (tmp_path / name).write_text("old")
    for name in ("plot_curves", "plot_monotone", "plot_capacity"):
        monkeypatch.setattr(report, name, lambda path, *a: path)
    monkeypatch.setattr(report, "family_checks", lambda table: [])
    monkeypatch.setattr(
        report, "markdown", lambda posterior, valid, figures, checks: "\n".join(scorecard.scorecard(valid))
    )
    written = report.write_report(tmp_path, None, None, Validation())
    assert [p.name for p in written] == [
        "report.md",
        "success_vs_complexity.png",
        "monotone.png",
        "capacity.png",
    ]
    assert not list(tmp_path.glob("calibration.*")) and not list(tmp_path.glob("heldout.*"))
    assert "No calibration.png or heldout.png" in (tmp_path / "report.md").read_text()

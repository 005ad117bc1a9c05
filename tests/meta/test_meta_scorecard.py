"""report.md's first lines say whether the sampler met its targets (no divergence in the
full fit, <= 0.1 % in validation fits, R-hat <= 1.01, bulk ESS >= 400), and the targets table
scores PIT coverage on grid and boundary levels and the boundary width."""

from jaxcap.meta import scorecard
from jaxcap.meta.records import FitDiagnostics
from jaxcap.meta.validation import FoldResult, Validation


def _diag(div=0, rhat=1.005, ess=800, transitions=2000):
    return FitDiagnostics(max_rhat=rhat, min_ess=ess, divergences=div, transitions=transitions)


def _folds(diag: FitDiagnostics, n: int = 3) -> Validation:
    return Validation(
        folds=[FoldResult("levels", f"fold {i}", 1, 2, "a", [], [], diag, []) for i in range(n)]
    )


def _scores(scores: dict) -> Validation:
    return Validation.from_json({"scores": scores})


def test_sampler_health_meets_and_misses():
    valid = _folds(_diag())
    lines = scorecard.sampler_health(_diag(), valid)
    assert len(lines) == 2 and all("meets" in x and "MISSES" not in x for x in lines)
    assert "3 validation fits 0 divergences (0.00 % of 6000 transitions)" in lines[1]
    assert "MISSES" in scorecard.sampler_health(_diag(div=1), valid)[0]  # one divergence is one too many
    assert "MISSES" in scorecard.sampler_health(_diag(rhat=1.02), valid)[0]
    assert "MISSES" in scorecard.sampler_health(_diag(ess=300), valid)[0]
    few = _folds(_diag(div=1, transitions=2000))  # 0.05 %
    assert "meets" in scorecard.sampler_health(_diag(), few)[1]
    many = _folds(_diag(div=5, transitions=2000))  # 0.25 %
    assert "MISSES" in scorecard.sampler_health(_diag(), many)[1]


def test_targets_score_grid_and_boundary_coverage_and_width():
    def kind(cov, width):
        m = {"brier": 0.1, "log_loss": 0.3, "auc": 0.9, "pit_coverage90": cov, "median_width90": width}
        return {"meta_model": m, "floor": 0.05}

    valid = _scores({"levels:grid": kind(0.9, 0.2), "levels:boundary": kind(1.0, 0.95)})
    met = {t[0]: t[3] for t in scorecard.targets(valid)}
    assert met["held-out levels:grid: PIT coverage 90%"] is True
    assert met["held-out levels:boundary: PIT coverage 90%"] is False
    assert met["boundary levels: median 90% width"] is False


def test_coverage_says_how_many_cells_and_its_interval():
    """3 of 4 boundary cells covered: 0.75 misses the band, but its interval holds 0.90."""
    m = {"brier": 0.3, "log_loss": 0.7, "auc": 0.5, "pit_coverage90": 0.75, "median_width90": 0.8}
    valid = _scores({"levels:boundary": {"meta_model": m, "floor": 0.1, "n_cells": 4}})
    [measured] = [
        t[1] for t in scorecard.targets(valid) if t[0] == "held-out levels:boundary: PIT coverage 90%"
    ]
    lo, hi = (float(x) for x in measured.split("[")[1].split("]")[0].split(", "))
    assert measured.startswith("0.75, 3 of 4 cells [") and lo < 0.75 < 0.9 < hi

"""jaxcap.main.replicates: mean and range of validation scores over independent calibrate runs;
a split one run did not score counts fewer runs, never a zero; a missing validation.json is a
one-line error."""

import json

import pytest

from jaxcap.main import replicates
from jaxcap.meta import replicate_tables
from jaxcap.meta.validation import Validation


def _valid(brier: float, with_families: bool) -> dict:
    """validation.json's scores part, of the meta-model and the base rate only."""
    meta = {"brier": brier, "log_loss": 3 * brier, "auc": 0.9, "pit_coverage90": 0.9}
    levels = {"meta_model": meta, "base_rate": {"brier": 0.25, "log_loss": 0.7, "auc": None}}
    scores = {"levels": levels}
    if with_families:
        scores["families"] = {"meta_model": {"brier": 2 * brier, "log_loss": 0.5}}
    return {"scores": scores}


def test_mean_and_range_over_runs():
    runs = [Validation.from_json(_valid(b, fam)) for b, fam in ((0.05, True), (0.09, False), (0.07, True))]
    table = replicate_tables.replicate_table(runs)
    b = table["levels"]["meta_model"]["brier"]
    assert b == pytest.approx({"mean": 0.07, "min": 0.05, "max": 0.09, "runs": 3})
    assert table["families"]["meta_model"]["brier"]["runs"] == 2  # refused in one run: not a zero
    assert "auc" not in table["levels"]["base_rate"]  # undefined AUC is left out, not averaged
    lines = replicate_tables.markdown(table, "3 seeds")
    assert any(x.startswith("| levels | meta_model | 3 | 0.070 [0.050, 0.090]") for x in lines)


def test_cli_reads_workdirs_and_refuses_a_missing_one(tmp_path, capsys):
    for s, brier in enumerate((0.1, 0.2, 0.3)):
        (tmp_path / f"s{s}").mkdir()
        (tmp_path / f"s{s}" / "validation.json").write_text(json.dumps(_valid(brier, False)))
    dirs = [str(tmp_path / f"s{s}") for s in range(3)]
    assert replicates.main(dirs) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["levels"]["meta_model"]["brier"]["mean"] == pytest.approx(0.2)
    assert replicates.main([*dirs, str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "validation.json: missing" in err[0]


def test_coverage_pooled_over_runs_with_an_interval():
    """9/10 and 10/20 covered cells pool to 19/30: its Jeffreys interval excludes 0.90; one run's
    4/4 alone cannot (a run without n_cells counts nothing)."""

    def run(coverage, **cells):
        meta = {"brier": 0.1, "log_loss": 0.3, "pit_coverage90": coverage}
        return Validation.from_json({"scores": {"levels": {**cells, "meta_model": meta}}})

    runs = [run(0.9, n_cells=10), run(0.5, n_cells=20), run(1.0)]
    c = replicate_tables.pooled_coverage(runs)["levels"]
    assert (c["covered"], c["cells"]) == (19, 30) and c["rate"] == pytest.approx(19 / 30)
    assert c["lo"] < 19 / 30 < c["hi"] < 0.9
    lines = replicate_tables.pooled_markdown({"levels": c})
    assert any("| levels | 30 | 19 | 0.63 [" in x and x.endswith("| no |") for x in lines)
    small = replicate_tables.pooled_coverage([run(1.0, n_cells=4)])["levels"]
    assert small["lo"] < 0.9 < small["hi"]

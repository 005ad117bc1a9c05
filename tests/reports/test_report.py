"""jaxcap.report on a real workdir (the grokking smoke run: two buckets, so also that family's
end-to-end check): the run writes every figure, and `python -m jaxcap.report --workdir D`
rebuilds them from the workdir alone."""

import math
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from jaxcap import report as report_cli
from jaxcap.config.base import load_config
from jaxcap.reports import population_figures as report
from jaxcap.reports.level_summary import fmt_bits
from jaxcap.results.store import Store
from jaxcap.run import run

FIGURES = (
    "accuracy_vs_complexity.png",
    "success_vs_complexity.png",
    "dynamics.png",
    "generalization_gap.png",
)


@pytest.fixture(scope="module")
def grokking_smoke(tmp_path_factory):
    config = load_config(f"{ROOT / 'configs' / 'grokking.py'}:smoke")
    config.runtime.progress = False
    workdir = tmp_path_factory.mktemp("grokking_smoke")
    run(config, str(workdir))
    return workdir


@pytest.mark.slow
def test_grokking_smoke_reports_steps_per_operation(grokking_smoke):
    rows = Store(grokking_smoke).member_rows()
    assert {r["bucket_label"] for r in rows} == {"task.operation=add", "task.operation=perm"}
    assert len(rows) == 4 and all("steps_to_val_threshold" in r for r in rows)
    bits = {r["bucket_label"]: r["complexity_bits"] for r in rows}
    assert bits["task.operation=add"] == pytest.approx(math.log2(7))  # p = 7
    assert bits["task.operation=perm"] == pytest.approx(math.log2(6))  # S_3


@pytest.mark.slow
def test_run_writes_figures_and_per_level_metrics(grokking_smoke):
    text = (grokking_smoke / "report" / "report.md").read_text()
    for name in FIGURES:
        assert (grokking_smoke / "report" / name).stat().st_size > 10_000, name
        assert f"({name})" in text
    table = report.metrics_table(Store(grokking_smoke).members())
    lines = table.splitlines()
    assert (
        len(lines) == 3 and "val_accuracy" in lines[0] and "train_accuracy" in lines[0] and "gap" in lines[0]
    )
    assert "operation=perm" in table and "task." not in table and "## Final metrics" in text
    assert "\n|---:|---:|" in text and "```" not in text  # Markdown tables, not fenced text


@pytest.mark.slow
def test_cli_rebuilds_the_report_from_the_workdir(grokking_smoke):
    for name in FIGURES:
        (grokking_smoke / "report" / name).unlink()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "jaxcap.report", "--workdir", str(grokking_smoke)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    for name in FIGURES:
        assert (grokking_smoke / "report" / name).exists() and name in out.stdout


def test_cli_refuses_a_directory_without_a_run(tmp_path):
    with pytest.raises(SystemExit, match="holds no config.json"):
        report_cli.main(["--workdir", str(tmp_path / "nothing")])
    assert not (tmp_path / "nothing").exists()


def test_complexity_column_is_readable_for_corpus_sized_bits():
    assert fmt_bits(12.3456) == "12.35" and fmt_bits(9999.0) == "9999.00"
    assert fmt_bits(8932992.0) == "8,932,992"  # Shakespeare's text size x log2 97


def test_report_rebuilds_show_a_bar_only_when_slow(capsys, monkeypatch, tmp_path):
    from jaxcap.reports import population_figures as report

    paths = report.draw([lambda: tmp_path / "a.png", lambda: tmp_path / "b.png"])
    assert paths == [tmp_path / "a.png", tmp_path / "b.png"] and capsys.readouterr().err == ""
    monkeypatch.setattr(report, "BAR_DELAY_S", 0.0)  # as if the rebuild had taken 5 s
    report.draw([lambda: tmp_path / "a.png"])
    assert "report: 100%" in capsys.readouterr().err

"""The device study (launch/device_study.sh, issue 28): the cost model's arithmetic against the
H100 measurements it was fitted to, the results page from a study that stopped after its first
part, and (slow) the whole script end to end at SMALL=1 on the CPU."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from jaxcap.benchmarks import device_time
from jaxcap.reports import device_page


def _rate(p: int, matmul_mb: float) -> float:
    run = {"run": "grok float32", "P": p, "steps": 1, "matmul_mb": matmul_mb, "programs": 0}
    step = device_time.seconds([run], processes=0) / 1.1  # the eval share is not in the bench
    return p / step


def test_cost_model_reproduces_the_h100_grok_rates():
    # fitted to P = 1 and 256 (2,276 and 13,748); P = 8 and 64 measured 7,656 and 12,810
    assert _rate(1, 146.2) == pytest.approx(2276, rel=0.001)
    assert _rate(256, 146.2) == pytest.approx(13748, rel=0.001)
    assert _rate(8, 146.2) == pytest.approx(7656, rel=0.12)
    assert _rate(64, 146.2) == pytest.approx(12810, rel=0.02)


def test_page_reports_every_part_even_unfinished(tmp_path):
    study, out = tmp_path / "study", tmp_path / "out"
    study.mkdir()
    (study / "gpu.txt").write_text("NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04\n")
    (study / "commit.txt").write_text("abc1234\n")
    model = {"floor_ms": 0.44, "bandwidth_gb_s": 2058.5}
    runs = [{"run": "grok bfloat16", "P": 256, "steps": 800, "matmul_mb": 38.5, "programs": 1}]
    (study / "predicted.json").write_text(
        json.dumps({"model": model, "parts": {"speed": {"predicted_s": 99, "runs": runs}}})
    )
    result = {"P": 256, "params": 422000, "population_model_steps_per_s": 31000.0, "compile_s": 9.0}
    (study / "speed_grok_bfloat16.out").write_text(json.dumps({"device": "gpu", "results": [result]}))
    (study / "speed.rc").write_text(json.dumps({"wall_s": 80, "timeout_s": 170}))
    (study / "grokking.rc").write_text(json.dumps({"rc": 124, "wall_s": 230, "timeout_s": 230}))
    page = device_page.write(study, out, small=False)
    text = page.read_text()
    assert page.name.endswith("-nvidia-h100-80gb-hbm3.md")
    assert "| speed | 99 | 80 | 170 |" in text and "| grokking | — | 230 | 230 | 124 |" in text
    assert "| grok | bfloat16 | 256 | 31,000 | 30,000 |" in text
    saved = json.loads(page.with_suffix(".json").read_text())
    assert saved["commit"] == "abc1234" and saved["parts"]["capacity"]["rows"] == []
    assert (out / f"{page.stem}-speed.png").exists()


def test_page_refuses_bad_arguments(tmp_path):
    with pytest.raises(SystemExit, match="usage"):
        device_page.main(["device_page", str(tmp_path / "missing"), str(tmp_path)])


@pytest.mark.slow
def test_small_study_end_to_end(tmp_path):
    """The whole script at SMALL=1 (smoke variants): every part finishes and the page says so."""
    env = {
        **os.environ,
        "PY": sys.executable,
        "SMALL": "1",
        "STUDY": str(tmp_path / "study"),
        "OUT": str(tmp_path / "out"),
    }
    out = subprocess.run(
        ["bash", "launch/device_study.sh", "all"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,  # above the sum of the script's own part timeouts at SMALL=1 (1,800 s)
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    [page] = (tmp_path / "out").glob("*-small.json")
    saved = json.loads(page.read_text())
    assert saved["small"] and "SMALL=1" in page.with_suffix(".md").read_text()
    for part in device_page.PARTS:
        assert saved["parts"][part].get("rc", 0) == 0 and saved["parts"][part]["wall_s"] > 0, part
    assert len(saved["parts"]["grokking"]["rows"]) == 2 and saved["parts"]["calibrate"]["rows"]
    assert len(saved["figures"]) == 4

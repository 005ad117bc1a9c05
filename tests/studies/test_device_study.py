"""The device study (studies/device_study.sh): the cost model's arithmetic against the
H100 measurements it was fitted to, the results page from a study whose parts stopped early, and
(slow) the whole script end to end at SMALL=1 on the CPU."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from jaxcap.config.base import load_config, validate
from studies import device_page, device_time


def _rate(p: int, matmul_mb: float, gflop: float = 0.0, numerics: str = "tf32") -> float:
    run = {"run": "grok", "P": p, "steps": 1, "matmul_mb": matmul_mb, "programs": 0}
    run |= {"gflop": gflop, "numerics": numerics}
    step = device_time.seconds([run], processes=0) / 1.1  # the eval share is not in the bench
    return p / step


def test_cost_model_reproduces_the_h100_rates():
    # fitted to the grok model in float32 (77.03 MB) at P = 3 and 256 (4,880 and 13,792,
    # the H100 results page, docs/results/README.md), and the FLOPs rate to the seed baseline in
    # bfloat16 (16.23 GFLOP a model-step, 8,806); grok bfloat16 (38.51 MB, 23,128 measured)
    # stays bandwidth-bound, 17 % optimistic, as docs/design/performance.md states
    grok, baseline = 3.3758, 16.2296  # model GFLOP per model-step at batch 512 (core.flops)
    assert _rate(3, 77.03, grok) == pytest.approx(4880, rel=0.001)
    assert _rate(256, 77.03, grok) == pytest.approx(13792, rel=0.001)
    assert 1.0 < _rate(256, 38.51, grok, "bfloat16") / 23128 < 1.2
    assert _rate(256, 96.39, baseline, "bfloat16") == pytest.approx(8806, rel=0.001)
    assert _rate(256, 96.39) / 8806 > 1.2  # bytes alone: the FLOPs term is what fits it


def test_page_reports_every_part_even_unfinished(tmp_path):
    study, out = tmp_path / "study", tmp_path / "out"
    study.mkdir()
    (study / "gpu.txt").write_text("NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04\n")
    (study / "commit.txt").write_text("abc1234\n")
    model = {"floor_ms": 0.44, "bandwidth_gb_s": 2058.5}
    runs = [
        {"run": "grok bfloat16", "P": 256, "steps": 800, "matmul_mb": 38.5, "programs": 1},
        {"run": "baseline bfloat16", "P": 256, "steps": 800, "matmul_mb": 96.4, "programs": 1},
    ]
    (study / "predicted.json").write_text(
        json.dumps({"model": model, "parts": {"speed": {"predicted_s": 99, "runs": runs}}})
    )
    result = {"P": 256, "params": 422000, "population_model_steps_per_s": 31000.0, "compile_s": 9.0}
    (study / "speed_grok_bfloat16.out").write_text(json.dumps({"device": "gpu", "results": [result]}))
    (study / "speed_grok_bfloat16.rc").write_text(json.dumps({"rc": 0, "wall_s": 40, "timeout_s": 45}))
    (study / "speed_baseline_bfloat16.out").write_text("")  # stopped by its timeout: printed nothing
    (study / "speed_baseline_bfloat16.rc").write_text(json.dumps({"rc": 124, "wall_s": 75, "timeout_s": 75}))
    (study / "speed.rc").write_text(json.dumps({"rc": 124, "wall_s": 80, "timeout_s": 170}))
    (study / "grokking.rc").write_text(json.dumps({"rc": 124, "wall_s": 230, "timeout_s": 230}))
    (study / "grokking.log").write_text(
        "I1127 17:26:37.3 xla_bridge.py:837] Unable to initialize backend 'tpu'\n"
        "[b0] 3 members x 421,729 params (2 layers)\n[b0] 4,880 model-steps/s training (3 members)\n"
        "[b0] add: 3/3 seeds at 0.99 val accuracy by step 2,500\n"
    )
    (study / "versions.txt").write_text("jax 0.11.2, flax 0.12.10\n")
    page = device_page.write(study, out, small=False)
    text = page.read_text()
    assert page.name.endswith("-nvidia-h100-80gb-hbm3.md") and "jax 0.11.2, flax 0.12.10" in text
    assert "| speed | 99 | 80 | 170 | timed out at 170 s |" in text
    assert "| grokking | — | 230 | 230 | timed out at 230 s |" in text
    assert "| capacity | — | — | — | not run |" in text and "No result: the part not run." in text
    assert "| grok | bfloat16 | 256 | 31,000 | 30,000 |" in text
    # a run stopped by its timeout printed nothing: its P comes from the plan, its row says why
    assert "| baseline | bfloat16 | 256 | — | 12,000 |" in text and "| timed out at 75 s |" in text
    # what the stopped grokking part had finished, its chatter dropped
    lines = text.split("## grokking: timed out at 230 s; what it printed before that")[1]
    assert "[b0] add: 3/3 seeds" in lines and "params" not in lines and "tpu" not in lines
    saved = json.loads(page.with_suffix(".json").read_text())
    assert saved["commit"] == "abc1234" and saved["parts"]["capacity"]["rows"] == []
    assert (out / f"{page.stem}-speed.png").exists()


def test_the_device_calibrate_config_is_the_sized_one():
    """`configs/calibrate.py:device` (the study's calibrate part) validates, experiment checks
    included, and is what the timeout was sized for: three families, grid only, no held-out fits."""
    config = load_config(str(ROOT / "configs/calibrate.py:device"))
    validate(config)  # the experiment's section too
    assert set(config.calibrate.families) == {"random_labels", "modulo", "parity"}
    assert config.calibrate.design.rounds == 0 and config.calibrate.validation.folds == 0
    assert config.model.d_model == 256 and "device study" in config.note


def test_page_refuses_bad_arguments(tmp_path):
    with pytest.raises(SystemExit, match="usage"):
        device_page.main(["device_page", str(tmp_path / "missing"), str(tmp_path)])


@pytest.mark.slow
@pytest.mark.late  # its parts are the smoke configs other files launch: their programs are cached
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
        ["bash", "studies/device_study.sh", "all"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,  # above the sum of the script's own part timeouts at SMALL=1 (1,800 s)
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    [page] = (tmp_path / "out").glob("*-small.json")
    saved = json.loads(page.read_text())
    text = page.with_suffix(".md").read_text()
    assert saved["small"] and "SMALL=1" in text
    assert "Sampler health: full fit" in text and saved["parts"]["calibrate"]["health"]  # how C was sampled
    for part in device_page.PARTS:
        assert saved["parts"][part].get("rc", 0) == 0 and saved["parts"][part]["wall_s"] > 0, part
    assert len(saved["parts"]["grokking"]["rows"]) == 1 and saved["parts"]["calibrate"]["rows"]  # one bucket
    assert len(saved["figures"]) == 4


def _page(commit: str, done: dict, machine: str = "NVIDIA H100 80GB HBM3") -> dict:
    """A device_page JSON whose parts in `done` finished with those rows; the others not run."""
    parts = {p: {"rows": [], "outcome": "not run", "predicted_s": 10} for p in device_page.PARTS}
    for part, rows in done.items():
        parts[part] = {"rows": rows, "outcome": "finished", "rc": 0, "wall_s": 50, "timeout_s": 60}
    figures = {p: f"2026-11-27-h100-{p}.png" for p in done}
    head = dict(machine=machine, date="2026-11-27", commit=commit, jax="0.11.2", device=None, small=False)
    return head | {"cost_model": None, "parts": parts, "figures": figures}


def test_merge_takes_each_part_from_the_run_that_finished_it(tmp_path):
    """`one` in one session and `two` in a later one make one page; each part keeps its commit
    and its figure, a timed-out rerun never replaces a finished part, other machines are refused."""
    from studies import device_merge

    grok = [{"operation": "add", "seeds": 3, "reached": 3, "median_steps": 2000, "per_seed": [2000] * 3}]
    cap = [dict(label="d16", n_params=4080, c_mem=7473.0, c_min=7317.0, c_max=7629.0, bits_per_param=1.83)]
    old = _page("7cd308168fcf", {"grokking": grok})
    new = _page("e68ceab", {"capacity": [{**cap[0], "plateau": False, "is_capacity": False}]})
    new["parts"]["grokking"] = {"rows": [], "outcome": "timed out at 230 s", "rc": 124}
    paths = []
    for name, page in (("a", old), ("b", new)):
        (tmp_path / name).mkdir()
        for fig in page["figures"].values():
            (tmp_path / name / fig).write_bytes(name.encode())
        paths.append(tmp_path / name / "2026-11-27-h100.json")
        paths[-1].write_text(json.dumps(page))
    text = device_merge.write(paths, tmp_path / "out").read_text()
    assert "commit `7cd3081 (grokking), e68ceab (speed, capacity, calibrate)`" in text
    assert "| add | 3/3 | 2,000 |" in text
    assert "| d16 | 4,080 | 7,473 [7,317, 7,629] | 1.83 | no | no |" in text
    assert "| grokking | — | 50 | 60 | finished |" in text and "| speed | 10 | — | — | not run |" in text
    assert (tmp_path / "out/2026-11-27-h100-grokking.png").read_bytes() == b"a"
    assert (tmp_path / "out/2026-11-27-h100-capacity.png").read_bytes() == b"b"
    with pytest.raises(ValueError, match="different machines"):
        device_merge.merge([old, _page("abc", {}, machine="NVIDIA H200")])
    with pytest.raises(SystemExit, match="usage"):
        device_merge.main(["device_merge", str(paths[0]), str(tmp_path / "out")])

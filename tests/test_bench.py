"""The benchmark command runs and prints its JSON (shape only: tests never assert a speed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--models", "small", "--steps", "2", "--repeats", "1", "--trials", "1"]


def _bench(*args, devices=1) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_NUM_CPU_DEVICES": str(devices)}
    cmd = [sys.executable, "-m", "jaxcap.bench", *TINY, *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_population_vs_one_after_another_json():
    report = _bench("--sizes", "1,2")
    rows = report["results"]
    assert [r["P"] for r in rows] == [1, 2] and report["compute_dtype"] == "float32"
    for r in rows:
        assert r["population_model_steps_per_s"] > 0 and r["sequential_model_steps_per_s"] > 0
        assert r["speedup_vs_sequential"] > 0 and r["params"] > 0


def test_sharded_vs_one_device_json():
    (row,) = _bench("--sharded", "--sizes", "2", devices=2)["results"]
    assert row["devices"] == 2 and row["P"] == 2
    assert row["sharded_model_steps_per_s"] > 0 and row["single_device_model_steps_per_s"] > 0

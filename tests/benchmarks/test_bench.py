"""The benchmark command runs and prints its JSON (shape only: tests never assert a speed), and
its accounting of XLA programs parses what XLA prints."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from jaxcap.benchmarks import cost as bench_cost
from jaxcap.benchmarks import probe as bench_probe

TINY = ["--models", "small", "--steps", "2", "--repeats", "1", "--trials", "1"]


def _bench(*args, devices=1, stderr=None) -> dict:
    """The command's JSON; it compiles into the tests' cache (JAXCAP_CACHE, tests/conftest.py),
    which the bench uses only when told: a rerun, or a program another test compiled, loads."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_NUM_CPU_DEVICES": str(devices)}
    cache = ["--compilation_cache", os.environ["JAXCAP_CACHE"]]
    cmd = [sys.executable, "-m", "jaxcap.bench", *TINY, *cache, *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    if stderr is not None:
        stderr.append(out.stderr)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_population_vs_one_after_another_json():
    stderr = []
    report = _bench("--sizes", "1,2", stderr=stderr)
    assert "bench: 100%" in stderr[0] and "2/2" in stderr[0]  # the bar over model x size
    rows = report["results"]
    assert [r["P"] for r in rows] == [1, 2] and report["compute_dtype"] == "float32"
    for r in rows:
        assert r["population_model_steps_per_s"] > 0 and r["sequential_model_steps_per_s"] > 0
        assert r["speedup_vs_sequential"] > 0 and r["params"] > 0
        # the model's FLOPs rate; no MFU on a CPU, whose peak is not listed
        assert r["model_gflop_per_step"] > 0 and r["model_tflop_per_s"] > 0 and r["mfu"] is None is r["peak"]


@pytest.mark.slow
def test_sharded_vs_one_device_json():
    (row,) = _bench("--sharded", "--sizes", "2", devices=2)["results"]
    assert row["devices"] == 2 and row["P"] == 2
    assert row["sharded_model_steps_per_s"] > 0 and row["single_device_model_steps_per_s"] > 0


@pytest.mark.slow
def test_cost_json_counts_bfloat16_matmul_traffic_at_half_of_float32():
    report = _bench("--cost", "--sizes", "2")
    assert report["matmul_counted"].startswith("dot operands + results of the lowered")
    rows = {r["compute_dtype"]: r for r in report["cost"]}
    assert set(rows) == {"float32", "bfloat16"}
    for r in rows.values():
        assert r["gflop"] > 0 and r["bytes_accessed_mb"] > 0 and r["dots"] > 0
        assert r["top_level_ops"] >= r["fusions"] > 0 and r["temp_mb"] >= 0 and r["P"] == 2
    assert rows["bfloat16"]["dots"] == rows["float32"]["dots"]
    # the model's FLOPs beside the dots': attention at T = 5 is broadcast-multiply-reduce (no dots)
    assert rows["bfloat16"]["model_gflop"] == rows["float32"]["model_gflop"]
    assert 0 < rows["float32"]["dot_gflop"] < rows["float32"]["model_gflop"]
    assert rows["bfloat16"]["matmul_mb"] <= 0.55 * rows["float32"]["matmul_mb"]


STABLEHLO = """
module @jit_f {
  func.func public @main(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x8x3xbf16>) -> (tensor<2x4x3xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %1 = call @inner(%arg1) : (tensor<2x8x3xbf16>) -> tensor<2x3x3xbf16>
    %2 = call @inner(%arg1) : (tensor<2x8x3xbf16>) -> tensor<2x3x3xbf16>
    return %0 : tensor<2x4x4xf32>
  }
  func.func private @inner(%arg0: tensor<2x8x3xbf16>) -> (tensor<2x3x3xbf16>) {
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x8x3xbf16>, tensor<2x8x3xbf16>) -> tensor<2x3x3xbf16>
    return %0 : tensor<2x3x3xbf16>
  }
}
"""  # noqa: E501


def test_matmul_traffic_counts_every_call_of_a_function():
    dots, nbytes = bench_cost.matmul_traffic(STABLEHLO)
    main = (2 * 2 * 4 * 8 + 2 * 4 * 4) * 4  # two f32 operands and the f32 result
    inner = (2 * 2 * 8 * 3 + 2 * 3 * 3) * 2  # bf16, called twice
    assert (dots, nbytes) == (3, main + 2 * inner)


def test_gemm_algorithms_of_a_gpu_program():
    hlo = "\n".join(
        [
            '%c = (f32[8,8]{1,0}, s8[0]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", '
            'backend_config={"gemm_backend_config":{"alpha_real":1,"selected_algorithm":"7"}}',
            '%d = (f32[8,8]{1,0}, s8[0]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", '
            'backend_config={"gemm_backend_config":{"selected_algorithm":"7"}}',
            "%f = f32[8,8]{1,0} fusion(%a, %b), kind=kCustom, calls=%g, backend_config="
            '{"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"32"}}}',
            "%e = f32[8]{0} add(%x, %y)",
        ]
    )
    assert bench_cost.gemm_algorithms(hlo) == {
        "__cublas$gemm algo 7": 2,
        "triton block_m:64,block_n:32": 1,
    }


@pytest.mark.slow  # a benchmark child process on an empty compilation cache
def test_probe_reports_each_fresh_process(monkeypatch):
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "1")
    monkeypatch.setattr(bench_probe, "CONDITIONS", {"cache_empty": bench_probe.CONDITIONS["cache_empty"]})
    report = bench_probe.run_probe([*TINY, "--sizes", "1", "--max_sequential", "0"], timeout_s=300)
    (row,) = report["conditions"]
    assert row["condition"] == "cache_empty" and "error" not in row, row
    assert row["precision"]["tf32_or_lower"] is False  # a CPU multiplies in true float32
    assert row["results"][0]["population_model_steps_per_s"] > 0

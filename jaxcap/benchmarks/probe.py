"""Why float32 ran at two speeds: the same benchmark in fresh processes, one suspect at a time.

    python -m jaxcap.bench --probe                                   # grok model, P = 256, float32
    python -m jaxcap.bench --probe --models baseline --batch 512

On an H100 float32 ran at two speeds in different processes (docs/benchmarks.md). Each condition
reruns `python -m jaxcap.bench` in a fresh process with one thing changed (preallocation,
autotuning, compilation cache, true float32 matmuls) and reports throughput, the matmul precision
in effect and the GEMMs XLA chose, so the cause can be read off one device run.

Details: docs/design/performance.md#the-probe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# name -> (environment changes, extra bench flags); "{cache}" is one fresh directory per probe
CONDITIONS = {
    "plain_1": ({}, []),
    "plain_2": ({}, []),
    "plain_3": ({}, []),
    "no_preallocation": ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, []),
    "autotune_level_0": ({"XLA_FLAGS": "--xla_gpu_autotune_level=0"}, []),
    "cache_empty": ({}, ["--compilation_cache", "{cache}"]),
    "cache_warm": ({}, ["--compilation_cache", "{cache}"]),
    "precision_highest": ({}, ["--matmul_precision", "highest"]),
}


def precision_probe(n: int = 512) -> dict:
    """The relative error of a float32 matmul under the current default precision."""
    key_a, key_b = jax.random.split(jax.random.key(0))
    a, b = jax.random.normal(key_a, (n, n)), jax.random.normal(key_b, (n, n))
    got = np.asarray(jax.jit(jnp.matmul)(a, b), np.float64)
    want = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    error = float(np.abs(got - want).max() / np.abs(want).max())
    return {"matmul_rel_error": error, "tf32_or_lower": error > 1e-5}


def run_probe(bench_args: list[str], timeout_s: int = 60) -> dict:
    """Every condition in its own process, in order (each cut after `timeout_s`); one JSON
    document of their reports."""
    out = {"bench_args": bench_args, "conditions": []}
    with tempfile.TemporaryDirectory() as cache:
        for name, (env_changes, extra) in CONDITIONS.items():
            env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
            for k, v in env_changes.items():
                env[k] = f"{env.get(k, '')} {v}".strip() if k == "XLA_FLAGS" else v
            cmd = [sys.executable, "-m", "jaxcap.bench", *bench_args, *(a.format(cache=cache) for a in extra)]
            start = time.perf_counter()
            try:
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc = subprocess.CompletedProcess(cmd, -1, "", f"timed out after {timeout_s} s")
            row = {"condition": name, "process_s": round(time.perf_counter() - start, 1)}
            if proc.returncode:
                row["error"] = proc.stderr[-1500:]
            else:
                report = json.loads(proc.stdout)
                row.update(device=report["device"], precision=report["precision_probe"])
                row["results"] = report["results"]
            out["conditions"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    rates = [
        r["population_model_steps_per_s"]
        for c in out["conditions"]
        if c["condition"].startswith("plain") and "results" in c
        for r in c["results"]
    ]
    if rates:
        out["plain_spread"] = round(max(rates) / min(rates), 3)  # fresh processes, nothing changed
    return out

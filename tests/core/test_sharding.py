"""Populations split over devices and processes (jaxcap/core/sharding.py), on simulated CPU devices.

Each case runs in a child process, because the CPU device count is fixed when JAX starts
(`JAX_NUM_CPU_DEVICES`). Sharded and unsharded results agree to float rounding (a device runs
a smaller vmapped batch, so XLA may order a reduction differently), not bit for bit.
"""

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import ENV, ROOT, killer

pytestmark = pytest.mark.slow  # end-to-end launches and multi-process runs: the full tier

# 4 moduli x 2 seeds = 8 members: divisible by 8 devices and by 2 processes x 4 devices
SMOKE = ["--config", "configs/modmod.py:smoke", "--config.sweep.task.modulus=(5,7,10,13)"]


def _run(args, devices: int, **popen):
    env = {**ENV, "JAX_NUM_CPU_DEVICES": str(devices)}
    return subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen
    )


def _finish(proc, expect=0) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == expect, out[-3000:]
    return out


def _launch(workdir, *extra, devices=1, kill=False):
    head = [sys.executable, "-c", killer(3)] if kill else [sys.executable, "-m", "jaxcap.launch"]
    args = [*SMOKE, "--workdir", str(workdir), "--config.runtime.progress=False", *extra]
    return _run([*head, *args], devices)


def _final(workdir):
    rows = [json.loads(line) for line in (Path(workdir) / "members.jsonl").read_text().splitlines()]
    return {k: np.array([r["final"][k] for r in rows]) for k in ("train_loss", "val_loss", "val_accuracy")}


def _close(a, b):
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The reference: one process, one device, never interrupted."""
    workdir = tmp_path_factory.mktemp("straight")
    _finish(_launch(workdir))
    return _final(workdir)


SHARDED = textwrap.dedent("""
    import jax, numpy as np
    from jaxcap import tasks
    from jaxcap.core import sharding
    from jaxcap.models import ModelConfig
    from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
    from jaxcap.core.train import TrainSettings, make_population
    assert len(jax.devices()) == 8
    task = tasks.build({"name": "binop", "operation": "add", "p": 11, "train_fraction": 0.5})
    model = ModelConfig.for_task(task.spec, n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
    settings = TrainSettings(steps=20, chunk_steps=10, batch_size=16, eval_batch_size=64)
    members = [Member(i, i, {**DEFAULT_HPARAMS, "learning_rate": 1e-3 * (1 + i)}, {}) for i in range(8)]
    out = {}
    for d in (1, 8):
        mesh = sharding.population_mesh(8, d)
        program = make_population(settings, task, model, mesh)
        keys, hp = sharding.put(stack(members, 0), mesh)
        state, data = program.init(keys, hp), program.data(keys, hp)
        hlo = program.chunk.lower(state, hp, data).compile().as_text()
        assert sharding.collectives(hlo) == [], sharding.collectives(hlo)
        state, _ = program.chunk(state, hp, data)
        leaf = jax.tree.leaves(state.params)[0]
        assert len(leaf.sharding.device_set) == d and leaf.addressable_shards[0].data.shape[0] == 8 // d
        out[d] = jax.device_get((state.params, program.evaluate(state, hp, data)))
    for a, b in zip(jax.tree.leaves(out[1]), jax.tree.leaves(out[8])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the check can fail: a program that sums over members does communicate
    x = sharding.put(np.ones((8, 4), np.float32), sharding.population_mesh(8, 8))
    assert "all-reduce" in sharding.collectives(jax.jit(lambda a: a.sum(0)).lower(x).compile().as_text())
    print("ok")
""")


def test_sharded_population_equals_unsharded_with_no_collectives():
    assert _finish(_run([sys.executable, "-c", SHARDED], devices=8)).strip().endswith("ok")


def test_checkpoint_written_on_8_devices_resumes_on_1(tmp_path, straight):
    out = _finish(_launch(tmp_path, "--config.runtime.devices=8", devices=8, kill=True), expect=137)
    assert "over 8 devices" in out
    out = _finish(_launch(tmp_path, devices=1))
    assert "resuming from step" in out and "over 8 devices" not in out
    _close(_final(tmp_path), straight)


def test_two_processes_train_one_population(tmp_path, straight):
    with socket.socket() as s:  # a free port for the coordinator
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    flags = [f"--config.runtime.coordinator=localhost:{port}", "--config.runtime.num_processes=2"]
    procs = [_launch(tmp_path, *flags, f"--config.runtime.process_id={i}", devices=4) for i in range(2)]
    outs = [_finish(p) for p in procs]
    assert "in 2 processes (this is process 0)" in outs[0] and "over 8 devices" in outs[0]
    _close(_final(tmp_path), straight)  # process 0 writes the workdir
    _close(_final(tmp_path / ".process1"), straight)  # process 1 its mirror, never the same files
    assert not (tmp_path / ".process1" / "ckpt").exists()  # checkpoints are shared


def test_population_not_divisible_by_the_devices_is_refused(tmp_path):
    out = _finish(_launch(tmp_path, "--config.runtime.devices=3", devices=4), expect=1)
    assert "config error: config.runtime.devices: got 3; allowed: 0 (automatic) or a divisor" in out
    assert "Traceback" not in out

"""A launch on a workdir another process writes is refused before absl, ml_collections or any heavy
library is imported (jaxcap/main/early_lock.py `lock_before_imports`): in the time Python takes to
start, not in the seconds their imports take on a loaded machine. No timer: what was imported."""

import fcntl
import os
import subprocess
import sys

import pytest
from helpers import ENV, ROOT

from jaxcap.results import lock

HEAVY = (
    "absl",
    "ml_collections",
    "yaml",
    "jax",
    "jaxlib",
    "numpy",
    "optuna",
    "matplotlib",
    "numpyro",
    "flax",
)


@pytest.mark.parametrize(
    "args",
    [
        ["--config", "configs/modmod.py", "--workdir", "{w}"],
        ["--config=configs/modmod_hpo.py:smoke", "--config.train.steps=5", "--workdir={w}"],
    ],
    ids=["spaces", "equals"],
)
def test_a_busy_workdir_is_refused_before_any_heavy_import(tmp_path, args):
    workdir = tmp_path / "w"
    workdir.mkdir()
    fd = os.open(workdir / lock.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # this test process is the live run
    os.pwrite(fd, b"process 1 on the test\n", 0)
    try:
        cmd = [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "jaxcap.launch",
            *(a.format(w=workdir) for a in args),
        ]
        out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    finally:
        os.close(fd)
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "import time:" in line}
    assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []
    said = [line for line in out.stderr.splitlines() if "import time:" not in line]
    assert out.returncode == 1 and len(said) == 1, out.stderr[-2000:]
    assert said[0].startswith(f"workdir error: {workdir} is being written by process 1 on the test;")


def test_the_lock_taken_before_the_imports_is_taken_again_as_a_no_op(tmp_path):
    """The launcher locks before its imports and once more after parsing its flags."""
    lock.take_early(tmp_path / "w")
    lock.take_early(tmp_path / "w")  # its own lock: not "being written by" itself
    with lock.hold(tmp_path / "w"):
        pass


def test_the_launcher_knows_the_help_flags_before_it_imports_them():
    from jaxcap.main import cli, early_lock

    assert early_lock.HELP_FLAGS == cli.HELP_FLAGS

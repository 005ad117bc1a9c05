"""Workdirs and study storage in a state a launch must refuse or survive, in one line and with the
workdir left as it was: a second launch on a workdir in use (started afresh, not from the fork
server, to check the lock is taken before JAX is imported), a workdir or cache this user cannot
write (played by `nobody` via setpriv when the tests run as root, since root writes anywhere),
every checkpoint step corrupt, a full disk (a 1 MiB tmpfs, root only) whose rerun resumes, a
workdir holding only the config of a launch that never started, and a sqlite storage URL into a
missing folder. Launches run in children of the fork server (fork_server.ForkServer)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bad_input_cases import existing, hpo, smoke, snapshot, stderr_line
from helpers import ENV, HOLD, ROOT
from helpers import MODMOD_SMOKE as SMOKE

from jaxcap.config.base import build_plan
from jaxcap.experiments.population_experiment import identity
from jaxcap.results.store import Store


def test_a_sqlite_url_into_a_missing_folder_creates_it_as_a_path_does(tmp_path):
    """It once failed after the workdir was written, with a line suggesting a damaged file."""
    from jaxcap.config.base import validate
    from jaxcap.experiments.hpo.study import open_studies

    c = hpo(**{"study.storage": f"sqlite:///{tmp_path / 'new' / 'folder' / 'study.db'}"})
    validate(c)
    assert len(open_studies(build_plan(c).section, tmp_path / "w", "modulo", True)) == 3
    assert (tmp_path / "new" / "folder" / "study.db").is_file()


@pytest.mark.slow
def test_a_second_launch_on_a_workdir_in_use_fails_at_once_naming_the_holder(tmp_path):
    workdir = tmp_path / "w"
    existing(smoke())(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(workdir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        before = snapshot(workdir)
        cmd = [sys.executable, "-X", "importtime", "-m", "jaxcap.launch", *SMOKE, "--workdir", str(workdir)]
        out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
        imported = [
            line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "import time:" in line
        ]
        assert "jax" not in imported, "refused only after importing JAX (seconds): take the lock first"
        out.stderr = "\n".join(line for line in out.stderr.splitlines() if "import time:" not in line)
        assert stderr_line(out).startswith(
            f"workdir error: {workdir} is being written by process {holder.pid} on"
        )
        assert snapshot(workdir) == before
    finally:
        holder.kill()
        holder.wait()


AS_NOBODY = """
import sys
from jaxcap.config.base import load_config
from jaxcap.errors import one_line
from jaxcap.run import run
root = sys.argv[1]
for workdir, cache in (("finished", "off"), ("ro/new", "off"), ("w", root + "/cache")):
    c = load_config("configs/modmod.py:smoke")
    c.runtime.compilation_cache = cache
    try:
        run(c, f"{root}/{workdir}")
    except Exception as e:
        print(one_line(e))
"""


@pytest.fixture
def open_tmp():
    """A temporary directory any user can enter (pytest's own are private to their owner)."""
    path = Path(tempfile.mkdtemp(prefix="jaxcap-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


WRITE_PROTECTED = ("finished", "ro", "cache")


@pytest.mark.slow
def test_a_workdir_or_cache_this_user_cannot_write_is_one_line(open_tmp):
    """A read-only finished run, a workdir in a directory not writable, an unwritable cache."""
    as_user = [] if os.geteuid() else ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if as_user and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: no user to lack write access")
    tmp_path = open_tmp
    (tmp_path / "home").mkdir()  # matplotlib and JAX may write their caches there
    (tmp_path / "home").chmod(0o777)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    probe = subprocess.run(
        [*as_user, sys.executable, "-c", "import jaxcap.fields"],
        cwd=ROOT,
        env=env,
        capture_output=True,
    )
    if probe.returncode:
        pytest.skip("this checkout is private to its owner: another user cannot run it")
    existing(smoke(), {"members.jsonl": "", "evals.jsonl": ""})(tmp_path)  # (not trained: refused first)
    (tmp_path / "w").rename(tmp_path / "finished")
    (tmp_path / "ro").mkdir()
    (tmp_path / "cache").mkdir()
    for path in (tmp_path, tmp_path / "finished", tmp_path / "ro", tmp_path / "cache"):
        path.chmod(0o555)  # for root's files, nobody has no write access anyway
    before = {name: snapshot(tmp_path / name) for name in WRITE_PROTECTED}
    try:
        cmd = [*as_user, sys.executable, "-c", AS_NOBODY, str(tmp_path)]
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        for path in (tmp_path, tmp_path / "finished", tmp_path / "ro", tmp_path / "cache"):
            path.chmod(0o755)
    denied = "(Permission denied); allowed: a writable"
    assert out.stdout.splitlines() == [
        f"workdir error: {tmp_path / 'finished'}: cannot write {denied} directory",
        f"workdir error: {tmp_path / 'ro' / 'new'}: cannot create it {denied} location",
        f"config error: config.runtime.compilation_cache: cannot write {tmp_path / 'cache'} {denied} "
        "directory, 'default' ($JAXCAP_CACHE or ~/.cache/jaxcap/xla) or 'off'",
    ], out.stderr[-3000:]
    assert {name: snapshot(tmp_path / name) for name in WRITE_PROTECTED} == before


def _one_line_on_stderr(out) -> str:
    """The launch's whole stderr is its one line: no traceback of Orbax's or asyncio's threads."""
    assert "Traceback" not in out.stderr and "Event loop is closed" not in out.stderr, out.stderr[-3000:]
    return stderr_line(out)


@pytest.mark.slow
def test_every_checkpoint_step_corrupt_is_one_line_and_nothing_else(tmp_path, fork_server):
    from jaxcap.core.checkpoint import PopulationCheckpoints

    workdir = existing(smoke())(tmp_path)
    ckpts = PopulationCheckpoints(workdir / "ckpt" / "b0")
    for step in (10, 20):
        ckpts.save(step, {"w": [0.0]}, {"step": step})
    ckpts.close()
    for path in (workdir / "ckpt" / "b0").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    out = fork_server.launch(*SMOKE, "--workdir", str(workdir), check=False)
    assert _one_line_on_stderr(out).startswith(f"checkpoint error: {workdir / 'ckpt' / 'b0'}: no checkpoint")


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only): the smoke run fills it with its second checkpoint."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if (
        os.geteuid()
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)]).returncode
    ):
        pytest.skip("no tmpfs to fill: needs root and mount")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)])


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_rerun_resumes_once_there_is_space(small_disk, fork_server):
    workdir = small_disk / "w"
    args = (*SMOKE, "--config.runtime.progress=False", "--workdir", str(workdir))
    out = fork_server.launch(*args, check=False)
    assert _one_line_on_stderr(out).startswith("error: the disk is full (")
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    out = fork_server.launch(*args)
    assert "Traceback" not in out.stderr and len((workdir / "members.jsonl").read_text().splitlines()) == 6


def test_a_launch_that_never_started_does_not_block_the_corrected_command(tmp_path, capsys):
    """Only config.json was written (the launch failed right after it, as a seed of 2**63 once
    did): a different config takes the workdir over and says so."""
    workdir = existing(smoke(**{"train.steps": 45}))(tmp_path)
    store = Store(workdir)
    store.write_config(identity(smoke()))
    assert "held only the config of a run that never started (config.train.steps" in capsys.readouterr().out
    assert (
        Store(workdir).config_path.read_text()
        == (Path(existing(smoke())(tmp_path / "b")) / "config.json").read_text()
    )

"""Every bad input is one line naming the thing and what is allowed, and the workdir is left as it
was: a table of cases (keep adding to it). Each case builds a config and a workdir, runs
`run(config, workdir)` in this process, and expects the line the launcher prints for what it
raised (`jaxcap.errors.one_line`); the launcher itself is exercised for what only it handles (a stray
argument, `--debug`, a second launch on a workdir in use), and a user without write access is
played by `nobody` (setpriv) when the tests run as root, since root writes anywhere. Launches
run in children of the fork server (fork_server.ForkServer), as `python -m jaxcap.launch` runs,
without its seconds of imports each; the one that checks what a launch imports starts afresh."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ENV, HOLD, ROOT, member_row
from helpers import MODMOD_SMOKE as SMOKE

from jaxcap.config.base import build_plan, load_config
from jaxcap.core.checkpoint import PopulationCheckpoints
from jaxcap.errors import one_line
from jaxcap.experiments.population_experiment import identity
from jaxcap.fields import ConfigError
from jaxcap.results.store import Store
from jaxcap.run import run

LOCK = ".lock"  # the writer's lock file: the one file a run creates before its checks of the workdir


def smoke(**edits):
    c = load_config(f"{ROOT / 'configs' / 'modmod.py'}:smoke")
    c.runtime.progress = False
    for path, value in edits.items():
        section, _, field = path.rpartition(".")
        node = c
        for part in filter(None, section.split(".")):
            node = node[part]
        node[field] = value
    return c


def _smoke_of(name: str):
    """configs/<name>:smoke with `section.field` edits, as a function of the edits."""

    def make(**edits):
        c = load_config(f"{ROOT / 'configs' / name}:smoke")
        c.runtime.progress = False
        for path, value in edits.items():
            section, field = path.split(".")
            c[section][field] = value
        return c

    return make


hpo, capacity, pilot = _smoke_of("modmod_hpo.py"), _smoke_of("capacity.py"), _smoke_of("pilot.py")
PARITY_WORDS = dict(task=dict(name="parity", n=8), levels=dict(k=("a", "b")), overrides="")


def calibrate_bad_override():
    """configs/calibrate.py:smoke whose first family sets a model field to a value not allowed:
    only that family's derived config can see it."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    name = next(iter(c.calibrate.families))
    c.calibrate.families[name] = {**c.calibrate.families[name], "overrides": "model.norm=layer"}
    return c


def calibrate_workdirs(*workdirs: Path):
    """configs/calibrate.py:smoke with `config.calibrate.workdirs` set."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    c.calibrate.workdirs = tuple(str(w) for w in workdirs)
    return c


def worker_without_storage(tmp: Path) -> Path:
    """A sweep worker's workdir whose rows name trials of a shared storage that is gone (moved
    away, or never copied with the workdir): which of its rows count cannot be told."""
    worker = tmp / "worker"
    Store(worker).write_config({"experiment": "hpo", "study": {"storage": str(tmp / "gone.db")}})
    (worker / "members.jsonl").write_text(json.dumps(member_row(study="modulo/modulus=5", trial=0)) + "\n")
    return worker


def calibrate_family(entry: dict):
    """configs/calibrate.py:smoke with one more family, `parity`, of this entry."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    c.calibrate.families = {**c.calibrate.families.to_dict(), "parity": entry}
    return c


def existing(config, files: dict[str, str | bytes] | None = None) -> Callable[[Path], Path]:
    """A workdir holding a run of `config` (its config.json) and `files`."""

    def make(tmp: Path) -> Path:
        workdir = tmp / "w"
        Store(workdir).write_config(identity(config))
        for name, text in (files or {}).items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            getattr(workdir / name, "write_bytes" if isinstance(text, bytes) else "write_text")(text)
        return workdir

    return make


def corrupt_checkpoint(config) -> Callable[[Path], Path]:
    """A workdir whose only checkpoint of bucket b0 does not restore."""

    def make(tmp: Path) -> Path:
        workdir = existing(config)(tmp)
        ckpts = PopulationCheckpoints(workdir / "ckpt" / "b0")
        ckpts.save(10, {"w": [0.0]}, {"step": 10})
        ckpts.close()
        (workdir / "ckpt" / "b0" / "10" / "cursor" / "metadata").write_text('{"st')
        return workdir

    return make


def storage_with_budget(n: int) -> Callable[[Path], Path]:
    """A fresh workdir, and a study storage beside it whose studies already have a budget of n."""

    def make(tmp: Path) -> Path:
        from jaxcap.experiments.hpo.study import create_studies

        create_studies(
            build_plan(hpo(**{"study.storage": str(tmp / "shared.log"), "study.n_trials": n})), tmp
        )
        return tmp / "w"

    return make


def fresh(tmp: Path) -> Path:
    return tmp / "w"


def a_file(tmp: Path) -> Path:
    (tmp / "w").write_text("x")
    return tmp / "w"


def under_a_file(tmp: Path) -> Path:
    (tmp / "f").write_text("x")
    return tmp / "f" / "w"


def cache_under_a_file(tmp: Path):
    (tmp / "f").write_text("x")
    return smoke(**{"runtime.compilation_cache": str(tmp / "f" / "xla")})


@dataclasses.dataclass(frozen=True)
class Case:
    config: Callable[[Path], object]  # tmp -> config
    workdir: Callable[[Path], Path]  # tmp -> workdir (created as the case needs)
    message: str
    writes: tuple[str, ...] = ()  # files the run may create: checks that need a run's context


def _config(config):
    return lambda tmp: config


CASES = {
    # the workdir
    "workdir is a file": Case(_config(smoke()), a_file, "is a file; allowed: a directory"),
    "workdir under a file": Case(_config(smoke()), under_a_file, "is under a file"),
    "corrupt config.json": Case(
        _config(smoke()),
        existing(smoke(), {"config.json": '{"experiment": "popu'}),
        "config.json does not parse",
    ),
    "workdir of another config": Case(
        _config(smoke(seed=3)),
        existing(smoke(), {"evals.jsonl": ""}),
        "different config (config.seed: 0 in the workdir, 3 now)",
    ),
    "corrupt checkpoint": Case(
        _config(smoke()), corrupt_checkpoint(smoke()), "checkpoint error: ", writes=("ckpt/b0.corrupt",)
    ),
    # the study storage
    "storage URL without its driver": Case(
        _config(hpo(**{"study.storage": "postgresql://me@localhost/db"})),
        fresh,
        "config.study.storage: got 'postgresql://me@localhost/db', whose driver is not installed",
    ),
    "storage server that does not answer": Case(
        _config(hpo(**{"study.storage": "postgresql+psycopg2://me@127.0.0.1:1/db"})),
        fresh,
        "config.study.storage: cannot connect to postgresql+psycopg2://me@127.0.0.1:1/db (",
    ),
    "storage URL of an unknown scheme": Case(
        _config(hpo(**{"study.storage": "foo://host/db"})), fresh, "which SQLAlchemy cannot use"
    ),
    "corrupt study.db": Case(
        _config(hpo()),
        existing(hpo(), {"study.db": b"not a database " * 100}),
        "config.study.storage: cannot open study.db in the workdir as an Optuna storage (DatabaseError",
    ),
    "n_trials below the storage's budget": Case(
        lambda t: hpo(**{"study.storage": str(t / "shared.log"), "study.n_trials": 2}),
        storage_with_budget(4),
        "config.study.n_trials: got 2, but study modulo/modulus=5 already has a budget of 4 trials",
        writes=("config.json",),
    ),
    "storage in a folder nothing can write": Case(
        _config(hpo(**{"study.storage": "/proc/jaxcap/study.log"})),
        fresh,
        "config.study.storage: cannot write /proc/jaxcap/study.log (",
    ),
    "storage under a file": Case(
        lambda t: hpo(**{"study.storage": f"sqlite:///{t / 'f' / 'study.db'}"}),
        under_a_file,
        "study.db is under a file (",
    ),
    "a budget that would queue for minutes": Case(
        _config(hpo(**{"study.n_trials": 1_000_000})),
        fresh,
        "config.study.n_trials: got 1000000; allowed: in [1, 10000]",
    ),
    # config values (flag-level ones, such as an unknown key, in tests/test_launch.py)
    "seed beyond the 32 bits of a key (aliases a smaller seed)": Case(
        _config(smoke(seed=2**32)), fresh, "config.seed: got 4294967296; allowed: in [0, 4294967295]"
    ),
    "seed beyond 64 bits": Case(_config(smoke(seed=2**63)), fresh, "config.seed: got 9223372036854775808"),
    "a value not allowed": Case(
        _config(smoke(**{"model.norm": "layer"})),
        fresh,
        "config.model.norm: got 'layer'; allowed: pre, post, none",
    ),
    "steps not a multiple of chunk_steps": Case(
        _config(smoke(**{"train.steps": 45})),
        fresh,
        "config.train.steps: got 45; allowed: a multiple of config.train.chunk_steps",
    ),
    "a swept value out of range": Case(
        _config(smoke(**{"sweep.task.modulus": (5, 1)})), fresh, "config.sweep.task.modulus[1]: got 1"
    ),
    "more numbers than a dataset holds": Case(
        _config(smoke(**{"task.digits": 12})), fresh, "config.task.digits: base^digits"
    ),
    "wrong-typed bucket override": Case(
        _config(smoke(**{"sweep.buckets": ("model.d_model=abc",)})),
        fresh,
        "config.sweep.buckets[0]: model.d_model: got 'abc' (str); allowed: an integer like the field's 16",
    ),
    "threshold above 1 for accuracy": Case(
        _config(smoke(**{"eval.val_threshold": 1.5})),
        fresh,
        "config.eval.val_threshold: got 1.5; allowed: at most 1",
    ),
    "batch size far above the split": Case(
        _config(smoke(**{"train.batch_size": 100_000})),
        fresh,
        "config.train.batch_size: got 100000; allowed: at most 16 x the 5000 train examples",
    ),
    "modulus above the input range": Case(
        _config(smoke(**{"task.digits": 1, "task.modulus": 7, "sweep.task.modulus": (5, 20)})),
        fresh,
        "config.sweep.task.modulus[1]: 20: config.task.modulus: got 20; allowed: at most base^digits = 10",
    ),
    # the machine
    "more devices than there are": Case(
        _config(smoke(**{"runtime.devices": 64})),
        fresh,
        "config.runtime.devices: got 64; allowed: 0 (automatic)",
    ),
    "process_id not below num_processes": Case(
        _config(smoke(**{"runtime.process_id": 2, "runtime.num_processes": 2})),
        fresh,
        "config.runtime.process_id: got 2; allowed: 0 … 1",
    ),
    "several processes without a coordinator": Case(
        _config(smoke(**{"runtime.num_processes": 2})), fresh, "config.runtime.coordinator: got ''; allowed:"
    ),
    "compilation cache under a file": Case(
        cache_under_a_file, fresh, "config.runtime.compilation_cache: cannot write"
    ),
    # the experiment's own checks (config.registry's `check`): before the first write too
    "capacity exposures not ascending": Case(
        _config(capacity(**{"capacity.exposures": (100.0, 10.0)})),
        fresh,
        "config.capacity.exposures: got (100.0, 10.0); allowed: a non-empty ascending tuple",
    ),
    "calibrate family with a bad override": Case(
        lambda t: calibrate_bad_override(),
        fresh,
        "config.calibrate.families.",
    ),
    "calibrate workdir whose study storage is gone": Case(
        lambda t: calibrate_workdirs(worker_without_storage(t)),
        fresh,
        "config.calibrate.workdirs[0]: ",
    ),
    "calibrate family with string level values": Case(
        lambda t: calibrate_family(PARITY_WORDS),
        fresh,
        "config.calibrate.families.parity.levels.k[0]: got 'a'; allowed: an integer, the type of task "
        "parity's field k",
    ),
    "pilot family with string level values": Case(
        _config(pilot(**{"pilot.family": PARITY_WORDS})),
        fresh,
        "config.pilot.family.levels.k[0]: got 'a'; allowed: an integer, the type of task parity's field k",
    ),
    # the run itself
    "every member diverged": Case(
        _config(smoke(**{"hparams.learning_rate": 1e35})),
        fresh,
        "run error: every member diverged by step 10; allowed: a smaller config.hparams.learning_rate",
        writes=("*",),
    ),
}


def test_a_sqlite_url_into_a_missing_folder_creates_it_as_a_path_does(tmp_path):
    """It once failed after the workdir was written, with a line suggesting a damaged file."""
    from jaxcap.config.base import validate
    from jaxcap.experiments.hpo.study import open_studies

    c = hpo(**{"study.storage": f"sqlite:///{tmp_path / 'new' / 'folder' / 'study.db'}"})
    validate(c)
    assert len(open_studies(build_plan(c).section, tmp_path / "w", "modulo", True)) == 3
    assert (tmp_path / "new" / "folder" / "study.db").is_file()


def snapshot(workdir: Path) -> dict[str, bytes] | None:
    if not workdir.exists() or workdir.is_file():
        return None if not workdir.exists() else {".": workdir.read_bytes()}
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(workdir.rglob("*")) if p.is_file()}


def _kept(files: dict[str, bytes] | None, writes: tuple[str, ...]) -> dict[str, bytes]:
    """The files that must be as they were: all but the lock and what the case may write."""
    return {k: v for k, v in (files or {}).items() if k != LOCK and not any(k.startswith(w) for w in writes)}


# a case that trains before it goes wrong ("*" writes) is an end-to-end run: the full tier
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if "*" in c.writes else n for n, c in CASES.items()]
)
def test_a_bad_input_is_one_line_and_leaves_the_workdir_as_it_was(tmp_path, name):
    case = CASES[name]
    config, workdir = case.config(tmp_path), case.workdir(tmp_path)
    before = snapshot(workdir)
    with pytest.raises(Exception) as info:
        run(config, str(workdir))
    line = one_line(info.value)
    assert line is not None, f"a traceback would reach the user: {info.value!r}"
    assert "\n" not in line and case.message in line, line
    if "*" in case.writes:  # a run that went wrong on the way, not an input refused up front
        return
    after = snapshot(workdir)
    if before is None and not case.writes:
        assert after is None, "refused before the workdir was even created"
    assert _kept(after, case.writes) == _kept(before, case.writes)


def _stderr_line(out) -> str:
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert out.returncode != 0 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    return lines[0]


@pytest.mark.slow
def test_launcher_refuses_a_stray_argument(tmp_path, fork_server):
    out = fork_server.launch(*SMOKE, "smoke", "--workdir", str(tmp_path / "w"), check=False)
    assert _stderr_line(out).startswith("usage error: unexpected argument 'smoke'; allowed: flags only")
    assert not (tmp_path / "w").exists()


def _syntax_error(tmp: Path) -> str:
    (tmp / "broken.py").write_text("def get_config(arg=None):\n    return (\n")
    return str(tmp / "broken.py")


def PILOT_ON(t: Path) -> list[str]:  # noqa: N802  (a command line, as SMOKE is)
    return ["--config", "configs/pilot.py:smoke", f"--config.pilot.posterior={t}"]


def test_a_change_a_pilot_posterior_makes_moot_is_refused_with_the_reason(tmp_path):
    """The pilots train the posterior's recorded model: --config.model.d_model=32 trained d_model
    16 while the note listed it as applied. Refused before the config is checked or run; the
    pilot's own fields and the runtime's are its own, and without a posterior nothing is moot."""
    from jaxcap.main.launch import refuse_unused

    argv = ["launch", *PILOT_ON(tmp_path)]
    config = pilot(**{"pilot.posterior": str(tmp_path)})
    for change in ("--config.model.d_model=32", "--config.train.steps=80", "--config.seed=1"):
        with pytest.raises(ConfigError) as info:
            refuse_unused(config, [*argv, change])
        path = change.removeprefix("--").split("=")[0]
        assert str(info.value).startswith(f"{path}: changed on the command line, but config.pilot.posterior=")
    refuse_unused(config, [*argv, "--config.pilot.k=2", "--config.runtime.progress=False", "--config.note=x"])
    refuse_unused(pilot(), ["launch", "--config.model.d_model=32"])  # its own calibration trains it
    refuse_unused(smoke(), ["launch", *SMOKE, "--config.model.d_model=32"])  # no such rule


# what only the launcher sees: (tmp -> its arguments, the start of its one line); none leaves a workdir
LAUNCH_CASES = {
    "config file with a syntax error": (
        lambda t: ["--config", _syntax_error(t), "--workdir", str(t / "w")],
        "config error: ",
        "line 2",
    ),
    "empty --workdir": (lambda t: [*SMOKE, "--workdir="], "config error: --workdir: got ''", ""),
    "empty variant (once started the default job)": (
        lambda t: ["--config", "configs/modmod.py:", "--workdir", str(t / "w")],
        "config error: config variant: got '' (nothing after ':'); allowed: smoke, full, or no ':'",
        "",
    ),
    "bad value, fresh workdir": (
        lambda t: [*SMOKE, "--config.model.norm=layer", "--workdir", str(t / "w")],
        "config error: config.model.norm: got 'layer'",
        "",
    ),
    "a change a pilot's posterior makes moot": (
        lambda t: [*PILOT_ON(t), "--config.model.d_model=32", "--workdir", str(t / "w")],
        "config error: config.model.d_model: changed on the command line, but config.pilot.posterior=",
        "so this config's own value is unused; allowed: changes to config.pilot and config.runtime",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAUNCH_CASES))
def test_the_launcher_answers_in_one_line_and_leaves_no_workdir(tmp_path, fork_server, name):
    args, start, within = LAUNCH_CASES[name]
    out = fork_server.launch(*args(tmp_path), check=False)
    line = _stderr_line(out)
    assert line.startswith(start) and within in line, line
    assert not (tmp_path / "w").exists()  # the lock taken first is removed with its empty workdir


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
        assert _stderr_line(out).startswith(
            f"workdir error: {workdir} is being written by process {holder.pid} on"
        )
        assert snapshot(workdir) == before
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_debug_shows_the_traceback_of_an_input_error(tmp_path, fork_server):
    existing(smoke(), {"config.json": "{"})(tmp_path)
    out = fork_server.launch(*SMOKE, "--workdir", str(tmp_path / "w"), "--debug", check=False)
    assert out.returncode != 0 and "Traceback" in out.stderr and "WorkdirError: " in out.stderr


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


def test_report_on_a_workdir_this_user_cannot_write_is_one_line(tmp_path, monkeypatch):
    """A finished run that is read-only (another user's, an archive mounted read-only): writing
    report/ fails as root never sees it, so the write is played by the error it raises."""
    import errno

    from jaxcap.main import report

    workdir = existing(smoke())(tmp_path)

    def write_report(store):
        raise PermissionError(errno.EACCES, "Permission denied", str(store.report_path))

    monkeypatch.setattr(report, "resolve", lambda dotted: write_report)
    with pytest.raises(SystemExit) as info:
        report.main(["--workdir", str(workdir)])
    assert str(info.value) == (
        f"report error: cannot write {workdir / 'report'} (Permission denied); allowed: a workdir this "
        "user can write (copy a read-only one first: cp -r)"
    )


NO_ROWS = "no member rows (members.jsonl missing)"
FINISHED = "allowed: a workdir a finished launch wrote (rerun its launch command to finish it)"
REPORT_CASES = {  # workdir, what `python -m jaxcap.report` says after "report error: <workdir>: "
    "only config.json": (existing(smoke()), f"{NO_ROWS}; {FINISHED}"),
    "every member diverged": (  # as such a launch leaves it: evals, no member row
        existing(smoke(), {"evals.jsonl": '{"bucket": "b0", "step": 10}\n'}),
        f"{NO_ROWS}; evals.jsonl holds evals of a launch that stopped before a population finished "
        f"(every member diverged, or killed); {FINISHED}",
    ),
    "hpo with only config.json": (existing(hpo()), f"{NO_ROWS}; {FINISHED}"),
}


@pytest.mark.parametrize("name", REPORT_CASES)
def test_report_on_a_workdir_with_nothing_to_report_says_so_and_writes_nothing(tmp_path, name):
    """Not "cannot write report/report.md.tmp ... a workdir this user can write": the workdir is
    writable, it holds no rows."""
    from jaxcap.main import report

    make, message = REPORT_CASES[name]
    workdir = make(tmp_path)
    before = snapshot(workdir)
    with pytest.raises(SystemExit) as info:
        report.main(["--workdir", str(workdir)])
    assert str(info.value) == f"report error: {workdir}: {message}"
    assert snapshot(workdir) == before


def _one_line_on_stderr(out) -> str:
    """The launch's whole stderr is its one line: no traceback of Orbax's or asyncio's threads."""
    assert "Traceback" not in out.stderr and "Event loop is closed" not in out.stderr, out.stderr[-3000:]
    return _stderr_line(out)


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


# Commands besides the launch (reading a workdir, a benchmark, a study): each refuses its input in
# one line before it compiles or writes anything.
REPORT_CONFIGS = {  # config.json in a workdir -> the line `python -m jaxcap.report` ends with
    "unknown experiment (once a KeyError)": (
        '{"experiment": "nope"}',
        "config.json: experiment 'nope' is not one jaxcap knows; allowed: population, hpo, capacity",
    ),
    "not JSON (once a JSONDecodeError)": ('{"experiment": "popu', "config.json does not parse as JSON ("),
    "a JSON list (once an AttributeError)": ("[1, 2]", "config.json holds an array, not a JSON object"),
}


@pytest.mark.parametrize("name", list(REPORT_CONFIGS))
def test_report_on_a_config_json_it_cannot_read_is_one_line(tmp_path, name):
    from jaxcap.main import report

    text, message = REPORT_CONFIGS[name]
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "config.json").write_text(text)
    with pytest.raises(SystemExit) as info:
        report.main(["--workdir", str(tmp_path / "w")])
    line = str(info.value)
    assert line.startswith(f"report error: {tmp_path / 'w'}/") and message in line and "\n" not in line, line
    assert "allowed: " in line and os.listdir(tmp_path / "w") == ["config.json"]  # nothing written


def _junk_folder(t: Path) -> Path:
    (t / "junk").mkdir()
    (t / "junk" / "notes.txt").write_text("x")
    return t / "junk"


def _junk_part(t: Path) -> Path:
    (t / "parts" / "14k-a4000").mkdir(parents=True)
    (t / "parts" / "14k-a4000" / "part.json").write_text('{"rc": 0')
    return t / "parts"


LADDER_CASES = {  # tmp -> the arguments after `plan`; the line it ends with
    "--results missing": (lambda t: ["--results", str(t / "nope")], "--results: {t}/nope does not exist"),
    "--results a file": (lambda t: ["--results", str(a_file(t))], "--results: {t}/w is a file"),
    "--results a folder of no parts": (
        lambda t: ["--results", str(_junk_folder(t))],
        "--results: {t}/junk holds no <part>/part.json",
    ),
    "--results with a part.json that does not parse": (
        lambda t: ["--results", str(_junk_part(t))],
        "--results: {t}/parts/14k-a4000/part.json does not parse (",
    ),
    "--budget -5": (lambda t: ["--budget", "-5"], "--budget: got -5; allowed: a positive number"),
}


@pytest.mark.parametrize("name", list(LADDER_CASES))
def test_ladder_plan_refuses_a_bad_results_folder_or_budget_in_one_line(tmp_path, capsys, name):
    """Each once printed the whole plan and exited 0."""
    from studies import ladder

    args, message = LADDER_CASES[name]
    with pytest.raises(SystemExit) as info:
        ladder.main(["ladder", "plan", *args(tmp_path)])
    out = capsys.readouterr()
    assert info.value.code == 2 and out.out == "", out.out[:300]
    assert out.err.splitlines() == [out.err.strip()] and out.err.startswith("usage error: "), out.err
    assert message.format(t=tmp_path) in out.err and "; allowed: " in out.err, out.err


def test_count_compiles_refuses_a_cache_it_cannot_write_before_the_launch(tmp_path, capsys):
    """It once printed only {"exit": 1}: the launch's line was lost, and named a config field."""
    from jaxcap.main import count_compiles

    (tmp_path / "f").write_text("x")
    cache = tmp_path / "f" / "xla"
    assert count_compiles.main(["--cache", str(cache), *SMOKE, "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage error: --cache: cannot write {cache} (Not a directory); allowed:"), err
    assert len(err.splitlines()) == 1 and not (tmp_path / "w").exists()


def test_an_empty_variant_is_refused_naming_the_variants():
    """`configs/modmod.py:` (nothing after ':') once loaded the default job."""
    from jaxcap.fields import ConfigError

    with pytest.raises(ConfigError, match=r"^config variant: got '' .*allowed: smoke, full, or no ':'"):
        load_config(f"{ROOT / 'configs' / 'modmod.py'}:")
    assert load_config(f"{ROOT / 'configs' / 'modmod.py'}").train.steps > smoke().train.steps  # default


# Two errors in one config: the one named is the first in the order the checks are declared
# (types at the parse, then values in the schema's field order, then the rules between fields),
# whatever order the fields were set in.
TWO_ERRORS = [
    ({"seed": -1, "model.norm": "layer"}, "config.seed: got -1"),
    ({"model.norm": "layer", "train.steps": 45}, "config.model.norm: got 'layer'"),
    ({"train.steps": 45, "eval.val_threshold": 1.5}, "config.train.steps: got 45"),
    ({"eval.val_threshold": 1.5, "runtime.devices": 64}, "config.eval.val_threshold: got 1.5"),
]


@pytest.mark.parametrize("edits, first", TWO_ERRORS, ids=[" + ".join(e) for e, _ in TWO_ERRORS])
def test_of_two_errors_the_same_one_is_named_whichever_is_set_first(tmp_path, edits, first):
    lines = set()
    for order in (list(edits.items()), list(edits.items())[::-1]):
        with pytest.raises(Exception) as info:
            run(smoke(**dict(order)), str(tmp_path / "w"))
        lines.add(one_line(info.value))
    assert len(lines) == 1 and first in lines.pop()


@pytest.mark.slow
def test_the_commands_answer_in_one_line(tmp_path, fork_server):
    """bench's zero counts (once a ZeroDivisionError), count_compiles on a bad override (once only
    {"exit": 1}), and a launch with two unparsable values named in the config's order, not the
    command line's."""
    for module, args, line in [
        ("jaxcap.bench", ["--steps", "0"], "usage error: --steps: got 0; allowed: a positive integer"),
        ("jaxcap.bench", ["--repeats", "0"], "usage error: --repeats: got 0; allowed: a positive integer"),
        *(
            (
                "jaxcap.launch",
                [*SMOKE, *pair, "--workdir", str(tmp_path / "w")],
                "config error: flag --config.seed=",
            )
            for pair in (
                ["--config.seed=abc", "--config.model.d_model=x"],
                ["--config.model.d_model=x", "--config.seed=abc"],
            )
        ),
    ]:
        out = fork_server.run(module, *args)
        assert _stderr_line(out).startswith(line), (module, args, out.stderr[-2000:])
    out = fork_server.run(
        "jaxcap.main.count_compiles", *SMOKE, "--config.model.norm=layer", "--workdir", str(tmp_path / "w")
    )
    line = "config error: config.model.norm: got 'layer'; allowed: pre, post, none"
    assert out.returncode == 1 and out.stderr.strip() == line, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["error"] == line
    assert not (tmp_path / "w").exists()

"""What several test files share, defined once: the repository paths, the environment and the
command lines of a launch, the kill-and-resume machinery, and the smoke configs read back as
rows. Test files import from here, never from one another (pytest puts tests/ on sys.path
because conftest.py lives there)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("*.py"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # a launch subprocess imports this checkout
MODMOD_SMOKE = ["--config", "configs/modmod.py:smoke"]
HPO_SMOKE = ["--config", "configs/modmod_hpo.py:smoke", "--config.runtime.progress=False"]


def killer(appends: int, json_delay_s: float = 0.0) -> str:
    """A `python -c` launch that dies like SIGKILL (os._exit: nothing flushed or closed) right
    after its `appends`-th batch of evals was stored: the kill-and-resume tests. `json_delay_s`
    delays Orbax's writes of checkpoint JSON (as a large state does), so saves are in flight."""
    return f"""
import asyncio, os, sys
import jaxcap.results.store as store
from orbax.checkpoint._src.handlers.json_checkpoint_handler import JsonCheckpointHandler
save_json = JsonCheckpointHandler._save_fn
async def late(self, x, directory):
    await asyncio.sleep({json_delay_s})
    await save_json(self, x, directory)
JsonCheckpointHandler._save_fn = late
appended = 0
original = store.Store.append_evals
def append_then_die(self, *a, **k):
    global appended
    original(self, *a, **k)
    appended += 1
    if appended == {appends}:
        os._exit(137)
store.Store.append_evals = append_then_die
from absl import app
from jaxcap.main import launch
sys.argv = ["launch", *sys.argv[1:]]
app.run(launch.main, flags_parser=launch._parse)
"""


def command(*args, killer_code: str = "", module: str = "jaxcap.launch") -> list[str]:
    """The command line of `python -m module args` (or of the killer script `killer_code`)."""
    head = [sys.executable, "-c", killer_code] if killer_code else [sys.executable, "-m", module]
    return head + [str(a) for a in args]


_SERVER = []  # this test process's fork server, started by the first launch that needs it


def fork_server():
    """The test process's one fork_server.ForkServer (closed at exit): every `launch` without an
    `env` of its own runs in a child forked from it, without ~5 s of imports each."""
    if not _SERVER:
        import atexit

        from fork_server import ForkServer

        _SERVER.append(ForkServer())
        atexit.register(_SERVER[0].close)
    return _SERVER[0]


def launch(*args, killer_code: str = "", check: bool = True, env=None, module="jaxcap.launch", timeout=600):
    """Run an entry point in a child process from the checkout root and wait for it (forked from
    the fork server; a fresh `python` when `env` is given); with `check` a non-zero exit fails
    the test with the tail of both streams."""
    if env is None:
        out = fork_server().run(module, *args, code=killer_code, timeout=timeout)
    else:
        out = subprocess.run(
            command(*args, killer_code=killer_code, module=module),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if check and out.returncode != 0:
        raise AssertionError(f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


# a pilot launch that dies like SIGKILL right after the first round's line reached pilot.jsonl
KILL_AFTER_ROUND_1 = """
import os, sys
from jaxcap.experiments.pilot import rounds
append = rounds.append_round
def append_then_die(*args, **kwargs):
    append(*args, **kwargs)
    os._exit(137)
rounds.append_round = append_then_die
from absl import app
from jaxcap.main import launch
sys.argv = ["launch", *sys.argv[1:]]
app.run(launch.main, flags_parser=launch._parse)
"""


def pilot_choices(workdir) -> list[tuple]:
    """Each round of a pilot workdir's pilot.jsonl: (round, level, value, seeds, trials, successes)."""
    lines = (workdir / "pilot.jsonl").read_text().splitlines()
    return [
        (r["round"], r["level"], r["value"], r["seeds"], r["trials"], r["successes"])
        for r in map(json.loads, lines)
    ]


def capacity_row(**fields):
    """A `CapacityRow` (a line of capacity.jsonl) with made-up values for every field not given."""
    from jaxcap.results.records import CapacityRow

    base = dict(bucket="b0n10", arch=0, arch_label="", round=0, member=0, seed=0, learning_rate=0.01)
    base |= dict(dataset_size=10, dataset_bits=100.0, bits_stored=0.0, net_bits=0.0, exact_fraction=0.0)
    base |= dict(saturated=False, diverged=False, n_params=100, family="random_tokens", model={})
    return CapacityRow(**{**base, **fields})


def start(*args, killer_code: str = "", env=None, **popen) -> subprocess.Popen:
    """A launch left running (several workers at once); `finish` waits for it."""
    return subprocess.Popen(
        command(*args, killer_code=killer_code),
        cwd=ROOT,
        env=env or ENV,
        text=True,
        **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen},
    )


def finish(proc: subprocess.Popen, code: int = 0) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == code, f"exit {proc.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    return out


class Killed(BaseException):
    """A simulated kill at a phase boundary (a BaseException: no `except Exception` catches it)."""


def kill_at(monkeypatch, owner, name: str, n: int, before: bool = False) -> None:
    """`owner.name` raises Killed right after (or, with `before`, instead of) its n-th call."""
    original, calls = getattr(owner, name), []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if before and len(calls) == n:
            raise Killed(f"before {name} #{n}")
        out = original(*args, **kwargs)
        if len(calls) == n:
            raise Killed(f"after {name} #{n}")
        return out

    monkeypatch.setattr(owner, name, wrapper)


def delay_json_saves(monkeypatch, seconds: float = 0.2) -> None:
    """Orbax writes a checkpoint's JSON item on its own thread; make that late, as a large state
    does, so the host loop has moved on by the time the cursor is serialized."""
    import asyncio

    from orbax.checkpoint._src.handlers.json_checkpoint_handler import JsonCheckpointHandler

    save = JsonCheckpointHandler._save_fn

    async def late(self, x, directory):
        await asyncio.sleep(seconds)
        await save(self, x, directory)

    monkeypatch.setattr(JsonCheckpointHandler, "_save_fn", late)


def run_killed_then_resumed(monkeypatch, run_fn, workdir, phase) -> None:
    """`run_fn(workdir)` killed at `phase` = (owner, name, n[, before]), with every checkpoint
    save still in flight long after it was handed over; then run again to the end. The killed
    run's saves are let finish, as they do on disk."""
    from jaxcap.core.checkpoint import PopulationCheckpoints

    managers, init = [], PopulationCheckpoints.__init__

    def track(self, *args, **kwargs):
        init(self, *args, **kwargs)
        managers.append(self.manager)

    with monkeypatch.context() as m:
        m.setattr(PopulationCheckpoints, "__init__", track)
        delay_json_saves(m)
        kill_at(m, *phase)
        with pytest.raises(Killed):
            run_fn(workdir)
        for manager in managers:
            manager.wait_until_finished()
    run_fn(workdir)


def load_module(path: Path):
    """A configs/*.py file as a module (its get_config and variants)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def smoke_config(spec: str):
    """`configs/x.py:variant` loaded from the checkout, without a progress bar."""
    from jaxcap.config.base import load_config

    config = load_config(ROOT / spec)
    config.runtime.progress = False
    return config


def rows_by_level(workdir) -> dict:
    """A finished run's member rows grouped by (bucket label, *knobs), each with the fields a
    learning assertion reads."""
    from jaxcap.results.store import Store

    rows = Store(workdir).member_rows()
    for row in rows:
        for field in ("family", "knobs", "complexity_bits", "chance", "success_metric", "success"):
            assert field in row, field
    levels = {}
    for row in rows:
        levels.setdefault((row["bucket_label"], *row["knobs"].values()), []).append(row)
    return levels


def success(rows) -> list:
    return [r["final"][r["success_metric"]] for r in rows]


def run_smoke(spec: str, tmp_path) -> dict:
    """Run a family's smoke config in this process; its report exists; rows by level."""
    from jaxcap.run import run

    run(smoke_config(spec), str(tmp_path))
    for name in ("report.md", "success_vs_complexity.png", "dynamics.png", "generalization_gap.png"):
        assert (tmp_path / "report" / name).exists(), name
    return rows_by_level(tmp_path)


# A child process that holds a workdir's writer lock until it is killed.
HOLD = """
import sys, time
from jaxcap.results.store import Store
with Store(sys.argv[1]).writer():
    print("holding", flush=True)
    time.sleep(600)
"""


def hpo_smoke_config(storage: str = ""):
    """configs/modmod_hpo.py:smoke on the given study storage (default: the workdir's journal)."""
    from jaxcap.config.base import load_config

    c = load_config(f"{ROOT / 'configs' / 'modmod_hpo.py'}:smoke")
    c.study.storage = storage
    return c


def objective(row, penalty=0.5):
    """The smoke sweep's objective for one member row, as the study computes it."""
    return row["final"]["val_accuracy"] - penalty * max(row["final"]["gap"], 0.0)


def check_budget(c, storage_root, workdirs):
    """Every study holds exactly its budget, all finished, each trial's seeds in one workdir."""
    import numpy as np
    import optuna
    from optuna.trial import TrialState

    from jaxcap.experiments.hpo import study as study_lib
    from jaxcap.results.store import Store

    rows = [r for w in workdirs for r in Store(w).member_rows()]
    storage = study_lib.make_storage(c.study.storage, storage_root)
    for level in study_lib.levels(c.sweep.task.to_dict()):
        name = study_lib.study_name(c.study, "modulo", level)
        trials = optuna.load_study(study_name=name, storage=storage).trials
        assert [t.number for t in trials] == list(range(c.study.n_trials))
        assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) for t in trials)
        seeds = sorted((r["trial"], r["seed"]) for r in rows if r["study"] == name)
        assert seeds == [(t, s) for t in range(c.study.n_trials) for s in range(c.sweep.seeds)], name
        for t in trials:
            if t.state == TrialState.COMPLETE:
                mine = [objective(r) for r in rows if r["study"] == name and r["trial"] == t.number]
                assert t.values[0] == pytest.approx(np.mean(mine), rel=1e-12)


def member_row(**fields) -> dict:
    """A members.jsonl row with every key a `MemberRow` needs (jaxcap.results.records), for tests
    of code that reads rows without training any: `fields` override or add keys."""
    row = {
        "bucket": "b0",
        "member": 0,
        "seed": 0,
        "status": "ok",
        "family": "modulo",
        "knobs": {"modulus": 5},
        "hparams": {"learning_rate": 1e-3},
        "complexity_bits": 2.32,
        "success_metric": "test_accuracy",
        "success_threshold": 0.95,
        "higher_is_better": True,
        "success": False,
        "final": {"val_accuracy": 0.3, "test_accuracy": 0.3},
        "n_params": 4065,
        "model": {"n_layers": 1, "d_model": 16},
    }
    return {**row, **fields}


def level_summary(**fields):
    """A `LevelSummary` (jaxcap.results.records) of one modulo level, for tests of figures and
    tables drawn from summaries: `fields` override the defaults."""
    from jaxcap.results.records import LevelSummary

    default = dict(bucket="b0", bucket_label="", family="modulo", knobs={"modulus": 5}, complexity_bits=2.32)
    default |= dict(metric="test_accuracy", select_metric="val_accuracy", threshold=0.95, best={}, values=[])
    default |= dict(median=None, min=None, max=None, val=None, chance=0.1, shortcut=None, shortcut_name=None)
    default |= dict(
        steps_to_val=None, n_reached=0, n=2, n_success=0, entropy=None, diverged=0, diverged_all=0
    )
    default |= dict(n_all=2, higher_is_better=True, learned=False)
    return LevelSummary(**(default | fields))


def bucket_killer(bucket: str, appends: int) -> str:
    """`killer`, counting only the evals stored for `bucket`: the launch dies right after that
    bucket's `appends`-th eval, wherever a resume before it restarted (a killed bucket resumes
    from whichever of its checkpoints had committed, so a count over all buckets would vary)."""
    return f"""
import os, sys
import jaxcap.results.store as store
appended = 0
original = store.Store.append_evals
def append_then_die(self, bucket, *a, **k):
    global appended
    original(self, bucket, *a, **k)
    appended += bucket == {bucket!r}
    if appended == {appends}:
        os._exit(137)
store.Store.append_evals = append_then_die
from absl import app
from jaxcap.main import launch
sys.argv = ["launch", *sys.argv[1:]]
app.run(launch.main, flags_parser=launch._parse)
"""


def meta_nuts():
    """The NUTS settings of the meta-model tests on simulated data (test_metamodel,
    test_meta_anchor, test_meta_bench): every fit of the simulated table's shape runs one
    sampler program, compiled once (then the persistent cache) for all of them."""
    from jaxcap.meta.fit import NutsSettings

    return NutsSettings(warmup=300, samples=300, chains=2, seed=0)

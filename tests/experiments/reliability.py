"""Reliability cases of sweep workers sharing one SQLite storage, at the smoke size: each case
starts workers with soak.py's flags (random sampler, no pruner, 20 steps, 3 studies), provokes one
failure and prints one JSON line of what happened and what the storage and workdirs hold.
docs/reliability.md tabulates them.

    python tests/experiments/reliability.py --case CASE [--out DIR]

Cases: grace (a worker started with a 12 s grace next to a live one with the default 10 min),
killed_before_tell (a worker killed after writing its rows, before telling; another takes over,
then the killed one reruns), mixed_configs (a worker of another model and steps joins the
studies), busy_workdir (a launch on a workdir a live run holds, 10 tries), stopped_worker (a
worker stopped past its own grace period, then continued), two_workers, kill_and_reclaim (a
worker killed mid-trial; another takes its trials over after its grace) and three_workers (three
workdirs of one study to read together: killed before telling, the taker-over, one left RUNNING).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from soak import ROOT, _env, count, overrides

sys.path.insert(0, str(ROOT))
N_TRIALS, BATCH, SEEDS = 2, 2, 2  # a worker's first round claims every trial of each study
DIE_AFTER = """
import os, sys
import jaxcap.results.store as store
original, calls = getattr(store.Store, {method!r}), []
def then_die(self, *a, **k):
    original(self, *a, **k)
    calls.append(1)
    if len(calls) == {n}:
        os._exit(137)  # as SIGKILL: nothing flushed, nothing told
setattr(store.Store, {method!r}, then_die)
from absl import app
from jaxcap.main import launch
sys.argv = ["launch", *sys.argv[1:]]
app.run(launch.main, flags_parser=launch._parse)
"""


def _args(storage: str, name: str, grace: float = 0.2, n_trials: int = N_TRIALS, extra=()) -> list[str]:
    args = [a for a in overrides(storage, name, n_trials, BATCH) if "worker_grace_minutes" not in a]
    return [*args, f"--config.runtime.worker_grace_minutes={grace:g}", *extra]


def _start(args: list[str], workdir: Path, die: tuple[str, int] | None = None) -> subprocess.Popen:
    head = ["-c", DIE_AFTER.format(method=die[0], n=die[1])] if die else ["-m", "jaxcap.launch"]
    log = open(workdir.parent / f"{workdir.name}.log", "a")  # noqa: SIM115 (the child holds it)
    cmd = [sys.executable, *head, *args, "--workdir", str(workdir)]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT)


def _log(workdir: Path) -> str:
    path = workdir.parent / f"{workdir.name}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def _wait_for(workdir: Path, text: str, timeout_s: float = 600) -> None:
    deadline = time.time() + timeout_s
    while text not in _log(workdir):
        if time.time() > deadline:
            raise TimeoutError(f"{workdir.name} never printed {text!r}")
        time.sleep(0.5)


def _create(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "jaxcap.launch", *args, "--create_studies"]
    subprocess.run(cmd, cwd=ROOT, env=_env(), check=True, capture_output=True)


def _as_read(workdirs: list[Path]) -> int:
    """Trials counted twice by a reader that reads rows as every reader does (told.counted_rows)."""
    from jaxcap.results import told
    from jaxcap.results.store import Store

    seen: dict[tuple, set[str]] = {}
    for w in workdirs:
        for r in told.counted_rows(w, Store(w).members()):
            seen.setdefault((r.study, r.trial), set()).add(w.name)
    return sum(len(holders) > 1 for holders in seen.values())


def _summary(storage: str, name: str, workdirs: list[Path]) -> dict:
    counted = count(storage, name, workdirs, SEEDS, None)
    logs = "".join(_log(w) for w in workdirs)
    keep = ("trials", "states", "lost", "duplicated", "left_running", "taken_over")
    return {
        **{k: counted[k] for k in keep},
        "duplicated_as_read": _as_read(workdirs),
        "tracebacks": logs.count("Traceback"),
        "dropped_lost_trials": logs.count("another worker took it over"),
    }


def case_grace(out: Path, storage: str, name: str) -> dict:
    live, short = out / "live", out / "short"
    _create(_args(storage, name))
    a = _start(_args(storage, name, 10.0), live)
    _wait_for(live, "[round")  # it holds every trial now, and beats every minute
    b = _start(_args(storage, name, 0.2), short)
    codes = [a.wait(), b.wait()]
    return {"exit_codes": codes, **_summary(storage, name, [live, short])}


def case_stopped_worker(out: Path, storage: str, name: str) -> dict:
    """A worker stopped (SIGSTOP) past its own grace period loses its trials, then goes on."""
    stopped, other = out / "stopped", out / "other"
    _create(_args(storage, name))
    a = _start(_args(storage, name), stopped)
    _wait_for(stopped, "[round")
    os.kill(a.pid, signal.SIGSTOP)  # silent: no heartbeat, no eval
    b = _start(_args(storage, name), other)
    _wait_for(other, "[round")  # it released the stopped worker's trials and claimed them
    os.kill(a.pid, signal.SIGCONT)
    codes = [a.wait(), b.wait()]
    return {"exit_codes": codes, **_summary(storage, name, [stopped, other])}


def case_killed_before_tell(out: Path, storage: str, name: str) -> dict:
    dead, other = out / "dead", out / "other"
    _create(_args(storage, name))
    codes = [_start(_args(storage, name), dead, die=("add_member_rows", 1)).wait()]
    codes.append(_start(_args(storage, name), other).wait())  # takes over after 12 s, tells
    before = _summary(storage, name, [dead, other])
    codes.append(_start(_args(storage, name), dead).wait())  # the killed worker's rerun
    after = _summary(storage, name, [dead, other])
    return {"exit_codes": codes, "before_rerun": before, "after_rerun": after}


def case_three_workers(out: Path, storage: str, name: str) -> dict:
    """Three workdirs of one study: `dead` killed after writing rows, before telling; `other` took
    its trials over and told them; `running` claimed one more trial per study (a budget of 3) and
    was killed after writing its rows, so that trial stays RUNNING with rows on disk."""
    dead, other, running = out / "w1", out / "w2", out / "w3"
    _create(_args(storage, name))
    codes = [_start(_args(storage, name), dead, die=("add_member_rows", 1)).wait()]
    codes.append(_start(_args(storage, name), other).wait())  # takes over after 12 s, tells
    codes.append(
        _start(_args(storage, name, n_trials=N_TRIALS + 1), running, die=("add_member_rows", 1)).wait()
    )
    return {
        "exit_codes": codes,
        "workdirs": [str(w) for w in (dead, other, running)],
        **_summary(storage, name, [dead, other, running]),
    }


def case_mixed_configs(out: Path, storage: str, name: str) -> dict:
    _create(_args(storage, name))
    mixed = ("--config.train.steps=30", "--config.model.d_model=32", "--config.model.d_head=16")
    start = time.time()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxcap.launch",
            *_args(storage, name, extra=mixed),
            "--workdir",
            str(out / "m"),
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
    )
    trained = any((out / "m" / f).exists() for f in ("members.jsonl", "evals.jsonl", "ckpt"))
    return {
        "exit_code": proc.returncode,
        "seconds": round(time.time() - start, 1),
        "stderr": proc.stderr.strip().splitlines()[-1:],
        "trained_anything": trained,
    }


def case_busy_workdir(out: Path, storage: str, name: str, tries: int = 10) -> dict:
    from jaxcap.results import lock

    lock.take_early(out / "busy")  # this process is the live run
    cmd = [
        sys.executable,
        "-m",
        "jaxcap.launch",
        "--config",
        "configs/modmod.py",
        "--workdir",
        str(out / "busy"),
    ]
    seconds, lines = [], set()
    for _ in range(tries):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True)
        seconds.append(time.perf_counter() - start)
        lines.add(proc.stderr.strip()[:60])
    return {
        "median_s": round(statistics.median(seconds), 3),
        "range_s": [round(min(seconds), 3), round(max(seconds), 3)],
        "load_average": os.getloadavg(),
        "said": sorted(lines),
    }


def case_two_workers(out: Path, storage: str, name: str) -> dict:
    workers, args = [out / "w0", out / "w1"], _args(storage, name, n_trials=2 * BATCH)  # a round each
    _create(args)
    codes = [p.wait() for p in [_start(args, w) for w in workers]]
    return {"exit_codes": codes, **_summary(storage, name, workers)}


def case_kill_and_reclaim(out: Path, storage: str, name: str) -> dict:
    killed, other = out / "killed", out / "other"
    _create(_args(storage, name))
    codes = [_start(_args(storage, name), killed, die=("append_evals", 1)).wait()]  # after 1 of 2 evals
    codes.append(_start(_args(storage, name), other).wait())
    codes.append(_start(_args(storage, name), killed).wait())  # its rerun: nothing left to train
    return {"exit_codes": codes, **_summary(storage, name, [killed, other])}


CASES = {k.removeprefix("case_"): v for k, v in globals().items() if k.startswith("case_")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    parser.add_argument("--out", default="")
    a = parser.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix=f"jaxcap-{a.case}-"))
    out.mkdir(parents=True, exist_ok=True)
    storage, name = f"sqlite:///{out / 'shared.db'}", f"rel-{uuid.uuid4().hex[:8]}"
    start = time.time()
    result = CASES[a.case](out, storage, name)
    print(json.dumps({"case": a.case, **result, "wall_s": round(time.time() - start)}), flush=True)


if __name__ == "__main__":
    main()

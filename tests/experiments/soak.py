"""Soak test of sweep workers on one storage: start them together and staggered, kill -9 them at
random moments (in compiles, rounds, tells), rerun them (at once, or after the grace period so
that the others take their trials over), and count what the storage and the workers' tables hold.

    python tests/experiments/soak.py --storage sqlite|journal|postgresql [--workers 3] [--kills 6] \
        [--n_trials 8] [--batch_trials 2] [--seed 0] [--out DIR]

Prints one JSON line: workers, kills, trials, complete/pruned/failed, lost (a trial not finished,
or finished with no rows in any workdir), duplicated (a trial whose rows are in two workdirs, or
more rows than seeds), max_value_diff (the largest |value - the value of a single-worker run of
the same trial|: the sampler is random, seeded by the trial's number, and there is no pruner, so
the two are comparable). PostgreSQL uses JAXCAP_TEST_POSTGRES_URL or a throwaway server
(tests/postgres_server.py). tests/experiments/test_soak.py runs a small one; docs/hpo.md quotes larger ones.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
GRACE_MINUTES = 0.2  # 12 s: a killed worker not rerun by then has its trials taken over


def overrides(storage: str, name: str, n_trials: int, batch: int) -> list[str]:
    return [
        "--config",
        "configs/modmod_hpo.py:smoke",
        f"--config.study.storage={storage}",
        f"--config.study.name={name}",
        f"--config.study.n_trials={n_trials}",
        f"--config.study.batch_trials={batch}",
        "--config.study.sampler=random",
        "--config.study.pruner=none",
        "--config.train.steps=20",
        "--config.runtime.progress=False",
        f"--config.runtime.worker_grace_minutes={GRACE_MINUTES}",
    ]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "JAXCAP_CACHE": str(ROOT / ".jax_cache")}


def _start(args: list[str], workdir: Path, log) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "jaxcap.launch", *args, "--workdir", str(workdir)]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT)


def _since(log: Path, offset: int) -> str:
    with open(log, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def run_workers(args: list[str], out: Path, n_workers: int, n_kills: int, rng: random.Random) -> dict:
    """Run the workers to the end, with n_kills kill -9s; returns what happened."""
    logs = {i: open(out / f"w{i}.log", "a") for i in range(n_workers)}  # noqa: SIM115
    procs: dict[int, subprocess.Popen] = {}
    started: dict[int, int] = {}  # where each worker's current run begins in its log
    # when a worker may be killed: 0-15 s after it claimed its first round (its log says "[round"),
    # so the kill lands in a compile, a chunk, a checkpoint, a tell or the next claim
    killable: dict[int, float] = {}
    pending = {
        i: time.time() + (0 if i % 2 == 0 else rng.uniform(1, 8)) for i in range(n_workers)
    }  # staggered
    kills, next_kill, failures = 0, time.time() + rng.uniform(0, 10), []
    while procs or pending:
        now = time.time()
        for i, when in list(pending.items()):
            if now >= when:
                logs[i].flush()
                procs[i], started[i] = (
                    _start(args, out / f"w{i}", logs[i]),
                    (out / f"w{i}.log").stat().st_size,
                )
                killable.pop(i, None)
                del pending[i]
        for i, proc in list(procs.items()):
            if proc.poll() is not None:
                del procs[i]
                if proc.returncode not in (0, -9):
                    failures.append((i, proc.returncode))
        for i in procs:  # start-up (imports) takes seconds: kill a worker once it holds a round
            if i not in killable and "[round" in _since(out / f"w{i}.log", started[i]):
                killable[i] = now + rng.uniform(0, 15)
        ready = sorted(i for i in killable if i in procs and now > killable[i])
        if kills < n_kills and now >= next_kill and ready:
            i = rng.choice(ready)
            procs.pop(i).kill()  # SIGKILL: nothing flushed, no lock left (the kernel drops it)
            kills += 1
            logs[i].write(f"\n=== soak: killed after kill {kills} ===\n")
            logs[i].flush()
            # its own rerun reclaims its trials, or (after the grace period) the other workers do
            pending[i] = now + (
                rng.uniform(0, 3) if rng.random() < 0.5 else 60 * GRACE_MINUTES + rng.uniform(2, 10)
            )
            next_kill = now + rng.uniform(3, 20)
        time.sleep(0.2)
    for log in logs.values():
        log.close()
    return {"kills": kills, "failures": failures}


def count(storage: str, name: str, workdirs: list[Path], seeds: int, reference: dict | None) -> dict:
    """What the storage and the workdirs hold: lost, duplicated, left RUNNING, value differences.
    Values are keyed by level and trial ("/modulus=5#0"), not by the study name: a reference run
    under another name compares."""
    import optuna

    from jaxcap.experiments.hpo import study as study_lib
    from jaxcap.results.store import read_jsonl

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = study_lib.make_storage(storage, workdirs[0].parent)
    holders: dict[tuple[str, int], collections.Counter] = collections.defaultdict(collections.Counter)
    for w in workdirs:
        for row in read_jsonl(w / "members.jsonl"):
            holders[(row["study"], row["trial"])][w.name] += 1
    states, lost, duplicated, diffs, values, taken_over = collections.Counter(), [], [], [], {}, 0
    for summary in optuna.get_all_study_summaries(store):
        if summary.study_name != name and not summary.study_name.startswith(name + "/"):
            continue
        for t in optuna.load_study(study_name=summary.study_name, storage=store).trials:
            key = (summary.study_name, t.number)
            states[t.state.name] += 1
            taken_over += any(k.startswith("released:") for k in t.user_attrs)
            held = holders.pop(key, collections.Counter())
            if not t.state.is_finished() or not held:
                lost.append(key)
            elif len(held) > 1 or sum(held.values()) != seeds:
                duplicated.append(key)
            if t.values:
                level = f"{key[0][len(name) :]}#{key[1]}"
                values[level] = t.values[0]
                if reference is not None and level in reference:
                    diffs.append(abs(t.values[0] - reference[level]))
    duplicated += list(holders)  # rows of trials the storage does not hold
    return {
        "trials": sum(states.values()),
        "states": dict(states),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "left_running": states["RUNNING"] + states["WAITING"],
        "taken_over": taken_over,  # trials released from a silent worker and trained by another
        "max_value_diff": max(diffs) if diffs else None,
        "values": values,
        "lost_trials": lost[:10],
        "duplicated_trials": duplicated[:10],
    }


def reference_values(out: Path, n_trials: int, batch: int) -> dict:
    """One worker, never killed, on its own journal: each trial's value by level and trial number.
    The draws depend on the level and the trial number only, so one reference serves the soaks of
    every storage with the same sizes."""
    name = f"ref-{uuid.uuid4().hex[:8]}"
    ref_args = overrides(str(out / "ref.log"), name, n_trials, batch)
    ref = subprocess.run(
        [sys.executable, "-m", "jaxcap.launch", *ref_args, "--workdir", str(out / "ref")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert ref.returncode == 0, ref.stderr[-2000:]
    return count(str(out / "ref.log"), name, [out / "ref"], 2, None)["values"]


def soak(
    kind: str,
    out: Path,
    workers: int,
    kills: int,
    n_trials: int,
    batch: int,
    seed: int,
    url: str = "",
    reference: dict | None = None,
) -> dict:
    """Create the studies, run the workers with their kills, count; `reference` (from
    `reference_values` with the same n_trials and batch) or a reference run of its own."""
    rng, name = random.Random(seed), f"soak-{uuid.uuid4().hex[:8]}"
    storage = {"sqlite": f"sqlite:///{out / 'shared.db'}", "journal": str(out / "shared.log")}.get(kind, url)
    args = overrides(storage, name, n_trials, batch)
    start = time.time()
    subprocess.run(
        [sys.executable, "-m", "jaxcap.launch", *args, "--create_studies"], cwd=ROOT, env=_env(), check=True
    )
    happened = run_workers(args, out, workers, kills, rng)
    wall = time.time() - start
    if reference is None:
        reference = reference_values(out, n_trials, batch)
    counted = count(storage, name, [out / f"w{i}" for i in range(workers)], 2, reference)
    counted.pop("values")
    logs = "".join((out / f"w{i}.log").read_text(errors="replace") for i in range(workers))
    happened["resumed_rounds"] = logs.count("trials left by a killed run")
    happened["tracebacks"] = logs.count("Traceback")
    return {"storage": kind, "workers": workers, **happened, **counted, "wall_s": round(wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", choices=("sqlite", "journal", "postgresql"), required=True)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--n_trials", type=int, default=8)
    parser.add_argument("--batch_trials", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="")
    a = parser.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="jaxcap-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        url = ""
        if a.storage == "postgresql":
            from postgres_server import postgres_url

            url = stack.enter_context(postgres_url())
        print(json.dumps(soak(a.storage, out, a.workers, a.kills, a.n_trials, a.batch_trials, a.seed, url)))


if __name__ == "__main__":
    main()

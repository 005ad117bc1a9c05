"""The real entry point on the smoke config: end to end, finished-run detection, kill-and-resume
with identical results (a real SIGKILL with a checkpoint save in flight, and a simulated kill at
every phase boundary of a run), a finished run with torn tables, and one-line flag errors.
Besides the shared smoke run (conftest.py), launches are children of the fork server
(fork_server.ForkServer): `python -m jaxcap.launch` without its seconds of imports each time."""

import json
import shutil
from pathlib import Path

import pytest
from helpers import MODMOD_SMOKE as SMOKE
from helpers import ROOT, killer, run_killed_then_resumed

pytestmark = pytest.mark.slow  # end-to-end launches and multi-process runs: the full tier

# Runs the launch in a child process that dies (os._exit, like SIGKILL: nothing is flushed or
# closed) after the evals of chunk 3 were appended, before their checkpoint. Checkpoints are
# asynchronous, and their JSON is written late here (as with a large state): orbax starts a save
# only after the previous one committed, so step 10 is on disk and step 20 is still in flight.
KILLER = killer(3, json_delay_s=0.5)


@pytest.fixture
def forked(fork_server):
    """A launch (killed after chunk 3 with `killer`) forked from the fork server (fork_server.ForkServer),
    as `python -m jaxcap.launch` / `python -c KILLER` would run it, without paying their imports."""
    return lambda *args, killer=False, check=True: fork_server.launch(
        *args, killer_code=KILLER if killer else "", check=check
    )


def _rows(workdir):
    rows = [json.loads(line) for line in (Path(workdir) / "members.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("model")
    return rows


def test_smoke_end_to_end_then_finished(modmod_smoke, forked):
    workdir, out = modmod_smoke
    assert "modulus" in out.stdout and "median" in out.stdout  # the table
    for name in (
        "config.json",
        "members.jsonl",
        "evals.jsonl",
        "curves.zarr",
        "report/accuracy_vs_complexity.png",
    ):
        assert (workdir / name).exists(), name
    rows = _rows(workdir)
    assert len(rows) == 6 and {r["knobs"]["modulus"] for r in rows} == {5, 7, 10}
    assert all(r["status"] == "ok" and r["complexity_bits"] > 0 and 0 < r["chance"] < 1 for r in rows)
    evals = (workdir / "evals.jsonl").read_text().splitlines()
    assert len(evals) == 6 * 4  # members x (40 steps / 10 per chunk)
    before = {p: p.read_bytes() for p in workdir.glob("*.jsonl")}
    again = forked(*SMOKE, "--workdir", str(workdir))
    assert "finished" in again.stdout and before == {p: p.read_bytes() for p in workdir.glob("*.jsonl")}
    assert "wrote members.jsonl" in out.stdout and "reused members.jsonl, members.csv" in again.stdout
    assert "wrote members.jsonl" not in again.stdout  # a finished rerun touched no table


def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path, modmod_smoke, forked):
    straight, killed = modmod_smoke[0], tmp_path / "killed"
    dead = forked(*SMOKE, "--workdir", str(killed), killer=True, check=False)
    assert dead.returncode == 137, dead.stderr[-2000:]
    assert not (killed / "members.jsonl").exists()
    assert len((killed / "evals.jsonl").read_text().splitlines()) == 18  # 3 evals, at most 2 checkpointed
    resumed = forked(*SMOKE, "--workdir", str(killed))
    assert "resuming from step 10" in resumed.stdout  # step 20 was in flight
    assert _rows(straight) == _rows(killed)
    assert (straight / "evals.jsonl").read_text() == (killed / "evals.jsonl").read_text()


# What only the launcher sees: overrides it parses (the values the config checks are in the table
# of tests/test_bad_inputs.py, run in-process).
@pytest.mark.parametrize(
    "override,message",
    [
        ("--config.model.nrom=pre", "config.model.nrom: unknown field; did you mean config.model.norm?"),
        ("--config.train.batch_size=abc", "config.train.batch_size"),
    ],
)
def test_bad_config_is_one_line_before_compiling(tmp_path, forked, override, message):
    out = forked(*SMOKE, override, "--workdir", str(tmp_path / "w"), check=False)
    assert out.returncode == 2  # a usage error
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "w").exists()


def test_buckets_from_the_command_line(tmp_path, forked):
    """Two buckets that share the smoke run's compiled program (hparams are traced; buckets of
    another architecture are trained by the recall and capacity smoke tests)."""
    buckets = "('hparams.learning_rate=0.003','hparams.learning_rate=0.005')"
    out = forked(*SMOKE, f"--config.sweep.buckets={buckets}", "--workdir", str(tmp_path))
    rows = _rows(tmp_path)
    assert {r["bucket"] for r in rows} == {"b0", "b1"} and len(rows) == 12
    assert {r["hparams"]["learning_rate"] for r in rows if r["bucket"] == "b1"} == {0.005}
    assert "bucket" in out.stdout and "hparams.learning_rate=0.005" in out.stdout
    assert (tmp_path / "curves.zarr" / "b1").exists()


def _population_config():
    """The smoke config as two buckets that share one compiled program (hparams are traced)."""
    from jaxcap.config.base import load_config

    c = load_config(f"{ROOT / 'configs' / 'modmod.py'}:smoke")
    c.sweep.buckets = ("hparams.learning_rate=0.003", "hparams.learning_rate=0.005")
    c.runtime.progress = False
    return c


@pytest.fixture(scope="module")
def straight_population(tmp_path_factory):
    from jaxcap.run import run

    workdir = tmp_path_factory.mktemp("straight")
    run(_population_config(), str(workdir))
    return workdir


def _population_phases():
    from jaxcap.core import checkpoint
    from jaxcap.reports import population_figures as report
    from jaxcap.results import store

    return {
        "config written": (store.Store, "write_config", 1),
        "first evals stored, not checkpointed": (store.Store, "append_evals", 1),
        "second checkpoint in flight": (checkpoint.PopulationCheckpoints, "save", 2),
        "third evals stored": (store.Store, "append_evals", 3),
        "bucket b0 finished": (store.Store, "add_member_rows", 1),
        "report half written": (report, "population_figures", 1, True),
    }


@pytest.mark.parametrize("phase", list(_population_phases()))
def test_a_population_killed_at_any_phase_resumes_to_identical_tables(
    tmp_path, monkeypatch, straight_population, phase
):
    from jaxcap.run import run

    run_killed_then_resumed(
        monkeypatch, lambda w: run(_population_config(), str(w)), tmp_path, _population_phases()[phase]
    )
    for name in ("members.jsonl", "evals.jsonl"):
        assert (tmp_path / name).read_bytes() == (straight_population / name).read_bytes(), name
    assert (tmp_path / "report" / "report.md").exists()


DAMAGE = {
    "torn": lambda line: line[:25] + b"\n",  # a kill in the middle of a write
    "not UTF-8": lambda line: b"\xff\xfe\x00" + line[3:25] + b"\x80\n",  # a damaged disk
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_finished_run_with_torn_tables_rebuilds_its_rows_and_says_what_is_missing(
    tmp_path, straight_population, capsys, damage
):
    """Line 3 of members.jsonl and line 10 of evals.jsonl torn (or not even text) in a finished
    run: the rerun rebuilds the member rows from the checkpoint (all three levels reported,
    byte-identical), keeps every valid eval row and says the evals table holds one row less than
    the checkpoint; the bad lines are quarantined, as read."""
    from jaxcap.run import run

    workdir = tmp_path / "w"
    shutil.copytree(straight_population, workdir)
    for name, number in (("members.jsonl", 3), ("evals.jsonl", 10)):
        lines = (workdir / name).read_bytes().splitlines(keepends=True)
        lines[number - 1] = DAMAGE[damage](lines[number - 1])
        (workdir / name).write_bytes(b"".join(lines))
    run(_population_config(), str(workdir))
    assert (workdir / "members.jsonl").read_bytes() == (straight_population / "members.jsonl").read_bytes()
    evals = (workdir / "evals.jsonl").read_text().splitlines()
    assert evals == [
        line
        for i, line in enumerate((straight_population / "evals.jsonl").read_text().splitlines())
        if i != 9
    ]
    out = capsys.readouterr().out
    assert "[b0] evals.jsonl holds 23 of the 24 rows that its checkpoint (step 40) recorded" in out
    assert "modulus" in out and all(f" {n} " in out for n in (5, 7, 10))  # the table, every level


def test_a_finished_run_whose_newest_cursor_is_garbled_reports_again(tmp_path, straight_population, capsys):
    """The cursor of the newest checkpoint does not parse: the step before it is read instead."""
    from jaxcap.run import run

    workdir = tmp_path / "w"
    shutil.copytree(straight_population, workdir)
    newest = max(
        (p for p in (workdir / "ckpt" / "b0").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    )
    for path in (newest / "cursor").rglob("*"):
        if path.is_file():
            path.write_bytes(b'{"st\xff')
    run(_population_config(), str(workdir))
    out = capsys.readouterr().out
    assert f"warning: checkpoint b0 step {newest.name}: cursor does not read" in out
    assert "modulus" in out and "rows that its checkpoint" not in out  # the table; no row missing
    assert (workdir / "members.jsonl").read_bytes() == (straight_population / "members.jsonl").read_bytes()

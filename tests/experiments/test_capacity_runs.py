"""configs/capacity.py:smoke end to end through the launcher (its rows, report and reads, a rerun
that trains nothing, a killed run resumed to the same bytes) and a capacity that no longer
depends on the training budget once the curve is flat."""

import json
import re
import subprocess

import pytest
from helpers import ROOT, smoke_config
from helpers import killer as killer_script
from helpers import launch as _launch

from jaxcap.config.base import load_config
from jaxcap.results import capacity_reading
from jaxcap.results.capacity_reading import saturated_capacity
from jaxcap.results.capacity_summary import CapacitySummary
from jaxcap.results.records import CapacityRow

SMOKE = ["--config", "configs/capacity.py:smoke"]


def launch(workdir, *args, killer: int = 0) -> subprocess.CompletedProcess:
    code = killer_script(killer) if killer else ""
    return _launch(*SMOKE, "--workdir", workdir, *args, killer_code=code, check=False, timeout=900)


@pytest.mark.slow
def test_capacity_smoke_end_to_end_report_resume_and_kill(tmp_path, capsys):
    """configs/capacity.py:smoke launched straight, then killed and resumed: one test, so that
    the straight run, which both read, is launched once (xdist runs a module fixture once per
    worker that needs it)."""
    straight = tmp_path / "straight"
    out = launch(straight)
    assert out.returncode == 0, out.stderr[-3000:]
    _check_rows_report_and_rerun(straight, out.stdout, capsys)
    _check_killed_run_resumes_to_the_same_bytes(straight, tmp_path / "killed")


def _check_rows_report_and_rerun(workdir, stdout, capsys):
    """The straight run's rows (rounds, budgets, steps), its report rebuilt from the workdir
    alone, its capacity read by label, model fields and budget (and by the meta-model's anchor),
    and a rerun that trains nothing (in this process: the launcher's own resume is the kill's)."""
    assert "bits per parameter at each exposure budget" in stdout and "over the last doubling" in stdout
    # one program set per architecture for every size of both rounds: 6 each (init, data, chunk,
    # evaluate, baselines, the per-item scores), nothing compiled to make keys or hyperparameters
    [programs] = re.findall(r"^compiled (\d+) programs", stdout, re.M)
    assert int(programs) <= 12, programs
    lines = (workdir / "capacity.jsonl").read_text().splitlines()
    rows = [CapacityRow.from_json(json.loads(line)) for line in lines]
    assert [json.dumps(r.to_json(), sort_keys=True) for r in rows] == lines  # written as read
    assert {r.arch for r in rows} == {0, 1}
    for arch in (0, 1):  # a round is added exactly while the sizes have not plateaued (max 2 rounds)
        mine = [r for r in rows if r.arch == arch]
        last = max(r.round for r in mine)
        for round_ in range(last + 1):
            [summary] = capacity_reading.summarize([r for r in mine if r.round <= round_], 0.05)
            assert summary.plateau == (round_ == last) or round_ == last == 1
        assert {r.dataset_size for r in mine if r.round == 0} == {4, 8}
        assert {r.dataset_size for r in mine if r.round == 1} <= {16}
    for r in rows:  # each size trained to its last budget, 100 exposures: 100 n / 8 steps, in chunks of 20
        assert r.exposures == [10.0, 20.0, 50.0, 100.0] and r.bucket == f"b{r.arch}n{r.dataset_size}"
        assert r.schedule == "constant" and r.anneal_budget is None and r.extra == {}
        assert r.steps % 20 == 0
        assert r.steps - 20 < 100 * r.dataset_size / 8 <= r.steps
        known = [b for b in r.bits_at if b is not None]
        assert known == sorted(known) and r.bits_stored == r.bits_at[-1]
        assert 0 <= r.bits_stored <= r.dataset_bits + 1e-6 and r.net_bits <= r.bits_stored + 1e-6
        first_eval = 20 * 8 / r.dataset_size  # exposures at the first eval; earlier budgets: None
        assert [b is None for b in r.bits_at] == [e < first_eval for e in r.exposures]
    for name in (
        "report.md",
        "capacity.json",
        "exposure_curve.png",
        "capacity_curve.png",
        "bits_per_param.png",
    ):
        assert (workdir / "report" / name).exists(), name
    from jaxcap.config.registry import EXPERIMENTS, resolve
    from jaxcap.results.store import Store

    text = (workdir / "report" / "report.md").read_text()
    (workdir / "report" / "report.md").unlink()
    written = resolve(EXPERIMENTS["capacity"].report)(Store(workdir))
    assert (workdir / "report" / "report.md") in written
    assert (workdir / "report" / "report.md").read_text() == text  # rebuilt from the workdir alone
    lower = saturated_capacity(workdir, "model.d_model=16")  # 100 exposures: still gaining
    assert not lower["saturated"] and lower["bits"] == summarize_rows(rows, 1).c_mem
    assert saturated_capacity(workdir, {"d_model": 16, "n_layers": 1})["bits"] == lower["bits"]
    assert saturated_capacity(workdir, 1, exposures=50)["exposures"] == 50
    with pytest.raises(ValueError, match=r"arch: got \{'d_model': 32\}, which matches 0 architectures"):
        saturated_capacity(workdir, {"d_model": 32})
    # the meta-model's anchor finds it from a calibrate architecture (other task sizes, positions)
    from types import SimpleNamespace

    from jaxcap.experiments.calibrate.capacity_scale import find

    calibrate_arch = {**lower["model"], "vocab_size": 99, "pos_encoding": "sinusoidal"}
    arch, cap = find(SimpleNamespace(archs=[calibrate_arch]), str(workdir))
    assert arch == 0 and cap["bits"] == lower["bits"] and len(cap["seeds"]) == 2
    from jaxcap.run import run

    capsys.readouterr()
    run(smoke_config("configs/capacity.py:smoke"), str(workdir))
    assert "members x" not in capsys.readouterr().out  # nothing retrained
    assert (workdir / "capacity.jsonl").read_text().count("\n") == len(rows)


def _check_killed_run_resumes_to_the_same_bytes(straight, dead):
    """Killed after the 4th eval of b1n8 (step 80; 3 + 5 + 10 evals of the first architecture, 3
    of b1n4 before it), checkpointing after every eval, so its step-40 checkpoint is on disk for
    certain (orbax starts a save after the previous one committed): the resumed run must take the
    exposure record from the checkpointed cursor, since the budget of 50 exposures (step 50)
    interpolates between the evals at steps 40 and 60. A record kept outside the cursor restarts
    empty and leaves it unresolved."""
    killed = launch(dead, "--config.runtime.checkpoint_every=1", killer=3 + 5 + 10 + 3 + 4)
    assert killed.returncode == 137, killed.stderr[-2000:]
    lines = (dead / "capacity.jsonl").read_text().splitlines()
    measured = {CapacityRow.from_json(json.loads(line)).bucket for line in lines}
    assert measured == {"b0n4", "b0n8", "b0n16", "b1n4"}
    resumed = launch(dead)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "[b0n16 " not in resumed.stdout  # measured sizes are skipped
    assert (
        "[b1n8] resuming from step 40" in resumed.stdout or "[b1n8] resuming from step 60" in resumed.stdout
    )
    for name in ("capacity.jsonl", "members.jsonl", "evals.jsonl"):
        assert (dead / name).read_bytes() == (straight / name).read_bytes(), name


def summarize_rows(rows: list[CapacityRow], arch: int) -> CapacitySummary:
    [summary] = capacity_reading.summarize([r for r in rows if r.arch == arch], 0.05, 0.05)
    return summary


@pytest.mark.slow
def test_saturated_capacity_agrees_at_two_budgets_past_saturation(tmp_path):
    """C no longer depends on the training budget once the curve is flat. A small instance that
    flattens within 1,600 exposures (random labels; weight decay 1.0 at lr 0.02 bounds what is
    stored; 8 seeds, because at this learning rate a single snapshot jitters by a few percent): the
    capacity read at 800 and at 1,600 exposures (3,200 and 6,400 steps for n = 256; with a
    constant learning rate the shorter run is exactly a prefix of the longer) agree within 5 %, and
    at 1,600 the curve is flat and the sizes have plateaued: a capacity, not a lower bound."""
    from jaxcap.run import run

    config = load_config(f"{ROOT / 'configs' / 'capacity.py'}:labels")
    config.task.update(vocab_size=16, seq_len=10, n_classes=16, n_eval=32)
    config.capacity.update(  # the constant-rate protocol only: its curve is what this tests
        bits_per_param_grid=(), max_rounds=1, exposures=(100.0, 200.0, 400.0, 800.0, 1600.0), annealed=()
    )
    # 256 items store 8.5 % more than 128 here with jax 0.10.2 (351 -> 381 bits, eadc06c's code
    # too): the plateau is judged at 10 %; what this test pins is the budget-independence below
    config.capacity.plateau_tol = 0.10
    # the model this test was sized with (before the memorization recipe of configs/capacity.py)
    config.model.update(pos_encoding="sinusoidal", embed_std=1.0, embed_sqrt_d=True)
    config.hparams.b2 = 0.98
    config.sweep.update(seeds=8, buckets=("model.d_model=8,model.n_heads=1,model.d_ff=16",))
    config.sweep.task.dataset_size = (128, 256)
    config.sweep.hparams.learning_rate = (2e-2,)
    config.hparams.weight_decay = 1.0
    config.train.update(batch_size=64, steps=6400, chunk_steps=100)
    config.runtime.progress = False
    run(config, str(tmp_path))
    short, long = saturated_capacity(tmp_path, 0, exposures=800), saturated_capacity(tmp_path, 0)
    assert long["saturated"] and long["exposures"] == 1600, long
    assert abs(long["bits"] - short["bits"]) <= 0.05 * long["bits"], (short["bits"], long["bits"])

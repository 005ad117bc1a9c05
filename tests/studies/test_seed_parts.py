"""The seed baseline's device parts (studies/seed_parts.py): every part's config validates, the
plan predicts positive seconds for every part, the study's workers run in order, and (slow) every
part end to end at tiny size on the CPU, the anchored calibrate on a made-up capacity run."""

import json

import pytest
from helpers import ROOT, capacity_row, launch

from jaxcap.config.base import validate
from studies import seed_parts
from studies.device_time import load


@pytest.mark.parametrize("small", [False, True], ids=["device", "small"])
def test_every_part_validates_and_the_study_is_split_into_rounds(small):
    every = seed_parts.parts(small)
    for part in every:
        validate(load([str(ROOT / part.args[0]), *part.args[1:]]))
    study = load([str(ROOT / seed_parts.SEED["grok_hpo"])]).study
    workers = [p for p in every if p.name.startswith("grok_hpo_")]
    assert [p.name for p in every[:2]] == ["calibrate", "enhance"]
    if not small:  # one round of the seed design's study per part
        assert len(workers) * study.batch_trials == study.n_trials == 100
    assert workers[-1].args[-1] == f"--config.study.n_trials={len(workers) * (2 if small else 10)}"


@pytest.mark.slow  # lowers every part's programs for the cost model (~15 s)
def test_small_plan_predicts_every_part():
    every = seed_parts.predictions(small=True)
    assert [p.name for p, _, _ in every][:3] == [
        "calibrate",
        "calibrate --capacity_workdir C --reuse D",
        "enhance",
    ]
    assert all(s > 0 for _, s, _ in every)
    enhance = next(runs for p, _, runs in every if p.name == "enhance")
    variants = load([str(ROOT / seed_parts.SEED["enhance"])]).calibrate.architectures
    assert len(enhance) == len(variants) + 1  # one family (smoke) x each variant, then the fit
    assert sum(r.get("reports", 0) for r in enhance) == 2  # the family pass's report, the fit's


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "grok_hpo_2", "--small"], "grok_hpo_2 runs after grok_hpo_1, which has not finished"),
        (
            ["run", "enhance", "--small", "--reuse=x"],
            "--capacity_workdir and --reuse belong to the calibrate",
        ),
        (["run", "speed", "--small"], "part 'speed'; allowed: calibrate, enhance, grok_hpo_1, grok_hpo_2"),
        (["run", "calibrate"], "--workdir: required by run"),
        (["--wrkdir=x"], "--wrkdir: unknown flag; did you mean --workdir?"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, tmp_path, argv, message):
    """The study's workers run in order; the options belong to their part (jaxcap.main.cli's rules)."""
    workdir = [] if "required" in message else [f"--workdir={tmp_path}"]
    with pytest.raises(SystemExit) as info:
        seed_parts.main([*argv, *workdir])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and message in err[0], err


@pytest.mark.slow
def test_device_plan_predicts_every_part_within_seven_minutes():
    every = seed_parts.predictions()
    assert all(s > 0 for _, s, _ in every)
    assert all(s <= seed_parts.PART_S for _, s, _ in every), seed_parts.plan()


def _made_up_capacity_run(calibrate, out):
    """A capacity workdir that 'measured' the calibrate run's model: C_mem 182 bits over 3 seeds
    (made-up numbers: the anchor's plumbing, not a measurement)."""
    member = json.loads((calibrate / "families/random_labels/grid/members.jsonl").read_text().splitlines()[0])
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"capacity": {"plateau_tol": 0.05, "saturation_tol": 0.05}}))
    rows = []
    for size, bits in ((64, [100.0, 150.0, 160.0, 161.0]), (128, [110.0, 170.0, 180.0, 181.0])):
        for seed in (0, 1, 2):
            at = [b + seed for b in bits]
            row = capacity_row(
                seed=seed,
                dataset_size=size,
                dataset_bits=4.0 * size,
                model=member["model"],
                n_params=member["n_params"],
                exposures=[10.0, 20.0, 40.0, 80.0],
                bits_at=at,
                bits_stored=at[-1],
                net_bits=at[-1],
            )
            rows.append(json.dumps(row.to_json()) + "\n")
    (out / "capacity.jsonl").write_text("".join(rows))


@pytest.mark.slow
def test_every_part_runs_small_end_to_end(tmp_path):
    def part(*args):
        return launch("run", *args, "--small", module="studies.seed_parts").stdout

    out = part("calibrate", "--workdir", tmp_path / "cal")
    assert "information round 1 adds" in out and (tmp_path / "cal/posterior.nc").is_file()
    _made_up_capacity_run(tmp_path / "cal", tmp_path / "cap")
    anchored = ("--capacity_workdir", tmp_path / "cap", "--reuse", tmp_path / "cal")
    out = part("calibrate", "--workdir", tmp_path / "anchored", *anchored)
    assert "already holds this run's results" in out  # the passes reused: only the fit reran
    assert "C = 182 [" in out  # anchored on the made-up C_mem's median

    out = part("enhance", "--workdir", tmp_path / "enh")
    assert out.count("| a") >= 4  # baseline and three variants in report/enhance.md's table
    assert (tmp_path / "enh/report/enhance.md").is_file()

    part("grok_hpo_1", "--workdir", tmp_path / "grok")
    out = part("grok_hpo_2", "--workdir", tmp_path / "grok")
    assert "budget extended from 2 to 4 trials" in out  # the second worker, the same study
    for k in (1, 2):
        assert len((tmp_path / f"grok/part{k}/members.jsonl").read_text().splitlines()) == 4
    assert (tmp_path / "grok/study.log").is_file()

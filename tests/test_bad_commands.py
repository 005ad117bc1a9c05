"""Command lines that refuse their input in one line on stderr, before they compile or write
anything: the launcher on what only it sees (a stray argument, a config file that does not parse,
an empty `--workdir` or variant, a change a pilot's posterior makes moot; `--debug` shows the
traceback instead), `python -m jaxcap.report` on a workdir it cannot write, read or find rows in,
`studies.ladder plan`, `count_compiles` and `bench`. Launches run in children of the fork server
(fork_server.ForkServer), as `python -m jaxcap.launch` runs, without its seconds of imports each.
The config values a run checks are the table of test_bad_inputs.py."""

import json
import os
from pathlib import Path

import pytest
from bad_input_cases import a_file, existing, hpo, pilot, smoke, snapshot, stderr_line
from helpers import MODMOD_SMOKE as SMOKE

from jaxcap.fields import ConfigError


@pytest.mark.slow
def test_launcher_refuses_a_stray_argument(tmp_path, fork_server):
    out = fork_server.launch(*SMOKE, "smoke", "--workdir", str(tmp_path / "w"), check=False)
    assert stderr_line(out).startswith("usage error: unexpected argument 'smoke'; allowed: flags only")
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
    line = stderr_line(out)
    assert line.startswith(start) and within in line, line
    assert not (tmp_path / "w").exists()  # the lock taken first is removed with its empty workdir


@pytest.mark.slow
def test_debug_shows_the_traceback_of_an_input_error(tmp_path, fork_server):
    existing(smoke(), {"config.json": "{"})(tmp_path)
    out = fork_server.launch(*SMOKE, "--workdir", str(tmp_path / "w"), "--debug", check=False)
    assert out.returncode != 0 and "Traceback" in out.stderr and "WorkdirError: " in out.stderr


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
                "config error: config.seed: got 'abc' (str); allowed: an integer in [0, 4294967295]",
            )
            for pair in (
                ["--config.seed=abc", "--config.model.d_model=x"],
                ["--config.model.d_model=x", "--config.seed=abc"],
            )
        ),
    ]:
        out = fork_server.run(module, *args)
        assert stderr_line(out).startswith(line), (module, args, out.stderr[-2000:])
    out = fork_server.run(
        "jaxcap.main.count_compiles", *SMOKE, "--config.model.norm=layer", "--workdir", str(tmp_path / "w")
    )
    line = "config error: config.model.norm: got 'layer'; allowed: pre, post, none"
    assert out.returncode == 1 and out.stderr.strip() == line, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["error"] == line
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize(
    "change,message",
    [  # what ml_collections once said: `flag --config.train.steps=abc: invalid literal for int() ...`
        ("--config.train.steps=abc", "config.train.steps: got 'abc' (str); allowed: an integer >= 1"),
        (
            "--config.hparams.learning_rate=fast",
            "config.hparams.learning_rate: got 'fast'; allowed: a finite number",
        ),
        (
            "--config.sweep.seeds=1.5",
            "config.sweep.seeds: got '1.5' (str); allowed: an integer in [1, 100000]",
        ),
    ],
)
def test_a_value_that_does_not_parse_as_its_type_names_the_field_and_what_is_allowed(change, message):
    from jaxcap.main.launch import _check_overrides

    with pytest.raises(ConfigError) as info:
        _check_overrides(["launch", "--config=configs/modmod.py:smoke", change])
    assert str(info.value).startswith(message) and "\n" not in str(info.value), str(info.value)


def test_a_field_without_a_rule_names_its_type():
    from jaxcap.main.launch import unparsed_value

    config = smoke()
    line = "flag --config.seed=x: invalid literal for int() with base 10: 'x'"
    assert unparsed_value(config, line).startswith("config.seed: got 'x'")
    config.unruled = 3  # a field no schema knows
    line = "flag --config.unruled=x: invalid literal for int() with base 10: 'x'"
    assert unparsed_value(config, line) == (
        "config.unruled: got 'x'; allowed: a value of the field's type, int "
        "(invalid literal for int() with base 10: 'x')"
    )
    assert unparsed_value(config, "something else: entirely") == "something else: entirely"

"""The command line: one absl family for every `python -m` command. `--help` answers for every
entry point without other flags, `--helpfull` and `--flagfile` work, the console scripts point at
callables, a stray positional argument, a misspelt flag or config field (named with the closest
one), a bad --sizes or a missing flag is a one-line error (exit status 2 for a usage error), and
the HPO report's history and importance figures are drawn by optuna.visualization. Each command
line runs as `python -m` runs it, in a child forked from one process of this module that
imported JAX once (fork_server.ForkServer): some 24 commands, each of them seconds of imports alone."""

import importlib
import tomllib

import pytest
from fork_server import ForkServer
from helpers import ENV as BASE_ENV
from helpers import ROOT

ENV = {**BASE_ENV, "JAX_PLATFORMS": "cpu"}


@pytest.fixture(scope="module")
def server():
    server = ForkServer(ENV)
    yield server
    server.close()


@pytest.fixture
def cli(server):
    """`python -m jaxcap.<module> args` (a study: `python -m studies.<module>`), forked: its
    CompletedProcess."""
    return lambda module, *args: server.run(
        module if module.startswith("studies.") else f"jaxcap.{module}", *args, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "module, expected",
    [
        ("launch", "--workdir"),
        ("report", "--workdir"),
        ("bench", "--sizes"),
        ("predict", "--posterior"),
    ],
)
def test_help_works_without_other_flags(cli, module, expected):
    out = cli(module, "--help")
    assert out.returncode == 0, out.stderr[-2000:]
    assert expected in out.stdout and "Traceback" not in out.stderr
    assert "--verbosity" not in out.stdout  # the program's own flags, not absl's


def test_console_scripts_point_at_callables():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {"jaxcap-launch", "jaxcap-report", "jaxcap-predict", "jaxcap-bench"}
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


@pytest.mark.slow
@pytest.mark.parametrize(
    "module, args, message",
    [
        (
            "launch",
            ["--config", "configs/modmod.py:smoke", "extra"],
            "usage error: unexpected argument 'extra'",
        ),
        ("bench", ["extra"], "usage error: unexpected argument 'extra'"),
        (
            "bench",
            ["--sizes", "0", "--models", "small"],
            "usage error: --sizes: got '0'; allowed: integers >= 1",
        ),
        ("report", ["--workdir", ".", "extra"], "usage error: unexpected argument 'extra'"),
        (
            "launch",
            ["--confg", "configs/modmod.py:smoke"],
            "usage error: --confg: unknown flag; did you mean --config?",
        ),
        ("report", ["--wrkdir", "."], "usage error: --wrkdir: unknown flag; did you mean --workdir?"),
        ("predict", ["--postrior", "x"], "usage error: --postrior: unknown flag; did you mean --posterior?"),
        ("bench", ["--size", "8"], "usage error: --size: unknown flag; did you mean --sizes?"),
        ("predict", ["--posterior", "x"], "usage error: --task: required"),
        ("report", ["--workdir", "/nonexistent"], "report error: /nonexistent holds no config.json"),
        (
            "launch",
            [
                "--config",
                "configs/modmod.py:smoke",
                "--config.model.d_modle=8",
                "--workdir=/tmp/jaxcap-cli-typo",
            ],
            "config error: config.model.d_modle: unknown field; did you mean config.model.d_model?",
        ),
        (
            "main.replicates",
            ["--markdwn", "x"],
            "usage error: --markdwn: unknown flag; did you mean --markdown?",
        ),
        ("main.out_of_grid", ["--postrior", "x"], "did you mean --posterior?"),
        ("main.meta_bench", ["--rws", "5"], "usage error: --rws: unknown flag; did you mean --rows?"),
        ("studies.capacity_ablation", ["--seds", "1"], "did you mean --seeds?"),
        ("studies.plain_reference", ["--exposure", "3"], "did you mean --exposures?"),
        (
            "main.rna_structure",
            ["--wrkdir", "x"],
            "usage error: --wrkdir: unknown flag; did you mean --workdir?",
        ),
    ],
)
def test_stray_arguments_are_one_line_errors(cli, module, args, message):
    """Every `python -m` command: one line, and exit status 2 when the command line is wrong."""
    out = cli(module, *args)
    usage = message.startswith(("usage error", "config error", "did you mean"))
    assert out.returncode == (2 if usage else 1) and message in out.stderr, (
        out.returncode,
        out.stderr[-2000:],
    )
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_flagfile_and_helpfull_work_on_every_entry_point(cli, tmp_path):
    """--flagfile reads flags from a file (launch used to answer "--config: required");
    --helpfull lists absl's own flags as well."""
    flagfile = tmp_path / "flags"
    flagfile.write_text("--config=configs/modmod.py:smoke\n--config.train.steps=-1\n")
    out = cli("launch", f"--flagfile={flagfile}")
    assert out.returncode != 0 and "config.train.steps" in out.stderr and "required" not in out.stderr
    flagfile.write_text(f"--workdir={tmp_path / 'none'}\n")
    out = cli("report", f"--flagfile={flagfile}")
    assert out.returncode != 0 and "report error:" in out.stderr and "holds no config.json" in out.stderr
    full = cli("launch", "--helpfull")
    assert full.returncode == 0 and "--verbosity" in full.stdout and "--workdir" in full.stdout


def test_hpo_figures_come_from_optuna(tmp_path, monkeypatch):
    import optuna
    from optuna.visualization import matplotlib as optuna_plots

    from jaxcap.experiments.hpo import report as hpo_report

    called = []
    for name in ("plot_optimization_history", "plot_param_importances"):
        original = getattr(optuna_plots, name)
        monkeypatch.setattr(
            optuna_plots, name, lambda *a, _f=original, _n=name, **k: called.append(_n) or _f(*a, **k)
        )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = []
    for level in (5, 10):
        study = optuna.create_study(study_name=f"modulo/modulus={level}", direction="maximize")
        study.optimize(
            lambda t: -((t.suggest_float("lr", 0, 1) - 0.3) ** 2) + 0.01 * t.suggest_float("wd", 0, 1), 8
        )
        studies.append(study)
    history = hpo_report.plot_history([], studies, tmp_path / "hpo_history.png")
    importance = hpo_report.plot_importances_per_study(studies, tmp_path)
    assert history.exists() and [p.name for p in importance] == [
        "hpo_importance_modulo_modulus=5.png",
        "hpo_importance_modulo_modulus=10.png",
    ]
    assert called == ["plot_optimization_history", "plot_param_importances", "plot_param_importances"]


def test_a_config_files_note_names_the_command_lines_changes():
    """The note describes the config file's values; overrides that change results are named after
    it (runtime ones are not), and a note given on the command line is left as given."""
    from ml_collections import ConfigDict

    from jaxcap.main.early_lock import default_workdir
    from jaxcap.main.launch import annotate_note

    argv = ["launch", "--config=configs/calibrate.py", "--config.model.d_model=64"]
    argv.append("--config.runtime.progress=False")
    config = ConfigDict({"note": "a small model (d_model 32)"})
    annotate_note(config, argv)
    assert config.note == "a small model (d_model 32) (changed on the command line: model.d_model=64)"
    for argv_, note in ((argv[:2] + argv[3:], "file's"), (argv + ["--config.note=mine"], "mine")):
        config = ConfigDict({"note": note})
        annotate_note(config, argv_)
        assert config.note == note  # runtime only: nothing changed; the user's own note: kept
    assert default_workdir(argv) != default_workdir(argv[:2] + argv[3:])  # the same overrides as the hash

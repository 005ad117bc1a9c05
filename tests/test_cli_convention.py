"""One command-line convention for every `python -m jaxcap...` command: absl flags parsed by
jaxcap.main.cli, a misspelt flag named with the closest one, a misspelt config field named
with the closest field, every usage error one line on stderr and exit status 2, and
`--helpfull` saying more than `--help`. In process: each command fails before it does any work."""

import importlib

import pytest

from jaxcap.main import cli

COMMANDS = [  # (module, a misspelt flag, the flag it means)
    ("jaxcap.main.replicates", "--markdwn", "--markdown"),
    ("jaxcap.main.out_of_grid", "--postrior=x", "--posterior"),
    ("jaxcap.main.meta_bench", "--rws=5", "--rows"),
    ("studies.capacity_ablation", "--seds=1", "--seeds"),
    ("studies.plain_reference", "--exposure=3", "--exposures"),
    ("jaxcap.main.rna_structure", "--wrkdir=x", "--workdir"),
    ("jaxcap.report", "--wrkdir=x", "--workdir"),
    ("jaxcap.predict", "--postrior=x", "--posterior"),
    ("jaxcap.main.check_task", "--tsk=x", "--task"),
]


def _usage_error(capsys, main, argv) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == cli.USAGE and len(err) == 1, (info.value.code, err)
    return err[0]


@pytest.mark.parametrize(
    "module, typo, meant", COMMANDS, ids=[c[0].removeprefix("jaxcap.") for c in COMMANDS]
)
def test_a_misspelt_flag_names_the_closest_and_exits_2(capsys, module, typo, meant):
    main = importlib.import_module(module).main
    line = _usage_error(capsys, main, [typo])
    assert line.startswith(f"usage error: {typo.split('=')[0]}: unknown flag; did you mean {meant}?"), line


@pytest.mark.parametrize(
    "module, argv, message",
    [
        ("jaxcap.main.replicates", [], "usage error: workdirs: none given"),
        ("jaxcap.main.out_of_grid", ["--workdirs", "a", "b"], "usage error: --posterior: required"),
        ("jaxcap.main.meta_bench", ["--rows=abc"], "usage error: flag --rows=abc"),
        (
            "jaxcap.main.meta_bench",
            ["--rows=4"],
            "usage error: --rows: got 4; allowed: >= 2 x families x seeds",
        ),
        ("studies.capacity_ablation", ["--rows=nope"], "usage error: --rows: unknown nope"),
        ("studies.plain_reference", ["extra"], "usage error: unexpected argument 'extra'"),
        ("jaxcap.main.rna_structure", [], "usage error: --workdir: required"),
        ("jaxcap.report", [], "usage error: --workdir: required"),
        ("jaxcap.main.check_task", [], "usage error: --task: required"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, module, argv, message):
    line = _usage_error(capsys, importlib.import_module(module).main, argv)
    assert line.startswith(message), line


def test_a_list_flag_takes_space_separated_values():
    """`--workdirs a b c` (a shell glob) is the list a,b,c, as predict's `--level 16 40 97`."""
    argv = ["--posterior", "p", "--workdirs", "a", "b", "--json"]
    assert cli.gather_lists(argv, ("--workdirs",)) == ["--posterior", "p", "--workdirs=a,b", "--json"]


def test_a_misspelt_config_field_names_the_closest_field():
    fields = ["d_model", "d_head", "d_ff", "n_heads", "n_layers", "norm", "activation"]
    assert cli.unknown_field("config.model", "d_modle", fields) == (
        "config.model.d_modle: unknown field; did you mean config.model.d_model?"
    )
    far = cli.unknown_field("config.model", "xyzzy", fields)  # nothing close: every field, sorted
    assert far.startswith("config.model.xyzzy: unknown field; fields of config.model: activation, d_ff")


@pytest.mark.parametrize("module", ["jaxcap.report", "jaxcap.predict", "jaxcap.main.replicates"])
def test_helpfull_says_more_than_help(capsys, module):
    main = importlib.import_module(module).main
    texts = []
    for flag in ("--help", "--helpfull"):
        with pytest.raises(SystemExit) as info:
            main([flag])
        assert info.value.code == 0
        texts.append(capsys.readouterr().out)
    short, full = texts
    assert short.split("\nflags:")[0] == full.split("\nflags:")[0] and len(full) > len(short)
    assert "exit status: 0 done, 2 a usage error" in full and "exit status" not in short

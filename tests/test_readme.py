"""The README keeps exactly two set-up commands, and CI runs the test one verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_two_setup_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)```", setup, re.S)
    assert len(commands) == 2, commands
    main, test = (c.strip() for c in commands)
    assert "python -m jaxcap.launch --config configs/modmod.py" in main
    assert "pytest" in test
    assert test in (ROOT / ".ci" / "run").read_text()

"""`python -m jaxcap.main.count_compiles`: a launch's compiled programs as JSON, and its usage line."""

import json
import subprocess
import sys

import pytest
from helpers import ENV, ROOT

from jaxcap.main import count_compiles


def test_usage_errors_exit_2(capsys):
    assert count_compiles.main(["--workdir", "x"]) == 2
    assert count_compiles.main(["--cache"]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.slow
def test_main_job_smoke_compiles_one_program_set(tmp_path):
    """modmod's smoke: init, data, chunk, evaluate, baselines and nothing else (keys and
    hyperparameters are made on the host)."""
    cmd = [sys.executable, "-m", "jaxcap.main.count_compiles", "--config", "configs/modmod.py:smoke"]
    out = subprocess.run(
        [*cmd, "--workdir", str(tmp_path)], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["exit"] == 0 and result["programs"] <= 5, result
    assert not any("threefry" in name or "convert_element_type" in name for name in result["by_name"])

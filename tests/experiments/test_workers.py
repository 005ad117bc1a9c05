"""Several workers on one sweep: the studies are created once (`--create_studies`), then worker
processes with their own workdirs share them on a journal file or a PostgreSQL server and end
with exactly the budget, no trial lost or run twice. And the launch/ scripts cannot rot: each
parses, documents itself, and uses only flags that exist in the configs it names."""

import itertools
import re
import subprocess
import uuid

import pytest
from helpers import HPO_SMOKE, ROOT, check_budget, finish, hpo_smoke_config, start

from jaxcap.config.base import build_plan, load_config, validate
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.fields import ConfigError

SCRIPTS = sorted([*(ROOT / "launch").glob("*.sh"), *(ROOT / "launch").glob("*.sbatch")])
PLACEHOLDERS = {"x", "x.y", "a.b"}  # `[--config.x=y ...]` in usage lines


# the smoke sweep cut to 20 steps and 4 trials per level: two rounds, one for each worker; a worker
# costs its start, one or two rounds and its report. A round is the population of :smoke (3 levels
# x 2 trials x 2 seeds), the shape that test_soak and test_sweep's kill-and-resume launch too: the
# compiled programs of one of them are persistent-cache hits for the others
SHARED = ("--config.study.n_trials=4", "--config.study.batch_trials=2", "--config.train.steps=20")


def _config(storage: str, name: str = ""):
    c = hpo_smoke_config(storage)
    c.study.update(n_trials=4, batch_trials=2, name=name)
    c.train.steps = 20
    validate(c)
    return c


def _workers(tmp_path, args, n=2):
    """n workers on the smoke sweep, each with its own workdir; wait for all of them."""
    procs = [start(*HPO_SMOKE, *SHARED, *args, "--workdir", str(tmp_path / f"w{i}")) for i in range(n)]
    for proc in procs:
        finish(proc)
    return [tmp_path / f"w{i}" for i in range(n)]


@pytest.mark.slow
def test_studies_created_once_then_two_workers_share_a_journal_file(tmp_path):
    storage = f"--config.study.storage={tmp_path / 'shared.log'}"
    out = finish(start(*HPO_SMOKE, *SHARED, storage, "--create_studies"))
    levels = [f"modulo/modulus={n}" for n in (5, 7, 10)]
    assert out.splitlines() == [f"created {name}: 4 trials (4 waiting)" for name in levels]
    c = _config(str(tmp_path / "shared.log"))
    again = study_lib.create_studies(
        build_plan(c), tmp_path
    )  # idempotent: nothing new, no budget queued twice
    assert again == [f"exists  {name}: 4 trials (4 waiting)" for name in levels]
    check_budget(c, tmp_path, _workers(tmp_path, [storage]))
    for line in study_lib.create_studies(build_plan(c), tmp_path):  # finished: nothing waiting or running
        assert re.fullmatch(
            r"exists  modulo/modulus=\d+: 4 trials \((\d (complete|fail|pruned)(, )?)+\)", line
        )


@pytest.mark.slow
def test_workers_share_studies_on_postgresql(tmp_path, postgres):
    name = f"test-{uuid.uuid4().hex[:8]}"  # a server from the environment may hold other studies
    c = _config(postgres, name)
    created = study_lib.create_studies(build_plan(c), tmp_path)  # the same function as --create_studies
    assert created == [f"created {name}/modulus={n}: 4 trials (4 waiting)" for n in (5, 7, 10)]
    args = (f"--config.study.storage={postgres}", f"--config.study.name={name}")
    check_budget(c, tmp_path, _workers(tmp_path, args))


def test_create_studies_refuses_a_config_without_a_study(tmp_path):
    from jaxcap.main import launch

    config = load_config(str(ROOT / "configs" / "modmod.py:smoke"))
    with pytest.raises(ConfigError, match="--create_studies: a 'population' config has no Optuna study"):
        launch.create(config, tmp_path)


def _section(config, key: str):
    node = config
    for part in key.split("."):
        assert hasattr(node, "keys") and part in node, part
        node = node[part]
    return node


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_launch_script_parses_documents_itself_and_uses_existing_flags(script):
    from absl import flags

    from jaxcap.main import launch  # noqa: F401  (defines the --workdir and --create_studies flags)

    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    text = script.read_text()
    lines = text.splitlines()
    assert lines[0] in ("#!/usr/bin/env bash", "#!/bin/bash"), "a bash shebang"
    header = "\n".join(itertools.takewhile(lambda line: line.startswith("#"), lines[1:]))
    assert f"launch/{script.name}" in header, "the header comment has a usage line naming the script"
    assert "Needs:" in header, "the header comment says what the script needs"
    assert re.search(r"^set -\w*u", text, re.M), "set -u (new scripts: set -euo pipefail)"
    keys = set(re.findall(r"--config\.([\w.]+)=", text)) - PLACEHOLDERS
    configs = set(re.findall(r"configs/[a-z0-9_]+\.py(?::\w+)?", text))
    assert configs or not keys, "a script with --config.x.y flags names a config in its usage line"
    loaded = {spec: load_config(str(ROOT / spec)) for spec in sorted(configs)}
    for key in sorted(keys):  # a script may run several configs: each flag is a field of one of them
        missing = []
        for spec, config in loaded.items():
            try:
                _section(config, key)
                break
            except AssertionError as e:
                missing.append(f"{e} in {spec}")
        else:
            raise AssertionError(f"{script.name}: --config.{key}: no field ({'; '.join(missing)})")
    for flag in set(re.findall(r"(?<![\w.])--(create_\w+|workdir)\b", text)):
        assert flag in flags.FLAGS, f"{script.name}: --{flag} is not a jaxcap.launch flag"

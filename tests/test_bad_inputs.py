"""Every bad input is one line naming the thing and what is allowed, and the workdir is left as it
was: a table of cases (keep adding to it), each run in this process. Each case builds a config and
a workdir, runs `run(config, workdir)`, and expects the line the launcher prints for what it
raised (`jaxcap.errors.one_line`): the workdir, the study storage, config values, the machine, an
experiment's own checks, a run that goes wrong on the way. Also which of two errors is named, and
an empty config variant. The case builders live in bad_input_cases.py; what the launcher and the
other commands refuse on their command line is in test_bad_commands.py; workdirs in use,
unwritable, corrupt or on a full disk are in test_bad_workdirs.py."""

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from bad_input_cases import (
    a_file,
    cache_under_a_file,
    calibrate_bad_override,
    calibrate_family,
    calibrate_workdirs,
    capacity,
    corrupt_checkpoint,
    existing,
    fresh,
    hpo,
    pilot,
    smoke,
    snapshot,
    storage_with_budget,
    under_a_file,
    worker_without_storage,
)
from helpers import ROOT

from jaxcap.config.base import load_config
from jaxcap.errors import one_line
from jaxcap.run import run

LOCK = ".lock"  # the writer's lock file: the one file a run creates before its checks of the workdir
PARITY_WORDS = dict(task=dict(name="parity", n=8), levels=dict(k=("a", "b")), overrides="")


@dataclasses.dataclass(frozen=True)
class Case:
    config: Callable[[Path], object]  # tmp -> config
    workdir: Callable[[Path], Path]  # tmp -> workdir (created as the case needs)
    message: str
    writes: tuple[str, ...] = ()  # files the run may create: checks that need a run's context


def _config(config):
    return lambda tmp: config


CASES = {
    # the workdir
    "workdir is a file": Case(_config(smoke()), a_file, "is a file; allowed: a directory"),
    "workdir under a file": Case(_config(smoke()), under_a_file, "is under a file"),
    "corrupt config.json": Case(
        _config(smoke()),
        existing(smoke(), {"config.json": '{"experiment": "popu'}),
        "config.json does not parse",
    ),
    "workdir of another config": Case(
        _config(smoke(seed=3)),
        existing(smoke(), {"evals.jsonl": ""}),
        "different config (config.seed: 0 in the workdir, 3 now)",
    ),
    "corrupt checkpoint": Case(
        _config(smoke()), corrupt_checkpoint(smoke()), "checkpoint error: ", writes=("ckpt/b0.corrupt",)
    ),
    # the study storage
    "storage URL without its driver": Case(
        _config(hpo(**{"study.storage": "postgresql://me@localhost/db"})),
        fresh,
        "config.study.storage: got 'postgresql://me@localhost/db', whose driver is not installed",
    ),
    "storage server that does not answer": Case(
        _config(hpo(**{"study.storage": "postgresql+psycopg2://me@127.0.0.1:1/db"})),
        fresh,
        "config.study.storage: cannot connect to postgresql+psycopg2://me@127.0.0.1:1/db (",
    ),
    "storage URL of an unknown scheme": Case(
        _config(hpo(**{"study.storage": "foo://host/db"})), fresh, "which SQLAlchemy cannot use"
    ),
    "corrupt study.db": Case(
        _config(hpo()),
        existing(hpo(), {"study.db": b"not a database " * 100}),
        "config.study.storage: cannot open study.db in the workdir as an Optuna storage (DatabaseError",
    ),
    "n_trials below the storage's budget": Case(
        lambda t: hpo(**{"study.storage": str(t / "shared.log"), "study.n_trials": 2}),
        storage_with_budget(4),
        "config.study.n_trials: got 2, but study modulo/modulus=5 already has a budget of 4 trials",
        writes=("config.json",),
    ),
    "storage in a folder nothing can write": Case(
        _config(hpo(**{"study.storage": "/proc/jaxcap/study.log"})),
        fresh,
        "config.study.storage: cannot write /proc/jaxcap/study.log (",
    ),
    "storage under a file": Case(
        lambda t: hpo(**{"study.storage": f"sqlite:///{t / 'f' / 'study.db'}"}),
        under_a_file,
        "study.db is under a file (",
    ),
    "a budget that would queue for minutes": Case(
        _config(hpo(**{"study.n_trials": 1_000_000})),
        fresh,
        "config.study.n_trials: got 1000000; allowed: in [1, 10000]",
    ),
    # config values (flag-level ones, such as an unknown key, in tests/test_launch.py)
    "seed beyond the 32 bits of a key (aliases a smaller seed)": Case(
        _config(smoke(seed=2**32)), fresh, "config.seed: got 4294967296; allowed: in [0, 4294967295]"
    ),
    "seed beyond 64 bits": Case(_config(smoke(seed=2**63)), fresh, "config.seed: got 9223372036854775808"),
    "a value not allowed": Case(
        _config(smoke(**{"model.norm": "layer"})),
        fresh,
        "config.model.norm: got 'layer'; allowed: pre, post, none",
    ),
    "steps not a multiple of chunk_steps": Case(
        _config(smoke(**{"train.steps": 45})),
        fresh,
        "config.train.steps: got 45; allowed: a multiple of config.train.chunk_steps",
    ),
    "a swept value out of range": Case(
        _config(smoke(**{"sweep.task.modulus": (5, 1)})), fresh, "config.sweep.task.modulus[1]: got 1"
    ),
    "more numbers than a dataset holds": Case(
        _config(smoke(**{"task.digits": 12})), fresh, "config.task.digits: base^digits"
    ),
    "wrong-typed bucket override": Case(
        _config(smoke(**{"sweep.buckets": ("model.d_model=abc",)})),
        fresh,
        "config.sweep.buckets[0]: model.d_model: got 'abc' (str); allowed: an integer like the field's 16",
    ),
    "threshold above 1 for accuracy": Case(
        _config(smoke(**{"eval.val_threshold": 1.5})),
        fresh,
        "config.eval.val_threshold: got 1.5; allowed: at most 1",
    ),
    "batch size far above the split": Case(
        _config(smoke(**{"train.batch_size": 100_000})),
        fresh,
        "config.train.batch_size: got 100000; allowed: at most 16 x the 5000 train examples",
    ),
    "modulus above the input range": Case(
        _config(smoke(**{"task.digits": 1, "task.modulus": 7, "sweep.task.modulus": (5, 20)})),
        fresh,
        "config.sweep.task.modulus[1]: 20: config.task.modulus: got 20; allowed: at most base^digits = 10",
    ),
    # the machine
    "more devices than there are": Case(
        _config(smoke(**{"runtime.devices": 64})),
        fresh,
        "config.runtime.devices: got 64; allowed: 0 (automatic)",
    ),
    "process_id not below num_processes": Case(
        _config(smoke(**{"runtime.process_id": 2, "runtime.num_processes": 2})),
        fresh,
        "config.runtime.process_id: got 2; allowed: 0 … 1",
    ),
    "several processes without a coordinator": Case(
        _config(smoke(**{"runtime.num_processes": 2})), fresh, "config.runtime.coordinator: got ''; allowed:"
    ),
    "compilation cache under a file": Case(
        cache_under_a_file, fresh, "config.runtime.compilation_cache: cannot write"
    ),
    # the experiment's own checks (config.registry's `check`): before the first write too
    "capacity exposures not ascending": Case(
        _config(capacity(**{"capacity.exposures": (100.0, 10.0)})),
        fresh,
        "config.capacity.exposures: got (100.0, 10.0); allowed: a non-empty ascending tuple",
    ),
    "calibrate family with a bad override": Case(
        lambda t: calibrate_bad_override(),
        fresh,
        "config.calibrate.families.",
    ),
    "calibrate workdir whose study storage is gone": Case(
        lambda t: calibrate_workdirs(worker_without_storage(t)),
        fresh,
        "config.calibrate.workdirs[0]: ",
    ),
    "calibrate family with string level values": Case(
        lambda t: calibrate_family(PARITY_WORDS),
        fresh,
        "config.calibrate.families.parity.levels.k[0]: got 'a'; allowed: an integer, the type of task "
        "parity's field k",
    ),
    "pilot family with string level values": Case(
        _config(pilot(**{"pilot.family": PARITY_WORDS})),
        fresh,
        "config.pilot.family.levels.k[0]: got 'a'; allowed: an integer, the type of task parity's field k",
    ),
    # the run itself
    "every member diverged": Case(
        _config(smoke(**{"hparams.learning_rate": 1e35})),
        fresh,
        "run error: every member diverged by step 10; allowed: a smaller config.hparams.learning_rate",
        writes=("*",),
    ),
}


def _kept(files: dict[str, bytes] | None, writes: tuple[str, ...]) -> dict[str, bytes]:
    """The files that must be as they were: all but the lock and what the case may write."""
    return {k: v for k, v in (files or {}).items() if k != LOCK and not any(k.startswith(w) for w in writes)}


# a case that trains before it goes wrong ("*" writes) is an end-to-end run: the full tier
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if "*" in c.writes else n for n, c in CASES.items()]
)
def test_a_bad_input_is_one_line_and_leaves_the_workdir_as_it_was(tmp_path, name):
    case = CASES[name]
    config, workdir = case.config(tmp_path), case.workdir(tmp_path)
    before = snapshot(workdir)
    with pytest.raises(Exception) as info:
        run(config, str(workdir))
    line = one_line(info.value)
    assert line is not None, f"a traceback would reach the user: {info.value!r}"
    assert "\n" not in line and case.message in line, line
    if "*" in case.writes:  # a run that went wrong on the way, not an input refused up front
        return
    after = snapshot(workdir)
    if before is None and not case.writes:
        assert after is None, "refused before the workdir was even created"
    assert _kept(after, case.writes) == _kept(before, case.writes)


def test_an_empty_variant_is_refused_naming_the_variants():
    """`configs/modmod.py:` (nothing after ':') once loaded the default job."""
    from jaxcap.fields import ConfigError

    with pytest.raises(ConfigError, match=r"^config variant: got '' .*allowed: smoke, full, or no ':'"):
        load_config(f"{ROOT / 'configs' / 'modmod.py'}:")
    assert load_config(f"{ROOT / 'configs' / 'modmod.py'}").train.steps > smoke().train.steps  # default


# Two errors in one config: the one named is the first in the order the checks are declared
# (types at the parse, then values in the schema's field order, then the rules between fields),
# whatever order the fields were set in.
TWO_ERRORS = [
    ({"seed": -1, "model.norm": "layer"}, "config.seed: got -1"),
    ({"model.norm": "layer", "train.steps": 45}, "config.model.norm: got 'layer'"),
    ({"train.steps": 45, "eval.val_threshold": 1.5}, "config.train.steps: got 45"),
    ({"eval.val_threshold": 1.5, "runtime.devices": 64}, "config.eval.val_threshold: got 1.5"),
]


@pytest.mark.parametrize("edits, first", TWO_ERRORS, ids=[" + ".join(e) for e, _ in TWO_ERRORS])
def test_of_two_errors_the_same_one_is_named_whichever_is_set_first(tmp_path, edits, first):
    lines = set()
    for order in (list(edits.items()), list(edits.items())[::-1]):
        with pytest.raises(Exception) as info:
            run(smoke(**dict(order)), str(tmp_path / "w"))
        lines.add(one_line(info.value))
    assert len(lines) == 1 and first in lines.pop()

"""What the bad-input tests share (test_bad_inputs, test_bad_commands, test_bad_workdirs), defined
once: the smoke configs with `section.field` edits, the configs and workdirs their cases start
from (a run's config.json, a corrupt checkpoint, a storage with a budget, a file where a folder
goes), a snapshot of a workdir to compare before and after, and the one line a command printed on
stderr. Test files import from here and from helpers.py, never from one another."""

import json
from collections.abc import Callable
from pathlib import Path

from helpers import ROOT, member_row

from jaxcap.config.base import build_plan, load_config
from jaxcap.core.checkpoint import PopulationCheckpoints
from jaxcap.experiments.population_experiment import identity
from jaxcap.results.store import Store


def smoke(**edits):
    c = load_config(f"{ROOT / 'configs' / 'modmod.py'}:smoke")
    c.runtime.progress = False
    for path, value in edits.items():
        section, _, field = path.rpartition(".")
        node = c
        for part in filter(None, section.split(".")):
            node = node[part]
        node[field] = value
    return c


def _smoke_of(name: str):
    """configs/<name>:smoke with `section.field` edits, as a function of the edits."""

    def make(**edits):
        c = load_config(f"{ROOT / 'configs' / name}:smoke")
        c.runtime.progress = False
        for path, value in edits.items():
            section, field = path.split(".")
            c[section][field] = value
        return c

    return make


hpo, capacity, pilot = _smoke_of("modmod_hpo.py"), _smoke_of("capacity.py"), _smoke_of("pilot.py")


def calibrate_bad_override():
    """configs/calibrate.py:smoke whose first family sets a model field to a value not allowed:
    only that family's derived config can see it."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    name = next(iter(c.calibrate.families))
    c.calibrate.families[name] = {**c.calibrate.families[name], "overrides": "model.norm=layer"}
    return c


def calibrate_workdirs(*workdirs: Path):
    """configs/calibrate.py:smoke with `config.calibrate.workdirs` set."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    c.calibrate.workdirs = tuple(str(w) for w in workdirs)
    return c


def worker_without_storage(tmp: Path) -> Path:
    """A sweep worker's workdir whose rows name trials of a shared storage that is gone (moved
    away, or never copied with the workdir): which of its rows count cannot be told."""
    worker = tmp / "worker"
    Store(worker).write_config({"experiment": "hpo", "study": {"storage": str(tmp / "gone.db")}})
    (worker / "members.jsonl").write_text(json.dumps(member_row(study="modulo/modulus=5", trial=0)) + "\n")
    return worker


def calibrate_family(entry: dict):
    """configs/calibrate.py:smoke with one more family, `parity`, of this entry."""
    c = load_config(f"{ROOT / 'configs' / 'calibrate.py'}:smoke")
    c.runtime.progress = False
    c.calibrate.families = {**c.calibrate.families.to_dict(), "parity": entry}
    return c


def existing(config, files: dict[str, str | bytes] | None = None) -> Callable[[Path], Path]:
    """A workdir holding a run of `config` (its config.json) and `files`."""

    def make(tmp: Path) -> Path:
        workdir = tmp / "w"
        Store(workdir).write_config(identity(config))
        for name, text in (files or {}).items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            getattr(workdir / name, "write_bytes" if isinstance(text, bytes) else "write_text")(text)
        return workdir

    return make


def corrupt_checkpoint(config) -> Callable[[Path], Path]:
    """A workdir whose only checkpoint of bucket b0 does not restore."""

    def make(tmp: Path) -> Path:
        workdir = existing(config)(tmp)
        ckpts = PopulationCheckpoints(workdir / "ckpt" / "b0")
        ckpts.save(10, {"w": [0.0]}, {"step": 10})
        ckpts.close()
        (workdir / "ckpt" / "b0" / "10" / "cursor" / "metadata").write_text('{"st')
        return workdir

    return make


def storage_with_budget(n: int) -> Callable[[Path], Path]:
    """A fresh workdir, and a study storage beside it whose studies already have a budget of n."""

    def make(tmp: Path) -> Path:
        from jaxcap.experiments.hpo.study import create_studies

        create_studies(
            build_plan(hpo(**{"study.storage": str(tmp / "shared.log"), "study.n_trials": n})), tmp
        )
        return tmp / "w"

    return make


def fresh(tmp: Path) -> Path:
    return tmp / "w"


def a_file(tmp: Path) -> Path:
    (tmp / "w").write_text("x")
    return tmp / "w"


def under_a_file(tmp: Path) -> Path:
    (tmp / "f").write_text("x")
    return tmp / "f" / "w"


def cache_under_a_file(tmp: Path):
    (tmp / "f").write_text("x")
    return smoke(**{"runtime.compilation_cache": str(tmp / "f" / "xla")})


def snapshot(workdir: Path) -> dict[str, bytes] | None:
    if not workdir.exists() or workdir.is_file():
        return None if not workdir.exists() else {".": workdir.read_bytes()}
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(workdir.rglob("*")) if p.is_file()}


def stderr_line(out) -> str:
    """The one line a failed command printed on stderr (and no traceback)."""
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert out.returncode != 0 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    return lines[0]

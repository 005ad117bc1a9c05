"""Where a workdir's Optuna studies live (`config.study.storage`), opened for a worker or a reader.

'' is SQLite study.db in the workdir, 'journal' a journal file there (both private: only the
workdir's own worker reaches them), otherwise an RDB URL or a path ending in .db (SQLite) or .log
(a journal file, the simplest choice for several workers). The sweep opens it to claim and tell
(jaxcap/experiments/hpo/study.py); every reader of a workdir's rows opens it to learn which of
them count (jaxcap/results/told.py), and so it lives below both. Optuna is imported only here,
on use: a workdir without a study never imports it.
"""

from __future__ import annotations

from pathlib import Path

from jaxcap.results.lock import WorkdirError


def private(spec: str) -> bool:
    """Whether a storage spec names the workdir's own file ('' or 'journal'): no other worker
    reaches it, so nothing is claimed from or taken over by one."""
    return spec in ("", "journal")


def storage_file(spec: str) -> Path | None:
    """The file of a storage spec that names one outside the workdir (a path, a sqlite URL)."""
    if spec in ("", "journal"):
        return None
    if "://" not in spec:
        return Path(spec)
    if spec.startswith("sqlite"):
        from sqlalchemy.engine import make_url

        database = make_url(spec).database
        return Path(database) if database and database != ":memory:" else None
    return None


def _spec_in(spec: str, root: Path) -> str:
    """The spec with a private storage named by its file in the workdir `root`."""
    if private(spec):
        return str(Path(root).resolve() / ("study.log" if spec == "journal" else "study.db"))
    return spec


def make_storage(spec: str, root: Path):
    """'' -> sqlite study.db in the workdir; 'journal' -> study.log there; an RDB URL; a path
    ending in .db (SQLite) or .log (journal file, the simplest choice for several workers). The
    folder of a file (a path, a sqlite URL) is created."""
    import optuna

    spec = _spec_in(spec, root)
    file = storage_file(spec)  # checked writable by validate (jaxcap.experiments.hpo.storage)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    if spec.endswith(".log") and "://" not in spec:
        return optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(Path(spec).resolve()))
        )
    url = spec if "://" in spec else f"sqlite:///{Path(spec).resolve()}"
    # several processes on one SQLite file wait for its lock instead of failing (optuna#820)
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)


def open_for_reading(spec: str, root: Path):
    """The storage of the workdir `root`'s studies, for a reader: one that does not exist is one
    line naming it (a reader never creates a storage; an empty one would count no row)."""
    file = storage_file(_spec_in(spec, root))
    if file is not None and not file.is_file():
        relative = not private(spec) and not file.is_absolute()
        note = f" (a relative path, read from the current directory {Path.cwd()})" if relative else ""
        raise WorkdirError(
            f"{root}: its rows name Optuna trials, whose storage {file} does not exist{note}; allowed: a "
            "workdir whose config.study.storage is reachable (run from the directory its workers ran "
            "in), or one holding best_trials.jsonl"
        )
    return make_storage(spec, root)

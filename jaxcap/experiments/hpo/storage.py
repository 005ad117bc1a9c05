"""Where an Optuna study lives (`config.study.storage`), checked before the workdir is written.

'' is SQLite study.db in the workdir, 'journal' a journal file there, otherwise an RDB URL or a
path ending in .db (SQLite) or .log (a journal file, the simplest choice for several workers):
jaxcap/results/study_storage.py opens it. A URL must parse and have its driver installed, a file
must be creatable or writable, and a server must answer, so that a sweep never trains for an
hour and then fails to record its first trial.
"""

from __future__ import annotations

import tempfile

from jaxcap.fields import ConfigError
from jaxcap.results.study_storage import storage_file


def storage_ok(spec: str) -> bool:
    """'' (SQLite study.db in the workdir), 'journal', an RDB URL, or a .db / .log file path."""
    return spec in ("", "journal") or "://" in spec or spec.endswith((".db", ".log"))


def check_url(url: str) -> None:
    """An RDB URL that SQLAlchemy can parse, with a dialect it knows and its driver installed."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    allowed = "e.g. sqlite:///path.db, postgresql+psycopg2://user@host/db (pip install psycopg2-binary)"
    try:
        parsed = make_url(url)
        shown = parsed.render_as_string(hide_password=True)
        dialect = parsed.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as e:
        shown = url.split("://")[0] + "://…"
        raise ConfigError(
            f"config.study.storage: got {shown!r}, which SQLAlchemy cannot use ({e}); allowed: {allowed}"
        ) from None
    try:
        dialect.import_dbapi()
    except ImportError as e:
        raise ConfigError(
            f"config.study.storage: got {shown!r}, whose driver is not installed ({e}); allowed: {allowed}"
        ) from None


def check_server(url: str) -> None:
    """A database server that answers (PostgreSQL, MySQL), checked before the workdir is written."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(url)
    try:
        engine.connect().close()
    except SQLAlchemyError as e:
        shown = engine.url.render_as_string(hide_password=True)
        reason = (str(getattr(e, "orig", None) or e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise ConfigError(
            f"config.study.storage: cannot connect to {shown} ({reason}); allowed: a reachable server "
            "(check host, port, user, password and database)"
        ) from None
    finally:
        engine.dispose()


def check_storage_location(spec: str) -> None:
    """A storage file this process can create or write, checked before the workdir is written (a
    probe file is made and removed again where the storage's file would be created), or a server
    that answers."""
    if "://" in spec and not spec.startswith("sqlite"):
        return check_server(spec)
    path = storage_file(spec)
    if path is None:
        return
    allowed = "a file path in a writable directory"
    if path.is_dir():
        raise ConfigError(f"config.study.storage: {path} is a directory; allowed: {allowed}")
    try:
        if path.exists():
            open(path, "ab").close()  # appends nothing: only asks for write access
            return
        ancestor = next(p for p in path.absolute().parents if p.exists())
        if not ancestor.is_dir():
            raise ConfigError(
                f"config.study.storage: {path} is under a file ({ancestor}); allowed: {allowed}"
            )
        tempfile.TemporaryFile(dir=ancestor).close()
    except OSError as e:
        raise ConfigError(
            f"config.study.storage: cannot write {path} ({e.strerror}); allowed: {allowed}"
        ) from None

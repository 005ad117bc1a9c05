"""A PostgreSQL server for the tests of workers sharing one Optuna study over the network.

`JAXCAP_TEST_POSTGRES_URL` (a SQLAlchemy URL, e.g. postgresql+psycopg2://user:pw@host:5432/db)
names a server to use. Without it, `throwaway_server` starts one in a temporary directory from
the `initdb` and `pg_ctl` on PATH or under /usr/lib/postgresql/*/bin (Debian's postgresql
package), listening on a free loopback port with trust authentication and no fsync, and removes
it afterwards. PostgreSQL refuses to run as root, so as root it runs as `nobody` (via runuser or
setpriv). When no server can be had, `Unavailable` says why, and the tests skip with that reason:
a machine without PostgreSQL is not a failure of jaxcap.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV_URL = "JAXCAP_TEST_POSTGRES_URL"
USER = "nobody"  # an unprivileged account every Debian-like system has


class Unavailable(RuntimeError):
    """No PostgreSQL server could be found or started; the message says why."""


def _binaries() -> Path:
    """The directory holding initdb and pg_ctl (pg_ctl finds `postgres` next to itself)."""
    candidates = [Path(p).resolve().parent for p in (shutil.which("initdb"), shutil.which("pg_ctl")) if p]
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for directory in candidates:
        if all((directory / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return directory
    raise Unavailable("no initdb/pg_ctl/postgres on PATH or under /usr/lib/postgresql/*/bin")


def _as_user() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that drops root (initdb and postgres refuse to run as root)."""
    if os.geteuid() != 0:
        return [], None
    try:
        account = pwd.getpwnam(USER)
    except KeyError:
        raise Unavailable(f"running as root and there is no {USER!r} account to run PostgreSQL") from None
    if shutil.which("runuser"):
        return ["runuser", "-u", USER, "--"], account
    if shutil.which("setpriv"):
        uid, gid = account.pw_uid, account.pw_gid
        return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"], account
    raise Unavailable("running as root and neither runuser nor setpriv can drop to an unprivileged user")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], what: str, log: Path | None = None) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{what} failed: {e}") from None
    if out.returncode != 0:
        detail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        if log is not None and log.exists():
            detail += log.read_text().strip().splitlines()[-3:]
        raise Unavailable(f"{what} failed (exit {out.returncode}): {' | '.join(detail)}")


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Yield the URL of a fresh server; stop it and delete its files on exit."""
    bindir = _binaries()
    prefix, account = _as_user()
    # not under pytest's tmp_path: its parents are private to root, and `nobody` must enter it
    root = Path(tempfile.mkdtemp(prefix="jaxcap-pg-"))
    data, log = root / "data", root / "server.log"
    try:
        if account is not None:
            try:
                os.chown(root, account.pw_uid, account.pw_gid)
            except OSError as e:
                raise Unavailable(f"cannot hand {root} to {USER}: {e}") from None
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
        _run([*prefix, *initdb, "--no-sync"], "initdb")
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB"
        )
        pg_ctl = [*prefix, str(bindir / "pg_ctl"), "-D", str(data)]
        _run([*pg_ctl, "-l", str(log), "-w", "-t", "60", "-o", options, "start"], "pg_ctl start", log)
        try:
            yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def postgres_url() -> Iterator[str]:
    """The server of JAXCAP_TEST_POSTGRES_URL if set, else a throwaway one; Unavailable if neither."""
    try:
        import psycopg2  # noqa: F401  (the driver of postgresql+psycopg2:// URLs)
    except ImportError:
        raise Unavailable("psycopg2 is not installed (pip install psycopg2-binary)") from None
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    with throwaway_server() as url:
        yield url

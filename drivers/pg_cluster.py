"""Throwaway PostgreSQL clusters for tests.

A ``ThrowawayCluster`` is a real ``postgres`` server in a fresh temporary
directory, listening on a free loopback port, tuned for speed rather than
durability. It is started on construction and removed by ``stop()`` (or on
leaving a ``with`` block, or at interpreter exit).

initdb and postgres refuse to run as root, so when the tests run as root the
server runs as the system user ``tique-pg`` (created on first use).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

import psycopg
from psycopg import sql

PG_USER = "tique-pg"  # OS user the server runs as when we are root
SUPERUSER = "postgres"  # database superuser created by initdb
CMD_TIMEOUT = 120.0  # seconds, for any single initdb / pg_ctl call
PG_CTL_WAIT = 60  # seconds pg_ctl -w waits for start/stop

_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "256MB",
}


def _version_key(bin_dir: str) -> tuple[int, ...]:
    version = Path(bin_dir).parent.name  # /usr/lib/postgresql/<version>/bin
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def find_pg_bin() -> Path | None:
    """Directory holding ``initdb`` and ``pg_ctl``: PATH first, then the
    Debian layout ``/usr/lib/postgresql/*/bin`` (newest version first)."""
    initdb = shutil.which("initdb")
    if initdb:
        bin_dir = Path(initdb).resolve().parent
        if (bin_dir / "pg_ctl").exists():
            return bin_dir
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        bin_dir = Path(candidate)
        if (bin_dir / "initdb").exists() and (bin_dir / "pg_ctl").exists():
            return bin_dir
    return None


def ensure_postgres_installed() -> Path:
    """Return ``find_pg_bin()``, installing Debian's ``postgresql`` first if needed."""
    bin_dir = find_pg_bin()
    if bin_dir is not None:
        return bin_dir
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo"):
        prefix = ["sudo", "-n"]
    else:
        raise RuntimeError("PostgreSQL is not installed and we are neither root nor have sudo: "
                           "install Debian's 'postgresql' package (apt-get install postgresql)")
    env = ["env", "DEBIAN_FRONTEND=noninteractive"]
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]):
        _run(prefix + env + cmd, timeout=900)
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError("installed Debian's 'postgresql' package but still found no initdb/pg_ctl "
                           "on PATH or under /usr/lib/postgresql/*/bin")
    return bin_dir


def _run(cmd: list[str], *, timeout: float = CMD_TIMEOUT, cwd: Path | None = None,
         log: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; on failure or timeout raise RuntimeError with its output and the log tail."""
    try:
        proc = subprocess.run(cmd, check=False, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"timed out after {timeout:.0f}s: {' '.join(cmd)}{_log_tail(log)}") from e
    if proc.returncode != 0:
        raise RuntimeError(f"command failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                           f"--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}{_log_tail(log)}")
    return proc


def _log_tail(log: Path | None, lines: int = 40) -> str:
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last {len(tail)} lines of {log} ---\n" + "\n".join(tail)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_pg_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        pass
    try:  # exit code 9 = already exists (a concurrent test process won the race)
        subprocess.run(["useradd", "--system", "--no-create-home", PG_USER],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    except FileNotFoundError as e:
        raise RuntimeError("running as root, but 'useradd' is missing: cannot create the "
                           f"unprivileged user {PG_USER!r} that postgres needs") from e
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        raise RuntimeError(f"could not create system user {PG_USER!r} with useradd") from None


def _world_searchable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


_live: set[ThrowawayCluster] = set()


@atexit.register
def _stop_all() -> None:
    for cluster in list(_live):
        if cluster._owner_pid != os.getpid():
            continue  # a forked child must not stop its parent's clusters
        try:
            cluster.stop()
        except Exception as e:  # keep stopping the others
            print(f"tique: failed to stop {cluster!r}: {e}", file=sys.stderr)


class ThrowawayCluster:
    """A disposable PostgreSQL server; started by the constructor.

    >>> with ThrowawayCluster() as pg:
    ...     url = pg.create_database("t1")
    """

    def __init__(self, pg_bin: Path | None = None, settings: Mapping[str, str] | None = None) -> None:
        """``settings`` override the defaults in ``_SETTINGS`` (postgresql.conf names)."""
        self.pg_bin = pg_bin or ensure_postgres_installed()
        self.settings = {**_SETTINGS, **(settings or {})}
        self._as_root = os.geteuid() == 0
        self._prefix: list[str] = []
        base: str | None = None
        if self._as_root:
            if shutil.which("runuser") is None:
                raise RuntimeError("running as root, but 'runuser' is missing: cannot run postgres")
            user = _ensure_pg_user()
            self._prefix = ["runuser", "-u", PG_USER, "--"]
            if not _world_searchable(Path(tempfile.gettempdir())):
                base = "/tmp"  # TMPDIR must be reachable by the postgres user
        self.dir = Path(tempfile.mkdtemp(prefix="tique-pg-", dir=base))
        self.data_dir = self.dir / "data"
        self.log_file = self.dir / "postgres.log"
        self.port = 0
        self._owner_pid = os.getpid()
        if self._as_root:
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        _live.add(self)
        try:
            self._initdb()
            self._start()
        except BaseException:
            self.stop()
            raise

    # -- public API ---------------------------------------------------------

    @property
    def url(self) -> str:
        return self.url_for(SUPERUSER)

    def url_for(self, dbname: str) -> str:
        """Connection URL for database ``dbname`` as the superuser."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{urllib.parse.quote(dbname, safe='')}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` and return its URL."""
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)

    def kill_connections(self, dbname: str | None = None) -> int:
        """Terminate all client backends (of ``dbname`` if given) but our own; return how many."""
        query = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                 " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
                 " AND (%(db)s::text IS NULL OR datname = %(db)s::text)")
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(query, {"db": dbname}).fetchone()
        return int(row[0]) if row else 0

    def restart(self, mode: Literal["smart", "fast", "immediate"] = "fast") -> None:
        """``pg_ctl restart -w`` on the same port. ``mode="immediate"`` skips the
        shutdown checkpoint, so the server comes back through WAL crash recovery.
        Note: with the default ``synchronous_commit=off`` an immediate restart may
        lose the last commits; pass ``settings={"synchronous_commit": "on"}`` to
        the constructor when a test asserts that committed work survives a crash."""
        self._pg_ctl("restart", "-m", mode)

    def stop(self) -> None:
        """Stop the server immediately and delete its directory. Idempotent."""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            if pid_file.exists():
                try:
                    self._pg_ctl("stop", "-m", "immediate")
                except RuntimeError:
                    with contextlib.suppress(OSError, ValueError, IndexError):
                        # last resort, so that no server outlives us
                        os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
                    raise
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            _live.discard(self)

    def __enter__(self) -> ThrowawayCluster:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<ThrowawayCluster {self.url} dir={self.dir}>"

    # -- internals ----------------------------------------------------------

    def _initdb(self) -> None:
        _run(self._prefix + [str(self.pg_bin / "initdb"), "-D", str(self.data_dir), "-A", "trust",
                             "-U", SUPERUSER, "--no-sync", "-E", "UTF8", "--no-locale"],
             cwd=self.dir)
        lines = [f"{k} = '{v}'" for k, v in self.settings.items()]
        lines.append(f"unix_socket_directories = '{self.dir}'")
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\n# tique test settings\n" + "\n".join(lines) + "\n")

    def _start(self, attempts: int = 3) -> None:
        for attempt in range(attempts):
            self.port = _free_port()
            with open(self.data_dir / "postgresql.conf", "a") as conf:
                conf.write(f"port = {self.port}\n")  # the last setting wins
            try:
                self._pg_ctl("start")
                return
            except RuntimeError:
                # Another process may have grabbed the port between probe and bind.
                if attempt + 1 == attempts or "already in use" not in _log_tail(self.log_file):
                    raise

    def _pg_ctl(self, *args: str) -> None:
        _run(self._prefix + [str(self.pg_bin / "pg_ctl"), "-D", str(self.data_dir),
                             "-l", str(self.log_file), "-w", "-t", str(PG_CTL_WAIT), *args],
             cwd=self.dir, log=self.log_file)

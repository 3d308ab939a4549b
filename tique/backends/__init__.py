"""One module per engine; `open_database` picks one by URL scheme."""
from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Iterator
from urllib.parse import urlsplit

from tique.backends.base import Backend
from tique.errors import InterfaceError, redact

_databases: dict[str, Backend] = {}
_lock = threading.Lock()


def open_database(url: str, **options: object) -> Backend:
    """The process-wide backend for `url`: connections to one database share its oracle."""
    scheme = urlsplit(url).scheme.split("+")[0]
    with _lock:
        backend = _databases.get(url)
        if backend is None or backend.closed:
            if scheme == "duckdb":
                from tique.backends.duckdb import DuckDBBackend
                backend = DuckDBBackend(url, **options)
            elif scheme in ("postgresql", "postgres"):
                with _client_library("PostgreSQL", "psycopg", "postgres"):
                    from tique.backends.postgres import PostgresBackend
                backend = PostgresBackend(url, **options)
            elif scheme == "monetdb":
                with _client_library("MonetDB", "pymonetdb", "monetdb"):
                    from tique.backends.monetdb import MonetDBBackend
                backend = MonetDBBackend(url, **options)
            else:
                raise InterfaceError(f"unknown database URL scheme {scheme!r} in {redact(url)!r}; use duckdb:///path.db or postgresql://user@host:port/db")
            _databases[url] = backend
        return backend


@contextlib.contextmanager
def _client_library(engine: str, module: str, extra: str) -> Iterator[None]:
    """`pip install tique` brings DuckDB only; another engine's client library comes with
    its extra, and connecting without it says which one."""
    try:
        yield
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != module:
            raise
        raise InterfaceError(f"connecting to {engine} needs its client library {module}, which is not installed: "
                             f"pip install 'tique[{extra}]'") from error


@atexit.register
def _close_all() -> None:
    """Closes embedded databases before the interpreter tears their bindings down."""
    from tique.checkpoint import stop_all_background_checkpointers

    stop_all_background_checkpointers()
    with _lock:
        backends = list(_databases.values())
        _databases.clear()
    for backend in backends:
        try:
            backend.close()
        except Exception:
            pass


def forget_database(url: str) -> None:
    """Drops the process-wide backend, as a process exit would (used by recovery tests)."""
    with _lock:
        backend = _databases.pop(url, None)
    if backend is not None:
        from tique.checkpoint import stop_background_checkpointer

        stop_background_checkpointer(backend)
        backend.close()

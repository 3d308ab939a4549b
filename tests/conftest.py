"""Fixtures: every engine test runs against real DuckDB and a real, throwaway PostgreSQL."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import tique  # noqa: E402
from tique.backends import forget_database  # noqa: E402
from tique.checkpoint import stop_background_checkpointer  # noqa: E402
from drivers.pg_cluster import ThrowawayCluster, ensure_postgres_installed  # noqa: E402

ENGINES = ["duckdb", "postgres", "monetdb"]
_names = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[ThrowawayCluster]:
    ensure_postgres_installed()
    cluster = ThrowawayCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def monetdb_server() -> Iterator[Any]:
    from drivers.monetdb_server import MonetDBServer

    try:
        server = MonetDBServer()
    except FileNotFoundError as reason:
        pytest.skip(str(reason))
    try:
        yield server
    finally:
        server.stop()


def new_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "duckdb":
        return f"duckdb:///{tmp_path}/tique-{next(_names)}.db"
    if engine == "monetdb":
        server = request.getfixturevalue("monetdb_server")
        return f"{server.url}?schema=tique_{next(_names)}"
    cluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database(f"tique_{next(_names)}")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database on `engine`; its process-wide state is dropped afterwards."""
    made = new_url(engine, tmp_path, request)
    yield made
    from tique.backends import _databases
    backend = _databases.get(made)
    if backend is not None:
        stop_background_checkpointer(backend)
    forget_database(made)


@pytest.fixture
def connect(url: str) -> Iterator[Callable[..., tique.Connection]]:
    """Opens tique connections to `url`; all are closed after the test."""
    opened: list[tique.Connection] = []

    def make(**options: Any) -> tique.Connection:
        conn = tique.connect(url, **options)
        opened.append(conn)
        return conn

    yield make
    for conn in opened:
        try:
            conn.close()
        except Exception:
            pass


@pytest.fixture
def native(url: str, connect: Callable[..., tique.Connection]) -> Callable[[str], list[tuple]]:
    """Runs a query directly on the engine (no rewriting), to inspect physical tables."""
    conn = connect()

    def run(sql: str) -> list[tuple]:
        backend = conn.backend
        return backend.rows(conn._raw, sql, [])

    return run

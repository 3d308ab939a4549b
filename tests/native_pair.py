"""A tique database and a native one of the same engine holding the same tables and rows,
for tests that compare what tique answers with what the engine answers natively."""
from __future__ import annotations

import uuid
from typing import Any, Iterator, Sequence

import pytest

import tique
from fuzz.engines import Native, NativeDuckDB, NativeMonetDB, NativePostgres


def native_engine(engine: str, url: str) -> Native:
    """A native connection to `engine`; `url` is a PostgreSQL database or a MonetDB server."""
    if engine == "duckdb":
        return NativeDuckDB()
    if engine == "postgres":
        return NativePostgres(url)
    return NativeMonetDB(url.split("?", 1)[0], f"native_{uuid.uuid4().hex[:12]}")


def native_pair(engine: str, connect: Any, request: pytest.FixtureRequest, setup: Sequence[str],
                prefix: str) -> Iterator[tuple[tique.Connection, Native]]:
    """Yields (tique connection, native connection), each having run `setup`; for a
    fixture to `yield from`. `prefix` names the native PostgreSQL database."""
    if engine == "postgres":
        native_url = request.getfixturevalue("pg_cluster").create_database(f"{prefix}_{uuid.uuid4().hex[:12]}")
    elif engine == "monetdb":
        native_url = request.getfixturevalue("monetdb_server").url
    else:
        native_url = ""
    native = native_engine(engine, native_url)
    conn = connect(autocommit=True)
    try:
        for sql in setup:
            conn.cursor().execute(sql)
            assert native.execute(sql, (), write=True).kind == "count", sql
        yield conn, native
    finally:
        native.close()

"""An engine error tique passes on reads as the engine's driver shows it natively: the same
message, after the driver's class name where that says more than the PEP 249 class
(DuckDB's ConversionException, psycopg's InvalidTextRepresentation); pymonetdb's classes
are PEP 249's own, so a MonetDB error is its message alone (`22018!conversion of ...`),
never the class name twice (`ProgrammingError: ProgrammingError: 42000!...`)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

import tique
from fuzz.engines import Native
from native_pair import native_pair

TABLE = "CREATE TABLE t (k INTEGER PRIMARY KEY, s VARCHAR(10))"
ROWS = "INSERT INTO t VALUES (1, 'ab'), (2, '7')"
# Errors the engine raises while running the rewritten statement, passed on as they are.
FAILING = [
    "SELECT CAST(s AS INTEGER) FROM t WHERE k = 1",
    "SELECT k FROM t WHERE CAST(s AS INTEGER) > 1",
    "SELECT k / (k - k) FROM t",
]


@pytest.fixture
def pair(engine: str, connect: Any, request: pytest.FixtureRequest) -> Iterator[tuple[tique.Connection, Native]]:
    """A tique database and a native one with the same table and rows."""
    yield from native_pair(engine, connect, request, (TABLE, ROWS), "errors")


def _native_error(native: Native, sql: str) -> BaseException | None:
    """The driver's own exception for `sql`, or None when it runs."""
    try:
        cur = native.conn.cursor()
        cur.execute(sql)
        cur.fetchall()
    except Exception as error:  # the driver's class, whichever it is
        if native.engine == "postgres":
            native.conn.rollback()
        return error
    return None


@pytest.mark.parametrize("sql", FAILING)
def test_engine_errors_read_as_natively(engine: str, pair: tuple[tique.Connection, Native], sql: str) -> None:
    conn, native = pair
    want = _native_error(native, sql)
    cur = conn.cursor()
    if want is None:  # DuckDB divides by zero into NULL
        cur.execute(sql)
        cur.fetchall()
        return
    with pytest.raises(tique.DatabaseError) as raised:
        cur.execute(sql)
        cur.fetchall()
    got = str(raised.value)
    native_text = str(want).strip().splitlines()[0]
    expected = native_text if engine == "monetdb" else f"{type(want).__name__}: {native_text}"
    assert got.splitlines()[0] == expected, f"natively {type(want).__name__}: {want!s}\nthrough tique {type(raised.value).__name__}: {got}"
    assert not got.startswith(f"{type(raised.value).__name__}:"), got
    assert f"statement: {sql}" in got

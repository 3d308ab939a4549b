"""An engine error tique passes on reads as the engine's driver shows it natively: the same
message, after the driver's class name where that says more than the PEP 249 class
(DuckDB's ConversionException, psycopg's InvalidTextRepresentation); pymonetdb's classes
are PEP 249's own, so a MonetDB error is its message alone (`22018!conversion of ...`),
never the class name twice (`ProgrammingError: ProgrammingError: 42000!...`)."""
from __future__ import annotations

import re
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



# Writes MonetDB rejects as a syntax error (no ORDER BY ... LIMIT in an IN subquery of a
# write, here over a derived table), natively and as tique rewrites them.
REJECTED_WRITES = [
    "UPDATE t SET s = 'x' WHERE k IN (SELECT x FROM (SELECT a.k AS x FROM t AS a FULL JOIN t AS b ON TRUE) AS d ORDER BY x LIMIT 1)",
    "DELETE FROM t WHERE k IN (SELECT x FROM (SELECT a.k AS x FROM t AS a FULL JOIN t AS b ON TRUE) AS d ORDER BY x LIMIT 1)",
]


@pytest.mark.parametrize("sql", REJECTED_WRITES)
def test_a_rejected_write_shows_no_rewritten_text(engine: str, pair: tuple[tique.Connection, Native], sql: str) -> None:
    """Where the engine rejects a write, tique's error says so in the user's terms: a
    syntax error is said of the user's statement, never quoting the rewritten text the
    engine read. Where the engine runs it, so does tique, writing the one row k = 1."""
    conn, native = pair
    want = native.execute(sql, (), write=True)
    cur = conn.cursor()
    if want.kind != "error":
        cur.execute(sql)
        assert want.count == cur.rowcount == 1
        return
    with pytest.raises(tique.DatabaseError) as raised:
        cur.execute(sql)
    got = str(raised.value)
    assert "syntax error" in got and f"statement: {sql}" in got
    assert "tq_" not in got and "_cache" not in got and "_storage" not in got, got
    quoted = re.search(r' in: "(.*)"?$', got.splitlines()[0])
    assert quoted is None or sql.lower().startswith(quoted.group(1).rstrip('"')), got  # only ever the user's own text

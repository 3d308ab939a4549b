"""Multi-column integer keys packed into one column (paper §3.2.5), on MonetDB: the
application never sees the packed column, and every operation keyed by the columns
behaves as with the plain key."""
from __future__ import annotations

from typing import Callable

import pytest

import tique
from tique.checkpoint import checkpoint

pytestmark = pytest.mark.parametrize("engine", ["monetdb"], indirect=True)

Connect = Callable[..., tique.Connection]


def run(conn: tique.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


def storage_columns(native: Callable[[str], list[tuple]], table: str) -> set[str]:
    rows = native(f"SELECT c.name FROM sys.columns c JOIN sys.tables t ON t.id = c.table_id "
                  f"JOIN sys.schemas s ON s.id = t.schema_id WHERE t.name = '{table}' AND s.name = current_schema")
    return {r[0] for r in rows}


def test_integer_keys_are_packed_and_invisible(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE ol (w INTEGER, d SMALLINT, o BIGINT, n SMALLINT, q INTEGER, PRIMARY KEY (w, d, o, n))")  # 128 bits
    run(conn, "CREATE TABLE wide (a BIGINT, b BIGINT, c TINYINT, PRIMARY KEY (a, b, c))")  # 136 bits: does not fit
    run(conn, "CREATE TABLE named (w INTEGER, name VARCHAR(10), q INTEGER, PRIMARY KEY (w, name))")
    assert "tq_pk" in storage_columns(native, "ol_storage") and "tq_pk" in storage_columns(native, "ol_cache")
    assert "tq_pk" not in storage_columns(native, "named_storage")  # a text key column: not packable
    assert "tq_pk" not in storage_columns(native, "wide_storage")
    run(conn, "INSERT INTO ol VALUES (1, 2, 3, 4, 10), (-2147483647, -32767, -9223372036854775807, -32767, 20),"
              " (2147483647, 32767, 9223372036854775807, 32767, 30)")
    assert [d[0] for d in conn.cursor().execute("SELECT * FROM ol").description] == ["w", "d", "o", "n", "q"]
    assert run(conn, "SELECT q FROM ol WHERE w = ? AND d = ? AND o = ? AND n = ?", (1, 2, 3, 4)) == [(10,)]
    assert run(conn, "SELECT q FROM ol WHERE w = -2147483647 AND d = -32767 AND o = ? AND n = ?",
               (-9223372036854775807, -32767)) == [(20,)]
    assert run(conn, "SELECT q FROM ol WHERE w = ? AND d = ? AND o = ? AND n = ?", (2147483647, 32767, 9223372036854775807, 32767)) == [(30,)]
    assert run(conn, "SELECT q FROM ol WHERE w = ? AND d = ? AND o = ? AND n = ?", (1, 2, 3, 5)) == []
    # MonetDB's extreme values (each type's minimum is its NULL) stay distinct: a packing
    # that overflowed or overlapped would fail or mix them up
    packed = native("SELECT tq_pk FROM ol_cache")
    assert len({r[0] for r in packed}) == 3


def test_writes_reads_and_checkpoint_keep_keys_apart(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE stock (w INTEGER, i INTEGER, qty INTEGER NOT NULL, PRIMARY KEY (w, i))")
    run(conn, "INSERT INTO stock SELECT w, i, 100 FROM (SELECT value AS w FROM sys.generate_series(1, 5)) a, "
              "(SELECT value AS i FROM sys.generate_series(1, 52)) b")  # end exclusive: 4 x 51 rows
    checkpoint(conn)
    run(conn, "UPDATE stock SET qty = qty - ? WHERE w = ? AND i = ?", (7, 2, 9))
    run(conn, "UPDATE stock SET i = ? WHERE w = ? AND i = ?", (500, 3, 10))  # moves a key
    run(conn, "DELETE FROM stock WHERE w = ? AND i = ?", (4, 50))
    expected = {(2, 9): 93, (3, 500): 100}
    for (w, i), qty in expected.items():
        assert run(conn, "SELECT qty FROM stock WHERE w = ? AND i = ?", (w, i)) == [(qty,)]
    assert run(conn, "SELECT qty FROM stock WHERE w = ? AND i = ?", (3, 10)) == []
    assert run(conn, "SELECT count(*), sum(qty) FROM stock") == [(203, 203 * 100 - 7)]
    with pytest.raises(tique.IntegrityError, match="duplicate primary key"):
        run(conn, "INSERT INTO stock VALUES (?, ?, ?)", (2, 9, 1))
    checkpoint(conn)
    assert native("SELECT count(*) FROM stock_cache") == [(0,)]
    assert native("SELECT qty FROM stock_storage WHERE w = 2 AND i = 9") == [(93,)]
    assert run(conn, "SELECT qty FROM stock WHERE w = ? AND i = ?", (2, 9)) == [(93,)]
    assert run(conn, "SELECT count(*), sum(qty) FROM stock") == [(203, 203 * 100 - 7)]


def test_concurrent_writers_of_one_packed_key_conflict(connect: Connect) -> None:
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE d (w INTEGER, d INTEGER, next_o INTEGER NOT NULL, PRIMARY KEY (w, d))")
    run(setup, "INSERT INTO d VALUES (1, 1, 1), (1, 2, 1)")
    a, b = connect(), connect()
    run(a, "UPDATE d SET next_o = next_o + 1 WHERE w = ? AND d = ?", (1, 1))
    run(b, "UPDATE d SET next_o = next_o + 1 WHERE w = ? AND d = ?", (1, 1))
    a.commit()
    with pytest.raises(tique.SerializationFailure):
        b.commit()
    run(b, "UPDATE d SET next_o = next_o + 1 WHERE w = ? AND d = ?", (1, 2))  # another key: no conflict
    b.commit()
    assert run(setup, "SELECT d, next_o FROM d ORDER BY d") == [(1, 2), (2, 2)]


def test_adopted_tables_get_a_packed_key(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    from tique.adopt import adopt

    conn = connect(autocommit=True)
    raw = conn.backend.open()
    try:
        conn.backend.execute(raw, "CREATE TABLE cust (w INTEGER NOT NULL, c INTEGER NOT NULL, bal INTEGER, PRIMARY KEY (w, c))", [])
        conn.backend.execute(raw, "INSERT INTO cust VALUES (1, 1, 5), (1, 2, 6), (2, 1, 7)", [])
    finally:
        conn.backend.close_raw(raw)
    adopt(conn, ["cust"])
    assert "tq_pk" in storage_columns(native, "cust_storage")
    assert run(conn, "SELECT bal FROM cust WHERE w = ? AND c = ?", (1, 2)) == [(6,)]
    run(conn, "UPDATE cust SET bal = bal + 1 WHERE w = ? AND c = ?", (2, 1))
    assert run(conn, "SELECT w, c, bal FROM cust ORDER BY w, c") == [(1, 1, 5), (1, 2, 6), (2, 1, 8)]

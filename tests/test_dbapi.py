"""PEP 249 (DB-API 2.0) completeness and schema translation, on every engine.

Each engine test gets a fresh database (fixtures in conftest.py); `native` inspects the
physical tables tique keeps underneath, so these tests check what is really stored.
"""
from __future__ import annotations

import datetime as dt
import time
from typing import Callable

import pytest

import tique
from sqlhelp import column_names, index_names, rows, run, sequence_names, table_names
from tique.backends import forget_database

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]

EXCEPTION_NAMES = (
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError", "SerializationFailure",
)




def physical_tables(native: Native, engine: str, prefix: str) -> set[str]:
    return {name for name in table_names(native, engine) if name == prefix or name.startswith(prefix + "_")}


def catalog_names(native: Native) -> set[str]:
    return {name for (name,) in native("SELECT name FROM tq_tables")}


# -- module globals, exceptions, types (engine independent) ----------------------------


def test_module_globals() -> None:
    assert tique.apilevel == "2.0"
    assert tique.threadsafety == 1
    assert tique.paramstyle == "qmark"
    assert callable(tique.connect)


def test_exception_hierarchy_on_module_and_connection_class() -> None:
    for name in EXCEPTION_NAMES:
        cls = getattr(tique, name)
        assert isinstance(cls, type) and issubclass(cls, Exception)
        assert getattr(tique.Connection, name) is cls, name
    assert not issubclass(tique.Warning, tique.Error)
    assert issubclass(tique.InterfaceError, tique.Error)
    assert issubclass(tique.DatabaseError, tique.Error)
    assert not issubclass(tique.InterfaceError, tique.DatabaseError)
    for name in ("DataError", "OperationalError", "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"):
        assert issubclass(getattr(tique, name), tique.DatabaseError), name
    assert issubclass(tique.SerializationFailure, tique.OperationalError)
    assert tique.SerializationFailure.__mro__[:5] == (
        tique.SerializationFailure, tique.OperationalError, tique.DatabaseError, tique.Error, Exception)


def test_type_constructors() -> None:
    assert tique.Date(2024, 2, 29) == dt.date(2024, 2, 29)
    assert tique.Time(13, 45, 7) == dt.time(13, 45, 7)
    assert tique.Timestamp(2024, 2, 29, 13, 45, 7) == dt.datetime(2024, 2, 29, 13, 45, 7)
    ticks = 1_700_000_000.0
    local = time.localtime(ticks)
    assert tique.DateFromTicks(ticks) == dt.date(local.tm_year, local.tm_mon, local.tm_mday)
    assert tique.TimeFromTicks(ticks) == dt.time(local.tm_hour, local.tm_min, local.tm_sec)
    assert tique.TimestampFromTicks(ticks) == dt.datetime(*local[:6])
    assert tique.Binary(b"\x00\xffab") == b"\x00\xffab"
    assert tique.STRING != tique.NUMBER and "VARCHAR" == tique.STRING and "INTEGER" != tique.STRING


# -- connections and cursors ------------------------------------------------------------


def test_exception_classes_on_connection_instances(connect: Connect) -> None:
    conn = connect()
    for name in EXCEPTION_NAMES:
        assert getattr(conn, name) is getattr(tique, name)
    with pytest.raises(conn.ProgrammingError):
        conn.cursor().execute("SELEC 1")


def test_type_objects_match_description_and_values_round_trip(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE typed (id INTEGER PRIMARY KEY, name VARCHAR, born DATE, seen TIMESTAMP, blob BYTEA, score DOUBLE PRECISION, price NUMERIC(10, 2))")
    values = (1, "ann", tique.Date(2001, 2, 3), tique.Timestamp(2020, 1, 2, 3, 4, 5), tique.Binary(b"\x00\x01\xfe"), 2.5, 3)
    assert run(conn, "INSERT INTO typed VALUES (?, ?, ?, ?, ?, ?, ?)", values) == 1
    cur = conn.cursor()
    cur.execute("SELECT id, name, born, seen, blob, score, price FROM typed")
    got = cur.fetchone()
    assert got is not None
    assert got[:6] == values[:6] and got[6] == 3
    codes = {d[0]: d[1] for d in cur.description}
    assert codes["id"] == tique.NUMBER and codes["score"] == tique.NUMBER and codes["price"] == tique.NUMBER
    assert codes["name"] == tique.STRING and codes["name"] != tique.NUMBER
    assert codes["born"] == tique.DATETIME and codes["seen"] == tique.DATETIME
    assert codes["blob"] == tique.BINARY and codes["blob"] != tique.STRING
    conn.commit()


def test_cursor_is_a_pep249_cursor(connect: Connect) -> None:
    conn = connect()
    cur = conn.cursor()
    assert cur.connection is conn
    assert cur.description is None and cur.rowcount == -1 and cur.arraysize == 1
    for method in ("execute", "executemany", "fetchone", "fetchmany", "fetchall", "close", "setinputsizes", "setoutputsize"):
        assert callable(getattr(cur, method))
    cur.setinputsizes([None])
    cur.setoutputsize(10)
    with pytest.raises(tique.DatabaseError):
        cur.callproc("no_such_function")
    with pytest.raises(tique.NotSupportedError):
        cur.nextset()


def test_execute_binds_qmark_and_numeric_markers(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR)")
    cur = conn.cursor()
    cur.executemany("INSERT INTO kv (k, v) VALUES (?, ?)", [(i, f"v{i}") for i in range(1, 6)])
    assert cur.rowcount == 5
    assert rows(conn, "SELECT v FROM kv WHERE k = ? OR k = ? ORDER BY k", (2, 4)) == [("v2",), ("v4",)]
    assert rows(conn, "SELECT v FROM kv WHERE k = $2 OR k = $1 ORDER BY k", (5, 1)) == [("v1",), ("v5",)]
    # one numeric marker used twice binds one value
    assert rows(conn, "SELECT k FROM kv WHERE k = $1 OR k = $1 + 1 ORDER BY k", (3,)) == [(3,), (4,)]
    assert run(conn, "UPDATE kv SET v = $1 WHERE k = $2", ("new", 3)) == 1
    assert rows(conn, "SELECT v FROM kv WHERE k = 3") == [("new",)]
    # parameters may be any sequence, and native statements bind them too
    assert rows(conn, "SELECT ? + 1", [41]) == [(42,)]
    conn.commit()


def test_fetch_methods_arraysize_and_iteration(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE nums (n INTEGER PRIMARY KEY)")
    conn.cursor().executemany("INSERT INTO nums VALUES (?)", [(i,) for i in range(10)])
    cur = conn.cursor()
    assert cur.execute("SELECT n FROM nums ORDER BY n") is cur
    assert cur.fetchone() == (0,)
    assert cur.fetchmany() == [(1,)]  # arraysize defaults to 1
    cur.arraysize = 3
    assert cur.fetchmany() == [(2,), (3,), (4,)]
    assert cur.fetchmany(2) == [(5,), (6,)]
    assert cur.fetchall() == [(7,), (8,), (9,)]
    assert cur.fetchone() is None
    assert cur.fetchmany() == [] and cur.fetchall() == []
    cur.execute("SELECT n FROM nums WHERE n < ? ORDER BY n", (4,))
    assert list(cur) == [(0,), (1,), (2,), (3,)]
    assert [r for r in cur.execute("SELECT n * 2 FROM nums WHERE n >= 8 ORDER BY n")] == [(16,), (18,)]
    assert all(type(r) is tuple for r in cur.execute("SELECT n FROM nums").fetchall())
    conn.commit()


def test_fetch_without_result_set_is_an_error(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE e (id INTEGER PRIMARY KEY)")
    cur = conn.cursor()
    with pytest.raises(tique.Error):
        cur.fetchone()
    cur.execute("INSERT INTO e VALUES (1)")
    assert cur.description is None
    for fetch in (cur.fetchone, cur.fetchall, cur.fetchmany):
        with pytest.raises(tique.ProgrammingError):
            fetch()
    conn.rollback()


def test_description(connect: Connect) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, age INTEGER)")
    assert cur.description is None
    cur.execute("INSERT INTO people VALUES (1, 'ann', 30)")
    assert cur.description is None
    cur.execute("SELECT * FROM people")
    assert [d[0] for d in cur.description] == ["id", "name", "age"]
    assert all(len(d) == 7 for d in cur.description)
    cur.execute("SELECT name AS who, age + 1 AS next_age FROM people WHERE id = ?", (1,))
    assert [d[0] for d in cur.description] == ["who", "next_age"]
    assert cur.fetchall() == [("ann", 31)]
    cur.execute("UPDATE people SET age = age + 1")
    assert cur.description is None and cur.rowcount == 1
    conn.commit()


# -- rowcount ---------------------------------------------------------------------------


def _accounts(conn: tique.Connection) -> None:
    run(conn, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner VARCHAR, balance INTEGER, bonus INTEGER)")
    assert run(conn, "INSERT INTO acct VALUES (1, 'ann', 100, 1), (2, 'bob', 200, 2), (3, 'cy', 300, 3), (4, NULL, 400, 4), (5, 'al', 500, 5)") == 5


def test_rowcount_of_inserts(connect: Connect, native: Native) -> None:
    conn = connect()
    _accounts(conn)
    conn.commit()
    # Created before the next transaction begins: an engine snapshot (DuckDB, MonetDB)
    # taken before another connection creates a table does not see it, natively too.
    native("CREATE TABLE feed (id INTEGER, owner TEXT)")
    native("INSERT INTO feed VALUES (50, 'x'), (51, 'y')")
    assert run(conn, "INSERT INTO acct (id, owner, balance) VALUES (?, ?, ?), (?, ?, ?)", (6, "d", 1, 7, "e", 2)) == 2
    assert run(conn, "INSERT INTO acct SELECT id + 100, owner, balance, bonus FROM acct WHERE balance >= ?", (300,)) == 3
    assert run(conn, "INSERT INTO acct SELECT id + 1000, owner, balance, bonus FROM acct WHERE balance > 10000") == 0
    assert run(conn, "INSERT INTO acct (id, owner) SELECT id, owner FROM feed") == 2
    cur = conn.cursor()
    cur.executemany("INSERT INTO acct (id, balance) VALUES (?, ?)", [(60, 1), (61, 1), (62, 1)])
    assert cur.rowcount == 3
    conn.commit()
    assert rows(conn, "SELECT count(*) FROM acct") == [(5 + 2 + 3 + 2 + 3,)]


def test_update_set_expressions_use_old_values(connect: Connect) -> None:
    conn = connect()
    _accounts(conn)
    # every right-hand side reads the row as it was: a swap really swaps
    assert run(conn, "UPDATE acct SET balance = bonus, bonus = balance WHERE id = ?", (1,)) == 1
    assert rows(conn, "SELECT balance, bonus FROM acct WHERE id = 1") == [(1, 100)]
    assert run(conn, "UPDATE acct SET balance = balance * 2 + ?, owner = owner || '!' WHERE id = ?", (7, 2)) == 1
    assert rows(conn, "SELECT owner, balance FROM acct WHERE id = 2") == [("bob!", 407)]
    conn.commit()
    assert rows(connect(), "SELECT id, owner, balance, bonus FROM acct WHERE id <= 2 ORDER BY id") == [(1, "ann", 1, 100), (2, "bob!", 407, 2)]


@pytest.mark.parametrize(("where", "params", "expected"), [
    ("id = ?", (3,), {3}),
    ("id = ? OR id = ?", (1, 5), {1, 5}),
    ("balance > ?", (250,), {3, 4, 5}),
    ("balance BETWEEN ? AND ? AND owner LIKE 'a%'", (0, 1000), {1, 5}),
    ("id IN (?, ?, ?)", (2, 4, 99), {2, 4}),
    ("owner IS NULL", (), {4}),
    ("id IN (SELECT id FROM acct WHERE bonus >= ?)", (4,), {4, 5}),
    ("balance = (SELECT max(balance) FROM acct)", (), {5}),
    ("id = ?", (99,), set()),
    ("1 = 1", (), {1, 2, 3, 4, 5}),
])
def test_update_rowcount_for_where_shapes(connect: Connect, where: str, params: tuple, expected: set[int]) -> None:
    conn = connect()
    _accounts(conn)
    before = dict(rows(conn, "SELECT id, balance FROM acct"))
    assert run(conn, f"UPDATE acct SET balance = balance + 1 WHERE {where}", params) == len(expected)
    after = dict(rows(conn, "SELECT id, balance FROM acct"))
    assert after == {k: v + (1 if k in expected else 0) for k, v in before.items()}
    conn.commit()
    assert dict(rows(connect(), "SELECT id, balance FROM acct")) == after


def test_update_without_where_and_with_from(connect: Connect, native: Native) -> None:
    conn = connect()
    _accounts(conn)
    conn.commit()
    native("CREATE TABLE raise_by (id INTEGER, amount INTEGER)")
    native("INSERT INTO raise_by VALUES (1, 10), (3, 30)")
    assert run(conn, "UPDATE acct SET bonus = 0") == 5
    assert run(conn, "UPDATE acct SET balance = acct.balance + raise_by.amount FROM raise_by WHERE acct.id = raise_by.id") == 2
    assert rows(conn, "SELECT id, balance, bonus FROM acct ORDER BY id") == [(1, 110, 0), (2, 200, 0), (3, 330, 0), (4, 400, 0), (5, 500, 0)]
    conn.commit()


def test_update_from_and_delete_using_a_tique_table(connect: Connect) -> None:
    conn = connect()
    _accounts(conn)
    conn.commit()
    run(conn, "CREATE TABLE grants (id INTEGER PRIMARY KEY, amount INTEGER)")
    run(conn, "INSERT INTO grants VALUES (1, 10), (3, 30)")
    assert run(conn, "UPDATE acct SET balance = acct.balance + grants.amount FROM grants WHERE acct.id = grants.id") == 2
    assert run(conn, "DELETE FROM acct USING grants WHERE acct.id = grants.id AND grants.amount > 20") == 1
    assert rows(conn, "SELECT id, balance FROM acct ORDER BY id") == [(1, 110), (2, 200), (4, 400), (5, 500)]


def test_update_of_key_moves_the_row(connect: Connect) -> None:
    conn = connect()
    _accounts(conn)
    assert run(conn, "UPDATE acct SET id = id + 10 WHERE id >= ?", (4,)) == 2
    assert rows(conn, "SELECT id FROM acct ORDER BY id") == [(1,), (2,), (3,), (14,), (15,)]
    conn.commit()
    assert rows(connect(), "SELECT id, balance FROM acct WHERE id > 3 ORDER BY id") == [(14, 400), (15, 500)]


def test_rowcount_of_deletes(connect: Connect) -> None:
    conn = connect()
    _accounts(conn)
    assert run(conn, "DELETE FROM acct WHERE balance < ?", (250,)) == 2
    assert run(conn, "DELETE FROM acct WHERE id = ?", (1,)) == 0  # already deleted in this transaction
    assert run(conn, "DELETE FROM acct WHERE owner IS NULL") == 1
    assert rows(conn, "SELECT id FROM acct ORDER BY id") == [(3,), (5,)]
    conn.commit()
    conn2 = connect()
    assert run(conn2, "DELETE FROM acct") == 2
    conn2.commit()
    assert rows(conn, "SELECT count(*) FROM acct") == [(0,)]


def test_rowcount_is_minus_one_where_unknown(connect: Connect) -> None:
    conn = connect()
    cur = conn.cursor()
    assert cur.rowcount == -1
    cur.execute("CREATE TABLE r (id INTEGER PRIMARY KEY)")
    assert cur.rowcount == -1
    cur.execute("INSERT INTO r VALUES (1), (2)")
    assert cur.rowcount == 2
    cur.execute("SELECT id FROM r")
    assert cur.rowcount in (-1, 2)
    conn.commit()
    buffered = connect(buffered_writes=True)
    bcur = buffered.cursor()
    bcur.execute("INSERT INTO r VALUES (3)")
    assert bcur.rowcount == -1  # deferred to commit: not yet known
    bcur.executemany("UPDATE r SET id = id WHERE id = ?", [(1,), (2,)])
    assert bcur.rowcount == -1
    buffered.commit()
    assert rows(conn, "SELECT id FROM r ORDER BY id") == [(1,), (2,), (3,)]


# -- transactions -------------------------------------------------------------------------


def test_commit_and_rollback(connect: Connect) -> None:
    conn, other = connect(), connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
    conn.commit()  # nothing open: a no-op
    conn.rollback()
    run(conn, "INSERT INTO t VALUES (1, 'a')")
    assert conn.in_transaction
    assert rows(other, "SELECT * FROM t") == []
    other.rollback()
    conn.rollback()
    assert not conn.in_transaction
    assert rows(conn, "SELECT * FROM t") == []
    run(conn, "INSERT INTO t VALUES (2, 'b')")
    conn.commit()
    assert rows(other, "SELECT * FROM t") == [(2, "b")]
    other.commit()
    # SQL-level transaction control works as well
    cur = conn.cursor()
    cur.execute("BEGIN")
    cur.execute("UPDATE t SET v = 'c'")
    cur.execute("ROLLBACK")
    cur.execute("BEGIN")
    cur.execute("INSERT INTO t VALUES (3, 'd')")
    cur.execute("COMMIT")
    assert rows(other, "SELECT * FROM t ORDER BY id") == [(2, "b"), (3, "d")]


def test_autocommit_property(connect: Connect) -> None:
    conn, other = connect(), connect()
    assert conn.autocommit is False
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    run(conn, "INSERT INTO t VALUES (1)")
    conn.autocommit = True  # commits the open transaction
    assert conn.autocommit is True and not conn.in_transaction
    assert rows(other, "SELECT id FROM t") == [(1,)]
    other.rollback()
    run(conn, "INSERT INTO t VALUES (2)")
    assert not conn.in_transaction
    assert rows(other, "SELECT id FROM t ORDER BY id") == [(1,), (2,)]
    other.rollback()
    # an explicit BEGIN opens a transaction even in autocommit mode
    cur = conn.cursor()
    cur.execute("BEGIN")
    cur.execute("INSERT INTO t VALUES (3)")
    assert rows(other, "SELECT count(*) FROM t") == [(2,)]
    other.rollback()
    cur.execute("COMMIT")
    assert rows(other, "SELECT count(*) FROM t") == [(3,)]
    other.rollback()
    conn.autocommit = False
    run(conn, "INSERT INTO t VALUES (4)")
    assert conn.in_transaction
    conn.rollback()
    auto = connect(autocommit=True)
    assert auto.autocommit is True
    run(auto, "DELETE FROM t WHERE id = 1")
    assert rows(other, "SELECT id FROM t ORDER BY id") == [(2,), (3,)]


def test_close_rolls_back_and_is_idempotent(connect: Connect) -> None:
    conn, other = connect(), connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    run(conn, "INSERT INTO t VALUES (1)")
    cur = conn.cursor()
    conn.close()
    assert conn.closed
    conn.close()
    assert rows(other, "SELECT count(*) FROM t") == [(0,)]
    with pytest.raises(tique.InterfaceError):
        cur.execute("SELECT 1")
    cur2 = other.cursor()
    cur2.close()
    cur2.close()
    with pytest.raises(tique.InterfaceError):
        cur2.fetchall()


def test_connection_context_manager(connect: Connect) -> None:
    with connect() as conn:
        run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
        run(conn, "INSERT INTO t VALUES (1)")
    assert conn.closed
    with pytest.raises(RuntimeError):
        with connect() as conn2:
            run(conn2, "INSERT INTO t VALUES (2)")
            raise RuntimeError("boom")
    assert conn2.closed
    assert rows(connect(), "SELECT id FROM t") == [(1,)]


def test_cursor_context_manager(connect: Connect) -> None:
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
    with pytest.raises(tique.InterfaceError):
        cur.execute("SELECT 1")
    assert not conn.closed
    assert rows(conn, "SELECT 2") == [(2,)]


# -- schema translation -------------------------------------------------------------------


def test_create_table_single_key_not_null_default(connect: Connect, native: Native, engine: str) -> None:
    conn = connect()
    run(conn, "CREATE TABLE item (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, qty INTEGER DEFAULT 7, tag VARCHAR DEFAULT 'none')")
    table = conn.tables["item"]
    assert table.key == ("id",) and not table.hidden_rowid
    assert [(c.name, c.not_null) for c in table.columns] == [("id", True), ("name", True), ("qty", False), ("tag", False)]
    assert physical_tables(native, engine, "item") == {"item_storage", "item_cache"}
    assert catalog_names(native) == {"item"}
    run(conn, "INSERT INTO item (id, name) VALUES (1, 'a')")
    run(conn, "INSERT INTO item (name, id, tag) VALUES ('b', 2, 'x')")
    run(conn, "INSERT INTO item VALUES (3, 'c', CAST(NULL AS INTEGER), NULL)")  # an explicit NULL is not the default
    assert rows(conn, "SELECT * FROM item ORDER BY id") == [(1, "a", 7, "none"), (2, "b", 7, "x"), (3, "c", None, None)]
    conn.commit()
    with pytest.raises(tique.IntegrityError):
        run(conn, "INSERT INTO item (id, name) VALUES (1, 'dup')")
    conn.rollback()  # a failed statement aborts its transaction, as natively
    with pytest.raises(tique.IntegrityError):
        run(conn, "INSERT INTO item (id) VALUES (9)")


def test_insert_values_take_the_column_types(connect: Connect, engine: str, request: pytest.FixtureRequest) -> None:
    """NULLs, string literals and str parameters in VALUES convert to the target column's type, as in plain SQL."""
    conn = connect()
    run(conn, "CREATE TABLE ev (id INTEGER PRIMARY KEY, day DATE, qty INTEGER)")
    run(conn, "INSERT INTO ev VALUES (1, NULL, NULL)")
    run(conn, "INSERT INTO ev (id, day, qty) VALUES (2, '2024-02-29', '5')")
    run(conn, "INSERT INTO ev (id, day) VALUES (?, ?), (?, ?)", (3, "2024-03-01", 4, None))
    assert rows(conn, "SELECT * FROM ev ORDER BY id") == [
        (1, None, None), (2, dt.date(2024, 2, 29), 5), (3, dt.date(2024, 3, 1), None), (4, None, None)]
    conn.commit()


def test_create_table_multi_column_key(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE grid (x INTEGER, y INTEGER, v VARCHAR, PRIMARY KEY (x, y))")
    assert conn.tables["grid"].key == ("x", "y")
    assert run(conn, "INSERT INTO grid VALUES (1, 1, 'a'), (1, 2, 'b'), (2, 1, 'c')") == 3
    conn.commit()
    with pytest.raises(tique.IntegrityError):
        run(conn, "INSERT INTO grid VALUES (1, 2, 'again')")
    conn.rollback()
    assert run(conn, "UPDATE grid SET v = 'B' WHERE x = ? AND y = ?", (1, 2)) == 1
    assert run(conn, "UPDATE grid SET y = 3 WHERE x = 2 AND y = 1") == 1
    assert run(conn, "DELETE FROM grid WHERE x = 1 AND y = 1") == 1
    conn.commit()
    assert rows(connect(), "SELECT x, y, v FROM grid ORDER BY x, y") == [(1, 2, "B"), (2, 3, "c")]


def test_table_without_primary_key(connect: Connect, native: Native, engine: str) -> None:
    conn = connect()
    run(conn, "CREATE TABLE log (who VARCHAR, n INTEGER)")
    assert conn.tables["log"].hidden_rowid
    assert run(conn, "INSERT INTO log VALUES ('a', 1), ('a', 1), ('b', 2)") == 3
    assert run(conn, "INSERT INTO log VALUES ('a', 1)") == 1  # duplicates are fine without a key
    conn.commit()
    cur = conn.cursor()
    cur.execute("SELECT * FROM log ORDER BY who, n")
    assert [d[0] for d in cur.description] == ["who", "n"]  # the hidden row id stays hidden
    assert cur.fetchall() == [("a", 1)] * 3 + [("b", 2)]
    assert run(conn, "UPDATE log SET n = n + 10 WHERE who = ?", ("a",)) == 3
    assert run(conn, "DELETE FROM log WHERE who = 'b'") == 1
    conn.commit()
    assert rows(connect(), "SELECT who, n FROM log") == [("a", 11)] * 3
    for physical in ("log_storage", "log_cache"):
        assert {"who", "n", "tq_rowid"} <= column_names(native, engine, physical)


def test_drop_table_removes_every_physical_part(connect: Connect, native: Native, engine: str) -> None:
    conn = connect()
    run(conn, "CREATE TABLE keyed (id INTEGER PRIMARY KEY, v VARCHAR)")
    run(conn, "CREATE TABLE loose (v VARCHAR)")
    run(conn, "INSERT INTO keyed VALUES (1, 'a')")
    run(conn, "INSERT INTO loose VALUES ('a')")
    conn.commit()
    assert sequence_names(native, engine) >= {"loose_rowid_seq"}
    run(conn, "DROP TABLE keyed")
    run(conn, "DROP TABLE loose")
    assert physical_tables(native, engine, "keyed") == set() and physical_tables(native, engine, "loose") == set()
    assert not any(s.startswith(("keyed", "loose")) for s in sequence_names(native, engine))
    assert not any(i.startswith(("keyed", "loose")) for i in index_names(native, engine))
    assert catalog_names(native) == set()
    assert conn.tables == {}
    with pytest.raises(tique.ProgrammingError):
        rows(conn, "SELECT * FROM keyed")
    # the name is free again, for a different shape
    run(conn, "CREATE TABLE keyed (k VARCHAR PRIMARY KEY)")
    run(conn, "INSERT INTO keyed VALUES ('z')")
    conn.commit()
    assert rows(connect(), "SELECT * FROM keyed") == [("z",)]


def test_create_if_not_exists_and_drop_if_exists(connect: Connect, native: Native, engine: str) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    run(conn, "INSERT INTO t VALUES (1)")
    conn.commit()
    run(conn, "CREATE TABLE IF NOT EXISTS t (other VARCHAR)")  # keeps the existing table and its rows
    assert conn.tables["t"].user_columns == ("id",)
    assert rows(conn, "SELECT id FROM t") == [(1,)]
    conn.commit()
    with pytest.raises(tique.ProgrammingError, match="already exists"):
        run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    run(conn, "DROP TABLE IF EXISTS t")
    assert physical_tables(native, engine, "t") == set()
    run(conn, "DROP TABLE IF EXISTS t")
    with pytest.raises(tique.ProgrammingError):
        run(conn, "DROP TABLE t")
    run(conn, "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY)")
    assert physical_tables(native, engine, "t") == {"t_storage", "t_cache"}


def test_second_connection_learns_schema_from_catalog(connect: Connect, native: Native, url: str) -> None:
    early = connect()  # opened before the table exists
    creator = connect()
    run(creator, "CREATE TABLE acc (id INTEGER PRIMARY KEY, owner VARCHAR NOT NULL, balance INTEGER DEFAULT 100)")
    run(creator, "INSERT INTO acc (id, owner) VALUES (1, 'ann')")
    creator.commit()
    (ddl,) = native("SELECT ddl FROM tq_tables WHERE name = 'acc'")[0]
    assert "acc" in ddl and "PRIMARY KEY" in ddl.upper()
    assert rows(early, "SELECT * FROM acc") == [(1, "ann", 100)]
    with pytest.raises(tique.IntegrityError):
        run(early, "INSERT INTO acc (id, owner) VALUES (1, 'dup')")
    early.rollback()
    run(early, "INSERT INTO acc (id, owner) VALUES (2, 'bob')")
    early.commit()
    assert early.tables["acc"] == creator.tables["acc"]
    # drop every in-process trace of the database: the definition comes back from the catalog row
    for conn in (early, creator):
        conn.close()
    forget_database(url)
    fresh = connect()
    assert fresh.tables["acc"].key == ("id",)
    with pytest.raises(tique.IntegrityError):
        run(fresh, "INSERT INTO acc (id) VALUES (4)")
    fresh.rollback()
    run(fresh, "INSERT INTO acc (id, owner) VALUES (3, 'cy')")
    assert rows(fresh, "SELECT id, owner, balance FROM acc ORDER BY id") == [(1, "ann", 100), (2, "bob", 100), (3, "cy", 100)]
    fresh.commit()


def test_other_connections_follow_drop_and_recreate(connect: Connect) -> None:
    """A connection that planned and committed against a table's old shape picks up the new one."""
    old, new = connect(), connect()
    run(new, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
    run(new, "INSERT INTO t VALUES (1, 'a')")
    new.commit()
    assert rows(old, "SELECT * FROM t") == [(1, "a")]
    run(old, "INSERT INTO t VALUES (2, 'b')")
    old.commit()
    run(new, "DROP TABLE t")
    run(new, "CREATE TABLE t (k VARCHAR PRIMARY KEY, n INTEGER)")
    run(new, "INSERT INTO t VALUES ('x', 1)")
    new.commit()
    assert rows(old, "SELECT * FROM t") == [("x", 1)]
    with pytest.raises(tique.IntegrityError):
        run(old, "INSERT INTO t VALUES ('x', 3)")
    old.rollback()
    run(old, "INSERT INTO t VALUES ('y', 2)")
    old.commit()
    assert old.tables["t"].key == ("k",)
    assert rows(new, "SELECT k, n FROM t ORDER BY k") == [("x", 1), ("y", 2)]
    # and the other way round: a drop elsewhere, seen by a connection that still knew the table
    run(old, "DROP TABLE t")
    with pytest.raises(tique.ProgrammingError):
        rows(new, "SELECT * FROM t")
    new.rollback()
    run(new, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    assert "t" in new.tables


def test_natively_created_tables_stay_native(connect: Connect, native: Native, engine: str) -> None:
    native("CREATE TABLE plain (id INTEGER PRIMARY KEY, v TEXT)")
    native("INSERT INTO plain VALUES (1, 'one')")
    conn = connect()
    assert "plain" not in conn.tables
    assert rows(conn, "SELECT * FROM plain") == [(1, "one")]
    assert run(conn, "INSERT INTO plain VALUES (?, ?)", (2, "two")) == 1
    assert run(conn, "UPDATE plain SET v = v || '!' WHERE id = ?", (1,)) == 1
    assert run(conn, "DELETE FROM plain WHERE id = 2") == 1
    conn.commit()
    assert native("SELECT id, v FROM plain") == [(1, "one!")]
    assert physical_tables(native, engine, "plain") == {"plain"}
    assert catalog_names(native) == set()


def test_static_tables_are_created_and_used_natively(connect: Connect, native: Native, engine: str) -> None:
    conn = connect(static_tables=["dim"])
    run(conn, "CREATE TABLE dim (id INTEGER PRIMARY KEY, label VARCHAR)")
    run(conn, "CREATE TABLE fact (id INTEGER PRIMARY KEY, dim_id INTEGER)")
    assert physical_tables(native, engine, "dim") == {"dim"}
    assert physical_tables(native, engine, "fact") == {"fact_storage", "fact_cache"}
    assert catalog_names(native) == {"fact"}
    run(conn, "INSERT INTO dim VALUES (1, 'x'), (2, 'y')")
    assert native("SELECT count(*) FROM dim") == [(2,)]  # written straight through
    conn.commit()
    # a connection without the option also sees dim as a native table
    other = connect()
    assert "dim" not in other.tables
    run(other, "UPDATE dim SET label = 'z' WHERE id = 2")
    assert native("SELECT label FROM dim WHERE id = 2") == [("z",)]


def test_reads_mixing_tique_and_native_tables(connect: Connect, native: Native, engine: str) -> None:
    native("CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT)")
    native("INSERT INTO city VALUES (1, 'Oslo'), (2, 'Lima')")
    conn = connect()
    run(conn, "CREATE TABLE person (id INTEGER PRIMARY KEY, name VARCHAR, city_id INTEGER)")
    run(conn, "INSERT INTO person VALUES (1, 'ann', 1), (2, 'bob', 2), (3, 'cy', 2)")
    join = "SELECT p.name, c.name FROM person AS p JOIN city AS c ON c.id = p.city_id WHERE c.name = ? ORDER BY p.name"
    assert rows(conn, join, ("Lima",)) == [("bob", "Lima"), ("cy", "Lima")]  # own uncommitted writes join native rows
    other = connect()
    assert rows(other, join, ("Lima",)) == []
    other.rollback()
    conn.commit()
    assert rows(other, "SELECT c.name, count(*) FROM city c, person p WHERE p.city_id = c.id GROUP BY c.name ORDER BY 1") == [("Lima", 2), ("Oslo", 1)]
    # writes across the boundary: native target fed from a tique table, and the reverse
    native("CREATE TABLE export (name TEXT)")
    assert run(other, "INSERT INTO export SELECT name FROM person WHERE city_id = 2") == 2
    assert sorted(native("SELECT name FROM export")) == [("bob",), ("cy",)]
    assert run(other, "INSERT INTO person (id, name, city_id) SELECT id + 10, name, id FROM city") == 2
    other.commit()
    assert rows(conn, "SELECT id, name FROM person WHERE id > 10 ORDER BY id") == [(11, "Oslo"), (12, "Lima")]
    assert physical_tables(native, engine, "city") == {"city"} and physical_tables(native, engine, "export") == {"export"}

"""UNIQUE and CHECK constraints hold on tique tables as on native ones, and foreign keys
(which tique cannot enforce) are refused, never dropped: violations fail the statement
whole with an IntegrityError in the application's terms, in autocommit and inside
transactions, against committed rows and the transaction's own writes; two concurrent
transactions writing the same unique value never both commit."""
from __future__ import annotations

import re

import pytest

import tique
from sqlhelp import Connect, Native, rows, run, table_names
from tique.adopt import adopt

INTERNAL = re.compile(r"_storage|_cache|\btq_")


def refused(conn: tique.Connection, sql: str, params: tuple = (), match: str = "") -> tique.IntegrityError:
    """Runs a statement that must fail with an IntegrityError in the user's terms."""
    with pytest.raises(tique.IntegrityError, match=match) as raised:
        run(conn, sql, params)
    message = str(raised.value)
    assert not INTERNAL.search(message.split("\n  statement:")[0]), message
    return raised.value


def unique_suffix(engine: str) -> str:
    """How the engine ends the name of an unnamed UNIQUE: PostgreSQL's t_u_key, MonetDB's t_u_unique."""
    return "unique" if engine == "monetdb" else "key"


def table_rows(conn: tique.Connection, sql: str) -> list[tuple]:
    found = rows(conn, sql)
    conn.commit()
    return found


# -- CHECK -------------------------------------------------------------------------------------


def test_check_constraints(connect: Connect) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, j INTEGER CHECK (j < 5), lo INTEGER, hi INTEGER, "
              "CONSTRAINT ordered CHECK (lo <= hi))")
    refused(conn, "INSERT INTO t VALUES (1, 10, 1, 2)", match=r'check constraint "t_j_check".*j < 5')
    refused(conn, "INSERT INTO t VALUES (1, 1, 3, 2)", match=r'"ordered"')
    # one bad row of several: nothing of the statement is left
    refused(conn, "INSERT INTO t VALUES (1, 1, 1, 2), (2, 7, 1, 2)", match="t_j_check")
    assert rows(conn, "SELECT count(*) FROM t") == [(0,)]
    # NULL makes the condition unknown, which passes
    run(conn, "INSERT INTO t VALUES (1, NULL, NULL, 2), (2, 4, 1, 1), (3, -1, 0, 9)")
    refused(conn, "UPDATE t SET j = j + 3 WHERE id >= 2", match="t_j_check")
    refused(conn, "UPDATE t SET hi = lo - 1 WHERE id = 3", match="ordered")
    run(conn, "UPDATE t SET j = 4 WHERE id = 3")
    run(conn, "UPDATE t SET id = id + 10 WHERE id = 2")  # a key move: tombstone and new version
    assert run(conn, "DELETE FROM t WHERE id = 1") == 1  # tombstones trip nothing
    assert rows(conn, "SELECT id, j, lo, hi FROM t ORDER BY id") == [(3, 4, 0, 9), (12, 4, 1, 1)]


def test_check_inside_a_transaction_aborts_it_whole(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, j INTEGER CHECK (j BETWEEN 0 AND 9))")
    run(conn, "INSERT INTO t VALUES (1, 1)")
    conn.commit()
    run(conn, "INSERT INTO t VALUES (2, 2)")
    refused(conn, "UPDATE t SET j = j * 10", match="t_j_check")
    with pytest.raises(tique.InFailedTransaction):
        run(conn, "INSERT INTO t VALUES (3, 3)")
    conn.rollback()
    assert table_rows(conn, "SELECT id, j FROM t ORDER BY id") == [(1, 1)]


# -- UNIQUE ------------------------------------------------------------------------------------


def test_unique_column_and_table_constraints(connect: Connect, engine: str) -> None:
    conn = connect(autocommit=True)
    suffix = unique_suffix(engine)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, u INTEGER UNIQUE, a INTEGER, b VARCHAR(10), UNIQUE (a, b))")
    run(conn, "INSERT INTO t VALUES (1, 1, 1, 'x')")
    refused(conn, "INSERT INTO t VALUES (2, 1, 2, 'x')", match=rf'unique constraint "t_u_{suffix}".*\(u\)')
    refused(conn, "INSERT INTO t VALUES (2, 2, 1, 'x')", match=f'"t_a_b_{suffix}"')
    refused(conn, "INSERT INTO t VALUES (2, 2, 2, 'y'), (3, 2, 3, 'y')", match=f"t_u_{suffix}")  # within one statement
    # NULLs never collide, in one column or in a part of several
    run(conn, "INSERT INTO t VALUES (2, NULL, 1, NULL), (3, NULL, 1, NULL), (4, NULL, NULL, 'x')")
    run(conn, "INSERT INTO t VALUES (5, 5, NULL, 'x')")
    refused(conn, "UPDATE t SET u = 1 WHERE id = 5", match=f"t_u_{suffix}")
    refused(conn, "UPDATE t SET a = 1, b = 'x' WHERE id = 4", match=f"t_a_b_{suffix}")
    refused(conn, "UPDATE t SET u = 7", match=f"t_u_{suffix}")  # many rows to one value
    run(conn, "UPDATE t SET u = u + 1")  # 1 -> 2 and 5 -> 6: no row ends up sharing a value
    run(conn, "UPDATE t SET u = CASE u WHEN 2 THEN 6 WHEN 6 THEN 2 END WHERE u IN (2, 6)")  # a swap in one statement
    assert rows(conn, "SELECT id, u FROM t WHERE u IS NOT NULL ORDER BY id") == [(1, 6), (5, 2)]
    run(conn, "UPDATE t SET id = 10 WHERE id = 1")  # a key move keeps its unique value
    assert rows(conn, "SELECT id, u FROM t WHERE u IS NOT NULL ORDER BY id") == [(5, 2), (10, 6)]


def test_unique_against_own_writes(connect: Connect, engine: str) -> None:
    suffix = unique_suffix(engine)
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, email VARCHAR(40) NOT NULL UNIQUE)")
    run(conn, "INSERT INTO t VALUES (1, 'a@x'), (2, 'b@x')")
    conn.commit()
    # a swap over several statements, through a third value
    run(conn, "UPDATE t SET email = 'tmp' WHERE id = 1")
    run(conn, "UPDATE t SET email = 'a@x' WHERE id = 2")
    run(conn, "UPDATE t SET email = 'b@x' WHERE id = 1")
    # delete, then insert the freed value; free one by an update, take it with another row
    run(conn, "DELETE FROM t WHERE id = 1")
    run(conn, "INSERT INTO t VALUES (3, 'b@x')")
    run(conn, "UPDATE t SET email = 'c@x' WHERE id = 3")
    run(conn, "INSERT INTO t VALUES (4, 'b@x')")
    refused(conn, "INSERT INTO t VALUES (5, 'c@x')", match=f"t_email_{suffix}")  # an own write holds it
    conn.rollback()
    run(conn, "UPDATE t SET email = 'x' WHERE id = 1")
    run(conn, "INSERT INTO t VALUES (3, 'a@x')")  # freed by this transaction's own update
    conn.commit()
    assert table_rows(conn, "SELECT id, email FROM t ORDER BY id") == [(1, "x"), (2, "b@x"), (3, "a@x")]
    run(conn, "INSERT INTO t VALUES (4, 'y')")
    refused(conn, "INSERT INTO t VALUES (5, 'y')", match=f"t_email_{suffix}")
    conn.rollback()
    assert table_rows(conn, "SELECT count(*) FROM t") == [(3,)]


def test_unique_without_primary_key_and_from_another_connection(connect: Connect) -> None:
    first = connect(autocommit=True)
    run(first, "CREATE TABLE t (a INTEGER, b INTEGER, CONSTRAINT pair UNIQUE (a, b))")
    run(first, "INSERT INTO t VALUES (1, 1), (1, 2)")
    other = connect(autocommit=True)  # learns the constraint from the catalog
    refused(other, "INSERT INTO t SELECT a, b FROM t WHERE b = 2", match='"pair"')
    refused(other, "UPDATE t SET b = 1", match='"pair"')
    run(other, "DELETE FROM t WHERE b = 1")
    run(other, "INSERT INTO t VALUES (1, 1)")
    assert sorted(rows(first, "SELECT a, b FROM t")) == [(1, 1), (1, 2)]


def test_concurrent_inserts_of_one_unique_value(connect: Connect, engine: str) -> None:
    suffix = unique_suffix(engine)
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE t (id INTEGER PRIMARY KEY, u INTEGER UNIQUE)")
    run(setup, "INSERT INTO t VALUES (1, 1)")
    a, b = connect(), connect()
    run(a, "INSERT INTO t VALUES (2, 5)")
    run(b, "INSERT INTO t VALUES (3, 5)")  # b's snapshot does not see a's uncommitted row
    a.commit()
    with pytest.raises(tique.SerializationFailure):
        b.commit()
    assert table_rows(setup, "SELECT id, u FROM t ORDER BY id") == [(1, 1), (2, 5)]
    # one taking a value by UPDATE while another inserts it
    run(a, "UPDATE t SET u = 7 WHERE id = 1")
    run(b, "INSERT INTO t VALUES (4, 7)")
    b.commit()
    with pytest.raises(tique.SerializationFailure):
        a.commit()
    # a transaction that begins after the commit sees the value taken at the statement
    refused(a, "INSERT INTO t VALUES (5, 7)", match=f"t_u_{suffix}")
    a.rollback()
    # different values, and NULLs, never conflict
    run(a, "INSERT INTO t VALUES (6, 8), (7, NULL)")
    run(b, "INSERT INTO t VALUES (8, 9), (9, NULL)")
    a.commit()
    b.commit()
    assert table_rows(setup, "SELECT id, u FROM t ORDER BY id") == [(1, 1), (2, 5), (4, 7), (6, 8), (7, None), (8, 9), (9, None)]


# -- refused -----------------------------------------------------------------------------------


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p (id))",
    "CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER, FOREIGN KEY (p) REFERENCES p (id))",
    "CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER, CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id) ON DELETE CASCADE)",
])
def test_foreign_keys_are_refused(connect: Connect, native: Native, engine: str, ddl: str) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE p (id INTEGER PRIMARY KEY)")
    with pytest.raises(tique.NotSupportedError, match="FOREIGN KEY"):
        run(conn, ddl)
    assert not table_names(native, engine) & {"c", "c_storage", "c_cache"}


def test_unenforceable_forms_are_refused(connect: Connect) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE p (id INTEGER PRIMARY KEY)")
    with pytest.raises(tique.NotSupportedError, match="subquery"):
        run(conn, "CREATE TABLE c (id INTEGER PRIMARY KEY, j INTEGER CHECK (j IN (SELECT id FROM p)))")
    with pytest.raises(tique.ProgrammingError, match="nope"):
        run(conn, "CREATE TABLE c (id INTEGER PRIMARY KEY, j INTEGER, CHECK (nope > 0))")
    with pytest.raises(tique.ProgrammingError, match="nope"):
        run(conn, "CREATE TABLE c (id INTEGER PRIMARY KEY, j INTEGER, UNIQUE (nope))")
    assert set(conn.tables) == {"p"}


# -- adopted tables ----------------------------------------------------------------------------


def test_adopt_keeps_unique_and_check(url: str, connect: Connect, engine: str) -> None:
    setup = connect(static_tables=["n"], autocommit=True)
    check = "" if engine == "monetdb" else ", CONSTRAINT small CHECK (j < 100)"  # MonetDB has no CHECK
    run(setup, f"CREATE TABLE n (id INTEGER PRIMARY KEY, u INTEGER UNIQUE, j INTEGER{check})")
    run(setup, "INSERT INTO n VALUES (1, 1, 1), (2, 2, 2)")
    admin = connect(autocommit=True)
    assert adopt(admin, ["n"]) == {"n": 2}
    conn = connect(autocommit=True)
    refused(conn, "INSERT INTO n VALUES (3, 1, 3)", match="unique constraint")
    if check:
        refused(conn, "UPDATE n SET j = 100 WHERE id = 1", match="check constraint")
    run(conn, "UPDATE n SET u = 3 WHERE id = 1")
    run(conn, "INSERT INTO n VALUES (3, 1, 3)")
    assert rows(conn, "SELECT id, u FROM n ORDER BY id") == [(1, 3), (2, 2), (3, 1)]


def test_adopt_refuses_foreign_keys(url: str, connect: Connect, engine: str) -> None:
    setup = connect(static_tables=["np", "nc"], autocommit=True)
    run(setup, "CREATE TABLE np (id INTEGER PRIMARY KEY)")
    run(setup, "CREATE TABLE nc (id INTEGER PRIMARY KEY, p INTEGER REFERENCES np (id))")
    admin = connect(autocommit=True)
    for name in ("nc", "np"):
        with pytest.raises(tique.NotSupportedError, match="FOREIGN KEY"):
            adopt(admin, [name])
    assert admin.tables == {}


def test_unique_on_a_composite_key_table_with_buffered_writes(connect: Connect, engine: str) -> None:
    suffix = unique_suffix(engine)
    conn = connect(autocommit=True)
    # on MonetDB the two-integer key is packed into one column
    run(conn, "CREATE TABLE t (a INTEGER, b INTEGER, code VARCHAR(8) UNIQUE, n INTEGER CHECK (n >= 0), PRIMARY KEY (a, b))")
    run(conn, "INSERT INTO t VALUES (1, 1, 'x', 0), (1, 2, 'y', 0)")
    refused(conn, "INSERT INTO t VALUES (2, 1, 'x', 0)", match=f"t_code_{suffix}")
    run(conn, "UPDATE t SET b = b + 10")  # every key moves, every code stays
    assert rows(conn, "SELECT a, b, code FROM t ORDER BY b") == [(1, 11, "x"), (1, 12, "y")]
    buffered = connect(buffered_writes=True)
    run(buffered, "INSERT INTO t VALUES (3, 1, 'z', 0)")
    run(buffered, "UPDATE t SET code = 'z' WHERE b = 11")
    with pytest.raises(tique.IntegrityError, match=f"t_code_{suffix}"):
        buffered.commit()
    run(buffered, "UPDATE t SET n = -1 WHERE b = 12")
    with pytest.raises(tique.IntegrityError, match="t_n_check"):
        buffered.commit()
    assert rows(conn, "SELECT a, b, code, n FROM t ORDER BY b") == [(1, 11, "x", 0), (1, 12, "y", 0)]


def test_parameters_bind_constrained_writes(connect: Connect, engine: str) -> None:
    suffix = unique_suffix(engine)
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, u INTEGER UNIQUE CHECK (u > 0))")
    for i in range(1, 4):  # the same texts again and again (MonetDB prepares them)
        run(conn, "INSERT INTO t VALUES (?, ?)", (i, i))
        refused(conn, "INSERT INTO t VALUES (?, ?)", (i + 100, i), match=f"t_u_{suffix}")
        refused(conn, "UPDATE t SET u = ? WHERE id = ?", (-i, i), match="t_u_check")
    with pytest.raises(tique.ProgrammingError, match="CHECK constraint cannot hold a parameter marker\n") as raised:
        run(conn, "CREATE TABLE c (id INTEGER PRIMARY KEY, j INTEGER CHECK (j < ?))", (5,))
    assert not INTERNAL.search(str(raised.value))
    assert rows(conn, "SELECT id, u FROM t ORDER BY id") == [(1, 1), (2, 2), (3, 3)]


def test_unique_across_checkpoints(connect: Connect, native: Native, engine: str) -> None:
    suffix = unique_suffix(engine)
    """Values in storage, in the cache and in both (a row moved to a new value after the
    checkpoint) are all found; a reader holding an old snapshot keeps its view."""
    from tique.checkpoint import checkpoint

    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, u INTEGER UNIQUE)")
    run(conn, "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
    checkpoint(conn)
    assert native("SELECT count(*) FROM t_storage") == [(3,)]
    refused(conn, "INSERT INTO t VALUES (4, 1)", match=f"t_u_{suffix}")
    run(conn, "UPDATE t SET u = 10 WHERE id = 1")  # storage still says 1, the cache 10
    run(conn, "INSERT INTO t VALUES (4, 1)")
    refused(conn, "INSERT INTO t VALUES (5, 10)", match=f"t_u_{suffix}")
    run(conn, "DELETE FROM t WHERE id = 2")
    checkpoint(conn)
    run(conn, "INSERT INTO t VALUES (5, 2)")
    refused(conn, "UPDATE t SET u = 3 WHERE id = 5", match=f"t_u_{suffix}")
    assert rows(conn, "SELECT id, u FROM t ORDER BY id") == [(1, 10), (3, 3), (4, 1), (5, 2)]


def test_the_workaround_for_foreign_keys_conflicts_with_a_parent_delete(connect: Connect) -> None:
    """What the refusal advises: a child writer rewrites its parent row, so it and a
    concurrent delete of the parent never both commit."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE p (id INTEGER PRIMARY KEY, name VARCHAR(10))")
    run(setup, "CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER NOT NULL)")
    run(setup, "INSERT INTO p VALUES (1, 'one')")
    child, parent = connect(), connect()
    assert run(child, "UPDATE p SET name = name WHERE id = ?", (1,)) == 1
    run(child, "INSERT INTO c VALUES (10, 1)")
    assert rows(parent, "SELECT count(*) FROM c WHERE p = 1") == [(0,)]  # the child is not visible yet
    run(parent, "DELETE FROM p WHERE id = 1")
    child.commit()
    with pytest.raises(tique.SerializationFailure):
        parent.commit()
    assert table_rows(setup, "SELECT c.id, p.name FROM c JOIN p ON p.id = c.p") == [(10, "one")]

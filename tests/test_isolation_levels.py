"""Choosing an isolation level (tique/isolation.py): the connect option, the connection
attribute and the SQL control statements, on every engine; READ ONLY transactions
refuse writes."""
from __future__ import annotations

from typing import Callable

import pytest

import tique
from tique import IsolationLevel

Connect = Callable[..., tique.Connection]


def _table(conn: tique.Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.execute("INSERT INTO t VALUES (1, 10)")
    conn.commit()


def test_levels_by_option_and_attribute(connect: Connect) -> None:
    assert connect().isolation_level is IsolationLevel.SNAPSHOT
    assert connect(isolation_level="read committed").isolation_level is IsolationLevel.READ_COMMITTED
    conn = connect(isolation_level="REPEATABLE READ")
    assert conn.isolation_level is IsolationLevel.SNAPSHOT
    conn.isolation_level = "read-committed"
    assert conn.isolation_level is IsolationLevel.READ_COMMITTED
    with pytest.raises(tique.ProgrammingError, match="unknown isolation level"):
        conn.isolation_level = "linearizable"


def test_serializable_is_chosen_every_way(connect: Connect) -> None:
    """SERIALIZABLE runs (tests/test_serializable.py has what it guarantees), chosen by the
    option, the attribute and each control statement."""
    assert connect(isolation_level="serializable").isolation_level is IsolationLevel.SERIALIZABLE
    conn = connect()
    _table(conn)
    conn.isolation_level = IsolationLevel.SERIALIZABLE
    assert conn.isolation_level is IsolationLevel.SERIALIZABLE
    conn.isolation_level = "snapshot"
    cur = conn.cursor()
    for statement in ("BEGIN ISOLATION LEVEL SERIALIZABLE", "START TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                      "BEGIN TRANSACTION READ WRITE, ISOLATION LEVEL SERIALIZABLE", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"):
        cur.execute(statement)
        assert conn.in_transaction and conn._txn is not None and conn._txn.level is IsolationLevel.SERIALIZABLE
        cur.execute("SELECT v FROM t WHERE k = 1")
        assert cur.fetchall() == [(10,)]
        conn.commit()
    assert conn.isolation_level is IsolationLevel.SNAPSHOT


def test_control_statements_on_every_engine(connect: Connect) -> None:
    """tique's own statements: accepted where the engine's grammar lacks them (DuckDB has
    no START TRANSACTION ISOLATION LEVEL or SET TRANSACTION)."""
    conn = connect()
    _table(conn)
    cur = conn.cursor()
    for begin in ("BEGIN ISOLATION LEVEL READ COMMITTED", "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ;",
                  "START TRANSACTION ISOLATION LEVEL SNAPSHOT", "START TRANSACTION READ WRITE",
                  "begin work isolation level read uncommitted, read write"):
        cur.execute(begin)
        cur.execute("UPDATE t SET v = v + 1 WHERE k = 1")
        conn.commit()
    cur.execute("SELECT v FROM t")
    assert cur.fetchall() == [(15,)]
    conn.commit()
    # SET TRANSACTION begins the transaction it applies to, and must come first in it.
    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    assert conn.in_transaction
    cur.execute("SELECT v FROM t")
    with pytest.raises(tique.ProgrammingError, match="before any query"):
        cur.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
    conn.rollback()
    # Nor may the attribute change under a transaction that has run a statement.
    cur.execute("SELECT v FROM t")
    with pytest.raises(tique.ProgrammingError, match="isolation_level"):
        conn.isolation_level = "read committed"
    conn.rollback()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
    assert conn.isolation_level is IsolationLevel.READ_COMMITTED
    with pytest.raises(tique.ProgrammingError, match="conflicting"):
        cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED ISOLATION LEVEL SNAPSHOT")


def test_read_only_transactions_refuse_writes(connect: Connect) -> None:
    conn = connect()
    _table(conn)
    cur = conn.cursor()
    cur.execute("BEGIN READ ONLY")
    cur.execute("SELECT v FROM t")
    assert cur.fetchall() == [(10,)]
    with pytest.raises(tique.InternalError, match="read-only transaction"):
        cur.execute("UPDATE t SET v = 0 WHERE k = 1")
    with pytest.raises(tique.InFailedTransaction):  # the failure aborted the transaction, as natively
        cur.execute("SELECT v FROM t")
    conn.rollback()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    with pytest.raises(tique.InternalError, match="read-only transaction"):
        cur.execute("INSERT INTO t VALUES (2, 20)")
    conn.rollback()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
    cur.execute("SET TRANSACTION READ ONLY")
    with pytest.raises(tique.InternalError, match="read-only transaction"):
        cur.execute("DELETE FROM t")
    conn.rollback()
    cur.execute("INSERT INTO t VALUES (2, 20)")
    conn.commit()
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchall() == [(2,)]
    autocommit = connect(autocommit=True)
    autocommit.cursor().execute("SET TRANSACTION READ ONLY")  # in autocommit, with nothing open: no effect
    autocommit.cursor().execute("INSERT INTO t VALUES (3, 30)")
    assert not autocommit.in_transaction

"""What a transaction costs its engine, as tique counts it in one place (tique/session.py):
one engine commit carries all of a transaction's writes, and the protocol adds at most
three more (begin, marker, publish)."""
from __future__ import annotations

from typing import Callable

import tique
from sqlhelp import rows, run

Connect = Callable[..., tique.Connection]


def setup(conn: tique.Connection) -> None:
    run(conn, "CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    run(conn, "CREATE TABLE log (id INTEGER PRIMARY KEY, note VARCHAR)")
    run(conn, "INSERT INTO acct VALUES (1, 100), (2, 100), (3, 100)")
    conn.commit()
    # MonetDB opens its analytic session on the first analytic read (a one-time setup
    # statement that commits): open it here, outside what the tests count.
    assert rows(conn, "SELECT count(*) FROM acct") == [(3,)]
    conn.commit()


def test_one_engine_commit_carries_all_writes(connect: Connect, engine: str) -> None:
    conn = connect()
    setup(conn)
    start = conn.counters
    assert rows(conn, "SELECT balance FROM acct WHERE id = 1") == [(100,)]
    after_read = conn.counters
    run(conn, "UPDATE acct SET balance = balance - 10 WHERE id = 1")
    run(conn, "UPDATE acct SET balance = balance + 10 WHERE id = 2")
    run(conn, "INSERT INTO log VALUES (1, 'moved 10')")
    run(conn, "DELETE FROM acct WHERE id = 3")
    assert rows(conn, "SELECT sum(balance) FROM acct") == [(200,)]  # its own writes
    before_commit = conn.counters
    # Nothing the transaction wrote has been committed to the engine yet.
    assert (before_commit - after_read).engine_commits == 0
    conn.commit()
    done = conn.counters
    commit = done - before_commit
    total = done - start
    assert 1 <= commit.engine_commits <= 3  # writes + write-set, marker, publish
    assert total.engine_commits <= 4  # and begin, where the oracle writes a table to begin
    assert commit.round_trips >= 1 and total.engine_ns > 0
    other = connect()
    assert rows(other, "SELECT id, balance FROM acct ORDER BY id") == [(1, 90), (2, 110)]


def test_a_read_only_transaction_commits_no_writes(connect: Connect, engine: str) -> None:
    conn = connect()
    setup(conn)
    start = conn.counters
    assert rows(conn, "SELECT count(*) FROM acct") == [(3,)]
    conn.commit()
    cost = conn.counters - start
    # PostgreSQL's oracle logs begin and end in tables; in-memory oracles write nothing.
    assert cost.engine_commits <= (2 if engine == "postgres" else 0)


def test_a_write_and_its_key_check_are_one_request(connect: Connect, engine: str) -> None:
    """PostgreSQL pipelines the insert and the key check; MonetDB sends them one by one
    (statements that repeat run prepared, so the third insert costs what every later one does)."""
    conn = connect()
    setup(conn)
    for i in (1, 2):  # the first write also carries BEGIN
        run(conn, "INSERT INTO log VALUES (?, ?)", (i, "x"))
    start = conn.counters
    run(conn, "INSERT INTO log VALUES (?, ?)", (3, "x"))
    cost = conn.counters - start
    assert cost.round_trips == (1 if engine == "postgres" else 2)
    assert cost.engine_commits == 0
    conn.rollback()

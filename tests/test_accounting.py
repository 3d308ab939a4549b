"""What a transaction costs its engine, as tique counts it in one place (tique/session.py):
one engine commit carries all of a transaction's writes, and the protocol adds the
marker's and (PostgreSQL) publish's; begin and end commit nothing, and a reader nothing
at all."""
from __future__ import annotations

from typing import Any, Callable

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
    # Writes + write-set, and the outcome row (on PostgreSQL in the same engine commit);
    # PostgreSQL's publish writes its clock row. Begin commits nothing anywhere
    # (PostgreSQL registers a transaction by an advisory lock).
    assert commit.engine_commits == 2, commit
    assert total.engine_commits == commit.engine_commits
    if engine == "postgres":  # one request: take cts, write-set, key locks, marker, COMMIT; publish
        assert commit.round_trips == 1, commit
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
    # No oracle writes to begin or end: PostgreSQL's takes and drops an advisory lock
    # (tq_begin, tq_leave), the others keep their state in memory.
    assert cost.engine_commits == 0, cost
    if engine == "postgres":  # the begin travels with the read; the end is one round trip, as native's COMMIT
        assert cost.round_trips == 2, cost


def test_begin_travels_with_the_first_statement(connect: Connect, engine: str) -> None:
    """PostgreSQL: a transaction whose first statement writes sends its begin in that
    statement's request too, and a write then reads its own transaction's id (the value
    the begin left in the session) and a read its start timestamp: what it wrote, it
    reads, and others see it only after commit."""
    conn = connect()
    setup(conn)
    other = connect()
    start = conn.counters
    run(conn, "UPDATE acct SET balance = balance + 5 WHERE id = 1")
    first = conn.counters - start
    assert first.engine_commits == 0, first
    if engine == "postgres":  # begin, the engine transaction's BEGIN and the write: one request
        assert first.round_trips == 1, first
    assert rows(conn, "SELECT balance FROM acct WHERE id = 1") == [(105,)]
    assert rows(other, "SELECT balance FROM acct WHERE id = 1") == [(100,)]
    other.commit()
    conn.commit()
    assert rows(other, "SELECT balance FROM acct WHERE id = 1") == [(105,)]
    other.commit()


def test_a_write_and_its_key_check_are_one_request(connect: Connect, engine: str) -> None:
    """PostgreSQL pipelines the insert and the key check; MonetDB sends them as one request
    of two statements (statements that repeat run prepared, so the third insert costs what
    every later one does)."""
    conn = connect()
    setup(conn)
    for i in (1, 2):  # the first write also carries BEGIN
        run(conn, "INSERT INTO log VALUES (?, ?)", (i, "x"))
    start = conn.counters
    run(conn, "INSERT INTO log VALUES (?, ?)", (3, "x"))
    cost = conn.counters - start
    assert cost.round_trips == (2 if engine == "duckdb" else 1)
    assert cost.engine_commits == 0
    conn.rollback()


def test_new_order_round_trips_within_native_plus_four(monetdb_server: Any) -> None:
    """A TPC-C New-Order of 10 lines through tique-monetdb makes at most native MonetDB's
    round trips plus 4 (begin, and a commit of two requests against native's one), as
    both count them (tique/session.py, drivers/counting.py); and its writes reach the
    engine in one engine commit, at commit, besides the outcome row."""
    import random

    from bench.tpcc.loader import TINY, load
    from bench.tpcc.rand import Constants
    from bench.tpcc.transactions import NO_ITEM, Workload, executor
    from drivers import open_system

    costs: dict[str, list[tuple[Any, Any]]] = {}
    for name, schema in (("native-monetdb", "budget_native"), ("tique-monetdb", "budget_tique")):
        system = open_system(name, url=f"{monetdb_server.url}?schema={schema}")
        try:
            loaded, _ = load(system, 1, TINY, progress=False)
            conn = system.connect()
            run = executor(conn)
            lines = [0]

            def execute(sql: str, params: Any, many: bool = False, run: Any = run, lines: list[int] = lines) -> list[tuple]:
                lines[0] += sql == NO_ITEM
                return run(sql, params, many)

            workload = Workload(1, TINY, Constants.for_run(loaded.c_last_load, random.Random(1)), None, (1, 0, 0, 0, 0))
            rng = random.Random(5)
            seen: list[tuple[Any, Any]] = []  # (cost of the statements, cost of the commit) of each 10-line order
            for _ in range(200):
                if len(seen) == 4:
                    break
                lines[0] = 0
                start = conn.counters
                try:
                    workload.new_order(execute, rng)
                except Exception:
                    conn.rollback()
                    continue
                before_commit = conn.counters
                conn.commit()
                if lines[0] == 10:
                    seen.append((before_commit - start, conn.counters - before_commit))
            conn.close()
            costs[name] = seen
        finally:
            system.close()
    native, through_tique = costs["native-monetdb"], costs["tique-monetdb"]
    assert len(native) == len(through_tique) == 4  # the same orders: the same seed on the same load
    # The last one runs every statement prepared, as every later order does.
    (native_run, native_commit), (tique_run, tique_commit) = native[-1], through_tique[-1]
    native_trips = native_run.round_trips + native_commit.round_trips
    tique_trips = tique_run.round_trips + tique_commit.round_trips
    # 36 statements, the 10 order lines by executemany (pymonetdb sends one row a round
    # trip), and COMMIT; tique's executemany sends the lines as one insert.
    assert native_trips == 36 + 10 + 1
    assert tique_trips <= native_trips + 4, (tique_trips, native_trips)
    # Within 4 even of a native client that sent the lines as one multi-row statement.
    assert tique_trips <= native_trips - 10 + 1 + 4, (tique_trips, native_trips)
    assert native_commit.round_trips == 1
    assert tique_commit.round_trips == 2, tique_commit  # hashes + cts; write-set + COMMIT + certify + decide + marker + publish
    assert tique_run.engine_commits == 0  # nothing of the transaction is committed before its commit
    assert tique_commit.engine_commits == 2  # its writes and write-set in one, then the outcome row

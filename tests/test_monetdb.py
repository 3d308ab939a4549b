"""MonetDB-only behaviour: what a misconfigured server tells the user."""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from decimal import Decimal
from typing import Any, Iterator

import pytest

import tique


def test_server_without_embedded_c_gets_a_clear_error() -> None:
    binary = shutil.which("mserver5")
    if binary is None:
        pytest.skip("MonetDB tests skipped: no `mserver5` on PATH")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    farm = tempfile.mkdtemp(prefix="tique-monetdb-noc-")
    server = subprocess.Popen([binary, f"--dbpath={farm}/db", "--set", f"mapi_port={port}", "--set", "mapi_listenaddr=127.0.0.1"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"monetdb://monetdb:monetdb@127.0.0.1:{port}/db"
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = tique.connect(url)
                conn.close()
                pytest.fail("connected although the server cannot run C UDFs")
            except tique.OperationalError as error:
                if "embedded_c=true" in str(error):
                    assert "mserver5 --set embedded_c=true" in str(error)
                    break
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)  # still starting
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(farm, ignore_errors=True)


@pytest.fixture
def monetdb_url(monetdb_server: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    from tique.backends import forget_database

    made = f"{monetdb_server.url}?schema=tique_prepared_{request.node.name[-40:].lower()}"
    yield made
    forget_database(made)


def test_point_statements_stay_prepared_across_analytical_reads_and_decimals(monetdb_url: str) -> None:
    """MonetDB drops a session's prepared statements when its optimizer pipeline is set
    and when a statement fails. Analytical reads therefore run on their own session, and
    a decimal value PREPARE would round runs prepared through an exact cast. Every
    balance must come out exact, and the point statements must stay prepared."""
    conn = tique.connect(monetdb_url)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE acct (id INTEGER PRIMARY KEY, balance DECIMAL(12, 2) NOT NULL)")
        cur.execute("INSERT INTO acct VALUES (1, 0), (2, 0)")
        conn.commit()
        session = conn._raw
        expected = {1: Decimal("0"), 2: Decimal("0")}
        amounts = [Decimal("0.97"), Decimal("5"), Decimal("12.5"), Decimal("0.01"), 3, 2.25]
        for round_ in range(4):
            for i, amount in enumerate(amounts):
                key = 1 + (i + round_) % 2
                cur.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", (amount, key))
                expected[key] += Decimal(str(amount))
                cur.execute("SELECT balance FROM acct WHERE id = ?", (key,))
                assert cur.fetchone()[0] == expected[key]
                conn.commit()
                # an aggregate outside a writing transaction: an analytical read, which runs
                # on the other session (one that needs uncommitted writes runs where they are)
                cur.execute("SELECT SUM(balance) FROM acct")
                assert cur.fetchone()[0] == sum(expected.values())
                conn.commit()
        assert session.analytic is not None and session.analytic is not session
        assert session.pipeline == "minimal_fast" and session.analytic.pipeline == "default_pipe"
        point = [text for text in session.prepared if "balance" in text and "SUM" not in text.upper()]
        assert point, "the point statements were never prepared"
        # widened variants exist for the scales that PREPARE's own typing would round
        assert any("DECIMAL(18, 2)" in text for text in session.prepared)
        with pytest.raises(tique.ProgrammingError):
            cur.execute("SELECT no_such_column FROM acct WHERE id = ?", (1,))  # a point read: the main session
        # the failure dropped them on the server, so here too (rolling back may prepare the oracle's call again)
        assert not any("balance" in text for text in session.prepared)
        conn.rollback()
        cur.execute("SELECT balance FROM acct WHERE id = ?", (1,))
        assert cur.fetchone()[0] == expected[1]
    finally:
        conn.close()


def test_an_integer_a_prepared_marker_cannot_hold_compares_as_natively(monetdb_url: str) -> None:
    """MonetDB keeps each integer type's least value as its NULL, so an INTEGER marker of a
    prepared statement cannot hold -2147483648 (nor a SMALLINT one -32768) and EXEC fails
    with a conversion error, where the statement's text compares the wider number and
    finds no row. Once a statement is prepared, such a value still gets native's answer,
    in a transaction, which goes on, and values in range keep using the prepared statement."""
    conn = tique.connect(monetdb_url)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (w INTEGER, d SMALLINT, o INTEGER, v INTEGER, PRIMARY KEY (w, d, o))")
        conn.commit()
        # Reads in the transaction that wrote the table run on the main session.
        cur.execute("INSERT INTO t VALUES (1, 1, 1, 10), (-2147483647, -32767, 2, 20), (2147483647, 32767, 3, 30)")
        for _ in range(3):  # prepared on the way
            cur.execute("SELECT v FROM t WHERE w = ?", (1,))
            assert cur.fetchall() == [(10,)]
            cur.execute("SELECT v FROM t WHERE w = ? AND d = ?", (1, 1))
            assert cur.fetchall() == [(10,)]
        sessions = [conn._raw, conn._raw.analytic]  # reads by part of the key are analytical
        assert any("WHERE" in text for session in sessions if session is not None for text in session.prepared)
        for value, found in ((-2147483648, []), (-2147483647, [(20,)]), (2147483647, [(30,)]), (2147483648, []), (-(2 ** 63), [])):
            cur.execute("SELECT v FROM t WHERE w = ?", (value,))
            assert cur.fetchall() == found, value
        for value, found in ((-32768, []), (-32767, [(20,)]), (32768, [])):
            cur.execute("SELECT v FROM t WHERE w = ? AND d = ?", (-2147483647, value))
            assert cur.fetchall() == found, value
        cur.execute("UPDATE t SET v = v + 1 WHERE w = ?", (-2147483648,))
        assert cur.rowcount == 0
        cur.execute("UPDATE t SET v = v + 1 WHERE w = ?", (1,))
        conn.commit()
        cur.execute("SELECT w, v FROM t ORDER BY w")
        assert cur.fetchall() == [(-2147483647, 20), (1, 11), (2147483647, 30)]
    finally:
        conn.close()


def test_held_cache_inserts_are_read_committed_and_never_fail_later(monetdb_url: str) -> None:
    """An UPDATE's new versions, computed by its validating read, wait on the session for
    its next request (no round trip of their own) only when every value fits its column:
    the transaction still reads them, one engine commit carries them, and a value that
    does not fit fails the UPDATE itself, as natively, not a later statement."""
    conn = tique.connect(monetdb_url)
    other = tique.connect(monetdb_url)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name VARCHAR(5) NOT NULL, qty INTEGER, price DECIMAL(6, 2))")
        cur.execute("INSERT INTO item VALUES (1, 'ab', 10, 1.50), (2, 'cd', 20, 2.50)")
        conn.commit()
        session = conn._raw
        for _ in range(3):  # the statements get prepared on the way
            cur.execute("UPDATE item SET qty = qty + 1, price = price * 2 WHERE id = ?", (1,))
            assert session.held, "the new version's insert went out on its own"
            start = conn.counters
            cur.execute("UPDATE item SET qty = qty + 1, price = price * 2 WHERE id = ?", (2,))
            trips = (conn.counters - start).round_trips
            cur.execute("SELECT id, qty, price FROM item ORDER BY id")
            read = cur.fetchall()
            assert not session.held
            conn.commit()
            other_cur = other.cursor()
            other_cur.execute("SELECT id, qty, price FROM item ORDER BY id")
            assert other_cur.fetchall() == read
            other.commit()
        assert trips == 1  # prepared by now: the read, with the earlier rows in front of it
        assert read == [(1, 13, Decimal("12.00")), (2, 23, Decimal("20.00"))]
        # Values that do not fit fail at their statement: too long, NULL into NOT NULL,
        # past INTEGER. Each leaves nothing behind.
        for bad in ("UPDATE item SET name = name || 'xyzxyz' WHERE id = 1", "UPDATE item SET name = NULL WHERE id = 1",
                    "UPDATE item SET qty = qty * 1000000000 WHERE id = 1"):
            cur.execute("UPDATE item SET qty = qty + 100 WHERE id = 2")  # held, and fine
            with pytest.raises(tique.DatabaseError):
                cur.execute(bad)
            conn.rollback()
            assert not session.held
        cur.execute("SELECT id, name, qty, price FROM item ORDER BY id")
        assert cur.fetchall() == [(1, "ab", 13, Decimal("12.00")), (2, "cd", 23, Decimal("20.00"))]
    finally:
        conn.close()
        other.close()


def test_rows_whose_columns_hold_alike_values_insert(monetdb_url: str) -> None:
    """Natively these INSERTs write their rows. tique's rows become a VALUES derived table
    of values cast to their columns' types, and MonetDB gave a column of such constants
    the type of another column holding the same constants (CAST(1 AS INT) beside
    CAST(TRUE AS BOOLEAN) or CAST(1 AS BIGINT), two columns of NULLs): 'Append failed'
    (fuzzer reproductions)."""
    conn = tique.connect(monetdb_url, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE alike (b BOOLEAN, n INTEGER, m BIGINT, s SMALLINT, c BOOLEAN NOT NULL)")
        cur.execute("INSERT INTO alike VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)", (True, 1, 1, 1, True, False, 0, 0, 0, False))
        cur.execute("INSERT INTO alike (n, b, m, s, c) VALUES (5, TRUE, ?, ?, ?), (7, ?, 7, 7, FALSE)", (5, 5, True, None))
        cur.executemany("INSERT INTO alike VALUES (?, ?, ?, ?, ?)", [(True, 1, 1, 1, True), (False, 0, 0, 0, False)])
        cur.execute("INSERT INTO alike (n, m, c) VALUES (?, ?, TRUE), (?, ?, TRUE)", (1.5, 2.5, 7, 7))  # converted as natively
        cur.execute("INSERT INTO alike (n, c) VALUES (8, TRUE), (9, FALSE), (10, TRUE)")  # b, m, s: NULLs alike
        cur.executemany("INSERT INTO alike VALUES (?, ?, ?, ?, ?)", [(None, 11, None, None, True), (None, 12, None, None, True)])
        cur.execute("SELECT b, n, m, s, c FROM alike")
        assert sorted(cur.fetchall(), key=repr) == sorted(
            [(True, 1, 1, 1, True), (False, 0, 0, 0, False), (True, 5, 5, 5, True), (None, 7, 7, 7, False),
             (True, 1, 1, 1, True), (False, 0, 0, 0, False), (None, 2, 3, None, True), (None, 7, 7, None, True),
             (None, 8, None, None, True), (None, 9, None, None, False), (None, 10, None, None, True),
             (None, 11, None, None, True), (None, 12, None, None, True)], key=repr)
    finally:
        conn.close()


def test_batches_are_sent_plainly_unless_two_columns_hold_alike_values(monetdb_url: str) -> None:
    """Keeping the first row apart halves MonetDB's speed on large batches, so a batch is
    sent plainly when no two of its columns hold alike values in every row; values alike
    in some rows only, or alike in two columns of one batch and not of the next, still
    insert as natively."""
    from tique.backends.monetdb import _ApartWhenAlike
    from tique.planner import batched
    from tique.rewrite.params import USER_PREFIX

    conn = tique.connect(monetdb_url, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE alike2 (b BOOLEAN, n INTEGER, m BIGINT, s SMALLINT, c BOOLEAN NOT NULL)")
        partly = [(True, 1, 1, 4, False), (True, 2, 3, 2, True), (False, 0, 0, 7, True)]
        wholly = [(True, 1, 1, 1, True), (False, 0, 0, 0, False), (None, 5, 5, None, True)]
        many = [(k % 2 == 0, k, 10_000 + k, k % 100, k % 3 == 0) for k in range(300)]
        for rows in (partly, wholly, many):
            cur.executemany("INSERT INTO alike2 VALUES (?, ?, ?, ?, ?)", rows)
        cur.execute("SELECT b, n, m, s, c FROM alike2")
        assert sorted(cur.fetchall(), key=repr) == sorted(partly + wholly + many, key=repr)
        plan = conn._plan("INSERT INTO alike2 VALUES (?, ?, ?, ?, ?)")
        (insert,) = batched(plan, 3).inserts
        assert isinstance(insert, _ApartWhenAlike)
        context = {name: 1 for name in insert.names if not name.startswith(USER_PREFIX)}
        flat = lambda rows: tuple(v for row in rows for v in row)  # noqa: E731
        assert insert.bind(flat(partly), context)[0] == insert.sql
        assert insert.bind(flat(wholly), context)[0] == insert.apart
    finally:
        conn.close()


def test_a_writer_whose_session_opened_during_a_liveness_check_is_not_declared_dead(monetdb_url: str) -> None:
    """The stable timestamp declares dead the transactions of sessions the server no
    longer lists: it logs them as rolled back and drops them from the oracle's active
    set, so the stable timestamp may pass their start and the checkpointer purges the
    write-sets they certify against. A session opened after the list was read, whose
    transaction begins before the active transactions are read, is alive and must stay
    active. The new session and its write are made exactly in that window."""
    from tique.checkpoint import checkpoint
    from tique.oracle.monetdb import ACTIVE

    conn = tique.connect(monetdb_url)
    late: list[tique.Connection] = []
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER)")
        cur.execute("INSERT INTO counter VALUES (1, 0)")
        conn.commit()
        oracle = conn._backend.oracle
        listed = oracle._live_sessions

        def list_then_begin_elsewhere(raw: Any) -> set[int]:
            found = listed(raw)
            if not late:
                writer = tique.connect(monetdb_url)  # a session the list above does not hold
                late.append(writer)
                writer.cursor().execute("UPDATE counter SET n = n + 1 WHERE id = 1")
            return found

        oracle._live_sessions = list_then_begin_elsewhere
        try:
            oracle.stable_timestamp(conn._raw)
        finally:
            del oracle._live_sessions
        assert late, "the window was not reached"
        reader = late[0].cursor()
        reader.execute("SELECT n FROM counter WHERE id = 1")  # its own write, sent by now
        assert reader.fetchall() == [(1,)]
        writer_txid = late[0]._txn_holder[0].txid
        assert writer_txid in [int(txid) for txid, _, _ in oracle._call(conn._raw, ACTIVE)]
        assert conn._backend.rows(conn._raw, "SELECT txid FROM tq_rolled_back", []) == []
        checkpoint(conn)
        late[0].commit()
        cur.execute("SELECT n FROM counter WHERE id = 1")
        assert cur.fetchall() == [(1,)]
        conn.commit()
    finally:
        for writer in late:
            writer.close()
        conn.close()

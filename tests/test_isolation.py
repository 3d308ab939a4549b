"""Snapshot isolation, proved with interleaved connections on every engine.

Each test drives two or more tique connections step by step, so the interleaving is
exact and the outcome is deterministic. Reads are repeated in both snapshot
formulations (rank() and anti-join/union), since either may serve a query.
"""
from __future__ import annotations

import threading
from typing import Callable

import pytest

import tique
from sqlhelp import rows, run
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]

pytestmark = pytest.mark.timeout(120)


# -- helpers ---------------------------------------------------------------------



def balance(conn: tique.Connection, key: int) -> int | None:
    """A point read (the rank() formulation under snapshot='auto')."""
    found = rows(conn, "SELECT bal FROM acc WHERE id = ?", (key,))
    return found[0][0] if found else None


def table(conn: tique.Connection) -> list[tuple]:
    """A full scan (the anti-join/union formulation under snapshot='auto')."""
    return rows(conn, "SELECT id, bal FROM acc ORDER BY id")


def committed(connect: Connect) -> list[tuple]:
    """The committed state, read by a fresh transaction in each formulation (they must agree)."""
    seen = []
    for formulation in ("rank", "scan"):
        reader = connect(snapshot=formulation)
        seen.append(table(reader))
        reader.rollback()
        reader.close()
    assert seen[0] == seen[1], f"rank() and scan snapshots disagree: {seen}"
    return seen[0]


def make_accounts(connect: Connect, accounts: dict[int, int]) -> tique.Connection:
    admin = connect()
    run(admin, "CREATE TABLE acc (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)")
    if accounts:
        cur = admin.cursor()
        cur.executemany("INSERT INTO acc (id, bal) VALUES (?, ?)", list(accounts.items()))
    admin.commit()
    return admin


def expect_serialization_failure(conn: tique.Connection) -> tique.SerializationFailure:
    with pytest.raises(tique.SerializationFailure) as caught:
        conn.commit()
    assert isinstance(caught.value, tique.OperationalError)
    assert not conn.in_transaction, "a transaction that lost certification must be over"
    return caught.value


def cache_rows(native: Native, name: str = "acc") -> int:
    return int(native(f"SELECT count(*) FROM {name}_cache")[0][0])


# -- dirty reads ---------------------------------------------------------------------

def test_no_dirty_read(connect: Connect) -> None:
    make_accounts(connect, {1: 100, 2: 200})
    writer, reader = connect(), connect()
    assert run(writer, "UPDATE acc SET bal = 111 WHERE id = 1") == 1
    assert run(writer, "INSERT INTO acc (id, bal) VALUES (3, 300)") == 1
    assert run(writer, "DELETE FROM acc WHERE id = 2") == 1
    # A reader that begins while the writer is open sees none of its writes.
    assert balance(reader, 1) == 100
    assert balance(reader, 3) is None
    assert table(reader) == [(1, 100), (2, 200)]
    assert rows(reader, "SELECT count(*), sum(bal) FROM acc") == [(2, 300)]
    writer.commit()
    # Still inside its own snapshot: the commit happened after it began.
    assert table(reader) == [(1, 100), (2, 200)]
    reader.commit()
    assert table(reader) == [(1, 111), (3, 300)]


def test_no_dirty_read_of_rolled_back_write(connect: Connect, native: Native) -> None:
    make_accounts(connect, {1: 100, 2: 200})
    writer, reader = connect(), connect()
    run(writer, "UPDATE acc SET bal = bal + 1000")
    run(writer, "INSERT INTO acc (id, bal) VALUES (3, 300)")
    assert table(writer) == [(1, 1100), (2, 1200), (3, 300)]
    assert table(reader) == [(1, 100), (2, 200)]
    writer.rollback()
    assert table(reader) == [(1, 100), (2, 200)]
    reader.rollback()
    assert committed(connect) == [(1, 100), (2, 200)]
    # The rolled-back versions are purged, and stay invisible after the purge.
    checkpoint(writer)
    assert cache_rows(native) == 0
    assert committed(connect) == [(1, 100), (2, 200)]


# -- repeatable reads and phantoms -----------------------------------------------------

@pytest.mark.parametrize("formulation", ["auto", "rank", "scan"])
def test_no_non_repeatable_read(connect: Connect, formulation: str) -> None:
    make_accounts(connect, {1: 100, 2: 200, 3: 300})
    reader, writer = connect(snapshot=formulation), connect()
    assert balance(reader, 1) == 100
    assert table(reader) == [(1, 100), (2, 200), (3, 300)]
    run(writer, "UPDATE acc SET bal = 150 WHERE id = 1")
    run(writer, "DELETE FROM acc WHERE id = 2")
    writer.commit()
    assert balance(reader, 1) == 100
    assert balance(reader, 2) == 200
    # A checkpoint meanwhile must not move a version the reader may not see.
    checkpoint(writer)
    assert balance(reader, 1) == 100
    assert balance(reader, 2) == 200
    assert table(reader) == [(1, 100), (2, 200), (3, 300)]
    # A second committed update, now checkpointed on top of the first.
    run(writer, "UPDATE acc SET bal = 175 WHERE id = 1")
    writer.commit()
    checkpoint(writer)
    assert table(reader) == [(1, 100), (2, 200), (3, 300)]
    reader.commit()
    assert table(reader) == [(1, 175), (3, 300)]


@pytest.mark.parametrize("formulation", ["auto", "rank", "scan"])
def test_no_phantom_within_snapshot(connect: Connect, formulation: str) -> None:
    make_accounts(connect, {1: 10, 2: 20, 3: 30, 4: 40})
    reader, writer = connect(snapshot=formulation), connect()
    in_range = "SELECT id FROM acc WHERE bal BETWEEN 15 AND 35 ORDER BY id"
    aggregate = "SELECT count(*), sum(bal), max(id) FROM acc WHERE bal BETWEEN 15 AND 35"
    assert rows(reader, in_range) == [(2,), (3,)]
    assert rows(reader, aggregate) == [(2, 50, 3)]
    run(writer, "INSERT INTO acc (id, bal) VALUES (5, 25), (6, 33)")
    run(writer, "UPDATE acc SET bal = 16 WHERE id = 4")  # moves a row into the range
    run(writer, "DELETE FROM acc WHERE id = 2")  # and one out of it
    writer.commit()
    assert rows(reader, in_range) == [(2,), (3,)]
    assert rows(reader, aggregate) == [(2, 50, 3)]
    checkpoint(writer)
    assert rows(reader, in_range) == [(2,), (3,)]
    assert rows(reader, aggregate) == [(2, 50, 3)]
    assert rows(reader, "SELECT count(*) FROM acc") == [(4,)]
    reader.commit()
    assert rows(reader, in_range) == [(3,), (4,), (5,), (6,)]
    assert rows(reader, aggregate) == [(4, 104, 6)]


# -- write-write conflicts ---------------------------------------------------------------

def test_no_lost_update(connect: Connect, native: Native) -> None:
    make_accounts(connect, {1: 100, 2: 200})
    first, second = connect(), connect()
    # Both read-modify-write account 1 from the same snapshot value.
    seen_first, seen_second = balance(first, 1), balance(second, 1)
    assert seen_first == seen_second == 100
    assert run(first, "UPDATE acc SET bal = ? WHERE id = 1", (seen_first + 10,)) == 1
    assert run(second, "UPDATE acc SET bal = ? WHERE id = 1", (seen_second + 20,)) == 1
    # The loser's other writes must vanish with it.
    assert run(second, "UPDATE acc SET bal = bal - 1 WHERE id = 2") == 1
    assert run(second, "INSERT INTO acc (id, bal) VALUES (3, 300)") == 1
    first.commit()
    failure = expect_serialization_failure(second)
    assert "first committer wins" in str(failure)
    assert committed(connect) == [(1, 110), (2, 200)]
    # Exactly as if it never ran, down to the physical tables once purged.
    checkpoint(first)
    assert cache_rows(native) == 0
    assert sorted(native("SELECT id, bal FROM acc_storage")) == [(1, 110), (2, 200)]
    # The loser's connection is usable again, and now sees the winner.
    assert balance(second, 1) == 110
    run(second, "UPDATE acc SET bal = bal + 20 WHERE id = 1")
    second.commit()
    assert committed(connect) == [(1, 130), (2, 200)]


@pytest.mark.parametrize("first_write,second_write", [
    ("UPDATE acc SET bal = bal + 1 WHERE id = 1", "UPDATE acc SET bal = bal + 2 WHERE id = 1"),
    ("UPDATE acc SET bal = 0 WHERE id = 1", "DELETE FROM acc WHERE id = 1"),
    ("DELETE FROM acc WHERE id = 1", "DELETE FROM acc WHERE id = 1"),
    ("UPDATE acc SET id = 5 WHERE id = 1", "UPDATE acc SET bal = 7 WHERE id = 1"),
    ("UPDATE acc SET bal = 3 WHERE bal >= 100", "UPDATE acc SET bal = bal * 2 WHERE id = 1"),
])
def test_first_committer_wins_whoever_wrote_first(connect: Connect, first_write: str, second_write: str) -> None:
    """The transaction that commits first wins, even when it wrote second."""
    make_accounts(connect, {1: 100, 2: 200})
    expected_after_winner = None
    for writes_first in ("winner", "loser"):
        admin = connect()
        run(admin, "DELETE FROM acc")
        run(admin, "INSERT INTO acc (id, bal) VALUES (1, 100), (2, 200)")
        admin.commit()
        winner, loser = connect(), connect()
        for conn in (winner, loser):  # both snapshots are taken before either writes
            balance(conn, 2)
        order = [(winner, first_write), (loser, second_write)]
        if writes_first == "loser":
            order.reverse()
        for conn, statement in order:
            assert run(conn, statement) >= 1
        winner.commit()
        expect_serialization_failure(loser)
        state = committed(connect)
        if expected_after_winner is None:
            expected_after_winner = state
        assert state == expected_after_winner


def test_concurrent_inserts_of_same_new_key(connect: Connect) -> None:
    make_accounts(connect, {1: 100})
    first, second = connect(), connect()
    for conn in (first, second):  # both snapshots are taken before either writes
        balance(conn, 1)
    assert run(first, "INSERT INTO acc (id, bal) VALUES (7, 1)") == 1
    # The key is absent from the second's snapshot, so the insert itself succeeds ...
    assert run(second, "INSERT INTO acc (id, bal) VALUES (7, 2)") == 1
    first.commit()
    # ... but the second committer can never commit it.
    expect_serialization_failure(second)
    assert committed(connect) == [(1, 100), (7, 1)]

    # The same when the winner commits before the loser even writes (old snapshot).
    late = connect()
    balance(late, 1)
    other = connect()
    run(other, "INSERT INTO acc (id, bal) VALUES (8, 1)")
    other.commit()
    assert run(late, "INSERT INTO acc (id, bal) VALUES (8, 2)") == 1
    expect_serialization_failure(late)
    # A transaction that sees the key gets a duplicate-key error at the statement.
    with pytest.raises(tique.IntegrityError):
        run(late, "INSERT INTO acc (id, bal) VALUES (8, 3)")
    late.rollback()
    assert committed(connect) == [(1, 100), (7, 1), (8, 1)]


def test_concurrent_inserts_into_table_without_key_both_commit(connect: Connect) -> None:
    """Hidden row ids are distinct, so appends never conflict (no false aborts)."""
    admin = connect()
    run(admin, "CREATE TABLE events (msg VARCHAR)")
    admin.commit()
    first, second = connect(), connect()
    run(first, "INSERT INTO events (msg) VALUES ('a'), ('b')")
    run(second, "INSERT INTO events (msg) VALUES ('c')")
    first.commit()
    second.commit()
    assert sorted(rows(admin, "SELECT msg FROM events")) == [("a",), ("b",), ("c",)]


def test_write_skew_is_allowed(connect: Connect) -> None:
    """SI certifies write-sets only: disjoint writes after reading each other's rows both commit."""
    admin = connect()
    run(admin, "CREATE TABLE doctors (name VARCHAR PRIMARY KEY, on_call BOOLEAN NOT NULL)")
    run(admin, "INSERT INTO doctors VALUES ('alice', TRUE), ('bob', TRUE)")
    admin.commit()
    alice, bob = connect(), connect()
    on_call = "SELECT count(*) FROM doctors WHERE on_call"
    # Constraint: at least one doctor on call. Each checks it, then goes off call.
    assert rows(alice, on_call) == [(2,)]
    assert rows(bob, on_call) == [(2,)]
    assert run(alice, "UPDATE doctors SET on_call = FALSE WHERE name = 'alice'") == 1
    assert run(bob, "UPDATE doctors SET on_call = FALSE WHERE name = 'bob'") == 1
    alice.commit()
    bob.commit()
    assert rows(admin, on_call) == [(0,)]


# -- one transaction's own view ------------------------------------------------------------

def test_read_your_own_writes(connect: Connect, native: Native) -> None:
    make_accounts(connect, {1: 100})
    conn, other = connect(), connect()
    assert run(conn, "INSERT INTO acc (id, bal) VALUES (2, 1), (3, 1)") == 2
    assert table(conn) == [(1, 100), (2, 1), (3, 1)]
    for expected in (2, 3, 4):
        assert run(conn, "UPDATE acc SET bal = bal + 1 WHERE id = 2") == 1
        assert balance(conn, 2) == expected
    assert run(conn, "UPDATE acc SET bal = bal * 10 WHERE id >= 2") == 2
    assert table(conn) == [(1, 100), (2, 40), (3, 10)]
    assert run(conn, "UPDATE acc SET bal = 0 WHERE id = 99") == 0
    assert run(conn, "DELETE FROM acc WHERE id = 2") == 1
    assert balance(conn, 2) is None
    assert run(conn, "DELETE FROM acc WHERE id = 2") == 0
    assert run(conn, "UPDATE acc SET bal = 5 WHERE id = 2") == 0
    # Re-inserting a key the transaction deleted is not a duplicate.
    assert run(conn, "INSERT INTO acc (id, bal) VALUES (2, 7)") == 1
    assert balance(conn, 2) == 7
    with pytest.raises(tique.IntegrityError):
        run(conn, "INSERT INTO acc (id, bal) VALUES (2, 8)")
    # As natively, the failed statement aborted the transaction: nothing of it is left.
    conn.rollback()
    assert table(conn) == [(1, 100)]
    assert run(conn, "INSERT INTO acc (id, bal) VALUES (2, 7), (3, 10)") == 2
    # A committed row deleted and re-inserted, then updated, in one transaction.
    assert run(conn, "DELETE FROM acc WHERE id = 1") == 1
    assert run(conn, "INSERT INTO acc (id, bal) VALUES (1, 1)") == 1
    assert run(conn, "UPDATE acc SET bal = bal + 1 WHERE id = 1") == 1
    assert table(conn) == [(1, 2), (2, 7), (3, 10)]
    assert rows(conn, "SELECT count(*), sum(bal) FROM acc") == [(3, 19)]
    assert table(other) == [(1, 100)]
    other.rollback()
    conn.commit()
    assert committed(connect) == [(1, 2), (2, 7), (3, 10)]
    checkpoint(conn)
    assert cache_rows(native) == 0
    assert committed(connect) == [(1, 2), (2, 7), (3, 10)]


def test_rollback_discards_every_write(connect: Connect, native: Native) -> None:
    make_accounts(connect, {1: 100, 2: 200, 3: 300})
    checkpoint(connect())  # the committed rows now live in storage
    assert cache_rows(native) == 0
    conn, reader = connect(), connect()
    run(conn, "UPDATE acc SET bal = bal + 1")
    run(conn, "DELETE FROM acc WHERE id = 2")
    run(conn, "INSERT INTO acc (id, bal) VALUES (4, 400)")
    # A checkpoint while the transaction is open must leave its writes alone ...
    checkpoint(reader)
    assert table(conn) == [(1, 101), (3, 301), (4, 400)]
    run(conn, "UPDATE acc SET bal = 0 WHERE id = 4")
    assert table(conn) == [(1, 101), (3, 301), (4, 0)]
    conn.rollback()
    assert not conn.in_transaction
    assert committed(connect) == [(1, 100), (2, 200), (3, 300)]
    # ... and the next one purges them without resurrecting anything.
    checkpoint(reader)
    assert cache_rows(native) == 0
    assert sorted(native("SELECT id, bal FROM acc_storage")) == [(1, 100), (2, 200), (3, 300)]
    assert committed(connect) == [(1, 100), (2, 200), (3, 300)]
    # ROLLBACK as a statement does the same.
    run(conn, "INSERT INTO acc (id, bal) VALUES (5, 500)")
    run(conn, "ROLLBACK")
    assert committed(connect) == [(1, 100), (2, 200), (3, 300)]


def test_rollback_of_a_checkpointed_committed_history(connect: Connect, native: Native) -> None:
    """Rollback after committed versions moved to storage between the transaction's statements."""
    make_accounts(connect, {1: 100})
    conn, writer = connect(), connect()
    run(conn, "UPDATE acc SET bal = 1 WHERE id = 1")
    run(writer, "INSERT INTO acc (id, bal) VALUES (2, 200)")
    writer.commit()
    checkpoint(writer)
    run(conn, "INSERT INTO acc (id, bal) VALUES (3, 3)")
    assert table(conn) == [(1, 1), (3, 3)]  # its own snapshot: no row 2
    conn.rollback()
    checkpoint(writer)
    assert committed(connect) == [(1, 100), (2, 200)]
    assert cache_rows(native) == 0


# -- strong session SI ------------------------------------------------------------------------

def test_transaction_after_commit_sees_it(connect: Connect) -> None:
    make_accounts(connect, {1: 0})
    writer, old_reader = connect(), connect()
    assert balance(old_reader, 1) == 0  # began before the commits below
    for value in range(1, 6):
        run(writer, "UPDATE acc SET bal = ? WHERE id = 1", (value,))
        writer.commit()
        # Same connection, next transaction.
        assert balance(writer, 1) == value
        writer.commit()
        # Another connection's next transaction, and a brand-new connection.
        fresh = connect()
        assert balance(fresh, 1) == value
        fresh.close()
        assert balance(old_reader, 1) == 0
    old_reader.commit()
    assert balance(old_reader, 1) == 5


def test_strong_session_si_across_threads(connect: Connect) -> None:
    """Several writers commit concurrently (so commit timestamps interleave); after each
    commit returns, every transaction that begins, on any connection, sees it."""
    threads_n, rounds = 3, 15
    admin = connect()
    run(admin, "CREATE TABLE progress (worker INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    cur = admin.cursor()
    cur.executemany("INSERT INTO progress (worker, n) VALUES (?, ?)", [(w, 0) for w in range(threads_n)])
    admin.commit()
    connections = [connect() for _ in range(threads_n)]
    returned = [0] * threads_n  # highest n whose commit() has returned, per worker
    guard = threading.Lock()
    problems: list[str] = []

    def work(me: int) -> None:
        conn = connections[me]
        try:
            for n in range(1, rounds + 1):
                run(conn, "UPDATE progress SET n = ? WHERE worker = ?", (n, me))
                conn.commit()
                with guard:
                    returned[me] = n
                    floor = list(returned)
                # A new transaction begun now must see every commit that had returned.
                seen = dict(rows(conn, "SELECT worker, n FROM progress"))
                conn.commit()
                for worker, low in enumerate(floor):
                    if seen[worker] < low:
                        problems.append(f"worker {me} saw {worker} at {seen[worker]} after its commit of {low} returned")
        except BaseException as error:  # reported below, never swallowed
            problems.append(f"worker {me}: {error!r}")

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads_n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in workers), "a worker did not finish in time"
    assert problems == []
    assert dict(rows(admin, "SELECT worker, n FROM progress")) == {w: rounds for w in range(threads_n)}


# -- buffered writes ----------------------------------------------------------------------------

def test_buffered_writes_apply_at_commit(connect: Connect) -> None:
    make_accounts(connect, {1: 100, 2: 200})
    conn, other = connect(buffered_writes=True), connect()
    # Writes are queued: rowcount is unknown (-1) and the transaction's own reads
    # do not see them (documented behaviour of buffered mode).
    assert run(conn, "UPDATE acc SET bal = bal + 1 WHERE id = 1") == -1
    assert run(conn, "UPDATE acc SET bal = bal + 1 WHERE id = 1") == -1
    assert run(conn, "INSERT INTO acc (id, bal) VALUES (3, 300)") == -1
    assert run(conn, "DELETE FROM acc WHERE id = 2") == -1
    assert table(conn) == [(1, 100), (2, 200)]
    assert table(other) == [(1, 100), (2, 200)]
    other.rollback()
    conn.commit()
    # Applied in order at commit: the second update saw the first.
    assert committed(connect) == [(1, 102), (3, 300)]


def test_buffered_writes_still_certify(connect: Connect) -> None:
    make_accounts(connect, {1: 100})
    buffered, plain = connect(buffered_writes=True), connect()
    assert balance(buffered, 1) == 100
    run(buffered, "UPDATE acc SET bal = bal + 5 WHERE id = 1")
    run(plain, "UPDATE acc SET bal = bal + 7 WHERE id = 1")
    plain.commit()
    expect_serialization_failure(buffered)
    assert committed(connect) == [(1, 107)]
    # Two buffered transactions: the second committer loses too.
    first, second = connect(buffered_writes=True), connect(buffered_writes=True)
    for conn in (first, second):
        balance(conn, 1)
    run(first, "UPDATE acc SET bal = 1 WHERE id = 1")
    run(second, "UPDATE acc SET bal = 2 WHERE id = 1")
    first.commit()
    expect_serialization_failure(second)
    assert committed(connect) == [(1, 1)]


def test_buffered_write_errors_surface_at_commit(connect: Connect) -> None:
    make_accounts(connect, {1: 100})
    conn = connect(buffered_writes=True)
    run(conn, "INSERT INTO acc (id, bal) VALUES (2, 2)")
    run(conn, "INSERT INTO acc (id, bal) VALUES (1, 1)")  # duplicate, not checked yet
    with pytest.raises(tique.IntegrityError):
        conn.commit()
    assert not conn.in_transaction
    assert committed(connect) == [(1, 100)]


# -- autocommit ----------------------------------------------------------------------------------

def test_autocommit_each_statement_is_a_transaction(connect: Connect) -> None:
    make_accounts(connect, {1: 100})
    auto, other = connect(autocommit=True), connect()
    assert run(auto, "INSERT INTO acc (id, bal) VALUES (2, 200)") == 1
    assert not auto.in_transaction
    assert committed(connect) == [(1, 100), (2, 200)]
    # A failing statement rolls back only itself.
    with pytest.raises(tique.IntegrityError):
        run(auto, "INSERT INTO acc (id, bal) VALUES (3, 300), (1, 1)")
    assert not auto.in_transaction
    assert committed(connect) == [(1, 100), (2, 200)]
    # Each statement reads a fresh snapshot: it sees commits made between statements.
    run(other, "UPDATE acc SET bal = 101 WHERE id = 1")
    assert balance(auto, 1) == 100
    other.commit()
    assert balance(auto, 1) == 101
    # An autocommitted write is a committer like any other: it beats an open transaction.
    assert balance(other, 1) == 101
    run(other, "UPDATE acc SET bal = bal + 1 WHERE id = 1")
    assert run(auto, "UPDATE acc SET bal = bal + 10 WHERE id = 1") == 1
    expect_serialization_failure(other)
    assert committed(connect) == [(1, 111), (2, 200)]
    # Its snapshot is taken per statement, so a commit before the statement is no conflict.
    run(other, "UPDATE acc SET bal = 0 WHERE id = 2")
    other.commit()
    assert run(auto, "UPDATE acc SET bal = bal + 1 WHERE id = 2") == 1
    assert committed(connect) == [(1, 111), (2, 1)]
    # Explicit BEGIN groups statements even in autocommit mode.
    run(auto, "BEGIN")
    run(auto, "UPDATE acc SET bal = 5 WHERE id = 1")
    assert auto.in_transaction
    assert committed(connect) == [(1, 111), (2, 1)]
    run(auto, "COMMIT")
    assert committed(connect) == [(1, 5), (2, 1)]
    # Switching autocommit on commits the open transaction.
    manual = connect()
    run(manual, "UPDATE acc SET bal = 6 WHERE id = 1")
    manual.autocommit = True
    assert not manual.in_transaction
    assert committed(connect) == [(1, 6), (2, 1)]

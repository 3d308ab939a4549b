"""A transaction that changes the schema and loses certification leaves no schema change:
a failed commit leaves the database as if the transaction never ran. Commits are held at
debug pause points (tique.transaction.CommitPause), so each interleaving is forced, not
hoped for. Every test runs on every engine."""
from __future__ import annotations

import threading
from typing import Any

import pytest

import tique
from sqlhelp import Connect, Native, rows, run
from tique.transaction import CommitPause

WAIT = 120.0  # a bound on every wait, never a timing assumption

# (setup run before the transaction, the schema change, what shows that it took effect)
SCHEMA_CHANGES = {
    "create-table": ("", "CREATE TABLE extra (id INTEGER PRIMARY KEY)", "SELECT count(*) FROM tq_tables WHERE name = 'extra'"),
    "drop-table": ("CREATE TABLE gone (id INTEGER PRIMARY KEY)", "DROP TABLE gone", "SELECT count(*) = 0 FROM tq_tables WHERE name = 'gone'"),
    # On a table nobody writes here: PostgreSQL's CREATE INDEX blocks writers of its table
    # until the transaction ends, natively too.
    "create-index": ("CREATE TABLE other (id INTEGER PRIMARY KEY, v INTEGER)", "CREATE INDEX other_v ON other (v)",
                     "SELECT count(*) FROM tq_objects WHERE name = 'other_v'"),
}


def _commit_in(results: dict[str, Any], name: str, conn: tique.Connection) -> threading.Thread:
    def commit() -> None:
        try:
            conn.commit()
            results[name] = "committed"
        except BaseException as error:
            results[name] = error
    thread = threading.Thread(target=commit)
    thread.start()
    return thread


def _finished(*threads: threading.Thread) -> None:
    """Waits for each commit thread, in order; a thread still running after WAIT is a hang."""
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a commit did not finish"


def _changed(native: Native, change: str) -> bool:
    return bool(native(SCHEMA_CHANGES[change][2])[0][0])


def _setup(connect: Connect, change: str) -> None:
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    run(setup, "INSERT INTO kv VALUES (1, 0)")
    if SCHEMA_CHANGES[change][0]:
        run(setup, SCHEMA_CHANGES[change][0])


@pytest.mark.parametrize("level", ["read committed", "repeatable read"])
@pytest.mark.parametrize("change", sorted(SCHEMA_CHANGES))
def test_a_schema_change_is_gone_when_its_commit_loses_certification(connect: Connect, native: Native, level: str, change: str) -> None:
    """T_a writes key 1 and changes the schema; T_b writes key 1 too. T_b takes its commit
    timestamp and is held before logging its write-set; T_a takes a later one and is held
    there too (no conflict is logged yet for anything T_a could check before it). T_b then
    logs, certifies (T_a's write-set is not logged) and commits; T_a resumes, finds T_b's
    write and fails. Its schema change must be gone with its writes."""
    _setup(connect, change)
    t_a = connect(isolation_level=level, commit_timeout=WAIT)
    t_b = connect(commit_timeout=WAIT)
    run(t_a, "UPDATE kv SET v = 1 WHERE k = 1")
    run(t_a, SCHEMA_CHANGES[change][1])
    run(t_b, "UPDATE kv SET v = 2 WHERE k = 1")
    t_b.commit_pause = held_b = CommitPause("timestamp-taken", timeout=WAIT)
    t_a.commit_pause = held_a = CommitPause("timestamp-taken", timeout=WAIT)
    results: dict[str, Any] = {}
    b = _commit_in(results, "b", t_b)
    assert held_b.reached.wait(WAIT), results
    a = _commit_in(results, "a", t_a)
    assert held_a.reached.wait(WAIT), results
    held_b.resume.set()  # T_b holds the lower timestamp: it publishes without waiting for T_a
    b.join(WAIT)
    assert not b.is_alive() and results["b"] == "committed", results
    held_a.resume.set()
    a.join(WAIT)
    assert not a.is_alive()
    assert isinstance(results["a"], tique.SerializationFailure), results
    assert "tq_" not in str(results["a"]) and "_cache" not in str(results["a"])
    assert not _changed(native, change), f"{results['a']!r} left its schema change in place"
    assert rows(connect(), "SELECT k, v FROM kv") == [(1, 2)]
    # The connection carries on with the schema as it was.
    assert not t_a.in_transaction
    assert rows(t_a, "SELECT k, v FROM kv") == [(1, 2)]
    t_a.commit()


@pytest.mark.parametrize("level", ["read committed", "repeatable read"])
def test_a_writer_certifying_while_a_schema_change_commits_loses(connect: Connect, native: Native, level: str) -> None:
    """The window the invariant closes: T_a (schema change + write of key 1) has certified
    and is held before the engine commit that makes its schema change and writes
    permanent. T_b, which began before, writes key 1 and commits meanwhile: it must see
    T_a's write-set (logged before T_a certified) and lose, whenever it certifies, so
    that T_a's commit, carrying the schema change, cannot be a lost update."""
    _setup(connect, "create-table")
    t_a = connect(isolation_level=level, commit_timeout=WAIT)
    t_b = connect(commit_timeout=WAIT)
    run(t_b, "SELECT v FROM kv WHERE k = 1")  # T_b begins before T_a commits
    run(t_a, "UPDATE kv SET v = v + 1 WHERE k = 1")
    run(t_a, SCHEMA_CHANGES["create-table"][1])
    t_a.commit_pause = held_a = CommitPause("certified", timeout=WAIT)
    results: dict[str, Any] = {}
    a = _commit_in(results, "a", t_a)
    assert held_a.reached.wait(WAIT), results
    run(t_b, "UPDATE kv SET v = v + 10 WHERE k = 1")
    b = _commit_in(results, "b", t_b)
    held_a.resume.set()
    _finished(a, b)
    assert results["a"] == "committed", results
    assert isinstance(results["b"], tique.SerializationFailure), results
    assert _changed(native, "create-table")
    assert rows(connect(), "SELECT k, v FROM kv") == [(1, 1)]
    assert rows(connect(), "SELECT count(*) FROM extra") == [(0,)]


@pytest.mark.parametrize("level", ["read committed", "repeatable read"])
def test_a_schema_change_commits_after_a_conflict_it_does_not_overlap(connect: Connect, native: Native, level: str) -> None:
    """A writer of the same key that committed before T_a began is no conflict: T_a commits,
    with its schema change, in one go."""
    _setup(connect, "create-table")
    other = connect()
    run(other, "UPDATE kv SET v = 5 WHERE k = 1")
    other.commit()
    t_a = connect(isolation_level=level)
    run(t_a, "UPDATE kv SET v = v + 1 WHERE k = 1")
    run(t_a, SCHEMA_CHANGES["create-table"][1])
    run(t_a, "INSERT INTO extra VALUES (1)")
    t_a.commit()
    assert rows(connect(), "SELECT k, v FROM kv") == [(1, 6)]
    assert rows(connect(), "SELECT id FROM extra") == [(1,)]


def test_a_serializable_schema_change_certifies_its_reads_in_commit_order(connect: Connect, native: Native) -> None:
    """SERIALIZABLE: T_a reads x, writes y and creates a table; T_b writes x, takes its
    commit timestamp and is held before logging its write-set. T_a, with the later
    timestamp, reaches certification: it must wait for T_b, see its write of x, fail, and
    leave neither its write nor its table."""
    _setup(connect, "create-table")
    run(connect(autocommit=True), "INSERT INTO kv VALUES (2, 0)")  # x = key 1, y = key 2
    t_a = connect(isolation_level="serializable", commit_timeout=WAIT)
    t_b = connect(commit_timeout=WAIT)
    assert rows(t_a, "SELECT v FROM kv WHERE k = 1") == [(0,)]
    run(t_a, "UPDATE kv SET v = 1 WHERE k = 2")
    run(t_a, SCHEMA_CHANGES["create-table"][1])
    run(t_b, "UPDATE kv SET v = 1 WHERE k = 1")
    t_b.commit_pause = held_b = CommitPause("timestamp-taken", timeout=WAIT)
    t_a.commit_pause = certifying = CommitPause("certifying", timeout=WAIT)
    certifying.resume.set()  # only to learn that T_a reached certification
    results: dict[str, Any] = {}
    b = _commit_in(results, "b", t_b)
    assert held_b.reached.wait(WAIT), results
    a = _commit_in(results, "a", t_a)
    assert certifying.reached.wait(WAIT), results
    assert a.is_alive() and "a" not in results  # waiting for T_b's lower timestamp
    held_b.resume.set()
    _finished(b, a)
    assert results["b"] == "committed", results
    assert isinstance(results["a"], tique.SerializationFailure), results
    assert not _changed(native, "create-table")
    assert rows(connect(), "SELECT k, v FROM kv ORDER BY k") == [(1, 1), (2, 0)]


def test_a_serializable_transaction_scans_tables_it_creates_and_drops(connect: Connect, native: Native) -> None:
    """Scans are certified against the committed state, where a table the transaction
    created does not exist yet and one it dropped still does: both commit, and a
    concurrent write into the dropped table, which it scanned, fails the commit."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE old (id INTEGER PRIMARY KEY, v INTEGER)")
    run(setup, "INSERT INTO old VALUES (1, 1)")
    for concurrent in (False, True):
        conn, other = connect(isolation_level="serializable"), connect()
        assert rows(conn, "SELECT count(*) FROM old") == [(1,)]
        run(conn, "CREATE TABLE fresh (id INTEGER PRIMARY KEY, v INTEGER)")
        run(conn, "INSERT INTO fresh SELECT id, v FROM old")
        assert rows(conn, "SELECT count(*) FROM fresh") == [(1,)]
        if concurrent:  # before the DROP: PostgreSQL's DROP blocks writers of the table, natively too
            run(other, "INSERT INTO old VALUES (2, 2)")
            other.commit()
        run(conn, "DROP TABLE old")
        if concurrent:
            with pytest.raises(tique.SerializationFailure):
                conn.commit()
            assert native("SELECT name FROM tq_tables WHERE name IN ('old', 'fresh') ORDER BY name") == [("old",)]
            assert rows(connect(), "SELECT id FROM old ORDER BY id") == [(1,), (2,)]
        else:
            conn.commit()
            assert native("SELECT name FROM tq_tables WHERE name IN ('old', 'fresh') ORDER BY name") == [("fresh",)]
            run(setup, "DROP TABLE fresh")
            run(setup, "CREATE TABLE old (id INTEGER PRIMARY KEY, v INTEGER)")
            run(setup, "INSERT INTO old VALUES (1, 1)")

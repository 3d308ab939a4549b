"""SERIALIZABLE (write-snapshot isolation with ordered certification: tique/read_sets.py,
tique/transaction.py) on every engine: write skew by point reads and by scans aborts one
transaction, the read-only anomaly cannot happen, invariants hold under contention, and
read-sets are purged and recovered like write-sets."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

import tique
from drivers import open_system
from elle.checker import check_file
from elle.runner import RunConfig
from elle.runner import run as elle_run
from elle.workload import WorkloadConfig
from progress import until_progress
from tique.backends import forget_database
from tique.checkpoint import checkpoint
from tique.transaction import CommitPause

Connect = Callable[..., tique.Connection]
WAIT = 60.0  # seconds: a bound on every wait, never expected to be reached


def run(conn: tique.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


def _doctors(connect: Connect) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE doctors (id INTEGER PRIMARY KEY, on_call BOOLEAN NOT NULL)")
    run(conn, "INSERT INTO doctors VALUES (1, TRUE), (2, TRUE)")


def _go_off_call_by_points(conn: tique.Connection, me: int, other: int) -> None:
    """Reads both doctors by key; leaves only if the other stays on call."""
    (mine,) = run(conn, "SELECT on_call FROM doctors WHERE id = ?", (me,))
    (theirs,) = run(conn, "SELECT on_call FROM doctors WHERE id = ?", (other,))
    assert mine[0] and theirs[0]
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = ?", (me,))


def _go_off_call_by_scan(conn: tique.Connection, me: int) -> None:
    """Counts the doctors on call (a predicate read of the whole table); leaves if two are."""
    assert run(conn, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = ?", (me,))


def _write_skew(connect: Connect, level: str, go: Callable[[tique.Connection, int], None]) -> tuple[list[str], list[tuple]]:
    _doctors(connect)
    alice, bob = connect(isolation_level=level), connect(isolation_level=level)
    go(alice, 1)
    go(bob, 2)
    outcomes = []
    for conn in (alice, bob):
        try:
            conn.commit()
            outcomes.append("committed")
        except tique.SerializationFailure:
            outcomes.append("aborted")
    return outcomes, run(connect(), "SELECT id FROM doctors WHERE on_call ORDER BY id")


def test_write_skew_by_point_reads(connect: Connect) -> None:
    outcomes, on_call = _write_skew(connect, "serializable", lambda c, me: _go_off_call_by_points(c, me, 3 - me))
    assert outcomes == ["committed", "aborted"]
    assert on_call == [(2,)]


def test_write_skew_commits_both_at_snapshot(connect: Connect) -> None:
    outcomes, on_call = _write_skew(connect, "repeatable read", lambda c, me: _go_off_call_by_points(c, me, 3 - me))
    assert outcomes == ["committed", "committed"]
    assert on_call == []


def test_write_skew_by_scan(connect: Connect) -> None:
    outcomes, on_call = _write_skew(connect, "serializable", _go_off_call_by_scan)
    assert outcomes == ["committed", "aborted"]
    assert on_call == [(2,)]


def test_write_skew_by_scan_at_snapshot_and_without_read_certification(connect: Connect) -> None:
    outcomes, on_call = _write_skew(connect, "snapshot", _go_off_call_by_scan)
    assert outcomes == ["committed", "committed"] and on_call == []


def test_no_read_certify_fault_allows_write_skew(connect: Connect) -> None:
    _doctors(connect)
    alice = connect(isolation_level="serializable", faults={"no-read-certify"})
    bob = connect(isolation_level="serializable", faults={"no-read-certify"})
    _go_off_call_by_scan(alice, 1)
    _go_off_call_by_scan(bob, 2)
    alice.commit()
    bob.commit()
    assert run(connect(), "SELECT count(*) FROM doctors WHERE on_call") == [(0,)]


def test_level_by_statement_and_read_after_write_of_key_read_by_other(connect: Connect) -> None:
    """BEGIN ISOLATION LEVEL SERIALIZABLE chooses it for one transaction; a key read and
    then written by a concurrent committer aborts the reader-writer."""
    _doctors(connect)
    conn, other = connect(), connect()
    cur = conn.cursor()
    cur.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 1") == [(True,)]
    run(other, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    other.commit()
    run(conn, "INSERT INTO doctors VALUES (3, TRUE)")
    with pytest.raises(tique.SerializationFailure, match="read"):
        conn.commit()
    assert run(connect(), "SELECT id FROM doctors ORDER BY id") == [(1,), (2,)]
    # The same at SNAPSHOT commits (no read is certified).
    conn.isolation_level = "snapshot"
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 2") == [(True,)]
    run(other, "UPDATE doctors SET on_call = FALSE WHERE id = 2")
    other.commit()
    run(conn, "INSERT INTO doctors VALUES (3, TRUE)")
    conn.commit()


def test_point_reads_of_a_composite_key(connect: Connect) -> None:
    """Keys of several columns (packed into one where the engine packs them) hash alike in
    the read-set and the write-set: only a write of the very key read conflicts."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE district (w INTEGER, d INTEGER, next_o INTEGER NOT NULL, PRIMARY KEY (w, d))")
    run(setup, "INSERT INTO district VALUES (1, 1, 10), (1, 2, 20), (2, 1, 30)")
    for other_key, conflicts in (((1, 2), True), ((2, 1), False)):
        conn, other = connect(isolation_level="serializable"), connect()
        assert run(conn, "SELECT next_o FROM district WHERE w = ? AND d = ?", other_key) != []
        run(other, "UPDATE district SET next_o = next_o + 1 WHERE w = ? AND d = ?", (1, 2))
        other.commit()
        run(conn, "UPDATE district SET next_o = next_o + 1 WHERE w = 1 AND d = 1")
        if conflicts:
            with pytest.raises(tique.SerializationFailure):
                conn.commit()
        else:
            conn.commit()


def test_a_failed_serializable_commit_leaves_no_schema_change(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    """A SERIALIZABLE transaction reads the doctors on call and copies them into a new table
    (or just creates one); a concurrent commit writes what it read, so its commit must fail,
    and then the database must be as if it never ran: no table roster. A schema-changing
    transaction is certified before the engine commit that makes its schema change
    permanent (tique/transaction.py, commit_schema_change)."""
    _doctors(connect)
    conn, other = connect(isolation_level="serializable"), connect()
    for ddl in ("CREATE TABLE roster AS SELECT id FROM doctors WHERE on_call", "CREATE TABLE roster (id INTEGER PRIMARY KEY)"):
        assert run(conn, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
        failed: list[BaseException] = []
        try:
            run(conn, ddl)
            run(other, "UPDATE doctors SET on_call = on_call WHERE id = 1")  # a write of a row it read
            other.commit()
            conn.commit()
        except tique.Error as error:
            failed.append(error)
            conn.rollback()
        assert failed, "the commit succeeded although a concurrent commit changed what it read"
        assert native("SELECT name FROM tq_tables WHERE name = 'roster'") == [], f"{failed[0]!r} left the schema change"
        assert "roster" not in connect().tables
        assert isinstance(failed[0], tique.SerializationFailure), failed
        assert "tq_" not in str(failed[0])
    # Without a conflict the same transaction commits its schema change.
    assert run(conn, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
    run(conn, "CREATE TABLE roster0 AS SELECT id FROM doctors WHERE on_call")
    conn.commit()
    assert run(connect(), "SELECT id FROM roster0 ORDER BY id") == [(1,), (2,)]
    run(other, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    other.commit()
    # Between transactions a CREATE TABLE ... AS SELECT is a transaction of its own, at any level.
    run(conn, "CREATE TABLE roster AS SELECT id FROM doctors WHERE on_call")
    assert not conn.in_transaction
    assert run(connect(), "SELECT id FROM roster ORDER BY id") == [(2,)]
    # And the same transaction at REPEATABLE READ carries its schema change.
    snap = connect(isolation_level="repeatable read")
    assert run(snap, "SELECT count(*) FROM doctors WHERE on_call") == [(1,)]
    run(snap, "CREATE TABLE roster2 AS SELECT id FROM doctors WHERE on_call")
    snap.commit()
    assert run(connect(), "SELECT id FROM roster2") == [(2,)]


def test_schema_change_and_read_for_share_combine(connect: Connect, engine: str, native: Callable[[str], list[tuple]]) -> None:
    """Rows read FOR SHARE are certified like a SERIALIZABLE read-set, before the engine
    commit of a schema change in the same transaction: a concurrent write of them fails
    the commit and leaves no schema change; without one, both commit."""
    if engine != "postgres":
        pytest.skip("PostgreSQL only: DuckDB and MonetDB have no locking reads")
    _doctors(connect)
    conn, other = connect(), connect()
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 1 FOR SHARE") == [(True,)]
    run(conn, "CREATE TABLE roster (id INTEGER PRIMARY KEY)")
    run(other, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    other.commit()
    with pytest.raises(tique.SerializationFailure):
        conn.commit()
    assert native("SELECT name FROM tq_tables WHERE name = 'roster'") == []
    run(conn, "BEGIN")
    run(conn, "CREATE TABLE roster (id INTEGER PRIMARY KEY)")
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 2 FOR SHARE") == [(True,)]
    conn.commit()
    assert native("SELECT name FROM tq_tables WHERE name = 'roster'") == [("roster",)]


def test_read_of_an_absent_key_conflicts_with_its_insert(connect: Connect) -> None:
    """A point read that finds nothing records the key: a concurrent insert of it is a conflict (a phantom)."""
    _doctors(connect)
    conn, other = connect(isolation_level="serializable"), connect()
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 7") == []
    run(other, "INSERT INTO doctors VALUES (7, TRUE)")
    other.commit()
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    with pytest.raises(tique.SerializationFailure):
        conn.commit()


def test_predicate_read_conflicts_with_a_concurrent_insert(connect: Connect) -> None:
    """A phantom: a row inserted into a predicate the transaction read (a scan) by a
    transaction that committed after it began aborts it at SERIALIZABLE."""
    _doctors(connect)
    conn, other = connect(isolation_level="serializable"), connect()
    assert run(conn, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
    run(other, "INSERT INTO doctors VALUES (3, TRUE)")
    other.commit()
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    with pytest.raises(tique.SerializationFailure, match="wrote data it read"):
        conn.commit()
    assert run(connect(), "SELECT id FROM doctors WHERE on_call ORDER BY id") == [(1,), (2,), (3,)]


def test_point_read_of_a_key_beyond_the_column_type(connect: Connect) -> None:
    """A key no INTEGER column can hold finds nothing and can never be written: it costs
    the commit nothing (its value is never cast to the column's type)."""
    _doctors(connect)
    conn = connect(isolation_level="serializable")
    assert run(conn, "SELECT on_call FROM doctors WHERE id = ?", (2 ** 40,)) == []
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    conn.commit()


def test_unrelated_keys_do_not_conflict(connect: Connect) -> None:
    _doctors(connect)
    run(connect(autocommit=True), "INSERT INTO doctors VALUES (3, TRUE), (4, TRUE)")
    a, b = connect(isolation_level="serializable"), connect(isolation_level="serializable")
    assert run(a, "SELECT on_call FROM doctors WHERE id = 1") == [(True,)]
    assert run(b, "SELECT on_call FROM doctors WHERE id = 3") == [(True,)]
    run(a, "UPDATE doctors SET on_call = FALSE WHERE id = 2")
    run(b, "UPDATE doctors SET on_call = FALSE WHERE id = 4")
    a.commit()
    b.commit()


def test_read_only_serializable_is_never_checked(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    """A reader that writes nothing logs nothing and always commits, whatever committed
    meanwhile: its snapshot is a prefix of the commit order, so it serializes right after
    the commit it started at. Its commit costs what a SNAPSHOT reader's does."""
    _doctors(connect)
    reader, writer = connect(isolation_level="serializable"), connect()
    assert run(reader, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
    run(writer, "UPDATE doctors SET on_call = FALSE WHERE id = 1")
    writer.commit()
    assert run(reader, "SELECT on_call FROM doctors WHERE id = 1") == [(True,)]  # its snapshot
    before = reader.counters
    reader.commit()
    spent = reader.counters - before
    snapshot_reader = connect()
    assert run(snapshot_reader, "SELECT count(*) FROM doctors WHERE on_call") == [(1,)]
    baseline = snapshot_reader.counters
    snapshot_reader.commit()
    assert spent.round_trips == (snapshot_reader.counters - baseline).round_trips
    assert native("SELECT count(*) FROM tq_read_sets") == [(0,)]


def test_read_only_anomaly_is_not_possible(connect: Connect) -> None:
    """Issue 12's counterexample, forced: T_b takes its commit timestamp (10) and is held
    before its write-set is logged; T_a, which read x, takes 11 and reaches certification.
    Ordered certification makes T_a wait for T_b, see its write of x and abort, so a
    reader that sees T_b's x never misses T_a's y."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    run(setup, "INSERT INTO kv VALUES (1, 0), (2, 0)")  # x = key 1, y = key 2
    t_b = connect(isolation_level="serializable", commit_timeout=WAIT)
    t_a = connect(isolation_level="serializable", commit_timeout=WAIT)
    assert run(t_a, "SELECT v FROM kv WHERE k = 1") == [(0,)]  # T_a reads the old x
    run(t_b, "UPDATE kv SET v = 1 WHERE k = 1")  # T_b writes x
    run(t_a, "UPDATE kv SET v = 1 WHERE k = 2")  # T_a writes y
    t_b.commit_pause = held = CommitPause("timestamp-taken", timeout=WAIT)
    t_a.commit_pause = certifying = CommitPause("certifying", timeout=WAIT)
    certifying.resume.set()  # only to learn that T_a reached certification
    results: dict[str, Any] = {}

    def commit(name: str, conn: tique.Connection) -> None:
        try:
            conn.commit()
            results[name] = "committed"
        except BaseException as error:
            results[name] = error

    b = threading.Thread(target=commit, args=("b", t_b))
    b.start()
    assert held.reached.wait(WAIT), results
    a = threading.Thread(target=commit, args=("a", t_a))
    a.start()
    assert certifying.reached.wait(WAIT), results
    # T_a holds the higher commit timestamp and is at certification; T_b's write-set is not logged.
    assert a.is_alive() and "a" not in results
    held.resume.set()
    b.join(WAIT)
    a.join(WAIT)
    assert not a.is_alive() and not b.is_alive()
    assert results["b"] == "committed"
    assert isinstance(results["a"], tique.SerializationFailure), results
    reader = connect(isolation_level="serializable")
    assert run(reader, "SELECT k, v FROM kv ORDER BY k") == [(1, 1), (2, 0)]
    reader.commit()


def test_bank_invariant_under_contention(connect: Connect) -> None:
    """Threads move money between accounts only if the total of the pair stays above a
    floor, reading both by key; a withdrawal checks the sum over every account (a scan).
    At SERIALIZABLE the total never drops below the floor, whatever interleaves, with a
    checkpointer purging the caches the scans are certified against every few milliseconds."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    run(setup, "INSERT INTO accounts VALUES (1, 50), (2, 50), (3, 50), (4, 50)")
    floor, committed, failures = 100, [0], []
    lock = threading.Lock()

    def client(seed: int) -> None:
        conn = connect(isolation_level="serializable", checkpoint_interval_ms=2)
        for i in range(15):
            account = 1 + (seed + i) % 4
            try:
                (total,) = run(conn, "SELECT sum(balance) FROM accounts")
                (mine,) = run(conn, "SELECT balance FROM accounts WHERE id = ?", (account,))
                if total[0] - 30 >= floor:  # withdraw 30 only if the bank keeps its floor
                    run(conn, "UPDATE accounts SET balance = ? WHERE id = ?", (mine[0] - 30, account))
                conn.commit()
                with lock:
                    committed[0] += 1
            except tique.SerializationFailure:
                conn.rollback()
            except BaseException as error:  # surfaced below
                failures.append(error)
                return

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 5)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)
    (total,) = run(connect(), "SELECT sum(balance) FROM accounts")
    assert total[0] >= floor and committed[0] > 0
    assert total[0] == 200 - 30 * ((200 - total[0]) // 30)


def test_on_call_invariant_under_contention(connect: Connect) -> None:
    """Several threads each try to take a doctor off call if at least two are on call,
    and put one back; at SERIALIZABLE at least one stays on call at every commit."""
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE doctors (id INTEGER PRIMARY KEY, on_call BOOLEAN NOT NULL)")
    run(setup, "INSERT INTO doctors VALUES (1, TRUE), (2, TRUE), (3, TRUE)")
    failures: list[BaseException] = []
    seen: list[int] = []

    def client(me: int) -> None:
        conn = connect(isolation_level="serializable")
        for i in range(12):
            try:
                on_call = [r[0] for r in run(conn, "SELECT id FROM doctors WHERE on_call")]
                seen.append(len(on_call))
                if i % 3 == 2:
                    run(conn, "UPDATE doctors SET on_call = TRUE WHERE id = ?", (me,))
                elif len(on_call) >= 2 and me in on_call:
                    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = ?", (me,))
                conn.commit()
            except tique.SerializationFailure:
                conn.rollback()
            except BaseException as error:
                failures.append(error)
                return

    threads = [threading.Thread(target=client, args=(n,)) for n in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 5)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)
    assert min(seen) >= 1
    assert run(connect(), "SELECT count(*) FROM doctors WHERE on_call")[0][0] >= 1


def test_checkpoint_purges_read_sets(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    _doctors(connect)
    conn = connect(isolation_level="serializable")
    assert run(conn, "SELECT on_call FROM doctors WHERE id = 1") == [(True,)]
    run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = 2")
    conn.commit()
    assert native("SELECT count(*) FROM tq_read_sets")[0][0] >= 1
    checkpoint(conn)
    assert native("SELECT count(*) FROM tq_read_sets") == [(0,)]
    assert native("SELECT count(*) FROM tq_write_sets") == [(0,)]


_CRASH_AT_CERTIFICATION = """
import os, signal, sys, threading
import tique
from tique.transaction import CommitPause
conn = tique.connect(sys.argv[1], isolation_level="serializable", commit_timeout=5)  # its timestamp, once dead, waits this out
cur = conn.cursor()
cur.execute("SELECT on_call FROM doctors WHERE id = 1")
assert cur.fetchall() == [(True,)]
cur.execute("UPDATE doctors SET on_call = FALSE WHERE id = 2")
conn.commit_pause = pause = CommitPause("certifying", timeout=60)
threading.Thread(target=lambda: pause.reached.wait(60) and os.kill(os.getpid(), signal.SIGKILL), daemon=True).start()
conn.commit()
"""


def test_recovery_after_unfinished_serializable_transaction(engine: str, url: str) -> None:
    """A client killed (SIGKILL) at certification, its read-set and write-set logged under
    a commit timestamp without an outcome: recovery (or, on a server, the next commit
    waiting on that timestamp) aborts it, its write never shows, and the next checkpoint
    purges its read-set."""
    setup = tique.connect(url, autocommit=True)
    run(setup, "CREATE TABLE doctors (id INTEGER PRIMARY KEY, on_call BOOLEAN NOT NULL)")
    run(setup, "INSERT INTO doctors VALUES (1, TRUE), (2, TRUE)")
    setup.close()
    if engine == "duckdb":
        forget_database(url)  # one process at a time opens an embedded database
    crashed = subprocess.run([sys.executable, "-c", _CRASH_AT_CERTIFICATION, url], capture_output=True, text=True,
                             timeout=WAIT * 5, env={**os.environ, "PYTHONPATH": str(Path(tique.__file__).parent.parent)})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    if engine == "duckdb":
        forget_database(url)  # reopening runs recovery, as a restarted application would
    conn = tique.connect(url, isolation_level="serializable", commit_timeout=WAIT)
    try:
        assert conn.backend.rows(conn._raw, "SELECT count(*) FROM tq_read_sets", [])[0][0] >= 1  # it got that far
        assert run(conn, "SELECT id FROM doctors WHERE on_call ORDER BY id") == [(1,), (2,)]
        assert run(conn, "SELECT on_call FROM doctors WHERE id = 1") == [(True,)]
        run(conn, "UPDATE doctors SET on_call = FALSE WHERE id = 2")
        conn.commit()  # waits out (and aborts) the dead commit timestamp below its own
        checkpoint(conn)
        assert conn.backend.rows(conn._raw, "SELECT count(*) FROM tq_read_sets", []) == [(0,)]
        assert run(conn, "SELECT id FROM doctors WHERE on_call ORDER BY id") == [(1,)]
    finally:
        conn.close()


# ---------------------------------------------------------------- FOR SHARE (PostgreSQL)

@pytest.mark.parametrize("level", ["snapshot", "serializable"])
def test_for_share_certifies_against_writes_only(connect: Connect, engine: str, level: str) -> None:
    """A row read FOR SHARE is protected from writers that commit after the reader began
    (the reader loses, as PostgreSQL's locker does at repeatable read when the row changed
    under it), at every level; two sharers never abort each other."""
    if engine != "postgres":
        pytest.skip("PostgreSQL only: DuckDB and MonetDB have no locking reads")
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE acc (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)")
    run(setup, "INSERT INTO acc VALUES (1, 100), (2, 100)")

    # Two sharers of one row, one of which also writes another row: both commit.
    first, second = connect(isolation_level=level), connect(isolation_level=level)
    assert run(first, "SELECT bal FROM acc WHERE id = 1 FOR SHARE") == [(100,)]
    assert run(second, "SELECT bal FROM acc WHERE id = 1 FOR KEY SHARE") == [(100,)]
    run(second, "UPDATE acc SET bal = 90 WHERE id = 2")
    second.commit()
    first.commit()

    # A writer of the shared row that commits first makes the sharer (read-only or not) lose.
    for sharer_writes in (False, True):
        sharer, writer = connect(isolation_level=level), connect()
        assert run(sharer, "SELECT bal FROM acc WHERE id = ? FOR SHARE", (1,)) == [(100,)]
        run(writer, "UPDATE acc SET bal = bal WHERE id = 1")
        writer.commit()
        if sharer_writes:
            run(sharer, "UPDATE acc SET bal = bal + 1 WHERE id = 2")
        with pytest.raises(tique.SerializationFailure):
            sharer.commit()

    # The sharer commits first: the writer, which natively waits for it, commits after.
    sharer, writer = connect(isolation_level=level), connect()
    assert run(sharer, "SELECT id FROM acc WHERE bal >= 90 ORDER BY id FOR SHARE") == [(1,), (2,)]  # a scan: the whole table
    run(writer, "UPDATE acc SET bal = 0 WHERE id = 2")
    sharer.commit()
    writer.commit()
    # A writer of any row of a table shared by a scan makes the sharer lose.
    sharer, writer = connect(isolation_level=level), connect()
    run(sharer, "SELECT id FROM acc WHERE bal > 50 FOR SHARE")
    run(writer, "UPDATE acc SET bal = 1 WHERE id = 2")
    writer.commit()
    with pytest.raises(tique.SerializationFailure):
        sharer.commit()
    assert run(connect(), "SELECT id, bal FROM acc ORDER BY id") == [(1, 100), (2, 1)]


# ---------------------------------------------------------------- Elle list-append

def _elle(engine: str, url: str, tmp_path: Path, txns: int, faults: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """One list-append run at SERIALIZABLE (through tique.connect's isolation_level), and
    its history checked against Elle's serializable model."""
    system = open_system(f"tique-{engine}", url=url, isolation_level="serializable")
    try:
        result = elle_run(system, RunConfig(txns=txns, clients=4, faults=faults, workload=WorkloadConfig(key_count=5, seed=11)),
                          tmp_path / f"history-{len(list(tmp_path.iterdir()))}.edn")
    finally:
        system.close()
    return result, check_file(result.history, "serializable")


def test_elle_list_append_is_serializable(engine: str, url: str, tmp_path: Path) -> None:
    """With the checkpointer running every few milliseconds, purging write-sets, read-sets
    and cache versions below every running transaction's start."""
    txns = {"duckdb": 400, "postgres": 400, "monetdb": 300}[engine]
    result, verdict = _elle(engine, url, tmp_path, txns, ("checkpoint",))
    assert verdict.valid, verdict.summary()
    assert result.txns == txns and result.ok > txns // 4 and result.info == 0
    assert result.fail > 0  # 4 clients on 5 hot keys do conflict
    assert result.final.ok and not result.notes
    assert check_file(result.history, "strong-session-snapshot-isolation").valid


def test_elle_no_read_certify_is_flagged_with_g2_item(engine: str, url: str, tmp_path: Path) -> None:
    """The negative control: SERIALIZABLE without the read-set check is snapshot isolation
    again, whose write skew Elle finds as G2-item (and nothing worse)."""
    result, verdict = until_progress(lambda txns: _elle(engine, url, tmp_path, int(txns), ("no-read-certify",)),
                                     lambda found: "G2-item" in found[1].anomaly_counts, 300.0, bound=2400.0)
    assert "G2-item" in verdict.anomaly_counts, verdict.anomaly_counts
    assert set(verdict.anomaly_counts) <= {"G2-item", "G-nonadjacent"}, verdict.anomaly_counts
    assert check_file(result.history, "strong-session-snapshot-isolation").valid

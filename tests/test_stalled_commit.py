"""A client that stalls or dies holding a commit timestamp blocks nobody for longer than
the commit timeout, and its transaction ends up aborted.

Commit timestamps become visible in order, so a later committer waits for an earlier
one's outcome. The stalled client here is a real connection, stopped inside its real
commit right after the oracle handed it a commit timestamp (the oracle and the
database are untouched); on PostgreSQL a separate process is also SIGKILLed there.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from typing import Any, Callable

import pytest

import tique
from sqlhelp import rows, run
from tique.checkpoint import checkpoint
from tique.rewrite.params import Compiled
from tique.transaction import CommitStatements

Connect = Callable[..., tique.Connection]

COMMIT_TIMEOUT = 1.0
JOIN_TIMEOUT = 20.0

pytestmark = pytest.mark.timeout(120)




def committed(connect: Connect) -> list[tuple]:
    reader = connect()
    found = rows(reader, "SELECT k, v FROM kv ORDER BY k")
    reader.close()
    return found


def physical(conn: tique.Connection, sql: str) -> list[tuple]:
    return conn.backend.rows(conn._raw, sql, [])


class Stall:
    """Stops one transaction's commit once it holds a commit timestamp that others can
    see (its write-set and the timestamp are committed), before its commit marker: in
    the oracle's `decide`, which the committing thread calls right then; on MonetDB,
    whose commit decides in the request that logs the write-set, right before that
    request, holding the timestamp."""

    def __init__(self, oracle: Any) -> None:
        self.original_take = oracle.take_statement
        self.original_decide = oracle.decide
        self.victim: int | None = None
        self.victim_thread: int | None = None
        self.cts: int | None = None
        self.took_at = 0.0  # before the oracle started the owner's commit timeout
        self.holding = threading.Event()
        self.resume = threading.Event()

    def take_statement(self, txid: int) -> Any:
        if txid == self.victim:
            self.victim_thread = threading.get_ident()
            self.took_at = time.monotonic()
        return self.original_take(txid)

    def decide(self, raw: Any, cts: int) -> bool:
        if threading.get_ident() != self.victim_thread:
            return self.original_decide(raw, cts)
        self.victim_thread = None
        self.cts = cts
        self.holding.set()
        self.resume.wait(timeout=60)
        return self.original_decide(raw, cts)

    def statement(self, op: str, a: int, b: int) -> Any:
        """Oracles whose calls travel in requests of several statements (MonetDB): the
        victim's take, in the request that reads its write-set's hashes."""
        if op == "take":
            self.take_statement(a)
        return self.original_statement(op, a, b)

    def request(self, raw: Any, statements: Any, *args: Any, **kwargs: Any) -> Any:
        """MonetDB: the victim, holding its commit timestamp, stops right before it sends
        the request that logs its write-set, commits its writes and decides the timestamp."""
        if threading.get_ident() == self.victim_thread and ("COMMIT", []) in [(sql, list(p)) for sql, p in statements]:
            self.victim_thread = None
            self.holding.set()
            self.resume.wait(timeout=60)
        return self.original_request(raw, statements, *args, **kwargs)

    def install(self, monkeypatch: pytest.MonkeyPatch, oracle: Any, backend: Any) -> None:
        monkeypatch.setattr(oracle, "take_statement", self.take_statement)
        monkeypatch.setattr(oracle, "decide", self.decide)
        if hasattr(oracle, "statement"):
            self.original_statement = oracle.statement
            monkeypatch.setattr(oracle, "statement", self.statement)
            self.original_request = backend.request
            monkeypatch.setattr(backend, "request", self.request)


def commit_in_thread(conn: tique.Connection) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def go() -> None:
        try:
            conn.commit()
            result["ok"] = True
        except BaseException as error:  # inspected by the test
            result["error"] = error
        result["at"] = time.monotonic()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, result


def test_stalled_committer_is_aborted_after_commit_timeout(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first connection fixes the database's commit timeout for this process.
    admin = connect(commit_timeout=COMMIT_TIMEOUT)
    run(admin, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    run(admin, "INSERT INTO kv (k, v) VALUES (1, 'one'), (2, 'two')")
    admin.commit()
    stall = Stall(admin.backend.oracle)
    stall.install(monkeypatch, admin.backend.oracle, admin.backend)
    # PostgreSQL sends a whole commit in one request, which holds its timestamp only while
    # the server runs it; a client stalls holding one between the requests of the
    # two-request commit (SERIALIZABLE, rows read FOR SHARE, priority re-executions).
    monkeypatch.setattr(admin.backend, "commits_whole", False)

    stalled = connect()
    run(stalled, "UPDATE kv SET v = 'stalled' WHERE k = 1")
    run(stalled, "INSERT INTO kv (k, v) VALUES (10, 'stalled')")
    stall.victim = stalled._txn.txid
    stalled_thread, stalled_result = commit_in_thread(stalled)
    assert stall.holding.wait(timeout=JOIN_TIMEOUT), "the stalled commit never took its commit timestamp"
    try:
        # Mid-commit, its writes are invisible.
        assert committed(connect) == [(1, "one"), (2, "two")]
        # Several clients commit disjoint writes meanwhile; they queue behind the stalled
        # commit timestamp and resolve it once it is older than the commit timeout.
        others = [connect() for _ in range(3)]
        for i, conn in enumerate(others):
            run(conn, "INSERT INTO kv (k, v) VALUES (?, 'other')", (20 + i,))
        waiting = [commit_in_thread(conn) for conn in others]
        for thread, _ in waiting:
            thread.join(timeout=JOIN_TIMEOUT)
        assert not any(thread.is_alive() for thread, _ in waiting), "a commit stayed blocked by the stalled client"
        for _, result in waiting:
            assert result.get("ok"), f"commit failed: {result.get('error')!r}"
            # They really were held up by the stalled one, until its timeout ran out.
            assert result["at"] - stall.took_at >= COMMIT_TIMEOUT
        assert committed(connect) == [(1, "one"), (2, "two"), (20, "other"), (21, "other"), (22, "other")]
        # A checkpoint while the stalled client is still alive must keep its abort decided.
        checkpoint(admin)
        assert stalled_thread.is_alive()
    finally:
        stall.resume.set()
    stalled_thread.join(timeout=JOIN_TIMEOUT)
    assert not stalled_thread.is_alive()
    error = stalled_result.get("error")
    assert isinstance(error, tique.SerializationFailure), f"the stalled transaction must lose, got {stalled_result!r}"
    assert isinstance(error, tique.OperationalError)
    assert "commit timeout" in str(error)
    assert not stalled.in_transaction

    assert committed(connect) == [(1, "one"), (2, "two"), (20, "other"), (21, "other"), (22, "other")]
    # Its write-set is not a conflict for anybody, and its versions are purged.
    writer = connect()
    run(writer, "UPDATE kv SET v = 'after' WHERE k = 1")
    run(writer, "INSERT INTO kv (k, v) VALUES (10, 'after')")
    writer.commit()
    checkpoint(admin)
    assert committed(connect) == [(1, "after"), (2, "two"), (10, "after"), (20, "other"), (21, "other"), (22, "other")]
    assert physical(admin, "SELECT count(*) FROM kv_cache") == [(0,)]
    # The stalled connection is usable again.
    run(stalled, "UPDATE kv SET v = 'retried' WHERE k = 2")
    stalled.commit()
    assert committed(connect)[1] == (2, "retried")


# -- PostgreSQL: a client process killed while holding a commit timestamp ------------------------

def _commit_and_hang(url: str, report: Any) -> None:
    """Child process: writes, then hangs in its real commit once it holds a commit timestamp."""
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("UPDATE kv SET v = 'killed' WHERE k = 1")
    cur.execute("INSERT INTO kv (k, v) VALUES (10, 'killed')")
    oracle = conn.backend.oracle
    decide = oracle.decide
    txid = conn._txn.txid

    def decide_and_hang(raw: Any, cts: int) -> bool:
        report.send((txid, cts))  # the timestamp and write-set are committed; the marker is not
        time.sleep(600)
        return decide(raw, cts)

    oracle.decide = decide_and_hang
    conn.backend.commits_whole = False  # the two-request commit, which can stall between requests (see above)
    conn.commit()


@pytest.mark.parametrize("engine", ["postgres"])
def test_killed_committer_releases_others_promptly(connect: Connect, url: str) -> None:
    # A long commit timeout: only the death of the client can release the others in time.
    admin = connect(commit_timeout=60.0)
    run(admin, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    run(admin, "INSERT INTO kv (k, v) VALUES (1, 'one')")
    admin.commit()

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    child = context.Process(target=_commit_and_hang, args=(url, theirs), daemon=True)
    child.start()
    try:
        assert ours.poll(timeout=60), "the child never took a commit timestamp"
        txid, cts = ours.recv()
        other = connect()
        run(other, "INSERT INTO kv (k, v) VALUES (2, 'other')")
        thread, result = commit_in_thread(other)
        # Its commit timestamp is later than the child's, so it waits for the child ...
        thread.join(timeout=0.5)
        assert thread.is_alive(), f"a later commit finished while an earlier one was undecided: {result!r}"
        assert committed(connect) == [(1, "one")]
    finally:
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=JOIN_TIMEOUT)
    assert child.exitcode == -signal.SIGKILL
    # ... and is released by the child's death, long before the commit timeout.
    thread.join(timeout=JOIN_TIMEOUT)
    assert not thread.is_alive(), "the commit stayed blocked by a dead client"
    assert result.get("ok"), f"commit failed: {result.get('error')!r}"
    assert committed(connect) == [(1, "one"), (2, "other")]
    assert admin.backend.rows(admin._raw, "SELECT txid, did_commit FROM tq_outcome WHERE cts = $1", [cts]) == [(txid, False)]
    # Nobody conflicts with the dead transaction's writes, and they are purged.
    writer = connect()
    run(writer, "UPDATE kv SET v = 'after' WHERE k = 1")
    run(writer, "INSERT INTO kv (k, v) VALUES (10, 'after')")
    writer.commit()
    checkpoint(admin)
    assert committed(connect) == [(1, "after"), (2, "other"), (10, "after")]
    assert physical(admin, "SELECT count(*) FROM kv_cache") == [(0,)]


# -- a failure after the commit point ------------------------------------------------------------

def test_failure_after_commit_point_keeps_the_commit(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the commit marker is in, the transaction is committed whatever happens next:
    an error while waiting for it to become visible must not roll it back."""
    admin = connect()
    run(admin, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    admin.commit()
    old_reader = connect()
    assert rows(old_reader, "SELECT k, v FROM kv") == []  # keeps the stable timestamp below the commit
    oracle = admin.backend.oracle
    publish = oracle.publish

    def publish_then_fail(raw: Any, txid: int, cts: int, timeout: float) -> None:
        publish(raw, txid, cts, timeout)
        raise ConnectionError("lost the connection while waiting for the snapshot")

    publish_statement = oracle.publish_statement

    def publish_statement_then_fail(raw: Any, txid: int, cts: int, timeout: float) -> tuple[str, list] | None:
        """Where publish travels in the marker's request (PostgreSQL): it runs, then its
        statement fails (an aggregate, so that nothing fails before the publish ran)."""
        found = publish_statement(raw, txid, cts, timeout)
        if found is None:
            return None
        sql, params = found
        return f"SELECT 1 / (count(*) - count(*)) FROM ({sql}) AS published", params

    decide_marker_publish = CommitStatements.decide_marker_publish

    def decide_marker_publish_then_fail(statements: CommitStatements) -> tuple[Compiled, Compiled, Compiled]:
        """Where publish travels in the marker's request (MonetDB): the same failure, once
        the outcome row is committed."""
        decide, marker, publish = decide_marker_publish(statements)
        failing = type(publish.sql)(f"SELECT 1 / (count(*) - count(*)) FROM ({publish.sql}) AS published")
        return decide, marker, Compiled(failing, publish.names)

    publish_taken_statement = getattr(oracle, "publish_taken_statement", None)

    def publish_taken_statement_then_fail(raw: Any, txid: int, timeout: float) -> tuple[str, list]:
        """The same where publish travels in the request of the whole commit (PostgreSQL)."""
        assert publish_taken_statement is not None
        sql, params = publish_taken_statement(raw, txid, timeout)
        return f"SELECT 1 / (count(*) - count(*)) FROM ({sql}) AS published", params

    writer = connect()
    run(writer, "INSERT INTO kv (k, v) VALUES (1, 'committed')")
    monkeypatch.setattr(oracle, "publish", publish_then_fail)
    monkeypatch.setattr(oracle, "publish_statement", publish_statement_then_fail)
    monkeypatch.setattr(CommitStatements, "decide_marker_publish", decide_marker_publish_then_fail)
    if publish_taken_statement is not None:
        monkeypatch.setattr(oracle, "publish_taken_statement", publish_taken_statement_then_fail)
    with pytest.raises(tique.OperationalError) as caught:
        writer.commit()
    monkeypatch.setattr(oracle, "publish", publish)
    monkeypatch.setattr(oracle, "publish_statement", publish_statement)
    if publish_taken_statement is not None:
        monkeypatch.setattr(oracle, "publish_taken_statement", publish_taken_statement)
    assert "is committed" in str(caught.value)
    assert not writer.in_transaction
    assert committed(connect) == [(1, "committed")]
    checkpoint(admin)
    assert committed(connect) == [(1, "committed")]
    old_reader.rollback()
    checkpoint(admin)
    assert committed(connect) == [(1, "committed")]
    assert physical(admin, "SELECT count(*) FROM kv_cache") == [(0,)]
    assert physical(admin, "SELECT k, v FROM kv_storage") == [(1, "committed")]


@pytest.mark.parametrize("engine", ["monetdb"])
def test_failure_before_commit_point_commits_nothing(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the write-set insert in front of the engine COMMIT fails (MonetDB, where the
    commit travels in requests of several statements), our writes are gone: the commit
    fails, and nothing of it is visible or decided as committed."""
    admin = connect()
    run(admin, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    run(admin, "INSERT INTO kv (k, v) VALUES (1, 'one')")
    admin.commit()
    backend = admin.backend
    request = backend.request

    def request_with_failing_write_set(raw: Any, statements: Any, commit: bool = False, other_commits: int = 0) -> Any:
        statements = list(statements)
        if statements and statements[0][0].startswith("INSERT INTO tq_write_sets") and ("COMMIT", []) in statements:
            sql, params = statements[0]
            statements[0] = (sql, [*params[:-1], "not a hash"])  # the engine refuses to convert it
        return request(raw, statements, commit, other_commits)

    writer = connect()
    run(writer, "UPDATE kv SET v = 'lost' WHERE k = 1")
    run(writer, "INSERT INTO kv (k, v) VALUES (2, 'lost')")
    txid = writer._txn.txid
    monkeypatch.setattr(backend, "request", request_with_failing_write_set)
    with pytest.raises(tique.Error):
        writer.commit()
    monkeypatch.setattr(backend, "request", request)
    assert not writer.in_transaction
    assert committed(connect) == [(1, "one")]
    assert physical(admin, f"SELECT count(*) FROM tq_outcome WHERE txid = {int(txid)} AND did_commit") == [(0,)]
    # The key is free: the next writer commits.
    run(writer, "UPDATE kv SET v = 'after' WHERE k = 1")
    writer.commit()
    checkpoint(admin)
    assert committed(connect) == [(1, "after")]

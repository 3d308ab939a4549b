"""Point reads of a packed table between the checkpointer's steps, on MonetDB.

MonetDB (seen on 11.45, reported upstream for Dec2025 too) answers a filter on every
column of a multi-column PRIMARY KEY through the key's hash index without dropping rows
that committed deletes removed: after step 1 deletes a storage row, a filter on the key
columns still finds it, while a scan (the packed key, any other column) does not. Once
step 2 appends the key's new version beside it and step 3 purges the cache, such a
filter finds two storage rows of one key, which rank equal in the snapshot: a point read
sees two rows, an UPDATE through it writes two versions, and step 2 then fails on the
storage PRIMARY KEY in every later round while step 1 goes on deleting (TPC-C's
district storage emptied this way when point reads filtered storage by the key columns).
A deleted key's row comes back the same way once its tombstone is purged.

Each test pauses one checkpoint run just after one step (PausePoint) and asserts on
what point reads see then.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import pytest

import tique
from checkpoint_round import round_in_thread
from sqlhelp import run_for_rows as run
from tique.checkpoint import TABLE_STEPS, Checkpointer, PausePoint, checkpoint

pytestmark = pytest.mark.parametrize("engine", ["monetdb"], indirect=True)

Connect = Callable[..., tique.Connection]
READ = "SELECT next_o FROM district WHERE w = ? AND d = ?"
WAIT = 60.0  # seconds: a bound on every wait, never expected to be reached


def _districts(connect: Connect) -> tique.Connection:
    """A packed table of 2 x 10 keys, all in storage, cache empty."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE district (w INTEGER, d INTEGER, next_o INTEGER NOT NULL, PRIMARY KEY (w, d))")
    run(conn, "INSERT INTO district SELECT w.value, d.value, 1 FROM sys.generate_series(1, 3) AS w, "
              "sys.generate_series(1, 11) AS d")  # end exclusive
    assert conn.backend.rows(conn._raw, "SELECT count(DISTINCT tq_pk) FROM district_cache", []) == [(20,)]  # packed
    checkpoint(conn)
    return conn


def _open_writer(connect: Connect) -> tique.Connection:
    """A transaction that has written (so MonetDB has a transaction open for it) and stays
    open: as long as one begun before a storage DELETE runs, MonetDB cannot reuse the
    deleted row's slot, so step 2 appends the key's new version beside the deleted row,
    as it does under TPC-C's concurrent clients. Its write is to a key no test reads."""
    writer = connect()
    run(writer, "UPDATE district SET next_o = 100 WHERE w = ? AND d = ?", (1, 10))
    return writer


@contextlib.contextmanager
def paused_checkpoint(conn: tique.Connection, after: str, writer: tique.Connection | None = None) -> Iterator[None]:
    """One checkpoint run, held just after step `after` of table district for the body.
    The purge (step 3) of what steps 1 and 2 moved waits for every transaction begun
    before them (tique/checkpoint.py, "Older readers"): to reach it, `writer` is rolled
    back once they are done."""
    checkpointer = Checkpointer(conn.backend)
    first = "insert_storage" if writer is not None and after == "purge_cache" else after
    checkpointer.pause = pause = PausePoint("district", first, timeout=WAIT)
    try:
        with round_in_thread(checkpointer, WAIT) as failures:
            try:
                if first != after:
                    assert pause.reached.wait(WAIT) or failures, f"the checkpoint never reached the end of {first}"
                    assert writer is not None and not failures, failures
                    writer.rollback()
                    checkpointer.pause = held = PausePoint("district", after, timeout=WAIT)
                    pause.resume.set()
                    pause = held
                reached = pause.reached.wait(WAIT)
                assert reached or failures, f"the checkpoint never reached the end of {after}"
                assert not failures, failures
                yield
            finally:
                pause.resume.set()
    finally:
        checkpointer.close()
    assert not failures, failures


@pytest.mark.parametrize("after", TABLE_STEPS)
def test_point_read_sees_one_version_between_checkpoint_steps(connect: Connect, after: str) -> None:
    conn = _districts(connect)
    run(conn, "UPDATE district SET next_o = next_o + 1 WHERE w = ? AND d = ?", (2, 3))
    writer = _open_writer(connect)
    with paused_checkpoint(conn, after, writer):
        assert run(conn, READ, (2, 3)) == [(2,)]
        assert run(conn, READ, (2, 4)) == [(1,)]  # a key the run left alone
    writer.rollback()
    assert run(conn, READ, (2, 3)) == [(2,)]


def test_update_after_checkpoint_writes_one_version(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    """What emptied TPC-C's district storage: an UPDATE seeing two rows of one key writes
    two versions, which the next checkpoint cannot both insert into storage."""
    conn = _districts(connect)
    run(conn, "UPDATE district SET next_o = next_o + 1 WHERE w = ? AND d = ?", (2, 3))
    writer = _open_writer(connect)
    with paused_checkpoint(conn, "purge_cache", writer):
        pass
    writer.rollback()
    run(conn, "UPDATE district SET next_o = next_o + 1 WHERE w = ? AND d = ?", (2, 3))
    assert native("SELECT next_o FROM district_cache WHERE w = 2 AND d = 3") == [(3,)]
    checkpoint(conn)
    assert native("SELECT count(*) FROM district_storage") == [(20,)]
    assert native("SELECT next_o FROM district_storage WHERE w + 0 = 2 AND d + 0 = 3") == [(3,)]  # a scan, not the index
    assert run(conn, READ, (2, 3)) == [(3,)]


def test_deleted_key_stays_deleted_once_its_tombstone_is_purged(connect: Connect) -> None:
    conn = _districts(connect)
    run(conn, "DELETE FROM district WHERE w = ? AND d = ?", (2, 3))
    with paused_checkpoint(conn, "purge_cache"):
        assert run(conn, READ, (2, 3)) == []
    assert run(conn, READ, (2, 3)) == []
    assert run(conn, "SELECT count(*) FROM district") == [(19,)]


def test_reinserting_a_deleted_key_is_no_duplicate(connect: Connect) -> None:
    """The key check of an INSERT ranks storage and cache as a read does: a storage row
    that step 1 deleted must not count as the key being present."""
    conn = _districts(connect)
    run(conn, "UPDATE district SET next_o = next_o + 1 WHERE w = ? AND d = ?", (2, 3))
    writer = _open_writer(connect)
    with paused_checkpoint(conn, "purge_cache", writer):
        pass
    writer.rollback()
    run(conn, "DELETE FROM district WHERE w = ? AND d = ?", (2, 3))
    checkpoint(conn)
    run(conn, "INSERT INTO district VALUES (?, ?, ?)", (2, 3, 50))
    assert run(conn, READ, (2, 3)) == [(50,)]
    with pytest.raises(tique.IntegrityError, match="duplicate primary key"):
        run(conn, "INSERT INTO district VALUES (?, ?, ?)", (2, 4, 50))

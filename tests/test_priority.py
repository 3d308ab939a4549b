"""Priority mode (paper 2.3.4): a transaction that fails certification is re-executed
once on a fresh snapshot while holding a reservation on its keys, so it aborts at most once."""
from __future__ import annotations

from typing import Callable

import pytest

import tique
from tique.transaction import release, reserve

Connect = Callable[..., tique.Connection]


def run(conn: tique.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


def _setup(connect: Connect, rows: int = 20) -> tique.Connection:
    setup = connect(autocommit=True)
    run(setup, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    run(setup, "INSERT INTO kv VALUES " + ", ".join(["(?, 0)"] * rows), tuple(range(1, rows + 1)))
    return setup


def _long_transaction(conn: tique.Connection, keys: range) -> None:
    for k in keys:
        run(conn, "SELECT v FROM kv WHERE k = ?", (k,))
        run(conn, "UPDATE kv SET v = v + 1 WHERE k = ?", (k,))


@pytest.mark.parametrize("priority", [False, True])
def test_a_long_transaction_that_loses_certification(connect: Connect, priority: bool) -> None:
    setup = _setup(connect)
    long, short = connect(priority=priority), connect()
    _long_transaction(long, range(1, 21))
    run(short, "UPDATE kv SET v = v + 100 WHERE k = ?", (5,))
    short.commit()  # first committer of key 5
    if not priority:
        with pytest.raises(tique.SerializationFailure):
            long.commit()
        assert run(setup, "SELECT sum(v) FROM kv") == [(100,)]
        return
    long.commit()  # re-executed on a snapshot that includes the short transaction
    assert long.priority_retries == 1
    assert run(setup, "SELECT v FROM kv WHERE k = ?", (5,)) == [(101,)]
    assert run(setup, "SELECT sum(v) FROM kv") == [(120,)]
    # the connection goes on as usual
    run(long, "UPDATE kv SET v = 0 WHERE k = ?", (1,))
    long.commit()
    assert run(setup, "SELECT v FROM kv WHERE k = ?", (1,)) == [(0,)]


def test_a_reservation_aborts_other_writers_of_its_keys_until_released(connect: Connect) -> None:
    """The invariant priority mode rests on: while a reservation holds a commit timestamp
    over a write-set, any other transaction writing one of those keys fails certification;
    writers of other keys commit; once released, nobody is blocked."""
    setup = _setup(connect)
    loser = connect()
    run(loser, "UPDATE kv SET v = v + 1 WHERE k = ?", (3,))
    winner = connect()
    run(winner, "UPDATE kv SET v = v + 1 WHERE k = ?", (3,))
    winner.commit()
    with pytest.raises(tique.SerializationFailure):
        loser_txn = loser._txn
        loser.commit()
    assert loser_txn is not None
    backend, raw = loser.backend, loser._raw
    reservation = reserve(backend, raw, loser_txn, loser._commit_sql, timeout=30.0)
    assert reservation.reserved_cts is not None
    try:
        other = connect(commit_timeout=30.0)
        run(other, "UPDATE kv SET v = v + 10 WHERE k = ?", (3,))
        with pytest.raises(tique.SerializationFailure):
            other.commit()
    finally:
        release(backend, raw, reservation.txid, reservation.reserved_cts, 30.0)
    again = connect()
    run(again, "UPDATE kv SET v = v + 10 WHERE k = ?", (3,))
    again.commit()
    assert run(setup, "SELECT v FROM kv WHERE k = ?", (3,)) == [(11,)]


def test_a_second_failure_raises_and_leaves_nothing_behind(connect: Connect) -> None:
    """A re-execution whose statements now fail (the row it updates is gone) raises the
    statement's error, gives its reserved timestamp back, and writes nothing."""
    setup = _setup(connect)
    long = connect(priority=True)
    run(long, "SELECT v FROM kv WHERE k = ?", (7,))
    run(long, "INSERT INTO kv VALUES (?, ?)", (100, 1))
    rival = connect()
    run(rival, "INSERT INTO kv VALUES (?, ?)", (100, 2))
    rival.commit()
    with pytest.raises(tique.IntegrityError):
        long.commit()  # the re-executed INSERT now meets the rival's row
    assert not long.in_transaction
    assert run(setup, "SELECT v FROM kv WHERE k = ?", (100,)) == [(2,)]
    follow = connect()
    run(follow, "UPDATE kv SET v = v + 1 WHERE k = ?", (100,))
    follow.commit()  # the snapshot was not held back by a leaked reservation
    assert run(setup, "SELECT v FROM kv WHERE k = ?", (100,)) == [(3,)]

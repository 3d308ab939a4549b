"""Checkpoint rounds racing transactions that write two tables at once: every round
moves and purges each table with statements of its own (tique/checkpoint.py), so
readers must still see both tables' writes of a transaction or neither, and no write
may be lost while the purge deletes from caches the writers append to."""
from __future__ import annotations

import random
import threading
from typing import Callable

import tique
from checkpoint_round import rounds_until, start_with_writers
from tique.checkpoint import Checkpointer

Connect = Callable[..., tique.Connection]
ACCOUNTS = 8
TOTAL = ACCOUNTS * 100


def _accounts(connect: Connect) -> tique.Connection:
    """Two tables whose balances sum to TOTAL: a transfer moves an amount from one to the
    other, so a reader that saw one table's move and not the other's would see another sum."""
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE left_side (k INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    cur.execute("CREATE TABLE right_side (k INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    cur.executemany("INSERT INTO left_side VALUES (?, ?)", [(k, 100) for k in range(ACCOUNTS)])
    cur.executemany("INSERT INTO right_side VALUES (?, ?)", [(k, 0) for k in range(ACCOUNTS)])
    conn.commit()
    return conn


SUM = "SELECT (SELECT sum(balance) FROM left_side) + (SELECT sum(balance) FROM right_side)"


def test_transfers_across_tables_keep_their_sum_while_rounds_run(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    """Under contention: two writers transfer between the tables, rounds run back to back
    (their purge deletes from caches the writers append to), and readers, in fresh and
    in long transactions, always see TOTAL."""
    setup = _accounts(connect)
    checkpointer = Checkpointer(setup.backend)
    stop = threading.Event()
    errors: list[BaseException] = []
    rounds = [0]
    committed = [0]

    checkpoint_loop = rounds_until(checkpointer, stop, rounds, errors)

    def writer(seed: int) -> None:
        conn = connect()
        cur = conn.cursor()
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                k, amount = rng.randrange(ACCOUNTS), rng.randrange(1, 4)
                try:
                    cur.execute("UPDATE left_side SET balance = balance - ? WHERE k = ?", (amount, k))
                    cur.execute("UPDATE right_side SET balance = balance + ? WHERE k = ?", (amount, rng.randrange(ACCOUNTS)))
                    conn.commit()
                    committed[0] += 1
                except tique.SerializationFailure:
                    conn.rollback()  # the two writers' conflicts, never the checkpointer's
        except BaseException as error:
            errors.append(error)
        finally:
            conn.close()

    long_reader = connect()
    lcur = long_reader.cursor()
    lcur.execute(SUM)
    assert lcur.fetchall() == [(TOTAL,)]
    reader = connect()
    rcur = reader.cursor()
    threads = start_with_writers(checkpoint_loop, writer)
    reads = 0
    try:
        # Enough work for rounds that move and purge both tables while readers read.
        while not errors and (reads < 20 or rounds[0] < 10 or committed[0] < 20):
            rcur.execute(SUM)
            assert rcur.fetchall() == [(TOTAL,)]
            reader.commit()
            lcur.execute(SUM)
            assert lcur.fetchall() == [(TOTAL,)]
            reads += 1
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        checkpointer.close()
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    long_reader.commit()
    for _ in range(3):  # the purge may wait for the readers above (MonetDB, "Older readers")
        checkpointer = Checkpointer(setup.backend)
        try:
            checkpointer.run_once()
        finally:
            checkpointer.close()
    rcur.execute(SUM)
    assert rcur.fetchall() == [(TOTAL,)]
    reader.commit()
    assert native("SELECT (SELECT sum(balance) FROM left_side_storage) + (SELECT sum(balance) FROM right_side_storage)") == [(TOTAL,)]
    assert native("SELECT count(*) FROM left_side_cache") == [(0,)]

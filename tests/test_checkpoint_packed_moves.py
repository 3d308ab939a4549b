"""The checkpointer moves a packed table's versions to storage exactly on MonetDB: updated
keys, deleted keys, key moves, re-inserts and key-only tables, with a transaction open
across a round (MonetDB cannot reuse a deleted row's slot meanwhile), checked in storage
itself (read by scans, not through any index) and through tique. (The checkpointer once
updated storage rows in place here; tique/checkpoint.py, "Not in place", says why it no
longer does.) A round appends only once the transactions begun before its deletes have
ended, so its appends refill the rows they freed (tique/checkpoint.py, "Refilled").
"""
from __future__ import annotations

import random
import time
from typing import Callable

import pytest

import tique
from checkpoint_round import round_in_thread
from sqlhelp import run_for_rows as run
from tique.checkpoint import Checkpointer, checkpoint

pytestmark = pytest.mark.parametrize("engine", ["monetdb"], indirect=True)

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]
WAIT = 60.0  # seconds: a bound on every wait, never expected to be reached


def _deleted_rows(native: Native, storage: str) -> int:
    """Rows of `storage` that deletes removed but whose slots MonetDB still holds."""
    ((physical,),) = native(f"SELECT max(count) FROM sys.storage(current_schema, '{storage}')")
    ((visible,),) = native(f"SELECT count(*) FROM {storage}")
    return int(physical) - int(visible)


def _districts(connect: Connect) -> tique.Connection:
    """A packed table of 3 x 10 keys, all in storage, cache empty."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE district (w INTEGER, d INTEGER, next_o INTEGER NOT NULL, name VARCHAR(10), PRIMARY KEY (w, d))")
    run(conn, "INSERT INTO district SELECT w.value, d.value, 1, 'n' FROM sys.generate_series(1, 4) AS w, "
              "sys.generate_series(1, 11) AS d")  # end exclusive
    checkpoint(conn)
    return conn


def test_moved_keys_reach_storage_exactly_while_a_transaction_is_open(connect: Connect, native: Native) -> None:
    conn = _districts(connect)
    assert native("SELECT count(DISTINCT tq_pk) FROM district_storage") == [(30,)]  # packed
    for d in (1, 2, 3):
        run(conn, "UPDATE district SET next_o = next_o + ?, name = ? WHERE w = ? AND d = ?", (d, f"u{d}", 2, d))
    run(conn, "DELETE FROM district WHERE w = ? AND d = ?", (3, 5))
    run(conn, "INSERT INTO district VALUES (?, ?, ?, ?)", (9, 9, 9, "new"))
    # Begun after those writes (so they are stable) and open across the checkpoint:
    # MonetDB cannot reuse a deleted row's slot meanwhile.
    writer = connect()
    run(writer, "UPDATE district SET next_o = 100 WHERE w = ? AND d = ?", (1, 10))
    checkpoint(conn)
    # Storage itself (read by scans, not by any index) holds the new versions.
    assert native("SELECT w, d, next_o, name FROM district_storage WHERE w + 0 = 2 AND d + 0 <= 3 ORDER BY d") == \
        [(2, 1, 2, "u1"), (2, 2, 3, "u2"), (2, 3, 4, "u3")]
    assert native("SELECT count(*) FROM district_storage WHERE w + 0 = 3 AND d + 0 = 5") == [(0,)]
    assert native("SELECT next_o, name FROM district_storage WHERE w + 0 = 9") == [(9, "new")]
    assert native("SELECT count(*) FROM district_storage") == [(30,)]
    writer.rollback()
    assert run(conn, "SELECT next_o, name FROM district WHERE w = ? AND d = ?", (2, 2)) == [(3, "u2")]
    assert run(conn, "SELECT next_o FROM district WHERE w = ? AND d = ?", (3, 5)) == []
    assert run(conn, "SELECT next_o FROM district WHERE w = ? AND d = ?", (1, 10)) == [(1,)]


def test_a_key_only_table_moves_exactly(connect: Connect, native: Native) -> None:
    """Every column is the key's: moved and deleted keys leave storage as the snapshot says."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE pair (a INTEGER, b INTEGER, PRIMARY KEY (a, b))")
    run(conn, "INSERT INTO pair VALUES (1, 1), (1, 2), (2, 1)")
    checkpoint(conn)
    run(conn, "UPDATE pair SET b = ? WHERE a = ? AND b = ?", (5, 1, 2))  # the key moves
    run(conn, "DELETE FROM pair WHERE a = ? AND b = ?", (2, 1))
    run(conn, "INSERT INTO pair VALUES (?, ?)", (2, 1))  # deleted and inserted again
    checkpoint(conn)
    assert native("SELECT a, b FROM pair_storage ORDER BY a, b") == [(1, 1), (1, 5), (2, 1)]
    assert run(conn, "SELECT a, b FROM pair ORDER BY a, b") == [(1, 1), (1, 5), (2, 1)]


def test_random_writes_survive_checkpoint_rounds(connect: Connect, native: Native) -> None:
    """Updates, deletes, re-inserts and key moves, with a checkpoint after each batch (one
    of them while another transaction is open): the table and its storage always hold
    exactly what a model of the writes says."""
    conn = _districts(connect)
    model = {(w, d): (1, "n") for w in range(1, 4) for d in range(1, 11)}
    rng = random.Random(20261124)
    for batch in range(8):
        writer = connect() if batch == 3 else None
        if writer is not None:
            run(writer, "SELECT count(*) FROM district")  # an engine transaction open across the round
        for _ in range(12):
            w, d = rng.randint(1, 4), rng.randint(1, 12)
            action = rng.random()
            if (w, d) in model and action < 0.5:
                value = (model[(w, d)][0] + rng.randint(1, 9), f"b{batch}")
                run(conn, "UPDATE district SET next_o = ?, name = ? WHERE w = ? AND d = ?", (*value, w, d))
                model[(w, d)] = value
            elif (w, d) in model and action < 0.7:
                run(conn, "DELETE FROM district WHERE w = ? AND d = ?", (w, d))
                del model[(w, d)]
            elif (w, d) in model and action < 0.85:
                target = (w, d + 20)
                if target not in model:
                    run(conn, "UPDATE district SET d = ? WHERE w = ? AND d = ?", (d + 20, w, d))
                    model[target] = model.pop((w, d))
            elif (w, d) not in model:
                run(conn, "INSERT INTO district VALUES (?, ?, ?, ?)", (w, d, batch, f"i{batch}"))
                model[(w, d)] = (batch, f"i{batch}")
        checkpoint(conn)
        if writer is not None:
            writer.rollback()
            checkpoint(conn)
        expected = sorted((w, d, v, n) for (w, d), (v, n) in model.items())
        assert run(conn, "SELECT w, d, next_o, name FROM district ORDER BY w, d") == expected
        for (w, d), (v, n) in list(model.items())[:: 5]:
            assert run(conn, "SELECT next_o, name FROM district WHERE w = ? AND d = ?", (w, d)) == [(v, n)]
    checkpoint(conn)
    expected = sorted((w, d, v, n) for (w, d), (v, n) in model.items())
    assert native("SELECT w, d, next_o, name FROM district_storage ORDER BY w, d") == expected
    assert native("SELECT count(*) FROM district_cache") == [(0,)]


def test_a_round_appends_into_the_rows_it_deleted_once_older_readers_end(connect: Connect, native: Native) -> None:
    """A reader begun before the round's deletes holds the appends back; once it has
    ended they fill the freed rows, and storage keeps no deleted row (an append right
    after the deletes, with the reader still open, left all four behind)."""
    conn = _districts(connect)
    assert _deleted_rows(native, "district_storage") == 0
    for d in (1, 2, 3, 4):
        run(conn, "UPDATE district SET next_o = ?, name = ? WHERE w = ? AND d = ?", (d + 10, f"r{d}", 2, d))
    older = connect()
    run(older, "UPDATE district SET next_o = ? WHERE w = ? AND d = ?", (100, 1, 10))  # its engine transaction is open from here on
    checkpointer = Checkpointer(conn.backend)
    checkpointer.reader_wait_s = WAIT
    with round_in_thread(checkpointer, WAIT) as failures:
        deadline = time.monotonic() + WAIT
        while native("SELECT count(*) FROM district_storage") == [(30,)] and not failures and time.monotonic() < deadline:
            time.sleep(0.01)
        # Step 1 has deleted the four keys' storage rows; the appends wait for `older`,
        # which still reads each key once (from its stable cache version).
        assert native("SELECT count(*) FROM district_storage") == [(26,)], failures
        assert run(older, "SELECT next_o FROM district WHERE w = ? ORDER BY d", (2,)) == [(11,), (12,), (13,), (14,), *[(1,)] * 6]
        older.rollback()
    checkpointer.close()
    assert not failures, failures
    assert _deleted_rows(native, "district_storage") == 0
    assert native("SELECT d, next_o, name FROM district_storage WHERE w + 0 = 2 AND d + 0 <= 4 ORDER BY d") == \
        [(d, d + 10, f"r{d}") for d in (1, 2, 3, 4)]
    assert native("SELECT count(*) FROM district_storage") == [(30,)]
    assert native("SELECT count(*) FROM district_cache WHERE w = 2") == [(0,)]
    assert run(conn, "SELECT next_o, name FROM district WHERE w = ? AND d = ?", (2, 3)) == [(13, "r3")]
    assert run(conn, "SELECT next_o FROM district WHERE w = ? AND d = ?", (1, 10)) == [(1,)]

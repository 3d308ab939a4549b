"""A Delivery-shaped reader across a checkpoint round that moves and purges what another
Delivery deleted.

TPC-C on MonetDB with the background checkpointer delivered orders twice: a Delivery
that began after another's commit was published read, in its later districts, the
new_order row the first had deleted. Its engine transaction, open since its first
delete, began before the round's steps 1 and 2, so it still saw new_order's storage row;
step 3 then purged the first Delivery's tombstone from the cache, and once others
appended to the cache (each New-Order does) MonetDB reused the purged rows' slots and
the open transaction no longer saw the tombstone. The checkpointer now purges what a
round moved only once every transaction begun before the move has ended
(tique/checkpoint.py, "Older readers").

The test holds one checkpoint run just after step 2 of new_order (PausePoint), with the
reader's engine transaction open since before step 1, lets the run finish, has a
New-Order append to the cache, and asserts on what the reader reads then, on what the
run left in the cache for it, and that the next run, once it has ended, purges it.
"""
from __future__ import annotations

import threading
from typing import Callable

import tique
from checkpoint_round import beside_checkpoint_rounds, round_in_thread
from sqlhelp import run_for_rows as run
from tique.checkpoint import Checkpointer, PausePoint, ReaderWaitPause, checkpoint

Connect = Callable[..., tique.Connection]
WAIT = 60.0  # seconds: a bound on every wait, never expected to be reached
DISTRICTS = 4
OLDEST = "SELECT MIN(o) FROM new_order WHERE w = ? AND d = ?"


def _orders(connect: Connect) -> tique.Connection:
    """Orders 1..3 undelivered in each district, all in storage, caches empty."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE new_order (w INTEGER, d INTEGER, o INTEGER, PRIMARY KEY (w, d, o))")
    run(conn, "CREATE TABLE orders (w INTEGER, d INTEGER, o INTEGER, carrier INTEGER, PRIMARY KEY (w, d, o))")
    rows = [(1, d, o) for d in range(1, DISTRICTS + 1) for o in (1, 2, 3)]
    conn.cursor().executemany("INSERT INTO new_order VALUES (?, ?, ?)", rows)
    conn.cursor().executemany("INSERT INTO orders VALUES (?, ?, ?, NULL)", rows)
    checkpoint(conn)
    return conn


def _deliver(conn: tique.Connection, district: int, carrier: int) -> int:
    """One district of a Delivery: the oldest undelivered order, deleted and marked."""
    (oldest,), = run(conn, OLDEST, (1, district))
    assert oldest is not None
    run(conn, "DELETE FROM new_order WHERE w = ? AND d = ? AND o = ?", (1, district, oldest))
    run(conn, "UPDATE orders SET carrier = ? WHERE w = ? AND d = ? AND o = ?", (carrier, 1, district, oldest))
    return int(oldest)


def test_delivery_open_across_a_checkpoint_never_redelivers(engine: str, connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    setup = _orders(connect)
    first, second, new_order = connect(), connect(), connect()
    assert [_deliver(first, d, 1) for d in range(1, DISTRICTS + 1)] == [1] * DISTRICTS
    first.commit()  # published: `second` begins after it and must read it

    delivered = [_deliver(second, 1, 2)]  # its engine transaction is open from here on
    checkpointer = Checkpointer(setup.backend)
    checkpointer.pause = pause = PausePoint("new_order", "insert_storage", timeout=WAIT)
    with round_in_thread(checkpointer, WAIT) as failures:
        try:
            assert pause.reached.wait(WAIT) or failures, "the checkpoint never reached the end of insert_storage"
            assert not failures, failures
            delivered.append(_deliver(second, 2, 2))
        finally:
            pause.resume.set()
    checkpointer.close()
    assert not failures, failures
    # The invariant: on MonetDB, where an open engine transaction may lose purged cache
    # rows, the first Delivery's tombstones stay in the cache while `second`, begun
    # before the move, runs (DuckDB and PostgreSQL keep deleted rows for their open
    # transactions, and there they are purged at once).
    kept = DISTRICTS if engine == "monetdb" else 0
    assert native("SELECT count(*) FROM new_order_cache WHERE tq_deleted") == [(kept,)]

    # New-Orders append to the cache after the round: where the round purged the
    # tombstones, the engine may put these rows in their place.
    for d in range(1, DISTRICTS + 1):
        for o in (4, 5):
            run(new_order, "INSERT INTO new_order VALUES (?, ?, ?)", (1, d, o))
            run(new_order, "INSERT INTO orders VALUES (?, ?, ?, NULL)", (1, d, o))
            new_order.commit()

    delivered += [_deliver(second, d, 2) for d in range(3, DISTRICTS + 1)]
    assert delivered == [2] * DISTRICTS, "the second Delivery read an order the first had delivered"
    second.commit()

    checkpoint(setup)  # the purge that waited for `second`, if any, and the rest
    checkpoint(setup)
    assert run(setup, "SELECT d, MIN(o) FROM new_order GROUP BY d ORDER BY d") == [(d, 3) for d in range(1, DISTRICTS + 1)]
    assert run(setup, "SELECT carrier, count(*) FROM orders WHERE carrier IS NOT NULL GROUP BY carrier ORDER BY carrier") == [(1, DISTRICTS), (2, DISTRICTS)]
    assert native("SELECT count(*) FROM new_order_cache") == [(0,)]
    assert native("SELECT count(*) FROM new_order_storage") == [(DISTRICTS * 3,)]


def test_a_round_waits_for_older_readers_and_purges_what_it_moved(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    """The bounded wait of "Older readers": a round whose move finds an older Delivery
    running waits for it (held there by a pause point until the Delivery has read,
    written and committed), then purges what it moved in the same round instead of
    leaving it to the next. Where the engine needs no wait, the round never waits."""
    setup = _orders(connect)
    waits = setup.backend.purge_waits_for_older_readers
    first, second = connect(), connect()
    assert [_deliver(first, d, 1) for d in range(1, DISTRICTS + 1)] == [1] * DISTRICTS
    first.commit()
    delivered = [_deliver(second, 1, 2)]  # begun before the round's move

    checkpointer = Checkpointer(setup.backend)
    checkpointer.reader_pause = pause = ReaderWaitPause(timeout=WAIT)
    with round_in_thread(checkpointer, WAIT) as failures:
        try:
            if waits:
                assert pause.reached.wait(WAIT) or failures, "the round did not wait for the older Delivery"
                assert not failures, failures
                # Moved, not yet purged: the older Delivery still reads each key once.
                delivered.append(_deliver(second, 2, 2))
                second.commit()
        finally:
            pause.resume.set()
    checkpointer.close()
    assert not failures, failures
    assert pause.reached.is_set() == waits
    if not waits:
        delivered.append(_deliver(second, 2, 2))
        second.commit()
    assert delivered == [2, 2]
    # The first Delivery's tombstones are gone after this one round; the second's, not
    # yet stable when the round began, stay.
    assert native("SELECT count(*) FROM new_order_cache WHERE tq_deleted") == [(2,)]
    assert checkpointer._waiting is None
    checkpoint(setup)
    assert run(setup, "SELECT d, MIN(o) FROM new_order GROUP BY d ORDER BY d") == [(1, 3), (2, 3), (3, 2), (4, 2)]
    assert native("SELECT count(*) FROM new_order_cache") == [(0,)]


def test_deliveries_beside_new_orders_and_checkpoints_deliver_each_order_once(connect: Connect) -> None:
    """The same race under contention: two Delivery clients, a New-Order client appending
    to the caches and a checkpointer running rounds back to back, each for a fixed amount
    of work. Every order is delivered at most once, and what is left undelivered is
    exactly what no committed Delivery took."""
    setup = _orders(connect)
    deliveries_each, new_orders = 12, 24
    delivered: list[tuple[int, int, int]] = []  # (district, order, carrier) of committed Deliveries
    lock = threading.Lock()

    def deliver(carrier: int) -> None:
        conn = connect()
        committed = 0
        while committed < deliveries_each:
            mine = []
            try:
                for d in range(1, DISTRICTS + 1):
                    (oldest,), = run(conn, OLDEST, (1, d))
                    if oldest is None:
                        continue
                    run(conn, "DELETE FROM new_order WHERE w = ? AND d = ? AND o = ?", (1, d, oldest))
                    run(conn, "UPDATE orders SET carrier = ? WHERE w = ? AND d = ? AND o = ?", (carrier, 1, d, oldest))
                    mine.append((d, int(oldest), carrier))
                conn.commit()
            except tique.SerializationFailure:
                conn.rollback()
                continue
            committed += 1
            with lock:
                delivered.extend(mine)

    def add_orders() -> None:
        conn = connect()
        for n in range(new_orders):
            d, o = n % DISTRICTS + 1, 4 + n // DISTRICTS
            run(conn, "INSERT INTO new_order VALUES (?, ?, ?)", (1, d, o))
            run(conn, "INSERT INTO orders VALUES (?, ?, ?, NULL)", (1, d, o))
            conn.commit()

    beside_checkpoint_rounds(setup.backend, [lambda: deliver(1), lambda: deliver(2), add_orders], WAIT * 10)

    keys = [(d, o) for d, o, _ in delivered]
    assert len(keys) == len(set(keys)), "an order was delivered twice"
    everything = {(d, o) for d in range(1, DISTRICTS + 1) for o in (1, 2, 3)}
    everything |= {(n % DISTRICTS + 1, 4 + n // DISTRICTS) for n in range(new_orders)}
    checkpoint(setup)
    assert set(run(setup, "SELECT d, o FROM new_order")) == everything - set(keys)
    assert sorted(run(setup, "SELECT d, o, carrier FROM orders WHERE carrier IS NOT NULL")) == sorted(delivered)

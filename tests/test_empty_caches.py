"""Analytical reads of tables whose caches hold no row read storage alone where the engine
is asked per read (MonetDB: Backend.counts_caches, Connection._empty_caches). What that
must keep, on every engine: a version committed after the reader's snapshot stays
invisible (its cache then holds it, even once the checkpointer has run), the reader's own
writes stay visible, an empty cache read from storage gives what the snapshot gives, and
a cache that empties again (the checkpointer moved everything) is read from storage again."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

import tique
from checkpoint_round import beside_checkpoint_rounds
from tique.checkpoint import checkpoint
from tique.planner import ReadPlan

Connect = Callable[..., tique.Connection]
SCAN = "SELECT k, v FROM kv WHERE v > 0 ORDER BY k"
WAIT = 600.0  # seconds a thread of the contention test may take before it counts as hung


@pytest.fixture
def always_count(connect: Connect) -> Iterator[None]:
    """Every analytical read counts its caches (none is taken to hold rows for a while)."""
    backend: Any = type(connect().backend)
    saved = getattr(backend, "nonempty_recheck_s", None)
    backend.nonempty_recheck_s = 0.0
    yield
    if saved is None:
        del backend.nonempty_recheck_s
    else:
        backend.nonempty_recheck_s = saved


def _setup(connect: Connect) -> tique.Connection:
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.execute("CREATE TABLE other (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.executemany("INSERT INTO kv VALUES (?, ?)", [(k, k * 10) for k in range(1, 6)])
    cur.executemany("INSERT INTO other VALUES (?, ?)", [(k, k) for k in range(1, 4)])
    setup.commit()
    checkpoint(setup)  # both caches empty: everything in storage
    return setup


def _scan(cur: Any, sql: str = SCAN) -> list[tuple]:
    cur.execute(sql)
    return [tuple(r) for r in cur.fetchall()]


def _storage_reads(conn: tique.Connection) -> set[frozenset[str]]:
    """The sets of tables that reads planned on this database read from storage alone."""
    plans = conn.backend.shared_plans._plans.values()
    found = set()
    for value in plans:
        for plan in value if isinstance(value, tuple) else (value,):
            if isinstance(plan, ReadPlan):
                found.update(k for k in plan.variants if isinstance(k, frozenset) and k)
    return found


def test_empty_caches_read_storage_and_later_versions_stay_invisible(connect: Connect, always_count: None) -> None:
    setup = _setup(connect)
    counts = setup.backend.dialect == "monetdb"  # where each analytical read asks the engine
    base = [(k, k * 10) for k in range(1, 6)]

    reader = connect()
    rcur = reader.cursor()
    assert _scan(rcur, "SELECT count(*) FROM other WHERE v > 0") == [(3,)]  # its snapshot is taken here
    writer = connect()
    wcur = writer.cursor()
    wcur.execute("UPDATE kv SET v = 11 WHERE k = 1")
    wcur.execute("DELETE FROM kv WHERE k = 2")
    wcur.execute("INSERT INTO kv VALUES (6, 60)")
    writer.commit()
    checkpoint(setup)  # moves nothing the reader's snapshot predates
    assert _scan(rcur) == base  # kv's cache holds the writer's versions: read through the snapshot
    reader.commit()

    later = [(1, 11), (3, 30), (4, 40), (5, 50), (6, 60)]
    assert _scan(rcur) == later
    reader.commit()
    checkpoint(setup)  # no reader left: kv's cache empties
    if counts:
        assert frozenset({"other"}) in _storage_reads(setup)
        assert frozenset({"kv"}) not in _storage_reads(setup)
    assert _scan(rcur) == later
    reader.commit()
    if counts:
        assert frozenset({"kv"}) in _storage_reads(setup)  # empty again: storage alone


def test_own_writes_are_read_through_the_snapshot(connect: Connect, always_count: None) -> None:
    setup = _setup(connect)
    counts = setup.backend.dialect == "monetdb"  # where each analytical read asks the engine
    conn = connect()
    cur = conn.cursor()
    cur.execute("UPDATE kv SET v = 99 WHERE k = 3")
    cur.execute("INSERT INTO kv VALUES (7, 70)")
    joined = ("SELECT kv.k, kv.v, other.v FROM kv LEFT JOIN other ON other.k = kv.k WHERE kv.v > 0 "
              "ORDER BY kv.k")
    assert _scan(cur, joined) == [(1, 10, 1), (2, 20, 2), (3, 99, 3), (4, 40, None), (5, 50, None), (7, 70, None)]
    assert _scan(cur) == [(1, 10), (2, 20), (3, 99), (4, 40), (5, 50), (7, 70)]
    if counts:  # reads of a table the transaction wrote run beside its writes, through snapshots
        assert not _storage_reads(conn)
    assert _scan(cur, "SELECT k, v FROM other WHERE v > 1 ORDER BY k") == [(2, 2), (3, 3)]
    if counts:  # a table it has not written, with an empty cache
        assert _storage_reads(conn) == {frozenset({"other"})}
    conn.rollback()
    assert _scan(cur) == [(k, k * 10) for k in range(1, 6)]
    conn.commit()


def test_sums_stay_whole_beside_transfers_and_checkpoints(connect: Connect, always_count: None) -> None:
    """Under contention: two clients move amounts between accounts (the total never
    changes), a checkpointer runs rounds back to back (emptying the caches now and then),
    and a reader sums the accounts in transactions of its own, each read counting the
    caches again. Every sum is the total, whether read through the snapshot or from
    storage alone. Each client does a fixed amount of work."""
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE acct (k INTEGER PRIMARY KEY, bal INTEGER)")
    cur.executemany("INSERT INTO acct VALUES (?, ?)", [(k, 100) for k in range(10)])
    setup.commit()
    checkpoint(setup)
    total, transfers_each, sums = 1000, 15, 40
    seen: list[int] = []

    def transfer(seed: int) -> None:
        conn = connect()
        c = conn.cursor()
        committed = 0
        while committed < transfers_each:
            a, b = (seed + committed) % 10, (seed + 3 * committed + 1) % 10
            try:
                c.execute("UPDATE acct SET bal = bal - 7 WHERE k = ?", (a,))
                c.execute("UPDATE acct SET bal = bal + 7 WHERE k = ?", (b,))
                conn.commit()
            except tique.SerializationFailure:
                conn.rollback()
                continue
            committed += 1

    def read_sums() -> None:
        conn = connect()
        c = conn.cursor()
        for _ in range(sums):
            c.execute("SELECT sum(bal), count(*) FROM acct WHERE bal > -1000000")
            (found, rows), = c.fetchall()
            conn.commit()
            seen.append(int(found))
            assert rows == 10

    beside_checkpoint_rounds(setup.backend, [lambda: transfer(1), lambda: transfer(2), read_sums], WAIT)
    assert seen and all(s == total for s in seen), seen
    checkpoint(setup)
    assert _scan(setup.cursor(), "SELECT sum(bal) FROM acct WHERE bal > -1000000") == [(total,)]
    if setup.backend.dialect == "monetdb":
        assert frozenset({"acct"}) in _storage_reads(setup)  # emptied by the last round: storage alone

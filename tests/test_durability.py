"""Durability on PostgreSQL: a commit acknowledged by tique survives a crash, and a
durable writer waits for one WAL flush, its commit marker's, not one per engine commit
of the protocol (sql/postgres/metadata.sql, "Durability")."""
from __future__ import annotations

import time
from typing import Iterator

import psycopg
import pytest

import tique
from tique.backends import forget_database

TRANSACTIONS = 30


@pytest.fixture(scope="module")
def slow_wal_writer_cluster() -> Iterator[object]:
    """A durable cluster whose WAL writer flushes asynchronous commits only every 10 s
    (its maximum): within a test, an asynchronous commit stays in the server's memory,
    so an immediate restart loses it, and every flush counted is a commit that waited."""
    from drivers.pg_cluster import ThrowawayCluster, ensure_postgres_installed

    ensure_postgres_installed()
    cluster = ThrowawayCluster(settings={"fsync": "on", "synchronous_commit": "on", "wal_writer_delay": "10000ms",
                                         "autovacuum": "off"})
    try:
        yield cluster
    finally:
        cluster.stop()


def _wal_syncs(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()
    assert row is not None
    return int(row[0])


def _ledger(url: str, name: str) -> tique.Connection:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE IF NOT EXISTS {name} (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)")
    conn.commit()
    return conn


def test_acknowledged_commits_survive_an_immediate_restart(slow_wal_writer_cluster) -> None:  # type: ignore[no-untyped-def]
    url = slow_wal_writer_cluster.create_database("survive")
    conn = _ledger(url, "ledger")
    cur = conn.cursor()
    for i in range(TRANSACTIONS):
        cur.execute("INSERT INTO ledger VALUES (?, ?)", (i, i * 10))
        cur.execute("UPDATE ledger SET amount = amount + 1 WHERE id = ?", (i,))
        conn.commit()
    conn.close()
    slow_wal_writer_cluster.restart("immediate")  # no shutdown checkpoint: WAL crash recovery
    forget_database(url)  # reopening runs tique's recovery, as a restarted application would
    check = tique.connect(url)
    c = check.cursor()
    c.execute("SELECT id, amount FROM ledger ORDER BY id")
    assert c.fetchall() == [(i, i * 10 + 1) for i in range(TRANSACTIONS)]
    check.close()
    forget_database(url)


def test_a_durable_writer_waits_for_one_flush(slow_wal_writer_cluster) -> None:  # type: ignore[no-untyped-def]
    """Before the change, the writes' engine commit and publish each waited for a flush
    of their own (three per transaction); now only the marker does."""
    url = slow_wal_writer_cluster.create_database("flushes")
    conn = _ledger(url, "ledger")
    cur = conn.cursor()
    cur.execute("INSERT INTO ledger VALUES (?, ?)", (-1, 0))  # warm the plans and the catalog
    conn.commit()
    before = _wal_syncs(url)
    for i in range(TRANSACTIONS):
        cur.execute("INSERT INTO ledger VALUES (?, ?)", (i, i))
        conn.commit()
    conn.close()
    forget_database(url)
    # A backend hands its WAL statistics over when it goes idle for a while or exits,
    # all at once: wait (bounded) for the writer's session to hand them over.
    syncs = 0
    deadline = time.monotonic() + 120
    while syncs < TRANSACTIONS and time.monotonic() < deadline:
        time.sleep(0.2)
        syncs = _wal_syncs(url) - before
    # One flush per transaction (the marker's), plus a little room for the server's own
    # background flushes; three per transaction would be 90.
    assert TRANSACTIONS <= syncs <= TRANSACTIONS + TRANSACTIONS // 2, syncs

"""The scan snapshot (a read that does not pin a table's key, sql/common/snapshot_scan.sql)
picks each key's newest visible cache version and hides the storage row it replaces. What
it must read, on every engine, whatever shape picks that version: several versions of a
key from several transactions and from one, a snapshot older than some of them, NULLs in
the values and the newest version a NULL, tombstones of a storage row and of a key only
the cache holds, the transaction's own uncommitted writes, READ COMMITTED's per-statement
snapshots, an UPDATE whose rows come from a scan, and rows the checkpointer has moved
while a reader still needs the older ones."""
from __future__ import annotations

from typing import Any, Callable

import tique
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]
SCAN = "SELECT k, v, n FROM kv ORDER BY k"


def _scan(cur: Any) -> dict[int, tuple]:
    cur.execute(SCAN)
    return {k: (v, n) for k, v, n in cur.fetchall()}


def _setup(connect: Connect) -> tique.Connection:
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR(20), n INTEGER)")
    for k in range(1, 7):
        cur.execute("INSERT INTO kv VALUES (?, ?, ?)", (k, f"v{k}", None if k == 4 else k))
    setup.commit()
    checkpoint(setup)  # the rows are storage rows
    return setup


def test_scan_reads_each_keys_newest_visible_version(connect: Connect) -> None:
    setup = _setup(connect)
    writer, reader = connect(), connect(snapshot="scan")
    wcur, rcur = writer.cursor(), reader.cursor()
    wcur.execute("UPDATE kv SET v = 'a1' WHERE k = 1")
    wcur.execute("UPDATE kv SET v = 'a2', n = NULL WHERE k = 1")  # two versions in one transaction
    wcur.execute("UPDATE kv SET n = 40 WHERE k = 4")  # a NULL value replaced
    wcur.execute("DELETE FROM kv WHERE k = 2")  # hides a storage row
    wcur.execute("INSERT INTO kv VALUES (7, NULL, NULL)")  # a key only the cache holds, all NULL
    writer.commit()
    expected = {1: ("a2", None), 3: ("v3", 3), 4: ("v4", 40), 5: ("v5", 5), 6: ("v6", 6), 7: (None, None)}
    assert _scan(rcur) == expected
    reader.commit()

    old = connect(snapshot="scan")
    ocur = old.cursor()
    assert _scan(ocur) == expected  # old's snapshot is taken here
    wcur.execute("UPDATE kv SET v = 'b1' WHERE k = 1")  # a second transaction's version of key 1
    wcur.execute("DELETE FROM kv WHERE k = 7")  # hides a key only the cache holds
    wcur.execute("UPDATE kv SET n = NULL WHERE k = 5")  # the newest version a NULL
    writer.commit()
    wcur.execute("INSERT INTO kv VALUES (2, 'back', 2)")  # a deleted key comes back
    writer.commit()
    newer = {1: ("b1", None), 2: ("back", 2), 3: ("v3", 3), 4: ("v4", 40), 5: ("v5", None), 6: ("v6", 6)}
    assert _scan(rcur) == newer
    assert _scan(ocur) == expected  # the older snapshot still reads the older versions

    # The checkpointer moves what no running transaction needs; `old` keeps reading its own.
    checkpoint(setup)
    assert _scan(ocur) == expected
    old.commit()
    checkpoint(setup)
    assert _scan(rcur) == newer
    reader.commit()


def test_scan_reads_own_uncommitted_writes_above_committed_ones(connect: Connect) -> None:
    _setup(connect)
    other, mine = connect(), connect(snapshot="scan")
    ocur, cur = other.cursor(), mine.cursor()
    ocur.execute("UPDATE kv SET v = 'theirs' WHERE k = 3")
    other.commit()
    cur.execute("UPDATE kv SET v = 'mine1' WHERE k = 3")
    cur.execute("UPDATE kv SET v = 'mine2', n = NULL WHERE k = 3")
    cur.execute("DELETE FROM kv WHERE k = 5")
    cur.execute("INSERT INTO kv VALUES (5, 'again', NULL)")  # deleted, then written again
    cur.execute("DELETE FROM kv WHERE k = 6")
    cur.execute("INSERT INTO kv VALUES (8, 'new', 8)")
    seen = _scan(cur)
    assert seen == {1: ("v1", 1), 2: ("v2", 2), 3: ("mine2", None), 4: ("v4", None), 5: ("again", None), 8: ("new", 8)}
    # An UPDATE whose rows come from a scan writes from the same newest versions.
    cur.execute("UPDATE kv SET n = 0 WHERE v LIKE 'mine%' OR v = 'again'")
    assert cur.rowcount == 2
    assert {k: r for k, r in _scan(cur).items() if r[1] == 0} == {3: ("mine2", 0), 5: ("again", 0)}
    mine.rollback()
    assert _scan(cur) == {1: ("v1", 1), 2: ("v2", 2), 3: ("theirs", 3), 4: ("v4", None), 5: ("v5", 5), 6: ("v6", 6)}
    mine.commit()


def test_read_committed_scan_reads_each_statements_snapshot(connect: Connect) -> None:
    _setup(connect)
    reader, writer = connect(isolation_level="read committed", snapshot="scan"), connect()
    rcur, wcur = reader.cursor(), writer.cursor()
    assert _scan(rcur)[2] == ("v2", 2)
    wcur.execute("UPDATE kv SET v = 'committed' WHERE k = 2")
    wcur.execute("DELETE FROM kv WHERE k = 3")
    writer.commit()
    second = _scan(rcur)  # a new statement: sees the commit
    assert second[2] == ("committed", 2) and 3 not in second
    rcur.execute("UPDATE kv SET v = 'own' WHERE k = 1")
    third = _scan(rcur)  # and its own write above it
    assert third[1] == ("own", 1) and third[2] == ("committed", 2) and 3 not in third
    reader.commit()

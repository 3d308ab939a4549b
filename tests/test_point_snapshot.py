"""The point snapshot (a read whose WHERE pins a table's whole key,
sql/common/snapshot_rank.sql) reads the key's newest visible version: the transaction's
own versions of earlier statements above every committed one, committed versions by
commit timestamp up to the snapshot, the storage row below them all, and nothing where
the newest visible version is a tombstone. Its cache side joins only the versions of
transactions visible to the reader (committed at or before its snapshot, or its own), so
what it must read, on every engine: versions of several committed transactions of one
key, several of one transaction, commits after the snapshot, a writer still open, a
writer rolled back, tombstones, a key moved to another key in one statement, and the
same after the checkpointer has moved what it may. Every point read is checked against
the scan snapshot of the same table, which picks versions by another plan."""
from __future__ import annotations

from typing import Any, Callable

import tique
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]
KEYS = range(1, 10)
POINT = "SELECT k, v, n FROM kv WHERE k = ?"
SCAN = "SELECT k, v, n FROM kv ORDER BY k"


def _points(cur: Any) -> dict[int, tuple]:
    """Each key's row as a point read sees it (keys with no row left out)."""
    found: dict[int, tuple] = {}
    for k in KEYS:
        cur.execute(POINT, (k,))
        rows = cur.fetchall()
        assert len(rows) <= 1, (k, rows)
        if rows:
            assert rows[0][0] == k
            found[k] = tuple(rows[0][1:])
    return found


def _read(cur: Any) -> dict[int, tuple]:
    """The point reads, after checking them against the scan in the same snapshot."""
    points = _points(cur)
    cur.execute(SCAN)
    assert points == {k: (v, n) for k, v, n in cur.fetchall()}
    return points


def _setup(connect: Connect) -> tique.Connection:
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR(20), n INTEGER)")
    for k in range(1, 7):
        cur.execute("INSERT INTO kv VALUES (?, ?, ?)", (k, f"v{k}", k))
    setup.commit()
    checkpoint(setup)  # the rows are storage rows
    return setup


def test_point_reads_each_keys_newest_visible_version(connect: Connect) -> None:
    setup = _setup(connect)
    writer, reader, old = connect(), connect(), connect()
    wcur, rcur, ocur = writer.cursor(), reader.cursor(), old.cursor()
    base = {k: (f"v{k}", k) for k in range(1, 7)}
    assert _read(ocur) == base  # old's snapshot is taken here

    wcur.execute("UPDATE kv SET v = 'a1' WHERE k = 1")
    wcur.execute("UPDATE kv SET v = 'a2', n = NULL WHERE k = 1")  # two versions in one transaction
    wcur.execute("DELETE FROM kv WHERE k = 2")  # a tombstone over a storage row
    wcur.execute("INSERT INTO kv VALUES (7, 'new7', 7)")  # a key only the cache holds
    wcur.execute("UPDATE kv SET k = 8 WHERE k = 3")  # a key move: tombstone of 3, version of 8
    first = {1: ("a2", None), 4: ("v4", 4), 5: ("v5", 5), 6: ("v6", 6), 7: ("new7", 7), 8: ("v3", 3)}
    assert _read(wcur) == first  # its own writes, not yet committed
    assert _read(rcur) == base  # an open writer's versions are invisible
    writer.commit()
    assert _read(rcur) == base  # committed after reader's snapshot
    reader.commit()
    assert _read(rcur) == first

    wcur.execute("UPDATE kv SET v = 'b1' WHERE k = 1")  # a second transaction's version of key 1
    wcur.execute("DELETE FROM kv WHERE k = 7")  # a tombstone of a key only the cache holds
    wcur.execute("INSERT INTO kv VALUES (2, 'back', 2)")  # a deleted key comes back
    writer.commit()
    wcur.execute("UPDATE kv SET v = 'c1' WHERE k = 1")  # a third one, rolled back
    wcur.execute("UPDATE kv SET k = 9 WHERE k = 8")
    writer.rollback()
    second = {1: ("b1", None), 2: ("back", 2), 4: ("v4", 4), 5: ("v5", 5), 6: ("v6", 6), 8: ("v3", 3)}
    assert _read(rcur) == first  # reader's snapshot is still the first one
    reader.commit()
    assert _read(rcur) == second
    assert _read(ocur) == base  # the oldest snapshot reads the storage rows throughout

    # The checkpointer moves what no running transaction needs; each keeps reading its own.
    checkpoint(setup)
    assert _read(ocur) == base
    assert _read(rcur) == second
    old.commit()
    reader.commit()
    checkpoint(setup)
    assert _read(rcur) == second
    reader.commit()


def test_point_reads_own_versions_above_committed_ones(connect: Connect) -> None:
    setup = _setup(connect)
    writer, other = connect(), connect()
    wcur, ocur = writer.cursor(), other.cursor()
    ocur.execute("UPDATE kv SET n = 100 WHERE k = 4")  # committed before writer's snapshot
    other.commit()
    for _ in range(3):  # each UPDATE reads the version the one before wrote
        wcur.execute("UPDATE kv SET n = n + 1 WHERE k = 4")
    assert _read(wcur)[4] == ("v4", 103)
    wcur.execute("DELETE FROM kv WHERE k = 5")
    wcur.execute("INSERT INTO kv SELECT 5, v, n FROM kv WHERE k = 5")  # reads its own tombstone: no row
    assert wcur.rowcount == 0
    wcur.execute("INSERT INTO kv SELECT 5, v, n FROM kv WHERE k = 4")
    assert wcur.rowcount == 1
    assert _read(wcur)[5] == ("v4", 103)
    ocur.execute("UPDATE kv SET n = 0 WHERE k = 6")  # committed after writer's snapshot
    other.commit()
    assert _read(wcur)[6] == ("v6", 6)
    writer.commit()
    assert _read(ocur) == {1: ("v1", 1), 2: ("v2", 2), 3: ("v3", 3), 4: ("v4", 103), 5: ("v4", 103), 6: ("v6", 0)}
    other.commit()
    checkpoint(setup)


def test_read_committed_point_reads_each_statements_snapshot(connect: Connect) -> None:
    _setup(connect)
    reader, writer = connect(isolation_level="read committed"), connect()
    rcur, wcur = reader.cursor(), writer.cursor()
    rcur.execute("UPDATE kv SET v = 'mine' WHERE k = 1")  # an own version, above committed ones
    wcur.execute("UPDATE kv SET n = 50 WHERE k = 2")
    writer.commit()
    rcur.execute(POINT, (2,))
    assert rcur.fetchall() == [(2, "v2", 50)]  # this statement's snapshot sees the commit
    rcur.execute(POINT, (1,))
    assert rcur.fetchall() == [(1, "mine", 1)]
    reader.commit()

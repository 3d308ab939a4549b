"""MonetDB's snapshots without the reader's own versions (tique/rewrite/own_versions.py):
a statement of a transaction that has not written the caches, or the keys, it reads
joins committed transactions only. Every read here runs both forms in the same engine
transaction and snapshot and must get the same rows, which must also be what the
history says, through commits, commits after the snapshot, deletes, a key moved, keys only
the cache holds, several versions of one key in one transaction, a writer rolled back, a
writer that lost certification, and a checkpoint; and the connection must pick the
narrow form exactly when the transaction has written none of what the read reads."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

import tique
from tique.backends import forget_database
from tique.checkpoint import checkpoint

POINT = "SELECT k, v FROM kv WHERE k = ?"
SCAN = "SELECT k, v FROM kv ORDER BY k"
KEYS = range(1, 12)


@pytest.fixture
def monetdb_url(monetdb_server: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    made = f"{monetdb_server.url}?schema=tique_own_{request.node.name[-40:].lower()}"
    yield made
    forget_database(made)


class Recorder:
    """The engine statements a connection sends (to tell which form a read ran)."""

    def __init__(self, conn: tique.Connection) -> None:
        self.sent: list[str] = []
        backend, original = conn._backend, conn._backend.execute  # type: ignore[attr-defined]

        def execute(raw: Any, sql: str, params: Any, *more: Any) -> Any:
            if raw is conn._raw:  # type: ignore[attr-defined]
                self.sent.append(str(sql))
            return original(raw, sql, params, *more)

        backend.execute = execute  # the backend is this database's: the test's own

    def last(self) -> str:
        return self.sent[-1]


def _both_forms(conn: tique.Connection, sql: str, params: tuple) -> tuple[list[tuple], list[tuple], str, str]:
    """The rows of `sql` through the snapshot with own versions and without, in the
    connection's open transaction, and the two statements."""
    plan = conn._plan(sql)  # type: ignore[attr-defined]
    txn = conn._txn  # type: ignore[attr-defined]
    full = plan.statement
    narrow, _ = plan.without_own_versions()
    rows = [sorted(tuple(r) for r in conn._backend.rows(conn._raw, c.sql, c.values(params, txn.context())))  # type: ignore[attr-defined]
            for c in (full, narrow)]
    return rows[0], rows[1], full.sql, narrow.sql


def _read(conn: tique.Connection, recorder: Recorder, expect_narrow: bool) -> dict[int, str | None]:
    """Each key's row by point reads and the scan, both forms compared; the form the
    connection ran must be the narrow one exactly when `expect_narrow`."""
    cur = conn.cursor()
    found: dict[int, str | None] = {}
    for k in KEYS:
        cur.execute(POINT, (k,))
        rows = cur.fetchall()
        ran = recorder.last()
        full, narrow, full_sql, narrow_sql = _both_forms(conn, POINT, (k,))
        assert narrow == full == sorted(tuple(r) for r in rows), k
        assert full_sql != narrow_sql
        assert ran == (narrow_sql if expect_narrow else full_sql), k
        for key, v in rows:
            found[key] = v
    cur.execute(SCAN)
    assert {k: v for k, v in cur.fetchall()} == found
    full, narrow, _, _ = _both_forms(conn, SCAN, ())
    assert narrow == full == sorted(found.items())
    return found


def test_narrow_snapshots_read_what_full_ones_do(monetdb_url: str) -> None:
    setup = tique.connect(monetdb_url)
    try:
        cur = setup.cursor()
        cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR(20))")
        for k in range(1, 7):
            cur.execute("INSERT INTO kv VALUES (?, ?)", (k, f"s{k}"))
        setup.commit()
        checkpoint(setup)  # storage rows
        writer, reader, loser = tique.connect(monetdb_url), tique.connect(monetdb_url), tique.connect(monetdb_url)
        recorder = Recorder(reader)
        wcur, rcur, lcur = writer.cursor(), reader.cursor(), loser.cursor()
        base = {k: f"s{k}" for k in range(1, 7)}

        wcur.execute("UPDATE kv SET v = 'a1' WHERE k = 1")
        wcur.execute("UPDATE kv SET v = 'a1b' WHERE k = 1")  # two versions in one transaction
        wcur.execute("DELETE FROM kv WHERE k = 2")  # a tombstone over a storage row
        wcur.execute("INSERT INTO kv VALUES (7, 'c7')")  # a key only the cache holds
        wcur.execute("UPDATE kv SET k = 8 WHERE k = 3")  # a key move
        writer.commit()
        first = {1: "a1b", 4: "s4", 5: "s5", 6: "s6", 7: "c7", 8: "s3"}
        assert _read(reader, recorder, expect_narrow=True) == first

        wcur.execute("UPDATE kv SET v = 'late' WHERE k = 4")  # after reader's snapshot
        wcur.execute("DELETE FROM kv WHERE k = 7")
        writer.commit()
        wcur.execute("UPDATE kv SET v = 'gone' WHERE k = 5")  # rolled back
        wcur.execute("INSERT INTO kv VALUES (9, 'gone')")
        writer.rollback()
        lcur.execute("UPDATE kv SET v = 'lost' WHERE k = 6")  # loses certification to writer below
        wcur.execute("UPDATE kv SET v = 'won' WHERE k = 6")
        writer.commit()
        with pytest.raises(tique.SerializationFailure):
            loser.commit()
        assert _read(reader, recorder, expect_narrow=True) == first  # still its snapshot
        reader.commit()
        second = {1: "a1b", 4: "late", 5: "s5", 6: "won", 8: "s3"}
        assert _read(reader, recorder, expect_narrow=True) == second

        # Writes of some keys: reads of other keys stay narrow, reads of those keys do not.
        rcur.execute("UPDATE kv SET v = 'mine' WHERE k = 5")
        rcur.execute(POINT, (5,))
        assert rcur.fetchall() == [(5, "mine")]
        assert recorder.last() == reader._plan(POINT).statement.sql  # type: ignore[attr-defined]
        rcur.execute(POINT, (4,))
        assert rcur.fetchall() == [(4, "late")]
        assert recorder.last() == reader._plan(POINT).without_own_versions()[0].sql  # type: ignore[attr-defined]
        rcur.execute(SCAN)  # a scan reads every key: own versions included
        assert dict(rcur.fetchall()) == {**second, 5: "mine"}
        assert recorder.last() == reader._plan(SCAN).statement.sql  # type: ignore[attr-defined]
        rcur.execute("UPDATE kv SET v = v || '+' WHERE k = 4")  # another key of the written table: narrow read
        rcur.execute("UPDATE kv SET v = v || '+' WHERE k = 5")  # its own version: read with it
        rcur.execute("DELETE FROM kv WHERE k = 1")
        rcur.execute(SCAN)
        assert dict(rcur.fetchall()) == {4: "late+", 5: "mine+", 6: "won", 8: "s3"}
        reader.commit()

        # A write whose keys the text does not tell (a key move) makes every later read of
        # the table read own versions.
        rcur.execute("UPDATE kv SET k = 10 WHERE k = 8")
        rcur.execute(POINT, (6,))
        assert rcur.fetchall() == [(6, "won")]
        assert recorder.last() == reader._plan(POINT).statement.sql  # type: ignore[attr-defined]
        rcur.execute(POINT, (10,))
        assert rcur.fetchall() == [(10, "s3")]
        reader.commit()
        checkpoint(setup)
        third = {4: "late+", 5: "mine+", 6: "won", 10: "s3"}
        assert _read(reader, recorder, expect_narrow=True) == third
        reader.commit()
        for conn in (writer, reader, loser):
            conn.close()
    finally:
        setup.close()


def test_updates_read_without_own_versions_until_they_wrote_the_key(monetdb_url: str) -> None:
    """The benchmark's transaction (read two keys, update both) and repeated updates of one
    key: each increment reads the version before it, its own where it wrote one."""
    setup = tique.connect(monetdb_url)
    try:
        cur = setup.cursor()
        cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        cur.execute("INSERT INTO kv VALUES (1, 0), (2, 0), (3, 0)")
        setup.commit()
        conn = tique.connect(monetdb_url)
        recorder = Recorder(conn)
        c = conn.cursor()
        for _ in range(3):
            for k in (1, 2):
                c.execute("SELECT v FROM kv WHERE k = ?", (k,))
                c.fetchall()
            c.execute("UPDATE kv SET v = v + 1 WHERE k = ?", (1,))
            c.execute("UPDATE kv SET v = v + 1 WHERE k = ?", (2,))
            c.execute("UPDATE kv SET v = v + 10 WHERE k = ?", (2,))  # reads its own version
            conn.commit()
        update = conn._plan("UPDATE kv SET v = v + 1 WHERE k = ?")  # type: ignore[attr-defined]
        assert update.committed is not None
        narrow, full = update.committed[0].inserts[0].sql, update.inserts[0].sql
        assert recorder.sent.count(narrow) == 6 and recorder.sent.count(full) == 0  # each key's first update, narrow
        again = conn._plan("UPDATE kv SET v = v + 10 WHERE k = ?")  # type: ignore[attr-defined]
        assert recorder.sent.count(again.inserts[0].sql) == 3  # each one after its own version, full
        c.execute("SELECT k, v FROM kv ORDER BY k")
        assert c.fetchall() == [(1, 3), (2, 33), (3, 0)]
        conn.commit()
        conn.close()
    finally:
        setup.close()

"""Reads of tables whose caches are known empty go to storage directly (DuckDB, where
every writer is in this process), and never miss a write: see tique/cache_state.py."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import tique
from sqlhelp import rows, run
from tique.checkpoint import Checkpointer, checkpoint


@contextmanager
def sent(conn: tique.Connection) -> Iterator[list[str]]:
    """The engine statement texts the connection sends meanwhile."""
    backend, texts = conn.backend, []
    original = backend.execute

    def execute(raw: Any, sql: str, params: Any, *rest: Any) -> Any:
        texts.append(str(sql))
        return original(raw, sql, params, *rest)

    backend.execute = execute  # type: ignore[method-assign]
    try:
        yield texts
    finally:
        del backend.execute


def reads_snapshot(texts: list[str]) -> bool:
    return any("t_cache" in t for t in texts if t.lstrip().upper().startswith("SELECT") and "t_storage" in t)


def reads_storage_only(texts: list[str]) -> bool:
    return any("t_storage" in t and "t_cache" not in t for t in texts)


def fresh(tmp_path: Path) -> tuple[tique.Connection, tique.Connection]:
    url = f"duckdb:///{tmp_path}/clean.db"
    admin = tique.connect(url)
    run(admin, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
    run(admin, "CREATE TABLE u (id INTEGER PRIMARY KEY, t_id INTEGER)")
    run(admin, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    run(admin, "INSERT INTO u VALUES (10, 1), (20, 2)")
    admin.commit()
    return admin, tique.connect(url)


def test_a_checkpointed_table_is_read_from_storage(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = 1") == [("a",)]
    assert reads_snapshot(texts) and not reads_storage_only(texts)  # not counted empty yet
    reader.commit()
    checkpoint(admin)
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = 1") == [("a",)]
        assert rows(reader, "SELECT t.v, u.id FROM t JOIN u ON u.t_id = t.id ORDER BY u.id") == [("a", 10), ("b", 20)]
        assert rows(reader, "SELECT * FROM t ORDER BY id") == [(1, "a"), (2, "b")]  # no hidden column shows
    assert reads_storage_only(texts) and not reads_snapshot(texts)
    reader.commit()


def test_a_write_makes_the_table_read_through_snapshots_again(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    assert rows(reader, "SELECT count(*) FROM t") == [(2,)]  # the reader's snapshot is taken
    run(writer, "UPDATE t SET v = 'changed' WHERE id = 1")
    with sent(writer) as texts:
        assert rows(writer, "SELECT v FROM t WHERE id = 1") == [("changed",)]  # its own write
    assert reads_snapshot(texts)
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = 1") == [("a",)]  # committed after it began
    assert reads_snapshot(texts)
    reader.commit()
    assert rows(reader, "SELECT v FROM t WHERE id = 1") == [("changed",)]
    reader.commit()


def test_a_writer_open_while_the_cache_is_counted_keeps_it_dirty(tmp_path: Path) -> None:
    """The count cannot see a writer's uncommitted rows: an open writer of the table
    keeps it dirty, or readers that begin after its commit would miss its rows."""
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    run(writer, "INSERT INTO t VALUES (3, 'c')")  # uncommitted while the checkpoint counts
    checkpoint(admin)
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,)]
    assert reads_snapshot(texts)
    reader.commit()
    checkpoint(admin)  # moved to storage, purged, counted empty with no writer open
    with sent(reader) as texts:
        assert rows(reader, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,)]
    assert reads_storage_only(texts)
    reader.commit()


def test_rolled_back_and_failed_writers_leave_no_trace(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    run(writer, "DELETE FROM t WHERE id = 2")
    writer.rollback()
    try:
        run(writer, "INSERT INTO t VALUES (1, 'dup')")
    except tique.IntegrityError:
        writer.rollback()
    checkpoint(admin)
    with sent(reader) as texts:
        assert rows(reader, "SELECT id, v FROM t ORDER BY id") == [(1, "a"), (2, "b")]
    assert reads_storage_only(texts)
    reader.commit()
    run(admin, "DROP TABLE t")
    run(admin, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
    run(admin, "INSERT INTO t VALUES (7, 'new')")
    admin.commit()
    assert rows(reader, "SELECT id, v FROM t") == [(7, "new")]
    reader.commit()


def test_a_table_cleaned_after_the_engine_transaction_began_is_read_through_its_snapshot(tmp_path: Path) -> None:
    """A writing transaction reads the database as its engine transaction began: a cache
    emptied by a checkpoint after that still held rows then that storage lacked."""
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    run(admin, "UPDATE u SET t_id = 2 WHERE id = 10")
    admin.commit()  # u's cache holds a version now
    writer = tique.connect(admin.url)
    run(writer, "UPDATE t SET v = 'w' WHERE id = 1")  # opens the engine transaction
    checkpoint(admin)  # moves u's version to storage and purges the cache: u is clean now
    with sent(writer) as texts:
        assert rows(writer, "SELECT id, t_id FROM u ORDER BY id") == [(10, 2), (20, 2)]
    assert any("u_cache" in t for t in texts)
    writer.commit()


# -- keys: a table's cache holds versions of some keys; reads and writes of the others
# go to storage (tique/cache_state.py).

def point_reads_storage(texts: list[str]) -> bool:
    return any(t.lstrip().upper().startswith("SELECT") and "t_storage" in t and "t_cache" not in t for t in texts)


def test_keys_without_versions_are_read_from_storage_the_others_through_the_snapshot(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    checkpoint(admin)  # counted empty: every later write of t registers its keys
    writer = tique.connect(admin.url)
    run(writer, "UPDATE t SET v = 'w' WHERE id = ?", [1])
    writer.commit()  # a version of key 1 in the cache, not checkpointed
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = ?", [2]) == [("b",)]
    assert point_reads_storage(texts)
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = ?", [1]) == [("w",)]  # storage still says 'a'
    assert reads_snapshot(texts) and not point_reads_storage(texts)
    reader.commit()
    checkpoint(admin)  # key 1's version moved, its writer's rows purged
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = ?", [1]) == [("w",)]
    assert point_reads_storage(texts)
    reader.commit()


def test_an_open_writer_keeps_its_keys_off_storage_reads(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    run(writer, "UPDATE t SET v = 'w' WHERE id = ?", [2])
    checkpoint(admin)  # cannot see the uncommitted version: key 2 stays registered
    with sent(writer) as texts:
        assert rows(writer, "SELECT v FROM t WHERE id = ?", [2]) == [("w",)]  # its own write
    assert not point_reads_storage(texts)
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = 2") == [("w",)]  # a literal key too
    assert reads_snapshot(texts) and not point_reads_storage(texts)
    reader.commit()


def test_a_write_of_keys_without_versions_reads_storage_and_loses_no_update(tmp_path: Path) -> None:
    admin, _ = fresh(tmp_path)
    run(admin, "CREATE TABLE n (id INTEGER PRIMARY KEY, c INTEGER)")
    run(admin, "INSERT INTO n VALUES (1, 0), (2, 0)")
    admin.commit()
    checkpoint(admin)
    writer = tique.connect(admin.url)
    with sent(writer) as texts:
        run(writer, "UPDATE n SET c = c + 1 WHERE id = ?", [1])
    assert any(t.startswith('INSERT INTO "n_cache"') and "n_storage" in t and "RANK" not in t.upper() for t in texts)
    run(writer, "UPDATE n SET c = c + 1 WHERE id = ?", [1])  # its own version now: the snapshot
    writer.commit()
    with sent(writer) as texts:
        run(writer, "UPDATE n SET c = c + 1 WHERE id = ?", [1])  # a committed version: the snapshot
        run(writer, "DELETE FROM n WHERE id = ?", [2])  # no version: storage
    assert any("RANK" in t.upper() for t in texts if t.startswith('INSERT INTO "n_cache"'))
    writer.commit()
    assert rows(writer, "SELECT id, c FROM n ORDER BY id") == [(1, 3)]
    writer.commit()
    checkpoint(admin)
    assert rows(writer, "SELECT id, c FROM n ORDER BY id") == [(1, 3)]
    writer.commit()


def test_keys_dropped_after_the_engine_transaction_began_are_read_through_the_snapshot(tmp_path: Path) -> None:
    admin, _ = fresh(tmp_path)
    checkpoint(admin)
    run(admin, "UPDATE u SET t_id = 3 WHERE id = ?", [10])
    admin.commit()  # a version of u's key 10 in the cache
    writer = tique.connect(admin.url)
    run(writer, "UPDATE t SET v = 'w' WHERE id = ?", [1])  # opens the engine transaction
    checkpoint(admin)  # moves key 10's version to storage and drops its registration
    with sent(writer) as texts:
        assert rows(writer, "SELECT t_id FROM u WHERE id = ?", [10]) == [(3,)]
    assert any("u_cache" in t for t in texts)
    writer.commit()


def test_non_integer_values_and_unknown_keys_keep_the_snapshot(tmp_path: Path) -> None:
    admin, reader = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    run(writer, "UPDATE t SET v = 'w' WHERE id = ?", ["1"])  # a string the engine casts: key not known
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT v FROM t WHERE id = ?", [2]) == [("b",)]
    assert not point_reads_storage(texts)  # an unkeyed writer's rows may hold any key
    assert rows(reader, "SELECT v FROM t WHERE id = ?", [1]) == [("w",)]
    reader.commit()
    checkpoint(admin)
    run(writer, "UPDATE t SET v = 'x' WHERE v = ?", ["w"])  # keys not pinned
    writer.commit()
    assert rows(reader, "SELECT v FROM t WHERE id = ?", [1]) == [("x",)]
    reader.commit()


def test_a_write_reading_its_own_table_elsewhere_keeps_the_snapshot(tmp_path: Path) -> None:
    """Only the target's written keys are known: a subquery of the same table reads all of it."""
    admin, _ = fresh(tmp_path)
    run(admin, "CREATE TABLE n (id INTEGER PRIMARY KEY, c INTEGER)")
    run(admin, "INSERT INTO n VALUES (1, 0), (2, 0)")
    admin.commit()
    checkpoint(admin)
    run(admin, "UPDATE n SET c = 5 WHERE id = ?", [2])
    admin.commit()  # key 2's version in the cache; key 1 has none
    run(admin, "UPDATE n SET c = (SELECT max(c) FROM n) WHERE id = ?", [1])
    run(admin, "INSERT INTO n VALUES (?, (SELECT max(c) + 1 FROM n))", [3])
    admin.commit()
    assert rows(admin, "SELECT id, c FROM n ORDER BY id") == [(1, 5), (2, 5), (3, 6)]
    admin.commit()


def test_an_insert_of_keys_without_versions_still_finds_storage_duplicates(tmp_path: Path) -> None:
    admin, _ = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    try:
        run(writer, "INSERT INTO t VALUES (?, ?)", [1, "dup"])
        raise AssertionError("a duplicate of a storage key was inserted")
    except tique.IntegrityError:
        writer.rollback()
    try:
        run(writer, "INSERT INTO t VALUES (?, ?), (?, ?)", [5, "x", 5, "y"])
        raise AssertionError("a key repeated within one statement was inserted")
    except tique.IntegrityError:
        writer.rollback()
    with sent(writer) as texts:
        run(writer, "INSERT INTO t VALUES (?, ?), (?, ?)", [6, "x", 7, "y"])  # 5 stays registered until a count
    assert not any("t_cache" in t for t in texts if t.lstrip().upper().startswith("SELECT"))  # checked by key in storage
    run(writer, "DELETE FROM t WHERE id = ?", [2])
    run(writer, "INSERT INTO t VALUES (?, ?)", [2, "again"])  # its own delete: the snapshot sees it gone
    writer.commit()
    checkpoint(admin)
    assert rows(writer, "SELECT id, v FROM t ORDER BY id") == [(1, "a"), (2, "again"), (6, "x"), (7, "y")]
    writer.commit()


def test_versions_a_previous_process_left_keep_the_table_unarmed(tmp_path: Path) -> None:
    """Rows in a cache at open were registered by no one here: until a count finds only
    registered transactions' rows, every key of the table may have versions."""
    admin, reader = fresh(tmp_path)
    url = admin.url
    run(admin, "UPDATE t SET v = 'w' WHERE id = ?", [1])
    admin.commit()  # a version of key 1 in the cache, never checkpointed
    reader.close()
    admin.close()
    admin.backend.close()  # as if the process ended: the next connection opens the file anew
    again = tique.connect(url)
    assert again.backend.cache_state is not admin.backend.cache_state  # a new database object
    counter = Checkpointer(again.backend)
    try:
        counter._note_caches(["t"])  # a count alone, nothing moved: it finds a stranger's rows
    finally:
        counter.close()
    with sent(again) as texts:
        assert rows(again, "SELECT v FROM t WHERE id = ?", [1]) == [("w",)]
    assert not point_reads_storage(texts)
    again.commit()
    checkpoint(again)  # moves it; the count then finds the cache empty
    with sent(again) as texts:
        assert rows(again, "SELECT v FROM t WHERE id = ?", [1]) == [("w",)]
    assert point_reads_storage(texts)
    again.commit()


def test_writes_and_reads_by_leading_key_columns(tmp_path: Path) -> None:
    """A statement pinning the leading key columns touches every key so beginning."""
    admin, reader = fresh(tmp_path)
    run(admin, "CREATE TABLE l (o INTEGER, n INTEGER, amount INTEGER, PRIMARY KEY (o, n))")
    run(admin, "INSERT INTO l VALUES (1, 1, 10), (1, 2, 20), (2, 1, 30), (2, 2, 40)")
    admin.commit()
    checkpoint(admin)
    writer = tique.connect(admin.url)
    with sent(writer) as texts:
        run(writer, "UPDATE l SET amount = amount + 1 WHERE o = ?", [1])  # no versions of o = 1 yet
    assert any(t.startswith('INSERT INTO "l_cache"') and "RANK" not in t.upper() for t in texts)
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT sum(amount) FROM l WHERE o = ?", [2]) == [(70,)]
    assert any("l_storage" in t and "l_cache" not in t for t in texts)
    with sent(reader) as texts:
        assert rows(reader, "SELECT sum(amount) FROM l WHERE o = ?", [1]) == [(32,)]
        assert rows(reader, "SELECT amount FROM l WHERE o = ? AND n = ?", [1, 2]) == [(21,)]
    assert not any("l_storage" in t and "l_cache" not in t for t in texts)
    reader.commit()
    run(writer, "INSERT INTO l VALUES (?, ?, ?)", [2, 3, 50])
    writer.commit()
    with sent(reader) as texts:
        assert rows(reader, "SELECT sum(amount) FROM l WHERE o = ?", [2]) == [(120,)]  # a key o = 2 begins
    assert not any("l_storage" in t and "l_cache" not in t for t in texts)
    reader.commit()


def test_every_row_of_an_executemany_batch_keeps_its_key_off_storage_reads(tmp_path: Path) -> None:
    """executemany sends a one-row INSERT's rows as one batch: each row's key is noted as
    written, so a point read or update of any of them reads its version in the cache."""
    admin, reader = fresh(tmp_path)
    checkpoint(admin)  # armed: every later write of t registers its keys
    writer = tique.connect(admin.url)
    writer.cursor().executemany("INSERT INTO t VALUES (?, ?)", [(k, f"n{k}") for k in range(100, 150)])
    writer.commit()
    for key in (100, 125, 149):
        assert rows(reader, "SELECT v FROM t WHERE id = ?", [key]) == [(f"n{key}",)]
    assert run(reader, "UPDATE t SET v = 'u' WHERE id = ?", [137]) == 1
    reader.commit()
    assert rows(reader, "SELECT v FROM t WHERE id = ?", [137]) == [("u",)]
    reader.commit()


def test_writes_to_tables_with_unique_or_check_constraints_keep_their_checks(tmp_path: Path) -> None:
    """A key without cached versions may be checked against storage alone, but a UNIQUE
    value must still be checked against every row's newest version."""
    url = f"duckdb:///{tmp_path}/unique.db"
    admin = tique.connect(url)
    run(admin, "CREATE TABLE q (id INTEGER PRIMARY KEY, tag INTEGER UNIQUE, n INTEGER CHECK (n >= 0))")
    run(admin, "INSERT INTO q VALUES (1, 10, 0), (2, 20, 0)")
    admin.commit()
    checkpoint(admin)
    run(admin, "UPDATE q SET tag = 30 WHERE id = ?", [2])  # tag 30 now lives in the cache only
    admin.commit()
    writer = tique.connect(url)
    for statement, values in (("INSERT INTO q VALUES (?, ?, ?)", [3, 30, 0]),   # a new key, a cached tag
                              ("INSERT INTO q VALUES (?, ?, ?)", [4, 40, -1]),  # a new key, CHECK broken
                              ("UPDATE q SET tag = 30 WHERE id = ?", [1])):      # a key without versions
        try:
            run(writer, statement, values)
        except tique.IntegrityError:
            writer.rollback()
            continue
        raise AssertionError(f"accepted: {statement} {values}")
    assert rows(writer, "SELECT id, tag FROM q ORDER BY id") == [(1, 10), (2, 30)]


def test_an_executemany_batch_of_keys_without_versions_is_checked_by_key_in_storage(tmp_path: Path) -> None:
    """A batch whose keys have no versions in the cache is checked by key against storage
    (not by the engine's key check over the cache rows just written), and that check
    still refuses a key storage holds and a key the batch repeats; a batch with a key
    that has versions keeps the engine's key check, which sees the transaction's own delete."""
    admin, _ = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    insert = "INSERT INTO t VALUES (?, ?)"
    for batch in ([(40, "x"), (1, "dup")], [(41, "x"), (42, "y"), (41, "z")]):
        try:
            writer.cursor().executemany(insert, batch)
            raise AssertionError(f"accepted: {batch}")
        except tique.IntegrityError:
            writer.rollback()
    with sent(writer) as texts:
        writer.cursor().executemany(insert, [(k, f"n{k}") for k in range(50, 60)])
    assert any(t.startswith('INSERT INTO "t_cache"') for t in texts)
    assert not any("t_cache" in t for t in texts if t.lstrip().upper().startswith("SELECT"))  # checked by key in storage
    run(writer, "DELETE FROM t WHERE id = ?", [2])
    with sent(writer) as texts:
        writer.cursor().executemany(insert, [(2, "again"), (60, "n60")])  # 2 has this transaction's tombstone
    assert reads_snapshot(texts)
    try:
        writer.cursor().executemany(insert, [(61, "x"), (55, "dup of own")])  # 55: this transaction's own version
        raise AssertionError("a key the transaction inserted before was inserted again")
    except tique.IntegrityError:
        writer.rollback()
    writer.cursor().executemany(insert, [(k, f"n{k}") for k in range(50, 53)])
    writer.commit()
    checkpoint(admin)
    assert rows(writer, "SELECT id, v FROM t ORDER BY id") == [(1, "a"), (2, "b"), (50, "n50"), (51, "n51"), (52, "n52")]
    writer.commit()


def test_reads_and_writes_of_keys_without_versions_read_the_storage_table_itself(tmp_path: Path) -> None:
    """On DuckDB a one-table statement reads storage under the table's alias, not through a
    projection of it (tique/rewrite/storage_reads.py), and answers as before: the values,
    the columns a star names and the rows an UPDATE or DELETE writes."""
    admin, _ = fresh(tmp_path)
    checkpoint(admin)
    writer = tique.connect(admin.url)
    with sent(writer) as texts:
        assert rows(writer, "SELECT * FROM t WHERE id = ?", [1]) == [(1, "a")]
        assert rows(writer, "SELECT x.v FROM t AS x WHERE x.id = ?", [2]) == [("b",)]
        assert run(writer, "UPDATE t SET v = v || ? WHERE id = ?", ["!", 1]) == 1
        assert run(writer, "DELETE FROM u WHERE id = ?", [20]) == 1
    flat = [t for t in texts if '"t_storage" AS' in t or '"u_storage" AS' in t]
    assert len(flat) == 4 and not any("SELECT \"id\"" in t for t in flat), texts
    assert rows(writer, "SELECT id, v FROM t ORDER BY id") == [(1, "a!"), (2, "b")]
    assert rows(writer, "SELECT id FROM u ORDER BY id") == [(10,)]
    writer.commit()
    checkpoint(admin)
    assert rows(writer, "SELECT v FROM t WHERE id = ?", [1]) == [("a!",)]
    writer.commit()


def test_a_statement_naming_rowid_or_a_table_without_key_keeps_the_storage_projection(tmp_path: Path) -> None:
    """DuckDB answers `rowid` on a table itself with its row id; the storage projection has
    no such column, so a statement naming it reads the projection, as before."""
    admin, _ = fresh(tmp_path)
    run(admin, "CREATE TABLE h (a INTEGER, b VARCHAR)")
    run(admin, "INSERT INTO h VALUES (1, 'x')")
    admin.commit()
    checkpoint(admin)
    reader = tique.connect(admin.url)
    with sent(reader) as texts:
        rows(reader, "SELECT a, b FROM h")
        try:
            rows(reader, "SELECT rowid FROM t WHERE id = ?", [1])
        except tique.Error:
            reader.rollback()
    assert not any('"h_storage" AS' in t or '"t_storage" AS' in t for t in texts), texts
    reader.commit()

"""PostgreSQL sends a writer's whole commit in one request (tique/transaction.py,
_commit_whole): the timestamp, the write-set and the writes' COMMIT, then the outcome
row and its COMMIT, then publish. These tests drive the paths where part of that request
fails, on a real server, and check that the transaction ends as the protocol says.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import pytest

import tique
from sqlhelp import rows, run

Connect = Callable[..., tique.Connection]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def engine() -> str:
    return "postgres"


@pytest.fixture
def native(url: str) -> Iterator[Any]:
    """Runs SQL on the engine itself (autocommitted); returns its rows, if any."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True)

    def run_native(sql: str) -> list[tuple]:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []

    yield run_native
    conn.close()


def _next_cts(native: Callable[[str], list[tuple]]) -> int:
    (last, called), = native("SELECT last_value, is_called FROM tq_cts_seq")
    return int(last) + 1 if called else int(last)


def test_a_timestamp_decided_before_the_outcome_row_aborts_the_commit(connect: Connect, native: Any) -> None:
    """A timeout resolver that wrote the abort outcome of the timestamp the commit takes
    (as tq_advance does for an owner that held it too long) makes the outcome row's insert
    fail inside the request, after the writes committed: the transaction is aborted
    (SerializationFailure), its writes stay invisible, the timestamp is published, and
    the next transaction commits."""
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    run(conn, "INSERT INTO t VALUES (1, 10)")
    conn.commit()
    run(conn, "UPDATE t SET v = 20 WHERE id = 1")
    decided = _next_cts(native)
    native(f"INSERT INTO tq_outcome (cts, txid, did_commit) VALUES ({decided}, NULL, FALSE)")
    with pytest.raises(tique.SerializationFailure, match="resolved it as aborted"):
        conn.commit()
    assert native(f"SELECT did_commit FROM tq_outcome WHERE cts = {decided}") == [(False,)]
    assert native("SELECT snapshot FROM tq_clock WHERE id = 1")[0][0] >= decided  # published: nobody waits on it
    other = connect()
    assert rows(other, "SELECT v FROM t WHERE id = 1") == [(10,)]
    other.commit()
    run(conn, "UPDATE t SET v = 30 WHERE id = 1")
    conn.commit()
    assert rows(other, "SELECT v FROM t WHERE id = 1") == [(30,)]


def test_a_write_set_that_fails_leaves_nothing_and_gives_the_timestamp_back(connect: Connect, native: Any) -> None:
    """A failure after the timestamp was taken but before the writes committed (here the
    write-set's insert, refused by a trigger) rolls the writes back, aborts the timestamp
    it took, publishes it, and keeps the session usable."""
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    run(conn, "INSERT INTO t VALUES (1, 10)")
    conn.commit()
    native("CREATE FUNCTION refuse_write_set() RETURNS trigger LANGUAGE plpgsql AS "
           "$$ BEGIN RAISE EXCEPTION 'write-set refused'; END $$")
    native("CREATE TRIGGER refuse BEFORE INSERT ON tq_write_sets FOR EACH STATEMENT EXECUTE FUNCTION refuse_write_set()")
    run(conn, "UPDATE t SET v = 20 WHERE id = 1")
    taken = _next_cts(native)
    with pytest.raises(tique.OperationalError, match="write-set refused"):
        conn.commit()
    native("DROP TRIGGER refuse ON tq_write_sets")
    assert native(f"SELECT did_commit FROM tq_outcome WHERE cts = {taken}") == [(False,)]
    assert native("SELECT snapshot FROM tq_clock WHERE id = 1")[0][0] >= taken
    assert native("SELECT count(*) FROM tq_write_sets WHERE cts = " + str(taken)) == [(0,)]
    assert rows(conn, "SELECT v FROM t WHERE id = 1") == [(10,)]
    run(conn, "UPDATE t SET v = 30 WHERE id = 1")
    conn.commit()
    assert rows(conn, "SELECT v FROM t WHERE id = 1") == [(30,)]
    conn.commit()


def _racing_increments(connect: Connect, levels: list[str | None]) -> None:
    """One client per entry of `levels` (its isolation level; None: the default; "large":
    the default, each transaction also writing 100 other keys, which on PostgreSQL locks
    its write-set as a whole instead of key by key) increments one key 25 times, all
    starting together: first committer wins, so the counter equals the number of commits
    that returned."""
    setup = connect()
    run(setup, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER)")
    run(setup, "INSERT INTO counter VALUES (1, 0)")
    run(setup, "CREATE TABLE filler (id INTEGER PRIMARY KEY, v INTEGER)")
    for i in range(100):
        run(setup, "INSERT INTO filler VALUES (?, 0)", (i,))
    setup.commit()
    committed: list[int] = []
    failures: list[BaseException] = []
    start = threading.Barrier(len(levels), timeout=60)

    def client(level: str | None) -> None:
        conn = connect() if level in (None, "large") else connect(isolation_level=level)
        try:
            start.wait()
            for _ in range(25):
                try:
                    if level == "large":
                        run(conn, "UPDATE filler SET v = v + 1")
                    run(conn, "UPDATE counter SET n = n + 1 WHERE id = 1")
                    conn.commit()
                    committed.append(1)
                except tique.SerializationFailure:
                    conn.rollback()
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=client, args=(level,)) for level in levels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures
    assert committed
    assert rows(setup, "SELECT n FROM counter WHERE id = 1") == [(len(committed),)]


def test_concurrent_increments_in_whole_commits_lose_no_update(connect: Connect) -> None:
    """Writers of one key racing through whole-commit requests."""
    _racing_increments(connect, [None] * 4)


def test_small_and_large_write_sets_racing_lose_no_update(connect: Connect) -> None:
    """Writers of a few keys and writers of more than 64 (which lock their write-set as a
    whole on PostgreSQL) racing on one key."""
    _racing_increments(connect, [None, "large", None, "large"])


def test_a_transaction_writing_thousands_of_keys_commits(connect: Connect) -> None:
    """A lock per key would not fit PostgreSQL's shared lock table: the commit of a bulk
    load failed with "out of shared memory"."""
    conn = connect()
    run(conn, "CREATE TABLE bulk (id INTEGER PRIMARY KEY, v INTEGER)")
    conn.commit()
    run(conn, "INSERT INTO bulk SELECT i, i % 7 FROM generate_series(1, 150000) AS r(i)")
    conn.commit()
    assert rows(conn, "SELECT count(*), sum(v) FROM bulk") == [(150000, sum(i % 7 for i in range(1, 150001)))]


def _key_hash(native: Callable[[str], list[tuple]], table: str, key: int) -> int:
    """The write-set hash of `table`'s row with primary key `key` (PostgresBackend.key_hash)."""
    return int(native(f"SELECT hashtextextended(concat_ws('|', '{table}', CAST({key} AS TEXT)), 0)")[0][0])


def _waiting_for_a_key_lock(native: Callable[[str], list[tuple]]) -> bool:
    return bool(native("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND NOT granted "
                       "AND classid <> 7411"))  # a key lock (tq_lock_write_set), not a latch


@pytest.mark.parametrize("path", ["whole", "serializable", "schema change"])
def test_a_writer_certifies_only_after_an_overlapping_write_set_that_locked_first_committed(
        connect: Connect, native: Any, url: str, path: str) -> None:
    """An overlapping writer (played by a native session) has logged a write-set for the
    key under a commit timestamp above our start and holds its key lock, uncommitted.
    Our commit, on every PostgreSQL path (whole commit; SERIALIZABLE's two requests; a
    schema-changing commit's write-set beside the engine transaction), waits for that lock;
    once the other commits (as committed), our certification sees it and aborts us. Without
    the lock our certification would have read before the other's commit, missed it, and
    both would have committed the key."""
    setup = connect()
    run(setup, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    run(setup, "INSERT INTO t VALUES (1, 10)")
    setup.commit()
    conn = connect(isolation_level="serializable" if path == "serializable" else "snapshot")
    run(conn, "UPDATE t SET v = 20 WHERE id = 1")  # the start timestamp is taken
    if path == "schema change":
        run(conn, "CREATE TABLE side_table (id INTEGER PRIMARY KEY)")
    key = _key_hash(native, "t", 1)
    import psycopg

    holder = psycopg.connect(url)  # not autocommitted: one transaction until holder.commit()
    try:
        holder.execute("INSERT INTO tq_write_sets (txid, cts, key_hash) VALUES (999999, nextval('tq_cts_seq'), %s)", [key])
        (cts,), = holder.execute("SELECT currval('tq_cts_seq')").fetchall()
        holder.execute("SELECT tq_lock_write_set(999999)")
        outcome: list[BaseException | None] = []

        def commit() -> None:
            try:
                conn.commit()
                outcome.append(None)
            except BaseException as error:
                outcome.append(error)

        thread = threading.Thread(target=commit)
        thread.start()
        waited = False
        for _ in range(600):  # until the commit waits for the key lock (bounded: 60 s)
            if _waiting_for_a_key_lock(native):
                waited = True
                break
            if not thread.is_alive():
                break
            thread.join(0.1)
        assert waited, f"the commit did not wait for the key lock: {outcome}"
        holder.execute("INSERT INTO tq_outcome (cts, txid, did_commit) VALUES (%s, 999999, TRUE)", [cts])
        holder.commit()
    finally:
        holder.close()
    thread.join(90)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], tique.SerializationFailure), outcome
    conn.rollback()
    assert rows(setup, "SELECT v FROM t WHERE id = 1") == [(10,)]
    setup.commit()


def test_increments_racing_through_both_commit_paths_lose_no_update(connect: Connect) -> None:
    """Whole commits (SNAPSHOT, certifying inside their engine transaction) and
    two-request commits (SERIALIZABLE, certifying after their write-set committed) racing
    on one key: first committer wins across the two paths."""
    _racing_increments(connect, ["snapshot", "serializable", "snapshot", "serializable"])




def test_the_write_set_is_logged_under_the_timestamp_taken_in_its_own_statement(connect: Connect, native: Any) -> None:
    """A whole commit takes its timestamp, logs its write-set and locks it in one statement
    (PostgresBackend.take_log_and_lock): every key of the write-set carries the timestamp
    its outcome row names, and no tq_committing row is logged (it could only ever commit
    with the outcome row). The commit that logs its write-set apart from its outcome
    (SERIALIZABLE) still logs one, which a resolver or recovery reads."""
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    for i in (1, 2, 3):
        run(conn, "INSERT INTO t VALUES (?, 0)", (i,))
    conn.commit()
    run(conn, "UPDATE t SET v = v + 1 WHERE id <= 2")
    run(conn, "INSERT INTO t VALUES (4, 0)")
    conn.commit()
    ((txid, cts),) = native("SELECT txid, cts FROM tq_outcome WHERE did_commit ORDER BY cts DESC LIMIT 1")
    assert native(f"SELECT DISTINCT cts FROM tq_write_sets WHERE txid = {txid}") == [(cts,)]
    assert native(f"SELECT count(DISTINCT key_hash) FROM tq_write_sets WHERE txid = {txid}") == [(3,)]
    assert native(f"SELECT count(*) FROM tq_committing WHERE cts = {cts}") == [(0,)]
    serializable = connect(isolation_level="serializable")
    run(serializable, "UPDATE t SET v = v + 1 WHERE id = 3")
    serializable.commit()
    ((txid, cts),) = native("SELECT txid, cts FROM tq_outcome WHERE did_commit ORDER BY cts DESC LIMIT 1")
    assert native(f"SELECT txid FROM tq_committing WHERE cts = {cts}") == [(txid,)]
    assert native(f"SELECT DISTINCT cts FROM tq_write_sets WHERE txid = {txid}") == [(cts,)]
    assert rows(conn, "SELECT id, v FROM t ORDER BY id") == [(1, 1), (2, 1), (3, 1), (4, 0)]

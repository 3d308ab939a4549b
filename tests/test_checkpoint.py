"""The checkpointer: what it moves and purges, what it must never touch, and that it
keeps the caches bounded under load without blocking or aborting anyone."""
from __future__ import annotations

import random
import threading
import time
from typing import Callable

import pytest

import tique
from progress import wait_for
from checkpoint_round import rounds_until, start_with_writers
from tique.checkpoint import Checkpointer, checkpoint

Connect = Callable[..., tique.Connection]


def _setup(connect: Connect, rows: int = 10) -> tique.Connection:
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    cur.executemany("INSERT INTO kv VALUES (?, ?)", [(i, f"v{i}") for i in range(rows)])
    conn.commit()
    return conn


def _metadata_rows(native: Callable[[str], list[tuple]]) -> dict[str, int]:
    return {t: native(f"SELECT count(*) FROM {t}")[0][0] for t in ("tq_outcome", "tq_write_sets", "tq_committing", "tq_rolled_back")}


def test_moves_newest_version_applies_deletes_and_purges(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    conn = _setup(connect)
    cur = conn.cursor()
    cur.execute("UPDATE kv SET v = 'first' WHERE k = 1")
    conn.commit()
    cur.execute("UPDATE kv SET v = 'second' WHERE k = 1")
    cur.execute("UPDATE kv SET v = 'third' WHERE k = 1")  # two versions of one key in one transaction
    cur.execute("DELETE FROM kv WHERE k = 2")
    cur.execute("INSERT INTO kv VALUES (100, 'new')")
    conn.commit()
    cur.execute("UPDATE kv SET v = 'rolled back' WHERE k = 3")
    conn.rollback()

    report = checkpoint(conn)

    assert report.moved >= 1
    stored = dict(native("SELECT k, v FROM kv_storage"))
    assert stored[1] == "third"
    assert 2 not in stored
    assert stored[100] == "new"
    assert stored[3] == "v3"
    assert len(stored) == 10
    assert native("SELECT count(*) FROM kv_cache")[0][0] == 0
    assert _metadata_rows(native) == {"tq_outcome": 0, "tq_write_sets": 0, "tq_committing": 0, "tq_rolled_back": 0}
    cur.execute("SELECT k, v FROM kv ORDER BY k")
    assert dict(cur.fetchall()) == stored
    conn.commit()


def test_keeps_versions_a_running_transaction_still_reads(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    setup = _setup(connect)
    checkpoint(setup)
    reader, writer = connect(), connect()
    rcur, wcur = reader.cursor(), writer.cursor()
    rcur.execute("SELECT v FROM kv WHERE k = 5")
    assert rcur.fetchone() == ("v5",)
    for i in range(3):
        wcur.execute("UPDATE kv SET v = ? WHERE k = 5", (f"w{i}",))
        writer.commit()
    checkpoint(setup)
    # The newer versions committed after the reader's start stay in the cache...
    assert native("SELECT count(*) FROM kv_cache")[0][0] == 3
    assert native("SELECT v FROM kv_storage WHERE k = 5") == [("v5",)]
    rcur.execute("SELECT v FROM kv WHERE k = 5")
    assert rcur.fetchone() == ("v5",)
    reader.commit()
    # ...and move once no running transaction can need the old one.
    checkpoint(setup)
    assert native("SELECT v FROM kv_storage WHERE k = 5") == [("w2",)]
    assert native("SELECT count(*) FROM kv_cache")[0][0] == 0


def test_reader_stays_consistent_while_checkpoints_run_under_writers(connect: Connect) -> None:
    """A long reader sees one unchanging snapshot while writers commit and the
    checkpointer runs every few milliseconds; nobody is blocked or aborted by it."""
    setup = _setup(connect, rows=50)
    checkpointer = Checkpointer(setup.backend)
    stop = threading.Event()
    errors: list[BaseException] = []
    rounds = [0]

    checkpoint_loop = rounds_until(checkpointer, stop, rounds, errors)

    def writer(seed: int) -> None:
        conn = tique.connect(setup.url)
        cur = conn.cursor()
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"s{seed}-{rng.random()}", rng.randrange(50)))
                try:
                    conn.commit()
                except tique.SerializationFailure:
                    pass  # write-write conflicts between the two writers, never caused by the checkpointer
        except BaseException as error:
            errors.append(error)
        finally:
            conn.close()

    reader = connect()
    rcur = reader.cursor()
    rcur.execute("SELECT k, v FROM kv ORDER BY k")
    first = rcur.fetchall()
    threads = start_with_writers(checkpoint_loop, writer)
    try:
        deadline = time.monotonic() + 4
        reads = 0
        while time.monotonic() < deadline:
            rcur.execute("SELECT k, v FROM kv ORDER BY k")
            assert rcur.fetchall() == first
            reads += 1
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        checkpointer.close()
    assert not errors, errors
    assert rounds[0] > 5 and reads > 5
    reader.commit()
    rcur.execute("SELECT count(*) FROM kv")
    assert rcur.fetchone() == (50,)
    reader.commit()


def test_caches_stay_bounded_under_steady_load(connect: Connect, native: Callable[[str], list[tuple]],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import tique.checkpoint
    # Rounds every interval, unpaced: how far the caches grow between rounds then depends
    # on the interval alone, not on how long this machine takes for a round.
    monkeypatch.setattr(tique.checkpoint, "MAX_BUSY_SHARE", 1.0)
    conn = _setup(connect, rows=20)
    bg = connect(checkpoint_interval_ms=10)
    cur = conn.cursor()
    sizes = []
    for i in range(300):
        cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"x{i}", i % 20))
        conn.commit()
        if i % 20 == 0:
            sizes.append(native("SELECT count(*) FROM kv_cache")[0][0])
    from tique.checkpoint import _background
    assert wait_for(lambda: _background[bg.backend].runs > 0)
    # 300 versions were written; the checkpointer keeps only a recent window of them.
    assert max(sizes) < 150, sizes
    # A run that finds another under way does nothing: stop the background one first.
    from tique.checkpoint import stop_background_checkpointer
    stop_background_checkpointer(bg.backend)
    checkpoint(conn)
    assert native("SELECT count(*) FROM kv_cache")[0][0] == 0
    cur.execute("SELECT count(*) FROM kv")
    assert cur.fetchone() == (20,)
    conn.commit()


def test_stable_timestamp_waits_for_a_begin_in_flight(engine: str, url: str, connect: Connect) -> None:
    """A transaction that has taken its start timestamp but not yet registered it must
    hold the stable timestamp back. On PostgreSQL begin is one server function: we stop
    it between taking and publishing its registration by leaving its engine
    transaction open, and the checkpointer's stable timestamp must wait for it."""
    if engine != "postgres":
        conn = _setup(connect)
        oracle = conn.backend.oracle
        txid, sts = oracle.begin(conn._raw)
        w = conn.cursor()
        w.execute("UPDATE kv SET v = 'later' WHERE k = 1")
        conn.commit()
        assert oracle.stable_timestamp(conn._raw) <= sts
        oracle.end(conn._raw, txid)
        return
    import psycopg

    conn = _setup(connect)
    slow = psycopg.connect(url, autocommit=False)
    try:
        (txid, sts), = slow.execute("SELECT o_txid, o_sts FROM tq_begin()").fetchall()
        cur = conn.cursor()
        cur.execute("UPDATE kv SET v = 'later' WHERE k = 1")
        conn.commit()  # the snapshot moves past sts while the begin is still unregistered
        result: list[int] = []
        checker = tique.connect(url)

        def stable() -> None:
            result.append(checker.backend.oracle.stable_timestamp(checker._raw))

        t = threading.Thread(target=stable)
        t.start()
        t.join(timeout=1.0)
        assert t.is_alive(), "the stable timestamp was computed while a begin was in flight"
        slow.commit()
        t.join(timeout=10)
        assert result and result[0] <= sts
        checker.close()
    finally:
        slow.close()


def test_concurrent_checkpointers_lose_nothing(connect: Connect) -> None:
    """Several checkpointers (threads here; processes share the server-side latch) run
    one at a time: a committed row is never lost, whoever checkpoints."""
    conn = _setup(connect, rows=10)
    stop = threading.Event()
    errors: list[BaseException] = []
    checkpointers = [Checkpointer(conn.backend) for _ in range(3)]
    skipped = [0]

    def loop(cp: Checkpointer) -> None:
        try:
            while not stop.is_set():
                if cp.run_once().skipped:
                    skipped[0] += 1
                time.sleep(0.001)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=loop, args=(cp,)) for cp in checkpointers]
    for t in threads:
        t.start()
    cur = conn.cursor()
    try:
        for n in range(60):
            cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"n{n}", n % 10))
            conn.commit()
            cur.execute("SELECT count(*) FROM kv")
            assert cur.fetchone() == (10,)
            conn.commit()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        for cp in checkpointers:
            cp.close()
    assert not errors, errors
    assert skipped[0] > 0
    cur.execute("SELECT k, v FROM kv ORDER BY k")
    assert cur.fetchall() == [(k, f"n{50 + k}") for k in range(10)]
    conn.commit()


def test_a_background_round_that_keeps_failing_is_logged_once(connect: Connect, caplog) -> None:  # type: ignore[no-untyped-def]
    """A step that fails every round must not pass unseen (a storage key violation went
    unnoticed this way), nor flood the log: one warning per distinct error."""
    import logging

    from tique.checkpoint import BackgroundCheckpointer

    conn = connect()
    conn.cursor().execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    conn.commit()
    background = BackgroundCheckpointer(conn.backend, 0.005)
    conn.backend.close_raw(background.checkpointer.raw)  # every round now fails the same way
    with caplog.at_level(logging.WARNING, logger="tique.checkpoint"):
        background.start()
        try:
            assert wait_for(lambda: background.failures >= 3)
        finally:
            background.stop()
    warnings = [r for r in caplog.records if r.name == "tique.checkpoint"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "background checkpoint round failed" in warnings[0].getMessage()
    assert background.runs == 0


def _recording(checkpointer: Checkpointer, monkeypatch: "pytest.MonkeyPatch") -> list[str]:
    """The texts of the statements `checkpointer` runs on its engine connection."""
    backend, raw = checkpointer.backend, checkpointer.raw
    texts: list[str] = []
    execute = backend.execute

    def recorded(on: object, sql: str, params: object, analytic: bool = False) -> object:
        if on is raw:
            texts.append(sql)
        return execute(on, sql, params, analytic)

    monkeypatch.setattr(backend, "execute", recorded)
    return texts


def test_a_round_runs_no_statement_against_an_idle_table(connect: Connect, native: Callable[[str], list[tuple]],
                                                          monkeypatch: "pytest.MonkeyPatch") -> None:
    conn = _setup(connect)
    cur = conn.cursor()
    cur.execute("CREATE TABLE idle (k INTEGER PRIMARY KEY, v VARCHAR NOT NULL)")
    cur.executemany("INSERT INTO idle VALUES (?, ?)", [(i, f"i{i}") for i in range(5)])
    conn.commit()
    checkpoint(conn)  # moves both tables' rows to storage
    assert native("SELECT count(*) FROM idle_cache")[0][0] == 0
    cur.execute("UPDATE kv SET v = 'busy' WHERE k = 1")
    conn.commit()

    checkpointer = Checkpointer(conn.backend)
    try:
        texts = _recording(checkpointer, monkeypatch)
        report = checkpointer.run_once()
        assert report.moved == 1
        # The only statement that names the idle table is the round's probe, which names
        # every table at once (on DuckDB, a cache known empty is not even probed).
        naming_idle = [t for t in texts if "idle_" in t]
        assert len(naming_idle) <= 1
        assert all("kv_cache" in t for t in naming_idle)
        assert not any("idle_storage" in t for t in texts)
        assert any("kv_storage" in t for t in texts)

        # Nothing committed since: the next round ends once it has read the stable
        # timestamp, and touches no table.
        texts.clear()
        report = checkpointer.run_once()
        assert (report.tables, report.moved, report.purged) == (0, 0, 0)
        assert not any("_cache" in t or "_storage" in t for t in texts if "tq_txid" not in t)
    finally:
        checkpointer.close()
    cur.execute("SELECT v FROM kv WHERE k = 1")
    assert cur.fetchall() == [("busy",)]
    cur.execute("SELECT count(*) FROM idle")
    assert cur.fetchall() == [(5,)]
    conn.commit()


def _assert_nothing_at_or_below(native: Callable[[str], list[tuple]], stable: int) -> None:
    stale = native(f"SELECT count(*) FROM kv_cache c JOIN tq_outcome o ON o.txid = c.tq_txid WHERE o.cts <= {stable}")
    assert stale == [(0,)]
    aborted = native("SELECT count(*) FROM kv_cache c JOIN tq_outcome o ON o.txid = c.tq_txid WHERE NOT o.did_commit")
    assert aborted == [(0,)]
    for log in ("tq_write_sets", "tq_outcome", "tq_committing", "tq_read_sets"):
        assert native(f"SELECT count(*) FROM {log} WHERE cts <= {stable}") == [(0,)], log


def test_rounds_leave_nothing_at_or_below_the_stable_timestamp(connect: Connect, native: Callable[[str], list[tuple]]) -> None:
    conn = _setup(connect, rows=20)
    other = connect()
    cur, ocur = conn.cursor(), other.cursor()
    rng = random.Random(7)
    for i in range(60):
        cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"u{i}", rng.randrange(20)))
        if i % 7 == 0:
            cur.execute("DELETE FROM kv WHERE k = ?", (rng.randrange(20),))
        if i % 5 == 0:
            conn.rollback()
        else:
            conn.commit()
        if i % 11 == 0:
            ocur.execute("UPDATE kv SET v = 'other' WHERE k = ?", (rng.randrange(20),))
            other.commit()
        if i % 20 == 0:
            checkpoint(conn)
    # A transaction left open holds the stable timestamp below the writes after it.
    holder = connect()
    hcur = holder.cursor()
    hcur.execute("SELECT count(*) FROM kv")
    held = hcur.fetchall()
    for i in range(5):
        cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"late{i}", i))
        conn.commit()
    checkpointer = Checkpointer(conn.backend)
    try:
        for _ in range(3):
            report = checkpointer.run_once()
        stable = report.stable
        assert stable > 0
        # On MonetDB the purge of what the rounds moved waits for the holder, begun before
        # them (tique/checkpoint.py, "Older readers"): checked once it has ended.
        waits = conn.backend.purge_waits_for_older_readers
        if not waits:
            _assert_nothing_at_or_below(native, stable)
        # The holder still reads its snapshot; once it ends, everything is moved.
        hcur.execute("SELECT count(*) FROM kv")
        assert hcur.fetchall() == held
        holder.commit()
        if waits:
            assert checkpointer.run_once().stable >= stable
            _assert_nothing_at_or_below(native, stable)
        for _ in range(2):
            checkpointer.run_once()
    finally:
        checkpointer.close()
    assert native("SELECT count(*) FROM kv_cache") == [(0,)]
    assert {t: n for t, n in _metadata_rows(native).items()} == {"tq_outcome": 0, "tq_write_sets": 0, "tq_committing": 0,
                                                                 "tq_rolled_back": 0}
    cur.execute("SELECT k, v FROM kv ORDER BY k")
    assert cur.fetchall() == native("SELECT k, v FROM kv_storage ORDER BY k")
    conn.commit()


def test_a_round_vacuums_the_caches_it_works_on_where_the_engine_needs_it(engine: str, connect: Connect,
                                                                            native: Callable[[str], list[tuple]]) -> None:
    """PostgreSQL keeps the rows a purge deletes until a vacuum: a round's statistics
    refresh vacuums the caches it works on (tique/checkpoint.py, _refresh_statistics)."""
    if engine != "postgres":
        pytest.skip("only PostgreSQL leaves deleted rows to a vacuum")
    conn = _setup(connect)
    cur = conn.cursor()
    for i in range(5):
        cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"u{i}", i))
        conn.commit()
    checkpoint(conn)  # moves and purges: the purged versions are dead tuples now
    checkpoint_again = Checkpointer(conn.backend)  # a fresh one refreshes (and vacuums) at once
    try:
        cur.execute("UPDATE kv SET v = 'again' WHERE k = 1")
        conn.commit()
        checkpoint_again.run_once()
    finally:
        checkpoint_again.close()
    assert wait_for(lambda: native("SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'kv_cache'") == [(True,)])


def test_a_background_round_runs_once_the_writes_pause(connect: Connect, native: Callable[[str], list[tuple]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The pacing would leave the last writes in the cache for the rest of its wait (an
    hour here, after the first round); once nothing commits, a round runs at once and
    empties it, so reads after a write load do not pay for a non-empty cache."""
    import tique.checkpoint
    from tique.checkpoint import _background

    monkeypatch.setattr(tique.checkpoint, "MAX_BUSY_SHARE", 1e-9)
    monkeypatch.setattr(tique.checkpoint, "MAX_PACED_WAIT_S", 3600.0)
    conn = _setup(connect, rows=20)
    bg = connect(checkpoint_interval_ms=20)
    background = _background[bg.backend]
    assert wait_for(lambda: background.runs > 0)  # paced: the next one an hour later
    cur = conn.cursor()
    for i in range(10):
        cur.execute("UPDATE kv SET v = ? WHERE k = ?", (f"w{i}", i))
        conn.commit()
    assert wait_for(lambda: native("SELECT count(*) FROM kv_cache")[0][0] == 0)
    assert background.early_runs > 0 and background.last_error is None
    assert dict(native("SELECT k, v FROM kv_storage"))[9] == "w9"
    cur.execute("SELECT v FROM kv WHERE k = 9")
    assert cur.fetchall() == [("w9",)]
    conn.commit()


def test_the_write_pause_is_rare_under_a_steady_load_and_seen_when_it_stops() -> None:
    """_WritePause on made-up looks (times in seconds, interval 1): commits every 0.1 s,
    with silences of 0.9 s among them, or every 2 s, never read as a pause, nor do four
    transactions begun between two commits; a silence of ten mean gaps does, and so do
    five transactions begun without a commit (readers at work), at once."""
    from tique.checkpoint import PAUSE_GAPS, READS_AFTER_WRITES, _WritePause

    assert (PAUSE_GAPS, READS_AFTER_WRITES) == (10, 5)
    pause = _WritePause(0.0)
    pause.round_begins(0.0, 0)
    now = 0.0
    for step in range(1, 200):  # a commit and four transactions begun every 0.1 s, looks every 0.05 s
        now += 1.0 if step % 20 == 0 else 0.1
        assert not pause.paused(step, 5 * step, now, 1.0)
        assert not pause.paused(step, 5 * step + 4, now + 0.05, 1.0)
        assert not pause.paused(step, 5 * step + 4, now + 0.09, 1.0)
    assert not pause.paused(199, None, now + 1.4, 1.0)  # the mean gap is about 0.14 s
    assert pause.paused(199, None, now + 1.5, 1.0)
    slow = _WritePause(0.0)
    slow.round_begins(0.0, 0)
    for step in range(1, 10):
        assert not slow.paused(step, None, step * 2.0, 1.0)
        assert not slow.paused(step, None, step * 2.0 + 1.9, 1.0)
    assert not slow.paused(9, None, 37.9, 1.0) and slow.paused(9, None, 38.0, 1.0)
    readers = _WritePause(0.0)
    assert not readers.paused(7, 100, 0.1, 1.0)
    assert not readers.paused(7, 104, 0.11, 1.0)
    assert readers.paused(7, 105, 0.12, 1.0)
    assert not readers.paused(8, 106, 0.13, 1.0)  # a commit: writes again

"""The analytic_workers connect option: analytical reads get a bounded share of the
engine, so that analytics cannot starve the point transactions beside them."""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Callable, Iterator

import pytest

import tique

Connect = Callable[..., tique.Connection]
SCAN = "SELECT current_setting('max_parallel_workers_per_gather'), count(*) FROM facts WHERE v > 0"


def _facts(conn: tique.Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE facts (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.executemany("INSERT INTO facts VALUES (?, ?)", [(i, i % 5) for i in range(200)])
    conn.commit()


@pytest.mark.parametrize("engine", ["postgres"])
def test_postgres_caps_an_analytic_reads_parallel_workers(connect: Connect) -> None:
    """The cap holds for the read (a scan) and for nothing after it."""
    capped = connect(analytic_workers=1)
    _facts(capped)
    cur = capped.cursor()
    cur.execute(SCAN)
    assert cur.fetchall() == [("1", 160)]
    cur.execute("SELECT current_setting('max_parallel_workers_per_gather')")  # no tique table: not analytic
    assert cur.fetchall() == [("2",)]
    cur.execute(SCAN.replace(" WHERE v > 0", " WHERE k = 7"))  # a point read is no analytic read
    assert cur.fetchall() == [("2", 1)]
    engine_default = connect()
    cur = engine_default.cursor()
    cur.execute(SCAN)
    assert cur.fetchall() == [("2", 160)]


def _worker_limit(conn: tique.Connection) -> int:
    """The worker limit of the connection's analytical MonetDB session, as the server has it."""
    analytic: Any = conn._raw.analytic
    assert analytic is not None, "no analytical read ran"
    cur = analytic.conn.cursor()
    cur.execute("SELECT workerlimit FROM sys.sessions WHERE sessionid = current_sessionid()")
    return int(cur.fetchone()[0])


def _server_threads(connect: Connect) -> int:
    cur = connect().cursor()
    cur.execute("SELECT CAST(value AS INTEGER) FROM sys.env() WHERE name = 'gdk_nr_threads'")
    return int(cur.fetchone()[0])


@pytest.fixture
def busy_window(connect: Connect) -> Iterator[Callable[[float], None]]:
    """Sets how recently another session must have run a statement for "auto" to count
    the engine as busy, looked at on every analytical read; restored after the test."""
    backend: Any = type(connect().backend)
    saved = backend.busy_window_s, backend.busy_recheck_s

    def set_window(seconds: float) -> None:
        backend.busy_window_s, backend.busy_recheck_s = seconds, 0.0

    yield set_window
    backend.busy_window_s, backend.busy_recheck_s = saved


@pytest.mark.parametrize("engine", ["monetdb"])
def test_monetdb_limits_the_analytic_sessions_workers(connect: Connect, busy_window: Callable[[float], None]) -> None:
    busy_window(3600)  # the sessions this test opens count as other work for "auto"
    scan = "SELECT count(*) FROM facts WHERE v > 0"
    limits = {}
    for option in (1, "auto", None):
        conn = connect(analytic_workers=option)
        if option == 1:
            _facts(conn)
        cur = conn.cursor()
        cur.execute(scan)
        assert cur.fetchall() == [(160,)]
        limits[option] = _worker_limit(conn)
    threads = _server_threads(connect)
    assert limits == {1: 1, "auto": max(1, threads // 2), None: 0}  # 0: MonetDB's own, every core


@pytest.mark.parametrize("engine", ["monetdb"])
def test_monetdb_auto_caps_only_beside_other_work(connect: Connect, busy_window: Callable[[float], None]) -> None:
    """"auto" keeps a share of the engine for other sessions' work; with no other session
    at work an analytical read gets every core (CH-benCHmark on its own), and the cap
    comes back as soon as another session works again."""
    busy_window(3600)
    threads = _server_threads(connect)  # its connection stays open: other work, for now
    conn = connect()
    _facts(conn)
    scan = "SELECT count(*) FROM facts WHERE v > 0"
    cur = conn.cursor()
    cur.execute(scan)
    assert cur.fetchall() == [(160,)]
    assert _worker_limit(conn) == max(1, threads // 2)
    # Only a statement running now counts (MonetDB keeps the whole second a session went
    # idle): the other sessions here are all idle.
    busy_window(0)
    cur.execute(scan)
    assert cur.fetchall() == [(160,)]
    assert _worker_limit(conn) == 0  # MonetDB's own: every core
    other = connect()
    other.cursor().execute("SELECT count(*) FROM facts WHERE k = 3")  # a point read: not analytic
    busy_window(3600)
    cur.execute(scan)
    assert cur.fetchall() == [(160,)]
    assert _worker_limit(conn) == max(1, threads // 2)


@pytest.mark.parametrize("bad", [0, -2, "half", 1.5])
def test_a_bad_worker_limit_is_refused(connect: Connect, bad: object) -> None:
    with pytest.raises(tique.InterfaceError, match="analytic_workers"):
        connect(analytic_workers=bad)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_bad_queue_flag_is_refused(connect: Connect, bad: object) -> None:
    with pytest.raises(tique.InterfaceError, match="analytic_queue"):
        connect(analytic_queue=bad)


def _queued_runs(conn: tique.Connection, table: str) -> list[tuple[int, int]]:
    """(session, most workers it ran on) of every run of a read of `table`'s storage in
    MonetDB's query queue (sys.queue: the recent queries of every session)."""
    analytic: Any = conn._raw.analytic
    cur = analytic.conn.cursor()
    cur.execute("SELECT sessionid, maxworkers FROM sys.queue() WHERE query ILIKE %s AND query NOT ILIKE %s",
                [f"%{table}_storage%", "%sys.queue%"])
    return [(int(s), int(w)) for s, w in cur.fetchall()]


def _session_id(session: Any) -> int:
    cur = session.conn.cursor()
    cur.execute("SELECT current_sessionid()")
    return int(cur.fetchone()[0])


@pytest.mark.parametrize("engine", ["monetdb"])
def test_monetdb_runs_analytic_reads_within_the_cap(connect: Connect) -> None:
    """The cap binds the session the analytical reads actually run on, and the engine
    honours it: MonetDB's query queue shows the read on the analytic session with at most
    the capped number of workers, and the server holds the cap as that session's limit,
    where the same read uncapped keeps MonetDB's own (every thread)."""
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE wide (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.execute("INSERT INTO wide SELECT value, value % 5 FROM generate_series(0, 300000)")
    setup.commit()
    scan = "SELECT v, count(*), sum(k) FROM wide WHERE k % 7 = 3 GROUP BY v ORDER BY v"
    workers, limits = {}, {}
    for option in (1, None):
        conn = connect(analytic_workers=option)
        read = conn.cursor()
        read.execute(scan)
        assert [r[:2] for r in read.fetchall()] == sorted(Counter(k % 5 for k in range(300000) if k % 7 == 3).items())
        conn.commit()
        analytic = conn._raw.analytic
        assert analytic is not None, "the scan did not run as an analytical read"
        runs = _queued_runs(conn, "wide")
        mine = [w for s, w in runs if s == _session_id(analytic)]
        assert mine, f"the scan did not run on the analytic session: {runs}"
        assert not [s for s, _ in runs if s == _session_id(conn._raw)], "the scan ran on the transactions' session"
        workers[option], limits[option] = max(mine), _worker_limit(conn)
    assert workers[1] <= 1 and limits[1] == 1
    # Uncapped, the session keeps MonetDB's own limit (0: every thread). How many threads
    # a run then actually takes depends on the machine's load (a busy machine can leave
    # one thread to do every piece), so it is not asserted.
    assert limits[None] == 0 and workers[None] >= 1


@pytest.mark.parametrize("engine", ["monetdb"])
def test_monetdb_queued_analytic_reads_stay_within_the_budget(connect: Connect) -> None:
    """Under contention (clients released together by a barrier), queueing connections'
    capped analytical reads never hold more than the analytic budget, half the server's
    threads, at once: each read under "auto" holds all of it, so they take turns; every
    read still answers correctly. A connection that does not queue holds none of it."""
    _facts(connect())
    probe = connect()
    backend: Any = probe._backend
    cur = probe.cursor()
    cur.execute("SELECT CAST(value AS INTEGER) FROM sys.env() WHERE name = 'gdk_nr_threads'")
    budget = max(1, cur.fetchone()[0] // 2)
    probe.commit()
    scan = "SELECT v, count(*) FROM facts WHERE v > 0 GROUP BY v ORDER BY v"
    expected = [(v, 40) for v in range(1, 5)]
    unqueued = connect()
    read = unqueued.cursor()
    read.execute(scan)
    assert read.fetchall() == expected
    unqueued.commit()
    assert backend.analytic_budget.peak == 0  # a connection that does not queue holds none of it
    clients = [connect(analytic_queue=True) for _ in range(4)]
    start = threading.Barrier(len(clients))
    answers: list[list[tuple]] = []
    failures: list[BaseException] = []

    def client(conn: tique.Connection) -> None:
        try:
            start.wait(timeout=60)
            for _ in range(3):
                c = conn.cursor()
                c.execute(scan)
                answers.append(c.fetchall())
                conn.commit()
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failures.append(error)

    threads = [threading.Thread(target=client, args=(conn,)) for conn in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not [t for t in threads if t.is_alive()], "a queued read never ran"
    assert not failures, failures
    assert answers == [expected] * 12
    assert 1 <= backend.analytic_budget.peak <= budget

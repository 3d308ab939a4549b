"""The analytic_workers connect option: analytical reads get a bounded share of the
engine, so that analytics cannot starve the point transactions beside them."""
from __future__ import annotations

from typing import Any, Callable

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


@pytest.mark.parametrize("engine", ["monetdb"])
def test_monetdb_limits_the_analytic_sessions_workers(connect: Connect) -> None:
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
    cur = connect().cursor()
    cur.execute("SELECT CAST(value AS INTEGER) FROM sys.env() WHERE name = 'gdk_nr_threads'")
    threads = cur.fetchone()[0]
    assert limits == {1: 1, "auto": max(1, threads // 2), None: 0}  # 0: MonetDB's own, every core


@pytest.mark.parametrize("bad", [0, -2, "half", 1.5])
def test_a_bad_worker_limit_is_refused(connect: Connect, bad: object) -> None:
    with pytest.raises(tique.InterfaceError, match="analytic_workers"):
        connect(analytic_workers=bad)

"""PostgreSQL plans tique's analytic reads (a table read by the scan formulation) without
nested-loop joins, and every other statement with its defaults: the planner has no
statistics for snapshot subqueries, and nested loops over misestimated joins of several
of them run for minutes where hash joins take milliseconds."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import tique


def _setting(conn: tique.Connection) -> Any:
    return conn._raw.conn.execute("SHOW enable_nestloop").fetchone()[0]  # the session, between statements


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_nested_loops_off_only_for_analytic_reads(url: str, connect: Callable[..., tique.Connection]) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE a (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.execute("CREATE TABLE b (k INTEGER PRIMARY KEY, a_k INTEGER)")
    cur.executemany("INSERT INTO a VALUES (?, ?)", [(i, i * 10) for i in range(20)])
    cur.executemany("INSERT INTO b VALUES (?, ?)", [(i, i % 20) for i in range(40)])
    conn.commit()
    setting = "current_setting('enable_nestloop')"  # as the statement itself is planned and run

    cur.execute(f"SELECT v, {setting} FROM a WHERE k = ?", (3,))  # a point read: rank formulation
    assert cur.fetchall() == [(30, "on")]
    cur.execute(f"SELECT count(*), sum(v), {setting} FROM a JOIN b ON b.a_k = a.k")  # scans: analytic
    assert cur.fetchall() == [(40, 2 * sum(i * 10 for i in range(20)), "off")]
    assert _setting(conn) == "on"  # only that statement ran with it
    cur.execute(f"SELECT count(*), {setting} FROM b WHERE a_k = ?", (5,))
    assert cur.fetchall() == [(2, "off")]
    cur.execute("UPDATE a SET v = v + 1 WHERE k = ?", (3,))
    cur.execute(f"SELECT count(*), {setting} FROM b WHERE a_k = ?", (5,))  # inside the writing transaction too
    assert cur.fetchall() == [(2, "off")]
    conn.commit()
    assert _setting(conn) == "on"  # writes and the commit protocol run with the defaults

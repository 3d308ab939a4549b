"""A read's snapshot carries only the columns the query names; whatever names columns
implicitly (stars, USING, NATURAL, whole-row references, positional references, column
lists on an alias) must still see every column, in table order, with the right values.

Each query runs inside a transaction that has its own uncommitted write to the table,
so both the storage rows and the cache versions pass through the narrowed snapshot."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import tique

ROWS = [(1, "ann", "Oslo", 10), (2, "bob", "Lima", 20), (3, "cy", "Oslo", 30)]


def rows(cur: Any, sql: str, params: tuple = ()) -> list[tuple]:
    cur.execute(sql, params)
    return sorted(cur.fetchall())


@pytest.mark.parametrize("formulation", ["rank", "scan"])
def test_reads_see_every_column_they_name_implicitly(engine: str, connect: Callable[..., tique.Connection], formulation: str) -> None:
    setup = connect()
    c = setup.cursor()
    c.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, nm VARCHAR(10), town VARCHAR(10), score INTEGER)")
    c.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, town VARCHAR(10), n_visits INTEGER)")
    for row in ROWS:
        c.execute("INSERT INTO people VALUES (?, ?, ?, ?)", row)
    c.execute("INSERT INTO visits VALUES (?, ?, ?), (?, ?, ?)", (1, "Oslo", 5, 7, "Rome", 6))
    setup.commit()
    cur = connect(snapshot=formulation).cursor()
    cur.execute("UPDATE people SET score = score + ? WHERE id = ?", (100, 2))  # a cache version, own write

    assert rows(cur, "SELECT * FROM people WHERE id = ?", (2,)) == [(2, "bob", "Lima", 120)]
    assert rows(cur, "SELECT p.* FROM people AS p WHERE p.id = ?", (2,)) == [(2, "bob", "Lima", 120)]
    # Columns named only in WHERE, ORDER BY, GROUP BY, HAVING or a correlated subquery.
    assert rows(cur, "SELECT nm FROM people WHERE score > ?", (15,)) == [("bob",), ("cy",)]
    cur.execute("SELECT nm FROM people ORDER BY score DESC")
    assert cur.fetchall() == [("bob",), ("cy",), ("ann",)]
    assert rows(cur, "SELECT count(*) FROM people GROUP BY town HAVING max(score) > ?", (100,)) == [(1,)]
    assert rows(cur, "SELECT nm FROM people AS p WHERE EXISTS (SELECT 1 FROM visits AS v WHERE v.id = p.id)") == [("ann",)]
    assert rows(cur, "SELECT count(*) FROM people") == [(3,)]
    # Columns named only by a join: USING and NATURAL (people and visits share id and town).
    assert rows(cur, "SELECT nm, n_visits FROM people JOIN visits USING (id, town)") == [("ann", 5)]
    assert rows(cur, "SELECT nm, n_visits FROM people NATURAL JOIN visits") == [("ann", 5)]
    # A column list on the alias renames the columns by position.
    assert rows(cur, "SELECT x.d, x.b FROM people AS x(a, b, c, d) WHERE x.a = ?", (2,)) == [(120, "bob")]
    # Through a derived table and a CTE whose SELECT * exposes every column.
    assert rows(cur, "SELECT q.score FROM (SELECT * FROM people) AS q WHERE q.id = ?", (2,)) == [(120,)]
    assert rows(cur, "WITH q AS (SELECT * FROM people) SELECT town, sum(score) FROM q GROUP BY town") == [("Lima", 120), ("Oslo", 40)]
    if engine == "duckdb":
        # DuckDB names columns without naming them: a whole-row struct, #n, COLUMNS(...), * EXCLUDE.
        cur.execute("SELECT p FROM people AS p WHERE p.id = ?", (2,))
        assert cur.fetchall() == [({"id": 2, "nm": "bob", "town": "Lima", "score": 120},)]
        assert rows(cur, "SELECT #4 FROM people WHERE id = ?", (2,)) == [(120,)]
        assert rows(cur, "SELECT COLUMNS('sc.*') FROM people WHERE id = ?", (2,)) == [(120,)]
        assert rows(cur, "SELECT * EXCLUDE (nm, town) FROM people WHERE id = ?", (2,)) == [(2, 120)]
    cur.connection.rollback()

"""Scan snapshots joined with other relations (tique/rewrite/union_fence.py): on MonetDB
they are read through a LIMIT no table reaches, with the WHERE conjuncts on their own
columns copied inside; answers stay those of the data, on every engine, with committed
cache versions (updates, a delete, an insert) and the reader's own uncommitted writes
passing through the snapshots."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

import pytest

import tique
from tique.rewrite.snapshot import Formulation
from tique.rewrite.union_fence import NO_LIMIT

ITEMS = {i: (i * 3 % 17, "ab" if i % 2 else "cd") for i in range(1, 13)}  # i_id -> (price, tag)
STOCK = {(w, i): (w * 7 + i * 5) % 40 for w in (1, 2) for i in range(1, 13) if (w + i) % 5}  # (w, i) -> qty


def _load(connect: Callable[..., tique.Connection]) -> tuple[dict, dict]:
    """Loads, then commits changes that leave versions in the caches; returns the data
    as the reader below sees it (its own write included)."""
    items, stock = dict(ITEMS), dict(STOCK)
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE item (i_id INTEGER PRIMARY KEY, price INTEGER, tag VARCHAR(4))")
    cur.execute("CREATE TABLE stock (w INTEGER, i INTEGER, qty INTEGER, PRIMARY KEY (w, i))")
    for i, (price, tag) in ITEMS.items():
        cur.execute("INSERT INTO item VALUES (?, ?, ?)", (i, price, tag))
    for (w, i), qty in STOCK.items():
        cur.execute("INSERT INTO stock VALUES (?, ?, ?)", (w, i, qty))
    conn.commit()
    cur.execute("UPDATE item SET price = price + ? WHERE i_id IN (?, ?)", (20, 2, 5))
    cur.execute("DELETE FROM stock WHERE w = ? AND i = ?", (1, 1))
    cur.execute("INSERT INTO stock VALUES (?, ?, ?)", (1, 4, 33))
    cur.execute("UPDATE stock SET qty = qty + ? WHERE i = ?", (4, 3))
    conn.commit()
    for i in (2, 5):
        items[i] = (items[i][0] + 20, items[i][1])
    del stock[(1, 1)]
    stock[(1, 4)] = 33
    for key in [k for k in stock if k[1] == 3]:
        stock[key] += 4
    return items, stock


@pytest.mark.parametrize("formulation", ["scan", "auto"])
def test_joined_snapshots_answer_as_the_data(engine: str, connect: Callable[..., tique.Connection], formulation: str) -> None:
    items, stock = _load(connect)
    reader = connect(snapshot=formulation)
    cur = reader.cursor()
    cur.execute("UPDATE stock SET qty = ? WHERE w = ? AND i = ?", (1, 2, 4))  # the reader's own write
    stock[(2, 4)] = 1

    def rows(sql: str, params: tuple = ()) -> list[tuple]:
        cur.execute(sql, params)
        return sorted(tuple(r) for r in cur.fetchall())

    # Comma join, filters on each side (copied into each fence) and the join condition.
    sums: dict[tuple, int] = defaultdict(int)
    for (w, i), qty in stock.items():
        price, tag = items[i]
        if price > 5 and qty >= 10:
            sums[(w, tag)] += qty
    assert rows("SELECT s.w, it.tag, SUM(s.qty) FROM stock AS s, item AS it WHERE s.i = it.i_id AND it.price > ? AND s.qty >= ? "
                "GROUP BY s.w, it.tag", (5, 10)) == sorted((w, tag, total) for (w, tag), total in sums.items())
    # Explicit inner join, unqualified columns, LIKE, BETWEEN, IN and OR in the filters.
    expected = [(i, w, qty) for (w, i), qty in stock.items()
                if items[i][1].startswith("a") and 1 <= qty <= 30 and (w in (2,) or qty < 20)]
    assert rows("SELECT i_id, w, qty FROM item JOIN stock ON i = i_id WHERE tag LIKE 'a%' AND qty BETWEEN 1 AND 30 "
                "AND (w IN (2) OR qty < ?)", (20,)) == sorted(expected)
    # An outer join is not fenced; its answer is the data's too.
    missing = [(i,) for i in items if (1, i) not in stock]
    assert rows("SELECT it.i_id FROM item AS it LEFT JOIN stock AS s ON s.i = it.i_id AND s.w = 1 WHERE s.qty IS NULL") == sorted(missing)
    # A join inside a correlated subquery.
    richest = [(i,) for i in items if any(items[j][0] > items[i][0] and (1, j) in stock for j in items)]
    assert rows("SELECT o.i_id FROM item AS o WHERE EXISTS (SELECT 1 FROM item AS it, stock AS s "
                "WHERE s.i = it.i_id AND s.w = 1 AND it.price > o.price)") == sorted(richest)
    reader.rollback()


def _read_sql(conn: tique.Connection, sql: str) -> str:
    plan = conn._plan(sql, Formulation.SCAN)
    return str(plan.statement.sql)


def test_monetdb_fences_scan_snapshots_beside_other_relations(engine: str, connect: Callable[..., tique.Connection]) -> None:
    if engine != "monetdb":
        pytest.skip("the fence is MonetDB's")
    _load(connect)
    conn = connect()
    fence = f"LIMIT {NO_LIMIT}"
    joined = _read_sql(conn, "SELECT s.qty FROM stock AS s, item AS it WHERE s.i = it.i_id AND it.price > 3 AND s.qty * 2 > 5 AND 10 / s.qty > 1")
    assert joined.count(fence) == 2
    # Only comparisons over its own columns and constants go inside: not the join
    # condition, nor arithmetic that may fail or overflow on rows the query never reads.
    assert joined.count("price > 3") == 2 and joined.count("10 / ") == 1 and joined.count("* 2 > 5") == 1
    assert fence not in _read_sql(conn, "SELECT qty FROM stock WHERE qty > 3")  # alone: MonetDB pushes its filter itself
    assert fence not in _read_sql(conn, "SELECT it.i_id FROM item AS it LEFT JOIN stock AS s ON s.i = it.i_id")
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM stock AS s, item AS it WHERE s.i = it.i_id AND it.price > ?", (3,))
    assert cur.fetchall()[0][0] >= 1

"""A fresh process plans each statement text once, and a statement family's plans do not
grow with its row count: TPC-C's order lines (5 to 15 rows of one INSERT, sent by
executemany) plan their insert, key check and everything else once. Only the INSERT's own
engine text has one variant per row count, its one planned row repeated (counted apart).
Counted in cache misses and texts sent, never in time."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import tique
from sqlhelp import rows, run
from test_write_shapes import sent
from tique.checkpoint import checkpoint
from tique.rewrite.point_keys import storage_key_values
from tique.plan_timing import EXPANDED, NOT_PLANNING, TEXT_PASSES, TIMING, summary

Connect = Callable[..., tique.Connection]

LINES = ("CREATE TABLE lines (o_id INTEGER NOT NULL, w_id INTEGER NOT NULL, number INTEGER NOT NULL, "
         "item INTEGER, amount DECIMAL(6, 2), info CHAR(8), PRIMARY KEY (w_id, o_id, number))")
ONE_ROW = "INSERT INTO lines (o_id, w_id, number, item, amount, info) VALUES (?, ?, ?, ?, ?, ?)"
ORDERS = "CREATE TABLE orders (o_id INTEGER NOT NULL, w_id INTEGER NOT NULL, lines INTEGER, PRIMARY KEY (w_id, o_id))"
NEW_ORDER = "INSERT INTO orders (o_id, w_id, lines) VALUES (?, ?, ?)"
ORDER_LINES = "SELECT count(*), sum(item) FROM lines WHERE w_id = ? AND o_id = ?"


def lines(order: int, count: int) -> list[tuple[Any, ...]]:
    return [(order, 1, number, 100 + number, f"{number}.25", f"i{number}") for number in range(1, count + 1)]


def new_order(conn: tique.Connection, order: int, count: int) -> None:
    """An order and its lines as TPC-C's New-Order writes them (the lines after another
    write, in the engine transaction it opened), then read back, in one transaction."""
    cur = conn.cursor()
    cur.execute(NEW_ORDER, (order, 1, count))
    cur.executemany(ONE_ROW, lines(order, count))
    cur.execute(ORDER_LINES, (1, order))
    assert cur.fetchall() == [(count, sum(100 + n for n in range(1, count + 1)))]
    conn.commit()


def test_row_counts_plan_nothing_new(connect: Connect) -> None:
    conn = connect()
    run(conn, LINES)
    run(conn, ORDERS)
    conn.commit()
    conn.backend.shared_plans.clear()  # as in a fresh process
    first = TIMING.mark()
    with sent(conn) as first_texts:
        new_order(conn, 1, 5)
    later = TIMING.mark()
    counts = (10, 15, 7, 12, 5)
    with sent(conn) as later_texts:
        for order, count in enumerate(counts, start=2):
            new_order(conn, order, count)
    made = TIMING.since(later)
    # Nothing is planned for a new row count: no statement, key check or any other part;
    # only a marker pass over a new engine text (the expanded INSERT's, on PostgreSQL).
    assert [(m.kind, m.family) for m in made if m.kind not in (*NOT_PLANNING, *TEXT_PASSES)] == []
    # Only the INSERT's text is repeated per row count, once per count never seen before.
    assert sorted(m.key[2] for m in made if m.kind == EXPANDED and m.family == "lines") == [7, 10, 12, 15]
    inserts = {t for t in later_texts if t.lstrip().upper().startswith("INSERT") and "lines" in t}
    assert not {t for t in later_texts if t not in inserts} - set(first_texts)  # every other text was sent for 5 lines
    planning = summary(TIMING.since(first))
    assert planning["variants"] == {}
    assert planning["texts"] >= 2  # the insert and the read, each planned once
    assert rows(conn, "SELECT count(*) FROM lines") == [(5 + sum(counts),)]


def test_every_order_line_count_is_expanded_once(connect: Connect) -> None:
    """New-Order's 5 to 15 lines: each row count's INSERT text is made once and kept, so
    orders of every count, again and again, expand nothing more."""
    conn = connect()
    run(conn, LINES)
    run(conn, ORDERS)
    conn.commit()
    conn.backend.shared_plans.clear()
    counts = list(range(5, 16))
    for order, count in enumerate(counts, start=1):
        new_order(conn, order, count)
    mark = TIMING.mark()
    for order, count in enumerate(reversed(counts), start=len(counts) + 1):
        new_order(conn, order, count)
    assert [m.key for m in TIMING.since(mark) if m.kind == EXPANDED] == []
    assert rows(conn, "SELECT count(*) FROM lines") == [(2 * sum(counts),)]


def test_a_miss_is_recorded_once_per_text(connect: Connect) -> None:
    """What `tique bench tpcc` reports: a text planned on a cold cache is one 'plan' miss
    of that text, and running it again plans nothing."""
    conn = connect()
    run(conn, LINES)
    conn.commit()
    conn.backend.shared_plans.clear()
    mark = TIMING.mark()
    for _ in range(3):
        run(conn, ORDER_LINES, (1, 1))
    plans = [m for m in TIMING.since(mark) if m.kind == "plan"]
    assert [m.family for m in plans] == [ORDER_LINES]
    assert not plans[0].nested and plans[0].cpu_s >= 0
    assert summary(TIMING.since(mark))["texts"] == 1


def test_storage_key_check_is_one_text_for_any_number_of_keys(connect: Connect) -> None:
    """The check of new keys against storage (where their cache holds no versions of them,
    which tique tracks on DuckDB only) is one text per table whatever the number of keys,
    exact inside and beside the keys storage holds, and fetches only the keys it is given:
    two far-apart keys do not read the stored keys between them."""
    conn = connect()
    if conn.backend.cache_state is None:
        conn.close()
        pytest.skip("the storage key check runs only where every writer shares one process (DuckDB)")
    run(conn, LINES)
    conn.commit()
    for order in (1, 3):
        conn.cursor().executemany(ONE_ROW, lines(order, 5))
    conn.cursor().executemany(ONE_ROW, [(order, 1, 1, 1, "1.00", "x") for order in range(10, 400)])
    conn.commit()
    checkpoint(conn)  # the lines are in storage
    table = conn._snapshot.tables["lines"]
    assert tuple(table.key) == ("w_id", "o_id", "number")
    conn.backend.shared_plans.clear()
    mark = TIMING.mark()
    fresh = [[(1, 2, n) for n in range(1, count + 1)] for count in (1, 5, 12)]
    for keys in fresh:  # order 2 lies between orders 1 and 3, inside the range of keys storage holds
        conn._check_new_keys(table, keys, ONE_ROW)
    conn._check_new_keys(table, [(1, 3, 6), (1, 3, 7), (1, 4, 1)], ONE_ROW)
    with pytest.raises(tique.IntegrityError):
        conn._check_new_keys(table, [(1, 2, 1), (1, 3, 5), (1, 4, 1)], ONE_ROW)  # (1, 3, 5) is stored
    with pytest.raises(tique.IntegrityError):
        conn._check_new_keys(table, [(1, 2, 1), (1, 2, 2), (1, 2, 1)], ONE_ROW)  # repeated
    made = [m for m in TIMING.since(mark) if m.kind == "storage key check"]
    assert [m.family for m in made] == ["lines"]
    compiled = conn.backend.shared_plans.get(("storage key check", table))
    far_apart = [(1, 1, 1), (1, 500, 1)]  # 390 stored keys lie between them
    values = storage_key_values(table, far_apart)
    fetched = conn.backend.rows(conn._raw, compiled.sql, compiled.values((), values))
    assert sorted(tuple(r) for r in fetched) == [(1, 1, 1)]
    conn.rollback()

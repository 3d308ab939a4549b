"""Write plans have shapes, not row counts: a multi-row INSERT ... VALUES is planned once
per row shape, and a table's key check is one statement text whatever the statement, on
every engine. Results stay exactly what they were: duplicate keys (within the statement
and against existing rows) and NULLs in NOT NULL columns still fail the whole statement."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest

import tique
from sqlhelp import rows, run

Connect = Callable[..., tique.Connection]

LINES = ("CREATE TABLE lines (o_id INTEGER NOT NULL, w_id INTEGER NOT NULL, number INTEGER NOT NULL, "
         "item INTEGER, amount DECIMAL(6, 2), info CHAR(8), PRIMARY KEY (w_id, o_id, number))")
ROW = "(?, ?, ?, ?, ?, ?)"


def insert(count: int) -> str:
    return "INSERT INTO lines (o_id, w_id, number, item, amount, info) VALUES " + ", ".join([ROW] * count)


def values(order: int, count: int, warehouse: int = 1) -> list[Any]:
    out: list[Any] = []
    for number in range(1, count + 1):
        out += [order, warehouse, number, 100 + number, f"{number}.25", f"i{number}"]
    return out


@contextmanager
def sent(conn: tique.Connection) -> Iterator[list[str]]:
    """The engine statement texts a connection sends, in order."""
    backend = conn.backend
    texts: list[str] = []
    original = backend.execute

    def execute(raw: Any, sql: str, params: Any, *rest: Any) -> Any:
        texts.append(str(sql))
        return original(raw, sql, params, *rest)

    original_all = backend.execute_all

    def execute_all(raw: Any, statements: Any, **options: Any) -> Any:  # a pipelined request
        texts.extend(str(sql) for sql, _ in statements)
        return original_all(raw, statements, **options)

    backend.execute = execute  # type: ignore[method-assign]
    backend.execute_all = execute_all  # type: ignore[method-assign]
    try:
        yield texts
    finally:
        del backend.execute
        del backend.execute_all


def key_check_texts(texts: list[str]) -> set[str]:
    return {t for t in texts if "duplicate_keys" in t}


def test_row_counts_share_one_plan_family(connect: Connect) -> None:
    conn = connect()
    run(conn, LINES)
    conn.commit()
    with sent(conn) as texts:
        for order, count in enumerate((1, 2, 15), start=1):
            run(conn, insert(count), values(order, count))
        run(conn, "INSERT INTO lines (o_id, w_id, number, item, amount, info) VALUES (?, ?, ?, ?, ?, ?)", values(4, 1))
        run(conn, "INSERT INTO lines (o_id, w_id, number, item, amount, info) VALUES (5, 1, 1, NULL, NULL, NULL)")
        conn.commit()
    checks = key_check_texts(texts)
    assert len(checks) == 1, checks  # one key check for every insert into the table, whatever its rows
    plans = [conn._plan(insert(count)) for count in (1, 2, 15)]
    assert len({p.validation.sql for p in plans}) == 1
    assert len({p.undo.sql for p in plans}) == 1
    # The cache inserts differ only in how many times the one row's text repeats.
    one, two, fifteen = (p.inserts[0] for p in plans)
    assert len(one.names) < len(two.names) < len(fifteen.names)
    assert sorted({n for n in fifteen.names if n.startswith("tq_p")}, key=lambda n: int(n[4:])) == [f"tq_p{i}" for i in range(1, 91)]

    got = rows(conn, "SELECT o_id, number, item, amount, info FROM lines ORDER BY o_id, number")
    want = [(o, n, 100 + n, f"{n}.25", f"i{n}") for o, c in ((1, 1), (2, 2), (3, 15), (4, 1)) for n in range(1, c + 1)]
    assert [(o, n, i, str(a), str(info).strip()) for o, n, i, a, info in got[:-1]] == want
    assert tuple(got[-1][:2]) == (5, 1) and got[-1][2:4] == (None, None)


def test_row_counts_compile_one_row_template(connect: Connect) -> None:
    """A fresh process planning 5, 10 and 15-row inserts rewrites and compiles the row's
    shape once: each new row count only repeats the compiled row's text (counted in
    compilations, not time)."""
    conn = connect()
    run(conn, LINES)
    conn.commit()
    backend = conn.backend
    backend.shared_plans.clear()
    compiled: list[str] = []
    templates: list[str] = []
    original_compile, original_rows = backend.compile, backend.compile_rows

    def compile(tree: Any, *args: Any, **options: Any) -> Any:
        compiled.append(tree.sql())
        return original_compile(tree, *args, **options)

    def compile_rows(tree: Any, width: int) -> Any:
        templates.append(tree.sql())
        return original_rows(tree, width)

    backend.compile = compile  # type: ignore[method-assign]
    backend.compile_rows = compile_rows  # type: ignore[method-assign]
    try:
        run(conn, insert(5), values(1, 5))
        after_first = len(compiled)
        for order, count in enumerate((10, 15, 7, 12), start=2):
            run(conn, insert(count), values(order, count))
        after_all = len(compiled)
        conn.commit()
    finally:
        del backend.compile
        del backend.compile_rows
    assert len(templates) == 1, templates  # one row template for every row count
    # The first insert compiled its row template, key check and undo; no later row count
    # compiles anything.
    assert after_all == after_first, compiled[after_first:after_all]
    assert len({conn._plan(insert(count)).validation.sql for count in (5, 10, 15, 7, 12)}) == 1
    got = rows(conn, "SELECT o_id, count(*) FROM lines GROUP BY o_id ORDER BY o_id")
    assert [tuple(r) for r in got] == [(1, 5), (2, 10), (3, 15), (4, 7), (5, 12)]


def test_key_check_text_is_shared_by_statements_of_one_table(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (a INTEGER NOT NULL, b INTEGER NOT NULL, v VARCHAR(10), PRIMARY KEY (a, b))")
    conn.commit()
    with sent(conn) as texts:
        run(conn, "INSERT INTO t VALUES (?, ?, ?)", (1, 1, "x"))
        run(conn, "INSERT INTO t (b, a) VALUES (?, ?), (?, ?)", (2, 1, 3, 1))
        run(conn, "INSERT INTO t (v, a, b) VALUES ('lit', 2, ?)", (7,))
        run(conn, "INSERT INTO t VALUES (?, ?, ?), (?, 9, 'k')", (3, 3, "y", 4))  # rows of two shapes
        conn.commit()
    assert len(key_check_texts(texts)) == 1
    assert rows(conn, "SELECT a, b, v FROM t ORDER BY a, b") == [
        (1, 1, "x"), (1, 2, None), (1, 3, None), (2, 7, "lit"), (3, 3, "y"), (4, 9, "k")]


@pytest.mark.parametrize("count", [2, 15])
def test_duplicate_within_the_statement_fails_it_whole(connect: Connect, count: int) -> None:
    conn = connect()
    run(conn, LINES)
    conn.commit()
    params = values(1, count)
    params[6 * (count - 1) + 2] = 1  # the last line repeats line 1's key
    with pytest.raises(tique.IntegrityError) as raised:
        run(conn, insert(count), params)
    message = str(raised.value)
    assert "lines" in message and "w_id, o_id, number" in message
    assert conn.transaction_failed  # as natively, the failed statement aborted its transaction
    conn.rollback()
    assert rows(conn, "SELECT count(*) FROM lines") == [(0,)]  # nothing was half-written
    run(conn, insert(count), values(1, count))
    conn.commit()
    assert rows(conn, "SELECT count(*) FROM lines") == [(count,)]


@pytest.mark.parametrize("count", [1, 2, 15])
def test_duplicate_of_an_existing_row_fails(connect: Connect, count: int) -> None:
    conn = connect()
    run(conn, LINES)
    run(conn, insert(15), values(7, 15, warehouse=3))  # other orders beside it, inside and outside the key range
    run(conn, insert(2), values(9, 2, warehouse=3))
    conn.commit()
    existing = values(8, count, warehouse=3)
    existing[6 * (count - 1)] = 7  # the last line is order 7's line `count`, already committed
    with pytest.raises(tique.IntegrityError) as raised:
        run(conn, insert(count), existing)
    assert "lines" in str(raised.value)
    conn.rollback()
    # Written earlier in the same transaction counts too.
    run(conn, insert(count), values(8, count, warehouse=3))
    with pytest.raises(tique.IntegrityError):
        run(conn, insert(1), values(8, 1, warehouse=3))
    conn.rollback()
    run(conn, insert(count), values(8, count, warehouse=3))
    conn.commit()
    assert rows(conn, "SELECT count(*) FROM lines") == [(17 + count,)]


def test_keys_bound_as_other_types_are_still_checked(connect: Connect) -> None:
    """A key passed as text or as a decimal is cast by the engine: the check cannot narrow
    by a range computed in Python, and must still see the duplicate."""
    conn = connect()
    run(conn, LINES)
    run(conn, insert(2), values(1, 2))
    conn.commit()
    params = values(1, 2)
    params[2], params[8] = "3", "2"  # line 2 of order 1 again, as text
    with pytest.raises(tique.IntegrityError):
        run(conn, insert(2), params)
    conn.rollback()
    run(conn, insert(1), [1, 1, "3", 5, "1.00", "x"])
    conn.commit()
    assert rows(conn, "SELECT count(*) FROM lines") == [(3,)]


def test_not_null_still_fails_a_repeated_row(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE n (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    conn.commit()
    with pytest.raises(tique.IntegrityError) as raised:
        run(conn, "INSERT INTO n VALUES (?, ?), (?, ?), (?, ?)", (1, 1, 2, None, 3, 3))
    assert "v" in str(raised.value)
    conn.rollback()
    run(conn, "INSERT INTO n VALUES (?, ?), (?, ?)", (1, 1, 2, 2))
    conn.commit()
    assert rows(conn, "SELECT id, v FROM n ORDER BY id") == [(1, 1), (2, 2)]

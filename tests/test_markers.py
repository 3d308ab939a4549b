"""Parameter markers in every position and spacing, on every engine: `?` and `$n` next to
commas, parentheses, operators, casts, semicolons, newlines and tabs, in IN lists and
multi-row VALUES; a `?` in a literal, a quoted name or a comment is no marker. A
statement may end with `;` and a comment; `arr[:n]` is a slice, not a named parameter."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from sqlglot import exp

import tique
from sqlhelp import rows, run

Connect = Callable[..., tique.Connection]

SCALARS = [  # statement, parameters, the one row it returns
    ("SELECT ?,?", (1, 2), (1, 2)),
    ("SELECT ?, ?", (1, 2), (1, 2)),
    ("SELECT $1,$2", (1, 2), (1, 2)),
    ("SELECT $2,$1", (1, 2), (2, 1)),
    ("SELECT $1,$1+$2", (1, 2), (1, 3)),
    ("SELECT ?+?", (1, 2), (3,)),
    ("SELECT ?*?-?", (2, 3, 1), (5,)),
    ("SELECT -?", (5,), (-5,)),
    ("SELECT (?)", (4,), (4,)),
    ("SELECT (?+1)*?", (1, 3), (6,)),
    ("SELECT ?::int", ("7",), (7,)),
    ("SELECT ?::int,?::int", ("7", "8"), (7, 8)),
    ("SELECT CAST(? AS INTEGER)", ("9",), (9,)),
    ("SELECT ?;", (1,), (1,)),
    ("SELECT ?,?;", (1, 2), (1, 2)),
    ("SELECT\t?,\t?", (1, 2), (1, 2)),
    ("SELECT\n?\n,\n?\n", (1, 2), (1, 2)),
    ("SELECT ? ; -- the statement ends here", (1,), (1,)),
    ("SELECT ?; /* so does this one */", (1,), (1,)),
    ("SELECT ?;\n-- a comment on its own line\n", (1,), (1,)),
    ("SELECT '?', 'a?b', ?", (1,), ("?", "a?b", 1)),
    ("SELECT 'it''s?', ?", (1,), ("it's?", 1)),
    ("SELECT '$1', ?", (5,), ("$1", 5)),
    ("SELECT ? /* ? */, ? -- ?\n", (1, 2), (1, 2)),
    ("SELECT ? /* nested /* ? */ still ? */, ?", (1, 2), (1, 2)),
    ('SELECT "q?" FROM (SELECT ? AS "q?") AS s', (3,), (3,)),
    ("SELECT CASE WHEN ?>? THEN 'a' ELSE 'b' END", (2, 1), ("a",)),
    ("SELECT 1 WHERE ?=?", (1, 1), (1,)),
    ("SELECT ?=? ", (1, 2), (False,)),
]


def test_markers_in_scalar_positions(connect: Connect) -> None:
    conn = connect(autocommit=True)
    for statement, params, expected in SCALARS:
        assert rows(conn, statement, params) == [expected], statement


def test_dollar_quoted_strings_hold_no_markers(connect: Connect, engine: str) -> None:
    if engine == "monetdb":
        pytest.skip("MonetDB has no dollar-quoted strings")
    conn = connect(autocommit=True)
    assert rows(conn, "SELECT $$a ? $1$$, $tag$?,?$tag$, ?", (7,)) == [("a ? $1", "?,?", 7)]


def test_a_transaction_whose_first_statement_ends_in_an_empty_string(connect: Connect) -> None:
    """On PostgreSQL the oracle's begin travels with a transaction's first statement, whose
    markers for the transaction's own values are found by PostgreSQL's tokens; a text
    ending in '' after a marker once failed to tokenize."""
    conn = _table(connect)
    run(conn, "INSERT INTO t VALUES (1, '', 5)")
    conn.autocommit = False
    assert rows(conn, "SELECT n FROM t WHERE v BETWEEN ? AND ''", ("",)) == [(5,)]
    assert run(conn, "UPDATE t SET n = ? WHERE v = ''", (6,)) == 1
    conn.commit()
    assert rows(conn, "SELECT n FROM t WHERE id = ? AND v = ''", (1,)) == [(6,)]
    conn.rollback()


def _table(connect: Connect) -> tique.Connection:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(20), n INTEGER)")
    return conn


def test_markers_in_writes_in_lists_and_values(connect: Connect) -> None:
    conn = _table(connect)
    run(conn, "INSERT INTO t VALUES (?,?,?)", (1, "a", 10))
    run(conn, "INSERT INTO t VALUES(?,?,?),(?,?,?)", (2, "b", 20, 3, "c?", 30))
    run(conn, "INSERT INTO t VALUES ($1,$2,$3),\n\t($4, $5, $6);", (4, "d", 40, 5, "e", 50))
    conn.cursor().executemany("INSERT INTO t (id,v,n) VALUES (?,?,?)", [(6, "f", 60), (7, "g", 70)])
    assert rows(conn, "SELECT id FROM t WHERE id IN (?,?) ORDER BY id", (2, 5)) == [(2,), (5,)]
    assert rows(conn, "SELECT id FROM t WHERE id IN ($2,$1,$3) ORDER BY id", (1, 3, 7)) == [(1,), (3,), (7,)]
    assert rows(conn, "SELECT id FROM t WHERE v=? OR n>=?+? ORDER BY id", ("c?", 60, 5)) == [(3,), (7,)]
    run(conn, "UPDATE t SET n=n+?,v=? WHERE id=?", (1, "z", 1))
    run(conn, "DELETE FROM t WHERE id IN (?,?);-- done", (6, 7))
    assert rows(conn, "SELECT id, v, n FROM t ORDER BY id") == [
        (1, "z", 11), (2, "b", 20), (3, "c?", 30), (4, "d", 40), (5, "e", 50)]


def test_statements_ending_in_a_marker_render_once(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    """tique renders a plan's statements once, with its markers spelled as a control
    character; only a statement whose own text holds that character is rendered again
    the slow way, and it means what it says. (Counted in renderings, not time.)"""
    from tique.rewrite import faithful
    from tique.rewrite.params import MARK

    slow: list[str] = []
    plain = faithful.to_sql

    def to_sql(tree: Any, dialect: str) -> str:
        # Statements only: MonetDB renders an insert's table and column list on their own.
        if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
            slow.append(tree.sql())
        return plain(tree, dialect)

    monkeypatch.setattr(faithful, "to_sql", to_sql)
    conn = _table(connect)
    run(conn, "INSERT INTO t VALUES (?, ?, ?)", (1, "a", 10))
    run(conn, "UPDATE t SET n = n + 1 WHERE id = ?", (1,))
    assert rows(conn, "SELECT v, n FROM t WHERE id = ?", (1,)) == [("a", 11)]
    assert slow == []
    # The mark character itself, and others around it, in literals of the statement.
    for i, character in enumerate((MARK, "\x01", "\x1f"), start=2):
        run(conn, f"INSERT INTO t VALUES (?, 'x{character}y', ?)", (i, i))
    assert rows(conn, f"SELECT id, v FROM t WHERE v = 'x{MARK}y' AND id = ?", (2,)) == [(2, f"x{MARK}y")]
    assert rows(conn, "SELECT id, v FROM t WHERE id > ? ORDER BY id", (2,)) == [(3, "x\x01y"), (4, "x\x1fy")]
    assert slow, "a statement holding the mark character renders the slow way"


def test_marker_count_counts_real_markers_only(connect: Connect) -> None:
    conn = _table(connect)
    assert rows(conn, "SELECT '?' -- ?") == [("?",)]
    with pytest.raises(tique.ProgrammingError, match="1 parameter marker"):
        run(conn, "SELECT '?,?', ? /* ? */", (1, 2))


def test_statement_then_comment_runs_once(connect: Connect) -> None:
    conn = _table(connect)
    run(conn, "INSERT INTO t VALUES (1, 'a', 1); -- trailing comment")
    assert rows(conn, "SELECT count(*) FROM t; /* c */") == [(1,)]
    with pytest.raises(tique.ProgrammingError, match="one statement per execute"):
        run(conn, "SELECT 1; SELECT 2 -- two")


def test_array_slice_is_not_a_named_parameter(connect: Connect, engine: str) -> None:
    if engine == "monetdb":
        pytest.skip("MonetDB has no arrays")
    conn = _table(connect)
    run(conn, "INSERT INTO t VALUES (1, 'a', 2)")
    array = "[10, 20, 30]" if engine == "duckdb" else "(ARRAY[10, 20, 30])"
    assert rows(conn, f"SELECT {array}[:n] FROM t") == [([10, 20],)]
    assert rows(conn, f"SELECT {array}[:n], ? FROM t WHERE id = ?", ("x", 1)) == [([10, 20], "x")]
    assert rows(conn, f"SELECT {array}[n:] FROM t") == [([20, 30],)]


@pytest.mark.parametrize("marker", [":name", "$name"])
def test_named_markers_are_refused(connect: Connect, engine: str, marker: Any) -> None:
    conn = _table(connect)
    with pytest.raises(tique.ProgrammingError):
        run(conn, f"SELECT id FROM t WHERE id = {marker}", (1,))

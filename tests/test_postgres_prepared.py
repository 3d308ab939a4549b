"""tique's statements on PostgreSQL run as prepared statements, planned once per session
(tique/backends/postgres.py, IntAsInteger and GENERIC_PLANS): a statement text is prepared
once whatever the magnitudes of the integers bound to it, so a multi-row INSERT whose
values fall on either side of 2**15 (TPC-C's item ids) is not parsed and planned again on
every call."""
from __future__ import annotations

from typing import Callable

import pytest

import tique

ROWS = 10
CALLS = 12  # above psycopg's prepare threshold (5)


def _prepared(conn: tique.Connection, like: str) -> list[tuple[int, int]]:
    """(generic plans, custom plans) of the session's prepared statements whose text
    matches `like`, read on the connection's own engine session."""
    session = conn._raw  # the session is where the statements were prepared
    return [(int(g), int(c)) for g, c in session.conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE $1", [like]).fetchall()]


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_statement_is_prepared_once_whatever_its_integers_magnitudes(connect: Callable[..., tique.Connection]) -> None:
    admin = connect(autocommit=True)
    admin.cursor().execute("CREATE TABLE line (o_id INTEGER, n INTEGER, i_id INTEGER, qty SMALLINT, PRIMARY KEY (o_id, n))")
    conn = connect()
    cur = conn.cursor()
    values = ", ".join(["(?, ?, ?, ?)"] * ROWS)
    for call in range(CALLS):
        # Item ids on either side of 2**15 in a different pattern on every call.
        rows = [(call, n, (n * 7919 + call * 104729) % 100_000 + 1, n) for n in range(ROWS)]
        assert len({i < 2**15 for _, _, i, _ in rows}) == 2
        cur.execute(f"INSERT INTO line (o_id, n, i_id, qty) VALUES {values}", [v for row in rows for v in row])
        cur.execute("SELECT qty FROM line WHERE o_id = ? AND n = ?", [call, 3])
        assert cur.fetchall() == [(3,)]
        conn.commit()
    inserts = _prepared(conn, 'INSERT INTO "line_cache"%')
    assert len(inserts) == 1, inserts  # one text, one set of parameter types
    # Every call after the threshold ran on the one generic plan.
    assert inserts[0][0] >= CALLS - 5, inserts
    reads = _prepared(conn, 'SELECT qty FROM%')
    assert len(reads) == 1 and reads[0][0] >= CALLS - 5, reads
    cur.execute("SELECT COUNT(*), SUM(i_id) FROM line")
    assert cur.fetchall() == [(ROWS * CALLS, sum((n * 7919 + c * 104729) % 100_000 + 1 for c in range(CALLS) for n in range(ROWS)))]
    conn.commit()


@pytest.mark.parametrize("engine", ["postgres"])
def test_integers_keep_their_values_and_widen_past_integer(connect: Callable[..., tique.Connection]) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute("SELECT ?, ?, ?, ?, ?", [7, -2**31, 2**31, 2**63, True])
    assert cur.fetchall() == [(7, -2**31, 2**31, 2**63, True)]
    assert [d[1] for d in cur.description] == ["INTEGER", "INTEGER", "BIGINT", "NUMERIC", "BOOLEAN"]
    # SMALLINT arithmetic overflows where the values do, as it does natively.
    admin = connect(autocommit=True)
    admin.cursor().execute("CREATE TABLE s (k INTEGER PRIMARY KEY, v SMALLINT)")
    with pytest.raises(tique.DataError):
        admin.cursor().execute("INSERT INTO s (k, v) VALUES (?, ?)", [1, 2**15])
    conn.rollback()


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_bound_integer_means_what_the_same_literal_means(connect: Callable[..., tique.Connection]) -> None:
    cur = connect().cursor()
    for a, b in [(200, 200), (2**15, 2), (-2**31, 1), (2**31, 2**31), (2**40, 3)]:
        cur.execute(f"SELECT {a} * {b}")
        literal = cur.fetchall()
        literal_type = cur.description[0][1]
        cur.execute("SELECT ? * ?", [a, b])
        assert cur.fetchall() == literal
        assert cur.description[0][1] == literal_type
    with pytest.raises(tique.DataError):
        cur.execute("SELECT ? * ?", [2**31 - 1, 2])  # INTEGER overflows, as the literals do

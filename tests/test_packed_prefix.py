"""Reads and writes of a packed table (MonetDB) that pin only the leading columns of its
key (TPC-C's order lines of one order): they return and write exactly the rows the
statement names, through a transaction's own writes, deletes, key moves and
checkpoints, for negative values and the edges of each key column's type. Any filter
tique adds for such reads (a range of the packed key, a hashed prefix) must keep this."""
from __future__ import annotations

import itertools
from typing import Callable

import pytest

import tique
from tique.checkpoint import checkpoint

pytestmark = pytest.mark.parametrize("engine", ["monetdb"], indirect=True)

Connect = Callable[..., tique.Connection]
Key = tuple[int, int, int, int]

# Each column's type range on MonetDB, whose minimum is its NULL: the least value a row
# can hold is the minimum + 1. 32 + 16 + 64 + 16 = 128 bits, the most a packed key takes.
W = (-2147483647, -1, 0, 1, 2147483647)
D = (-32767, -1, 0, 32767)
O = (-9223372036854775807, -1, 0, 9223372036854775807)
N = (-32767, 0, 32767)
MINIMA = (-2147483648, -32768, -9223372036854775808)  # each type's NULL: no row holds it
COLUMNS = ("w", "d", "o")


def run(conn: tique.Connection, sql: str, params: tuple | list = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


def prefixes() -> list[tuple[int, ...]]:
    """Prefixes of every length short of the key: edges, negatives, values no row has,
    and each column's minimum."""
    found: list[tuple[int, ...]] = [(w,) for w in W + (2, MINIMA[0])]
    found += [(w, d) for w in (-2147483647, 1, 2147483647) for d in D + (5, MINIMA[1])]
    found += [(w, d, o) for w, d in ((-2147483647, -32767), (1, 0), (2147483647, 32767), (0, -1))
              for o in O + (7, MINIMA[2])]
    found += [(MINIMA[0], MINIMA[1]), (MINIMA[0], MINIMA[1], MINIMA[2])]
    return found


def check_reads(conn: tique.Connection, rows: dict[Key, int]) -> None:
    """Every prefix read, as SELECT * and as an aggregate (Delivery's and Order-Status's
    forms), against the rows the model holds."""
    for prefix in prefixes():
        # A type's minimum is written as a literal: bound, it would reach MonetDB as a
        # prepared statement's parameter, typed as its column, which refuses that value.
        where = " AND ".join(f"{c} = {v}" if v in MINIMA else f"{c} = ?" for c, v in zip(COLUMNS, prefix))
        params = tuple(v for v in prefix if v not in MINIMA)
        expected = sorted((k + (q,) for k, q in rows.items() if k[:len(prefix)] == prefix))
        got = run(conn, f"SELECT w, d, o, n, q FROM ol WHERE {where} ORDER BY w, d, o, n", params)
        assert got == expected, prefix
        total = sum(r[-1] for r in expected) if expected else None
        assert run(conn, f"SELECT SUM(q), COUNT(*) FROM ol WHERE {where}", params) == [(total, len(expected))], prefix
    # the conjuncts in another order, a qualifier, a literal, and a further filter
    expected = sorted(k + (q,) for k, q in rows.items() if k[:2] == (1, 0) and q > 0)
    assert run(conn, "SELECT t.w, t.d, t.o, t.n, t.q FROM ol AS t WHERE t.q > 0 AND t.d = ? AND 1 = t.w ORDER BY 1, 2, 3, 4",
               (0,)) == expected


def test_prefix_reads_and_writes_through_own_writes_and_checkpoints(connect: Connect) -> None:
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE ol (w INTEGER, d SMALLINT, o BIGINT, n SMALLINT, q INTEGER NOT NULL, PRIMARY KEY (w, d, o, n))")
    rows: dict[Key, int] = {k: i + 1 for i, k in enumerate(itertools.product(W, D, O, N))}
    items = list(rows.items())
    for first in range(0, len(items), 60):
        batch = items[first:first + 60]
        run(conn, "INSERT INTO ol VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(batch)), [v for k, q in batch for v in k + (q,)])
    check_reads(conn, rows)  # all in the cache
    checkpoint(conn)
    check_reads(conn, rows)  # all in storage

    conn.autocommit = False
    # Delivery's update by a prefix, a delete by a prefix, a key moved across prefixes,
    # an update of one key and new keys, each read back before the commit
    run(conn, "UPDATE ol SET q = q + ? WHERE w = ? AND d = ? AND o = ?", (1000, 1, 0, -1))
    for k in [k for k in rows if k[:3] == (1, 0, -1)]:
        rows[k] += 1000
    run(conn, "DELETE FROM ol WHERE w = ? AND d = ?", (2147483647, -1))
    for k in [k for k in rows if k[:2] == (2147483647, -1)]:
        del rows[k]
    run(conn, "UPDATE ol SET w = ?, o = ? WHERE w = ? AND d = ? AND o = ? AND n = ?", (-1, 7, 1, 0, 0, 32767))
    rows[(-1, 0, 7, 32767)] = rows.pop((1, 0, 0, 32767))
    run(conn, "UPDATE ol SET q = ? WHERE w = ? AND d = ? AND o = ? AND n = ?", (-5, 0, -1, -1, 0))
    rows[(0, -1, -1, 0)] = -5
    run(conn, "INSERT INTO ol VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)", (2, 5, 7, 1, 11, 1, 5, 9223372036854775807, -32767, 12))
    rows[(2, 5, 7, 1)] = 11
    rows[(1, 5, 9223372036854775807, -32767)] = 12
    check_reads(conn, rows)
    conn.commit()
    check_reads(conn, rows)
    conn.autocommit = True
    checkpoint(conn)
    check_reads(conn, rows)  # moved into storage in place
    # a key deleted after its checkpoint, and one written back, then checkpointed again
    run(conn, "DELETE FROM ol WHERE w = ? AND d = ? AND o = ? AND n = ?", (-1, 0, 7, 32767))
    del rows[(-1, 0, 7, 32767)]
    run(conn, "INSERT INTO ol VALUES (?, ?, ?, ?, ?)", (2147483647, -1, 0, 0, 99))
    rows[(2147483647, -1, 0, 0)] = 99
    check_reads(conn, rows)
    checkpoint(conn)
    check_reads(conn, rows)


def test_another_transaction_sees_its_snapshot_of_a_prefix(connect: Connect) -> None:
    """A prefix read filters the cache too: a reader whose snapshot predates a commit keeps
    its versions of those keys, and sees the commit once it begins anew."""
    writer, reader = connect(autocommit=True), connect()
    run(writer, "CREATE TABLE ol (w INTEGER, d INTEGER, o INTEGER, n INTEGER, q INTEGER, PRIMARY KEY (w, d, o, n))")
    run(writer, "INSERT INTO ol VALUES (1, 1, 1, 1, 10), (1, 1, 1, 2, 20), (1, 1, 2, 1, 30), (1, 2, 1, 1, 40)")
    checkpoint(writer)
    amount = "SELECT SUM(q) FROM ol WHERE w = ? AND d = ? AND o = ?"
    assert run(reader, amount, (1, 1, 1)) == [(30,)]
    run(writer, "UPDATE ol SET q = q + 1 WHERE w = ? AND d = ? AND o = ?", (1, 1, 1))
    run(writer, "DELETE FROM ol WHERE w = ? AND d = ? AND o = ? AND n = ?", (1, 1, 2, 1))
    assert run(reader, amount, (1, 1, 1)) == [(30,)]
    assert run(reader, "SELECT COUNT(*) FROM ol WHERE w = ? AND d = ?", (1, 1)) == [(3,)]
    reader.commit()
    assert run(reader, amount, (1, 1, 1)) == [(32,)]
    assert run(reader, "SELECT COUNT(*) FROM ol WHERE w = ? AND d = ?", (1, 1)) == [(2,)]
    reader.rollback()

"""Key filters (tique/rewrite/key_filters.py): a query's conditions on a tique table's key
columns alone also filter its scan snapshot's storage and cache, so that the engine reads
both through their key indexes; what the query answers is unchanged. Conditions on other
columns, and conditions whose table is null-extended where they stand, never move."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from sqlglot import exp, parse_one

import tique
from tique.catalog import Column, TableDef
from tique.checkpoint import checkpoint
from tique.rewrite.key_filters import key_filters

Connect = Callable[..., tique.Connection]
Row = tuple[int, int, Any]

KV = TableDef("kv", (Column("a", "INTEGER", True), Column("b", "INTEGER", True), Column("v", "VARCHAR(20)")), ("a", "b"), False)


def _moved(sql: str) -> list[str]:
    """The conditions key_filters moves into kv's snapshot in `sql`, as SQL over bare columns."""
    tree = parse_one(sql, read="postgres")
    ref = next(t for t in tree.find_all(exp.Table) if t.name == "kv")
    return [c.sql("postgres") for c in key_filters(KV, ref)]


def test_only_conditions_on_key_columns_alone_move() -> None:
    assert _moved("SELECT v FROM kv WHERE a = ? AND b >= ? AND b < ? AND v = 'x'") == ['"a" = ?', '"b" >= ?', '"b" < ?']
    assert _moved("SELECT v FROM kv AS t WHERE t.a IN (1, 2) AND NOT t.b BETWEEN -1 AND ?") == \
        ['"a" IN (1, 2)', 'NOT "b" BETWEEN -1 AND ?']
    assert _moved("SELECT v FROM kv WHERE (a = 1 OR b > 2) AND b IS NOT NULL") == ['("a" = 1 OR "b" > 2)', '"b" IS NOT NULL']
    # A non-key column anywhere in a condition, a function, arithmetic, a cast, a subquery,
    # another table's column, a column of a FROM item of another name.
    for condition in ["a = 1 OR v = 'x'", "ABS(a) = 1", "a + 1 = 2", "CAST(a AS TEXT) = '1'", "a IN (SELECT 1)",
                      "a = u.x", "u.a = 1", "EXISTS (SELECT 1 FROM u WHERE u.x = kv.a)", "a = RANDOM()"]:
        assert _moved(f"SELECT v FROM kv JOIN u ON u.x = kv.b WHERE {condition}") == [], condition


def test_conditions_move_only_where_the_table_is_not_null_extended() -> None:
    # The WHERE of a table on the null-extended side of an outer join filters NULL rows
    # the snapshot never holds: `b IS NULL` there asks for the unmatched rows.
    assert _moved("SELECT x FROM u LEFT JOIN kv ON kv.a = u.x WHERE kv.b IS NULL") == []
    assert _moved("SELECT x FROM kv RIGHT JOIN u ON kv.a = u.x WHERE kv.b IS NULL") == []
    assert _moved("SELECT x FROM kv FULL JOIN u ON kv.a = u.x WHERE kv.b < 3") == []
    assert _moved("SELECT x FROM u RIGHT JOIN kv ON kv.a = u.x WHERE kv.b < 3") == ['"b" < 3']
    assert _moved("SELECT x FROM kv LEFT JOIN u ON kv.a = u.x WHERE kv.b < 3") == ['"b" < 3']
    # Its own join's ON: an inner or LEFT join filters the table's rows before matching.
    assert _moved("SELECT x FROM u LEFT JOIN kv ON kv.a = u.x AND kv.b < 3") == ['"b" < 3']
    assert _moved("SELECT x FROM u JOIN kv ON kv.a = u.x AND kv.b < 3 WHERE kv.a > 0") == ['"a" > 0', '"b" < 3']
    assert _moved("SELECT x FROM kv RIGHT JOIN u ON kv.a = u.x AND kv.b < 3") == []
    # A join that merges columns: an unqualified name may be the merged one.
    assert _moved("SELECT x FROM u JOIN kv USING (a) WHERE a < 3 AND kv.b < 3") == ['"b" < 3']
    # Columns renamed by the alias.
    assert _moved("SELECT x FROM kv AS t(p, q, r) WHERE p < 3") == []


# Each: a condition on kv, its parameters, and what it means over (a, b, v).
CONDITIONS: list[tuple[str, tuple, Callable[[Row], bool]]] = [
    ("a = ? AND b >= ? AND b < ?", (2, 2, 9), lambda r: r[0] == 2 and 2 <= r[1] < 9),
    ("a = ? AND b BETWEEN ? AND ?", (1, 3, 12), lambda r: r[0] == 1 and 3 <= r[1] <= 12),
    ("a IN (?, ?) AND NOT (b > ?)", (1, 2, 6), lambda r: r[0] in (1, 2) and not r[1] > 6),
    ("(a = ? OR b > ?)", (3, 9), lambda r: r[0] == 3 or r[1] > 9),
    ("kv.b >= ? AND kv.a <> ?", (21, 3), lambda r: r[1] >= 21 and r[0] != 3),
    ("b < ? AND v LIKE ?", (5, "s%"), lambda r: r[1] < 5 and r[2] is not None and r[2].startswith("s")),
]


def _check(cur: Any) -> None:
    """Every condition answers, in `cur`'s transaction, what the unfiltered scan filtered answers."""
    cur.execute("SELECT a, b, v FROM kv")
    whole = sorted(cur.fetchall())
    for condition, params, holds in CONDITIONS:
        cur.execute(f"SELECT a, b, v FROM kv WHERE {condition} ORDER BY a, b", params)
        assert cur.fetchall() == [r for r in whole if holds(r)], condition
    # A table joined to itself: the range moves into each side's snapshot.
    cur.execute("SELECT k1.a, k1.b, k2.v FROM kv AS k1 JOIN kv AS k2 ON k2.a = k1.a + 1 AND k2.b = k1.b "
                "WHERE k1.a = ? AND k1.b >= ? AND k2.b < ? ORDER BY k1.b", (1, 2, 9))
    by_key = {(a, b): v for a, b, v in whole}
    assert cur.fetchall() == [(1, b, by_key[(2, b)]) for a, b, _ in whole if a == 1 and 2 <= b < 9 and (2, b) in by_key]


def test_key_filters_read_what_the_scan_reads(connect: Connect) -> None:
    """Through committed versions, deletes and key moves in the cache, a concurrent
    committer after the reader's snapshot, and the reader's own writes (updates, a
    delete, a key moved, a key deleted and written again)."""
    setup = connect()
    scur = setup.cursor()
    scur.execute("CREATE TABLE kv (a INTEGER, b INTEGER, v VARCHAR(20), PRIMARY KEY (a, b))")
    scur.executemany("INSERT INTO kv VALUES (?, ?, ?)", [(a, b, f"s{a}.{b}") for a in (1, 2, 3) for b in range(1, 11)])
    setup.commit()
    checkpoint(setup)  # the rows are storage rows
    scur.execute("UPDATE kv SET v = 'c1' WHERE a = 1 AND b <= 4")
    scur.execute("DELETE FROM kv WHERE a = 2 AND b = 5")
    scur.execute("UPDATE kv SET b = b + 20 WHERE a = 2 AND b >= 8")  # (2, 8..10) move to (2, 28..30)
    scur.execute("INSERT INTO kv VALUES (1, 11, 'n1'), (3, 25, NULL)")
    setup.commit()

    reader = connect()
    cur = reader.cursor()
    _check(cur)  # the snapshot is taken here
    cur.execute("SELECT a, b, v FROM kv")
    seen = sorted(cur.fetchall())
    # A concurrent committer: none of this is in the reader's snapshot.
    scur.execute("UPDATE kv SET v = 'late' WHERE a = 2 AND b <= 4")
    scur.execute("DELETE FROM kv WHERE a = 1 AND b = 6")
    scur.execute("UPDATE kv SET b = b + 40 WHERE a = 3 AND b <= 3")
    setup.commit()
    cur.execute("SELECT a, b, v FROM kv")
    assert sorted(cur.fetchall()) == seen
    _check(cur)
    # Own writes.
    cur.execute("UPDATE kv SET v = 'own' WHERE a = 3 AND b >= 4 AND b < 6")
    cur.execute("DELETE FROM kv WHERE a = 1 AND b = 3")
    cur.execute("UPDATE kv SET b = b + 10 WHERE a = 3 AND b = 7")  # (3, 7) moves to (3, 17)
    cur.execute("DELETE FROM kv WHERE a = 1 AND b = 2")
    cur.execute("INSERT INTO kv VALUES (1, 2, 'again')")
    cur.execute("INSERT INTO kv VALUES (2, 5, 'back')")  # deleted by a committed transaction, written again
    _check(cur)
    reader.commit()
    _check(setup.cursor())  # everything committed, in a new snapshot
    setup.commit()


def test_a_newer_version_failing_a_filter_still_hides_the_older_one(connect: Connect) -> None:
    """A condition on a non-key column stays above the version choice: the newest version
    fails it, so the key is not read, although its storage row passes it."""
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE kv (a INTEGER, b INTEGER, v VARCHAR(20), PRIMARY KEY (a, b))")
    cur.executemany("INSERT INTO kv VALUES (?, ?, ?)", [(1, b, "old") for b in range(1, 6)])
    setup.commit()
    checkpoint(setup)
    cur.execute("UPDATE kv SET v = 'new' WHERE a = 1 AND b = 2")
    setup.commit()
    reader = connect().cursor()
    reader.execute("SELECT b FROM kv WHERE a = ? AND b < ? AND v = ? ORDER BY b", (1, 4, "old"))
    assert reader.fetchall() == [(1,), (3,)]
    reader.execute("SELECT b FROM kv WHERE b < ? AND (v = ? OR a = ?) ORDER BY b", (4, "old", 9))
    assert reader.fetchall() == [(1,), (3,)]


def test_outer_joins_keep_their_null_extended_rows(connect: Connect) -> None:
    """A condition on a null-extended table's key stays where the query put it."""
    setup = connect()
    cur = setup.cursor()
    cur.execute("CREATE TABLE kv (a INTEGER, b INTEGER, v VARCHAR(20), PRIMARY KEY (a, b))")
    cur.execute("CREATE TABLE u (x INTEGER PRIMARY KEY)")
    cur.executemany("INSERT INTO kv VALUES (?, ?, ?)", [(a, b, "s") for a in (1, 2, 3) for b in range(1, 4)])
    cur.executemany("INSERT INTO u VALUES (?)", [(x,) for x in (1, 2, 3, 4)])
    setup.commit()
    checkpoint(setup)
    cur.execute("DELETE FROM kv WHERE a = 2")
    setup.commit()
    reader = connect().cursor()
    reader.execute("SELECT x FROM u LEFT JOIN kv ON kv.a = u.x WHERE kv.b IS NULL ORDER BY x")
    assert reader.fetchall() == [(2,), (4,)]
    reader.execute("SELECT x FROM kv RIGHT JOIN u ON kv.a = u.x WHERE kv.b IS NULL ORDER BY x")
    assert reader.fetchall() == [(2,), (4,)]
    reader.execute("SELECT x, b FROM u LEFT JOIN kv ON kv.a = u.x AND kv.b > ? ORDER BY x, b", (1,))
    assert reader.fetchall() == [(1, 2), (1, 3), (2, None), (3, 2), (3, 3), (4, None)]
    reader.execute("SELECT x, b FROM kv RIGHT JOIN u ON kv.a = u.x AND kv.b > ? ORDER BY x, b", (2,))
    assert reader.fetchall() == [(1, 3), (2, None), (3, 3), (4, None)]


def _scans_of(explained: str, table: str) -> list[tuple[str, str]]:
    """Each plan node scanning `table` in an EXPLAIN text: its line, and its conditions."""
    lines = explained.splitlines()
    found = []
    for i, line in enumerate(lines):
        if f" on {table} " in line or line.rstrip().endswith(f" on {table}") or f"Index Scan on {table}" in line:
            depth = len(line) - len(line.lstrip())
            conditions = []
            for below in lines[i + 1:]:
                if below.lstrip().startswith("->") or len(below) - len(below.lstrip()) <= depth:
                    break
                conditions.append(below.strip())
            found.append((line.strip(), " ".join(conditions)))
    return found


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_key_range_reads_the_cache_through_its_key_index_on_postgres(connect, url) -> None:  # type: ignore[no-untyped-def]
    """TPC-C Stock-Level's order lines (a district, a range of orders) with many committed
    versions of the district's other orders in the cache: both sides of the scan
    snapshot's anti-join read the cache through its key index by the range, not every
    cached line of the district. Asserted on the plan, not on time."""
    import psycopg

    from tique.planner import ReadPlan, make_plan
    from tique.rewrite.snapshot import Formulation

    setup = connect(autocommit=True)
    cur = setup.cursor()
    cur.execute("CREATE TABLE order_line (ol_w_id INTEGER, ol_d_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, "
                "ol_i_id INTEGER, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))")
    cur.execute("CREATE TABLE stock (s_w_id INTEGER, s_i_id INTEGER, s_quantity INTEGER, PRIMARY KEY (s_w_id, s_i_id))")
    cur.executemany("INSERT INTO stock VALUES (?, ?, ?)", [(1, i, i % 100) for i in range(1, 501)])
    with setup.cursor() as load:
        load.executemany("INSERT INTO order_line VALUES (?, ?, ?, ?, ?)",
                         [(1, d, o, n, (o * 7 + n) % 500 + 1) for d in (1, 2) for o in range(1, 101) for n in range(1, 11)])
    checkpoint(setup)
    cur.execute("UPDATE order_line SET ol_i_id = ol_i_id + 1 WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id <= 80")
    sql = ("SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id = ol_i_id "
           "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ?")
    values = (1, 1, 101, 81, 1, 50)
    reader = connect().cursor()
    reader.execute(sql, values)
    lines = {(o, n): (o * 7 + n) % 500 + 1 + (1 if o <= 80 else 0) for o in range(1, 101) for n in range(1, 11)}
    assert reader.fetchall() == [(len({i for (o, _), i in lines.items() if 81 <= o < 101 and i % 100 < 50}),)]

    conn = tique.connect(url)
    plan = make_plan(sql, conn.backend, conn._snapshot, Formulation.AUTO, frozenset())
    assert isinstance(plan, ReadPlan)
    txid, sts = conn.backend.oracle.begin(conn._raw)
    bound = plan.statement.values(values, {"tq_txid": txid, "tq_sts": sts, "tq_seq_limit": 1})
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor) as raw:
        raw.execute("ANALYZE order_line_cache")
        explained = "\n".join(r[0] for r in raw.cursor().execute("EXPLAIN " + plan.statement.sql, bound).fetchall())
    conn.backend.oracle.end(conn._raw, txid)
    conn.close()
    scans = _scans_of(explained, "order_line_cache")
    assert len(scans) >= 2, explained  # the anti-join's side and the cached versions' side
    for node, conditions in scans:
        assert "Index" in node and "ol_o_id <" in conditions and "ol_o_id >=" in conditions, explained

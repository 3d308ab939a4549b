"""Differential reads: a rewritten SELECT returns exactly what the same SELECT returns over
plain tables holding exactly the snapshot's rows.

The reference is a second, plain database on the same engine (no tique; on MonetDB a
second schema on the same server), with the same schema under the same names. Every
write the reader's snapshot must contain is run on both sides with the same text and
parameters; writes the reader must not see (rolled back, aborted, uncommitted,
committed after its snapshot) run on the tique side only. So each query below runs with
byte-identical text on both sides (MonetDB gets its own spelling of the few it spells
differently), and any difference in rows or column names is tique's.
"""
from __future__ import annotations

import datetime as dt
import itertools
import re
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence
from urllib.parse import urlsplit

import duckdb
import psycopg
import pytest

import tique
from tique.checkpoint import checkpoint

SCHEMA = (
    "CREATE TABLE customers (c_id INTEGER PRIMARY KEY, c_name VARCHAR(40) NOT NULL, c_city VARCHAR(20),"
    " c_balance DECIMAL(12, 2), c_since DATE)",
    "CREATE TABLE orders (o_c_id INTEGER NOT NULL, o_id INTEGER NOT NULL, o_date DATE NOT NULL, o_status VARCHAR(10),"
    " o_total DECIMAL(12, 2), PRIMARY KEY (o_c_id, o_id))",
    "CREATE TABLE order_lines (ol_c_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, ol_item TEXT NOT NULL,"
    " ol_qty INTEGER, ol_amount DECIMAL(10, 2), PRIMARY KEY (ol_c_id, ol_o_id, ol_number))",
    # No primary key: tique keys it by a hidden row id, and identical rows may repeat.
    "CREATE TABLE events (ev_c_id INTEGER, ev_kind VARCHAR(10), ev_at DATE, ev_amount DECIMAL(10, 2), ev_note TEXT)",
)
NATIVE_TABLE = "CREATE TABLE regions (city VARCHAR(20), region VARCHAR(10))"
REGIONS = (("Oslo", "north"), ("Lima", "south"), ("Pune", "east"), ("Kyiv", "north"))

CITIES = ("Oslo", "Lima", "Pune", "Quito", None)
ITEMS = ("apple", "pear", "plum", "fig", "kiwi", "lime")
STATUSES = ("new", "paid", "shipped", None)
DAY0 = dt.date(2023, 1, 1)


def customer_rows() -> list[tuple]:
    rows = []
    for i in range(1, 25):
        balance = None if i % 7 == 0 else Decimal(i * 37 % 500) + Decimal("0.25") * (i % 4)
        since = None if i % 9 == 0 else DAY0 - dt.timedelta(days=i * 41)
        rows.append((i, f"Customer {i:02d}", CITIES[i % 5], balance, since))
    return rows


def order_rows() -> list[tuple]:
    rows = []
    for c in range(1, 21):  # customers 21..24 start without orders
        for o in range(1, c % 4 + 2):
            rows.append((c, o, DAY0 + dt.timedelta(days=(c * 7 + o * 3) % 60), STATUSES[(c + o) % 4],
                         Decimal(c * 11 + o * 5) + Decimal("0.99")))
    rows.append((99, 1, DAY0, "new", Decimal("5.00")))  # its customer does not exist
    return rows


def line_rows() -> list[tuple]:
    rows = []
    for c, o, *_ in order_rows():
        for n in range(1, (c + o) % 3 + 2):
            qty = None if (c + o + n) % 11 == 0 else (c + n) % 5 + 1
            rows.append((c, o, n, ITEMS[(c * o + n) % 6], qty, Decimal((c * 13 + o * 7 + n * 3) % 90) + Decimal(n) / 100))
    return rows


def event_rows() -> list[tuple]:
    kinds = ("visit", "refund", "call")
    rows = []
    for i in range(30):
        rows.append((None if i % 10 == 9 else i % 12 + 1, kinds[i % 3], DAY0 + dt.timedelta(days=i % 17),
                     None if i % 8 == 0 else Decimal(i * 3) + Decimal("0.5"), None if i % 5 == 0 else f"note {i % 4}"))
    rows.append(rows[3])  # an exact duplicate
    return rows


def multi_insert(table: str, rows: Sequence[tuple]) -> tuple[str, tuple]:
    """One INSERT of many rows, every value a parameter."""
    marks = "(" + ", ".join("?" * len(rows[0])) + ")"
    return f"INSERT INTO {table} VALUES " + ", ".join([marks] * len(rows)), tuple(itertools.chain.from_iterable(rows))


# -- the reference database ------------------------------------------------------------------

def numbered(sql: str) -> str:
    """`?` -> `$n`, which both engines' own drivers accept (no query here has a `?` inside a literal)."""
    counter = itertools.count(1)
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def formatted(sql: str) -> str:
    """`?` -> `%s` with a literal `%` doubled, as pymonetdb binds (no query here has a `?` inside a literal)."""
    return sql.replace("%", "%%").replace("?", "%s")


class Reference:
    """A plain database of the same engine, written and read without tique. On MonetDB,
    whose tests share one server, it is a schema of its own next to the test's."""

    def __init__(self, engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.engine = engine
        if engine == "duckdb":
            self.conn: Any = duckdb.connect(str(tmp_path / f"reference-{uuid.uuid4().hex[:8]}.db"))
        elif engine == "monetdb":
            import pymonetdb

            parts = urlsplit(request.getfixturevalue("monetdb_server").url)
            self.conn = pymonetdb.connect(hostname=parts.hostname, port=parts.port, username=parts.username,
                                          password=parts.password, database=parts.path.lstrip("/"), autocommit=True)
            self.schema = f"reference_{uuid.uuid4().hex[:12]}"
            self.conn.cursor().execute(f"CREATE SCHEMA {self.schema}")
            self.conn.cursor().execute(f"SET SCHEMA {self.schema}")
        else:
            url = request.getfixturevalue("pg_cluster").create_database(f"reference_{uuid.uuid4().hex[:12]}")
            self.conn = psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor, connect_timeout=10)

    def _execute(self, sql: str, params: Sequence[Any]) -> Any:
        cur = self.conn.cursor()
        if self.engine == "monetdb":
            cur.execute(formatted(sql) if params else sql, list(params))
        else:
            cur.execute(numbered(sql), list(params))
        return cur

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Runs DDL or DML; returns the rows it wrote."""
        cur = self._execute(sql, params)
        if self.engine == "duckdb":
            row = cur.fetchone() if cur.description else None
            return int(row[0]) if row else -1
        return int(cur.rowcount)

    def query(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple]]:
        cur = self._execute(sql, params)
        return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]

    def close(self) -> None:
        if self.engine == "monetdb":  # the server outlives the test
            self.conn.cursor().execute("SET SCHEMA sys")
            self.conn.cursor().execute(f"DROP SCHEMA {self.schema} CASCADE")
        self.conn.close()


@pytest.fixture
def reference(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Reference]:
    ref = Reference(engine, tmp_path, request)
    yield ref
    ref.close()


class Q(NamedTuple):
    name: str
    sql: str
    params: tuple = ()
    ordered: bool = False  # compare as lists: ORDER BY determines every row's position


def compare(cur: tique.Cursor, reference: Reference, q: Q, *, may_be_empty: bool = False) -> str | None:
    """None when tique and the reference agree on column names and rows, else what differs."""
    expected_names, expected = reference.query(q.sql, q.params)
    assert expected or may_be_empty, f"{q.name}: the reference returns no rows, so the comparison would prove little"
    try:
        cur.execute(q.sql, q.params)
        names, got = [d[0] for d in cur.description or ()], cur.fetchall()
    except tique.Error as error:
        return f"{q.name}: tique raised {type(error).__name__}: {error}"
    if names != expected_names:
        return f"{q.name}: column names {names} != native {expected_names}"
    if q.ordered:
        if got != expected:
            return f"{q.name}: rows differ (ordered)\n  tique:  {got}\n  native: {expected}"
    elif Counter(got) != Counter(expected):
        missing, extra = Counter(expected) - Counter(got), Counter(got) - Counter(expected)
        return f"{q.name}: rows differ\n  missing: {sorted(missing.elements(), key=repr)}\n  extra:   {sorted(extra.elements(), key=repr)}"
    return None


# -- the state ---------------------------------------------------------------------------------

class World:
    """Runs writes through tique and, when the reader must see them, on the reference too."""

    def __init__(self, reference: Reference) -> None:
        self.reference = reference

    def visible(self, cur: tique.Cursor, sql: str, params: tuple = ()) -> None:
        cur.execute(sql, params)
        written = self.reference.write(sql, params)
        assert cur.rowcount == written, f"rowcount {cur.rowcount} != native {written} for {sql}"

    @staticmethod
    def hidden(cur: tique.Cursor, sql: str, params: tuple = ()) -> None:
        cur.execute(sql, params)


def build(connect: Callable[..., tique.Connection], reference: Reference, formulation: str) -> tuple[tique.Connection, tique.Connection]:
    """Builds a state whose snapshot differs from storage; returns (reader, admin).

    The reader's transaction is left open with its own uncommitted writes, next to a
    concurrent uncommitted writer and after two transactions committed past its snapshot.
    """
    world = World(reference)
    admin = connect(static_tables=["regions"])
    cur = admin.cursor()
    for ddl in (*SCHEMA, NATIVE_TABLE):
        cur.execute(ddl)
        reference.write(ddl)
    for row in REGIONS:
        world.visible(cur, "INSERT INTO regions VALUES (?, ?)", row)

    # A: the initial rows, checkpointed into storage.
    for table, rows in (("customers", customer_rows()), ("orders", order_rows()),
                        ("order_lines", line_rows()), ("events", event_rows())):
        world.visible(cur, *multi_insert(table, rows))
    admin.commit()
    checkpoint(admin)

    # B and C: committed, left in the cache (several versions of some keys, moved keys, tombstones).
    world.visible(cur, "UPDATE customers SET c_balance = c_balance + ? WHERE c_city = ?", (Decimal("10.05"), "Oslo"))
    world.visible(cur, "UPDATE customers SET c_city = NULL, c_name = ? WHERE c_id = ?", ("O'Hara", 3))
    world.visible(cur, "DELETE FROM order_lines WHERE ol_c_id = ? AND ol_o_id = ?", (2, 1))
    world.visible(cur, "DELETE FROM orders WHERE o_c_id = ? AND o_id = ?", (2, 1))
    world.visible(cur, *multi_insert("orders", [(21, 1, DAY0, "new", Decimal("7.10")), (21, 2, DAY0, None, None)]))
    world.visible(cur, *multi_insert("order_lines", [(21, 1, 1, "fig", 2, Decimal("3.55")), (21, 1, 2, "kiwi", None, Decimal("0.45")),
                                                     (21, 2, 1, "pear", 1, None)]))
    world.visible(cur, "UPDATE orders SET o_id = o_id + 100 WHERE o_c_id = ?", (4,))
    world.visible(cur, "UPDATE order_lines SET ol_o_id = ol_o_id + 100 WHERE ol_c_id = ?", (4,))
    world.visible(cur, "UPDATE events SET ev_amount = ev_amount * 2 WHERE ev_kind = ?", ("refund",))
    world.visible(cur, "DELETE FROM events WHERE ev_c_id = ?", (5,))
    world.visible(cur, *multi_insert("events", [event_rows()[3], (7, "call", DAY0, Decimal("1.25"), "again")]))
    world.visible(cur, "INSERT INTO events VALUES (?, ?, ?, ?, ?)", (None, "call", None, None, None))
    admin.commit()
    with pytest.raises(tique.IntegrityError):  # a failed statement aborts its transaction and leaves nothing behind
        cur.execute("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (1, "Duplicate", "Oslo", None, None))
    admin.rollback()

    world.visible(cur, "UPDATE customers SET c_balance = c_balance - ? WHERE c_id IN (?, ?)", (Decimal("1.10"), 1, 3))
    world.visible(cur, "DELETE FROM customers WHERE c_id = ?", (6,))
    world.visible(cur, "INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (6, "Reborn", "Lima", Decimal("0.00"), DAY0))
    world.visible(cur, "UPDATE order_lines SET ol_qty = ol_qty + 1 WHERE ol_item = ?", ("plum",))
    world.visible(cur, "UPDATE orders SET o_total = (SELECT sum(l.ol_amount) FROM order_lines AS l"
                       " WHERE l.ol_c_id = orders.o_c_id AND l.ol_o_id = orders.o_id) WHERE o_c_id <= ?", (3,))
    world.visible(cur, "UPDATE customers SET c_balance = c_balance + 1 FROM regions"
                       " WHERE regions.city = customers.c_city AND regions.region = ?", ("south",))
    world.visible(cur, "DELETE FROM events WHERE ev_kind = ? AND ev_amount < ?", ("visit", Decimal("20")))
    admin.commit()

    # Two writers of one key: the first commits (visible), the second aborts (invisible).
    x1, x2 = connect(), connect()
    world.visible(x1.cursor(), "UPDATE customers SET c_name = ? WHERE c_id = ?", ("Winner", 7))
    world.hidden(x2.cursor(), "UPDATE customers SET c_balance = ? WHERE c_id = ?", (Decimal("-1"), 7))
    world.hidden(x2.cursor(), "INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (22, 1, DAY0, "lost", Decimal("1")))
    x1.commit()
    with pytest.raises(tique.SerializationFailure):
        x2.commit()

    # Rolled back: invisible.
    rolled = connect()
    world.hidden(rolled.cursor(), "UPDATE customers SET c_balance = 0")
    world.hidden(rolled.cursor(), "DELETE FROM orders WHERE o_c_id = ?", (1,))
    world.hidden(rolled.cursor(), "INSERT INTO events VALUES (?, ?, ?, ?, ?)", (1, "rolled", DAY0, Decimal("9"), "x"))
    rolled.rollback()

    # Uncommitted during every read: invisible.
    writer = connect()
    wcur = writer.cursor()
    world.hidden(wcur, "UPDATE customers SET c_balance = c_balance * 100")
    world.hidden(wcur, "DELETE FROM orders WHERE o_c_id = ?", (1,))
    world.hidden(wcur, "INSERT INTO order_lines VALUES (?, ?, ?, ?, ?, ?)", (1, 1, 9, "uncommitted", 1, Decimal("1")))
    world.hidden(wcur, "UPDATE events SET ev_note = ?", ("uncommitted",))
    world.hidden(wcur, "INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (50, "Uncommitted", "Oslo", None, None))

    # Begins before the reader, commits after it: invisible.
    early = connect()
    world.hidden(early.cursor(), "UPDATE orders SET o_status = ? WHERE o_c_id = ?", ("late", 8))
    world.hidden(early.cursor(), "INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (60, "Late", "Pune", Decimal("1"), DAY0))

    reader = connect(snapshot=formulation)
    rcur = reader.cursor()
    rcur.execute("SELECT count(*) FROM customers")  # takes the snapshot
    rcur.fetchall()
    early.commit()

    # Begins and commits after the reader: invisible.
    late = connect()
    world.hidden(late.cursor(), "DELETE FROM customers WHERE c_id = ?", (9,))
    world.hidden(late.cursor(), "UPDATE order_lines SET ol_amount = 0")
    world.hidden(late.cursor(), "INSERT INTO events VALUES (?, ?, ?, ?, ?)", (2, "late", DAY0, Decimal("3"), None))
    late.commit()

    # The reader's own writes: visible to it alone.
    world.visible(rcur, "INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (70, "Own row", "Oslo", Decimal("12.34"), DAY0))
    world.visible(rcur, "UPDATE customers SET c_id = c_id + 1000 WHERE c_id = ?", (10,))
    world.visible(rcur, "UPDATE orders SET o_status = ?, o_total = o_total * 2 WHERE o_c_id = ?", ("held", 8))
    world.visible(rcur, "DELETE FROM order_lines WHERE ol_qty > ?", (4,))
    world.visible(rcur, "UPDATE events SET ev_amount = ? WHERE ev_c_id IS NULL", (Decimal("0.01"),))
    world.visible(rcur, "INSERT INTO events SELECT c_id, 'own', c_since, c_balance, c_name FROM customers WHERE c_city = ?", ("Lima",))
    world.visible(rcur, "DELETE FROM customers WHERE c_id = ?", (11,))
    world.visible(rcur, "INSERT INTO customers (c_id, c_name) VALUES (?, ?)", (11, "Eleven again"))
    # A native table written from the snapshot (the engine commits it at once).
    world.visible(rcur, "INSERT INTO regions SELECT c_city, 'seen' FROM customers WHERE c_balance > ?", (Decimal("300"),))
    return reader, admin


QUERIES = (
    # point lookups by the full key (rank path under 'auto') and range scans
    Q("point_customer_reinserted", "SELECT * FROM customers WHERE c_id = ?", (6,)),
    Q("point_customer_moved_key", "SELECT c_id, c_name FROM customers WHERE c_id = ?", (1010,)),
    Q("point_customer_deleted_later", "SELECT c_name, c_balance FROM customers WHERE c_id = ?", (9,)),
    Q("point_order_moved_key", "SELECT o_date, o_status, o_total FROM orders WHERE o_c_id = ? AND o_id = ?", (4, 101)),
    Q("point_order_line", "SELECT * FROM order_lines WHERE ol_c_id = ? AND ol_o_id = ? AND ol_number = ?", (3, 1, 2)),
    Q("point_key_in_join", "SELECT c.c_name, o.o_id, o.o_status FROM customers AS c JOIN orders AS o ON o.o_c_id = c.c_id"
      " WHERE c.c_id = ?", (8,)),
    Q("range_customers", "SELECT c_id, c_balance FROM customers WHERE c_id BETWEEN ? AND ? ORDER BY c_id", (3, 12), True),
    Q("range_orders_dates", "SELECT * FROM orders WHERE o_c_id >= ? AND o_date < ?", (3, DAY0 + dt.timedelta(days=40))),
    Q("scan_customers", "SELECT * FROM customers"),
    Q("scan_orders", "SELECT * FROM orders"),
    Q("scan_order_lines", "SELECT * FROM order_lines"),
    Q("scan_events_without_key", "SELECT * FROM events"),
    # joins
    Q("inner_join_three", "SELECT c.c_name, o.o_id, ol.ol_number, ol.ol_amount FROM customers AS c"
      " JOIN orders AS o ON o.o_c_id = c.c_id JOIN order_lines AS ol ON ol.ol_c_id = o.o_c_id AND ol.ol_o_id = o.o_id"
      " WHERE c.c_city = ?", ("Oslo",)),
    Q("left_join_anti", "SELECT c.c_id FROM customers AS c LEFT JOIN orders AS o ON o.o_c_id = c.c_id WHERE o.o_id IS NULL"),
    Q("full_join", "SELECT c.c_id, o.o_c_id, o.o_id FROM customers AS c FULL JOIN orders AS o ON o.o_c_id = c.c_id"),
    Q("self_join", "SELECT a.c_id, b.c_id FROM customers AS a JOIN customers AS b ON a.c_city = b.c_city AND a.c_id < b.c_id"),
    Q("comma_join_unaliased", "SELECT customers.c_id, orders.o_id FROM customers, orders"
      " WHERE customers.c_id = orders.o_c_id AND orders.o_status IS NULL"),
    Q("native_and_tique", "SELECT r.region, count(c.c_id), sum(c.c_balance) FROM regions AS r"
      " LEFT JOIN customers AS c ON c.c_city = r.city GROUP BY r.region"),
    Q("native_full_join", "SELECT r.city, c.c_id FROM customers AS c FULL JOIN regions AS r ON r.city = c.c_city"),
    # subqueries
    Q("scalar_correlated", "SELECT c_id, (SELECT count(*) FROM orders AS o WHERE o.o_c_id = c.c_id) AS n_orders FROM customers AS c"),
    Q("in_subquery", "SELECT c_id, c_name FROM customers WHERE c_id IN (SELECT o_c_id FROM orders WHERE o_status = ?)", ("paid",)),
    Q("not_exists_correlated", "SELECT o_c_id, o_id FROM orders AS o WHERE NOT EXISTS"
      " (SELECT 1 FROM order_lines AS l WHERE l.ol_c_id = o.o_c_id AND l.ol_o_id = o.o_id)"),
    Q("exists_with_param", "SELECT c_id FROM customers AS c WHERE EXISTS"
      " (SELECT 1 FROM events AS e WHERE e.ev_c_id = c.c_id AND e.ev_amount > ?)", (Decimal("10"),)),
    Q("scalar_in_where", "SELECT o_c_id, o_id, o_total FROM orders WHERE o_total > (SELECT avg(o_total) FROM orders)"),
    Q("all_subquery", "SELECT o_c_id, o_id FROM orders WHERE o_total >= ALL (SELECT o_total FROM orders WHERE o_total IS NOT NULL)"),
    Q("row_in_subquery", "SELECT ol_c_id, ol_o_id, ol_number FROM order_lines"
      " WHERE (ol_c_id, ol_o_id) IN (SELECT o_c_id, o_id FROM orders WHERE o_status = ?)", ("new",)),
    Q("derived_table", "SELECT x.c, count(*) FROM (SELECT o_c_id AS c FROM orders WHERE o_total IS NOT NULL) AS x"
      " GROUP BY x.c HAVING count(*) >= ?", (2,)),
    Q("table_alias_columns", "SELECT x.a, x.b FROM customers AS x(a, b, c, d, e) WHERE x.a < ?", (8,)),
    Q("lateral", "SELECT c.c_id, x.n FROM customers AS c, LATERAL (SELECT count(*) AS n, sum(o.o_total) AS t FROM orders AS o"
      " WHERE o.o_c_id = c.c_id) AS x WHERE x.n > ?", (1,)),
    Q("join_using", "SELECT o_c_id, o_id, count(*) FROM orders JOIN (SELECT ol_c_id AS o_c_id, ol_o_id AS o_id FROM order_lines) AS l"
      " USING (o_c_id, o_id) GROUP BY o_c_id, o_id"),
    Q("qualified_star", "SELECT o.*, c.c_name FROM orders AS o JOIN customers AS c ON c.c_id = o.o_c_id WHERE c.c_id IN (?, ?, ?)",
      (8, 6, 1010)),
    Q("key_or_key", "SELECT c_id, c_city FROM customers WHERE c_id = ? OR c_id = ?", (70, 11)),
    Q("counts_everywhere", "SELECT (SELECT count(*) FROM customers) AS c, (SELECT count(*) FROM orders) AS o,"
      " (SELECT count(*) FROM order_lines) AS ol, (SELECT count(*) FROM events) AS e"),
    # CTEs
    Q("cte", "WITH big AS (SELECT o_c_id, sum(o_total) AS spent FROM orders GROUP BY o_c_id)"
      " SELECT c.c_name, big.spent FROM customers AS c JOIN big ON big.o_c_id = c.c_id WHERE big.spent > ?", (Decimal("50"),)),
    Q("cte_shadows_table", "WITH orders AS (SELECT * FROM orders WHERE o_status = ?)"
      " SELECT o_c_id, count(*) FROM orders GROUP BY o_c_id", ("paid",)),
    Q("cte_shadows_in_inner_scope_only", "SELECT (SELECT count(*) FROM customers) AS total,"
      " (SELECT count(*) FROM (WITH customers AS (SELECT city FROM regions) SELECT * FROM customers) AS r) AS shadowed"),
    Q("cte_chain_shadowing", "WITH customers AS (SELECT * FROM customers WHERE c_city = ?),"
      " rich AS (SELECT * FROM customers WHERE c_balance > ?) SELECT c_id FROM rich", ("Oslo", Decimal("100"))),
    Q("recursive_cte", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
      " SELECT n.i, count(o.o_id) FROM n LEFT JOIN orders AS o ON o.o_id = n.i GROUP BY n.i", (5,)),
    # aggregates
    Q("group_having", "SELECT o_status, count(*), sum(o_total) FROM orders GROUP BY o_status HAVING count(*) > ?", (2,)),
    Q("aggregate_no_key_table", "SELECT ev_kind, count(*), sum(ev_amount), min(ev_at), max(ev_note) FROM events GROUP BY ev_kind"),
    Q("rollup", "SELECT c_city, count(*), sum(c_balance) FROM customers GROUP BY ROLLUP (c_city)"),
    Q("aggregate_filter", "SELECT ol_item, count(*) FILTER (WHERE ol_qty > ?) AS many, sum(ol_amount) FILTER"
      " (WHERE ol_qty IS NULL) AS unknown_qty FROM order_lines GROUP BY 1", (2,)),
    Q("count_distinct", "SELECT count(DISTINCT o_c_id), count(o_status), count(*) FROM orders"),
    # windows
    Q("window_running_sum", "SELECT ol_c_id, ol_o_id, ol_number, sum(ol_amount) OVER (PARTITION BY ol_c_id, ol_o_id"
      " ORDER BY ol_number) AS running, rank() OVER (ORDER BY ol_amount DESC NULLS LAST) AS r FROM order_lines"),
    Q("window_row_number", "SELECT c_id, row_number() OVER (PARTITION BY c_city ORDER BY c_balance DESC NULLS LAST, c_id) AS rn"
      " FROM customers"),
    # set operations
    Q("union", "SELECT c_city FROM customers UNION SELECT city FROM regions"),
    Q("union_all", "SELECT ev_c_id FROM events UNION ALL SELECT o_c_id FROM orders"),
    Q("intersect", "SELECT c_id FROM customers INTERSECT SELECT o_c_id FROM orders"),
    Q("except", "SELECT c_id FROM customers EXCEPT SELECT ev_c_id FROM events"),
    # ordering, paging, distinct, expressions
    Q("order_limit_offset", "SELECT o_c_id, o_id, o_total FROM orders ORDER BY o_total DESC NULLS LAST, o_c_id, o_id"
      " LIMIT ? OFFSET ?", (6, 3), True),
    Q("top_n_join", "SELECT c.c_id, t.total FROM customers AS c JOIN (SELECT ol_c_id, sum(ol_amount * ol_qty) AS total"
      " FROM order_lines GROUP BY ol_c_id) AS t ON t.ol_c_id = c.c_id ORDER BY t.total DESC NULLS LAST, c.c_id LIMIT 5", (), True),
    Q("distinct", "SELECT DISTINCT ol_item FROM order_lines"),
    Q("distinct_on", "SELECT DISTINCT ON (o_c_id) o_c_id, o_id, o_total FROM orders ORDER BY o_c_id, o_id DESC", (), True),
    Q("expressions", "SELECT c_id, coalesce(c_city, 'none') AS city, upper(c_name) AS up, CASE WHEN c_balance IS NULL"
      " THEN 'unknown' WHEN c_balance > ? THEN 'high' ELSE 'low' END AS band FROM customers WHERE c_name LIKE ?",
      (Decimal("100"), "%e%")),
    Q("nulls", "SELECT count(*) FROM customers WHERE c_balance IS NULL OR c_since IS NULL"),
    Q("upper_case_name", "SELECT count(*) FROM CUSTOMERS WHERE C_CITY IS NOT NULL"),
)


# MonetDB (11.45) spells three of these differently: no aggregate FILTER, no DISTINCT ON
# (so the same questions, asked as MonetDB asks them), and no WITH RECURSIVE at all.
MONETDB_SPELLINGS: dict[str, Q | None] = {
    "aggregate_filter": Q("aggregate_filter", "SELECT ol_item, count(CASE WHEN ol_qty > ? THEN 1 END) AS many,"
                          " sum(CASE WHEN ol_qty IS NULL THEN ol_amount END) AS unknown_qty FROM order_lines GROUP BY ol_item", (2,)),
    "distinct_on": Q("distinct_on", "SELECT o_c_id, o_id, o_total FROM (SELECT o_c_id, o_id, o_total, row_number() OVER"
                     " (PARTITION BY o_c_id ORDER BY o_id DESC) AS rn FROM orders) AS firsts WHERE rn = 1 ORDER BY o_c_id, o_id DESC",
                     (), True),
    "recursive_cte": None,
}


def queries(engine: str) -> list[Q]:
    if engine != "monetdb":
        return list(QUERIES)
    spelled = [MONETDB_SPELLINGS.get(q.name, q) for q in QUERIES]
    return [q for q in spelled if q is not None]


def check_all(cur: tique.Cursor, reference: Reference) -> list[str]:
    return [problem for q in queries(reference.engine) if (problem := compare(cur, reference, q)) is not None]


@pytest.mark.parametrize("formulation", ["rank", "scan", "auto"])
def test_reads_match_plain_tables_holding_the_snapshot(
    formulation: str, connect: Callable[..., tique.Connection], reference: Reference, native: Callable[[str], list[tuple]],
) -> None:
    reader, admin = build(connect, reference, formulation)
    cur = reader.cursor()

    # The state is what the test claims: storage is stale, and the hidden writes do exist.
    _, snapshot_customers = reference.query("SELECT * FROM customers")
    assert Counter(native("SELECT * FROM customers_storage")) != Counter(snapshot_customers)
    with connect() as fresh:
        seen = {r[0] for r in fresh.cursor().execute("SELECT c_id FROM customers").fetchall()}
    assert 60 in seen and 9 not in seen and 70 not in seen  # the late commits, not the reader's writes

    problems = check_all(cur, reference)
    assert not problems, "\n".join(problems)

    # The checkpointer may move versions into storage while the reader runs; its snapshot stays put.
    checkpoint(admin)
    problems = check_all(cur, reference)
    assert not problems, "after a checkpoint:\n" + "\n".join(problems)
    reader.rollback()


def test_one_text_many_parameters_and_snapshots(connect: Callable[..., tique.Connection], reference: Reference) -> None:
    """A cached plan binds each execution's parameters and the transaction's own state afresh."""
    reader, _ = build(connect, reference, "auto")
    cur = reader.cursor()
    world = World(reference)
    point = "SELECT * FROM customers WHERE c_id = ?"
    scan = "SELECT c_id, c_name FROM customers WHERE c_id BETWEEN ? AND ? ORDER BY c_id"
    problems = []
    for key in (6, 1010, 9, 10, 60, 50, 70, 12):  # reinserted, moved, deleted later, moved away, late, uncommitted, own, plain
        problems.append(compare(cur, reference, Q(f"point {key}", point, (key,)), may_be_empty=True))
    for low, high in ((1, 5), (6, 12), (50, 2000)):
        problems.append(compare(cur, reference, Q(f"range {low}..{high}", scan, (low, high), True)))
    # Own writes between executions of the same text: each one sees the statements before it.
    world.visible(cur, "UPDATE customers SET c_name = ? WHERE c_id = ?", ("Renamed", 12))
    problems.append(compare(cur, reference, Q("point after own update", point, (12,))))
    world.visible(cur, "DELETE FROM customers WHERE c_id = ?", (12,))
    problems.append(compare(cur, reference, Q("point after own delete", point, (12,)), may_be_empty=True))
    problems.append(compare(cur, reference, Q("range after own delete", scan, (6, 12), True)))
    failed = [p for p in problems if p is not None]
    assert not failed, "\n".join(failed)


def test_cached_plan_reads_each_transaction_at_its_own_snapshot(connect: Callable[..., tique.Connection]) -> None:
    setup = connect()
    setup.cursor().execute(SCHEMA[0])
    setup.cursor().execute("INSERT INTO customers (c_id, c_name) VALUES (?, ?), (?, ?)", (1, "first", 2, "second"))
    setup.commit()
    reader, writer = connect(), connect()
    rcur, wcur = reader.cursor(), writer.cursor()
    point = "SELECT c_name FROM customers WHERE c_id = ?"

    def name(key: int) -> list[tuple]:
        return rcur.execute(point, (key,)).fetchall()

    assert name(1) == [("first",)]
    wcur.execute("UPDATE customers SET c_name = ? WHERE c_id = ?", ("changed", 1))
    writer.commit()
    assert name(1) == [("first",)] and name(2) == [("second",)]  # same transaction, same snapshot
    reader.commit()
    assert name(1) == [("changed",)]  # a new transaction, a new snapshot, the same plan
    wcur.execute("DELETE FROM customers WHERE c_id = ?", (2,))
    writer.commit()
    reader.rollback()
    assert name(2) == []


def test_unaliased_subquery_columns_are_named_as_natively(
    engine: str, connect: Callable[..., tique.Connection], reference: Reference, request: pytest.FixtureRequest,
) -> None:
    """An unaliased select-list expression holding a subquery is named by the engine.

    PostgreSQL names it after the subquery's column, which survives the rewrite. DuckDB
    names it by the expression's own text, which after the rewrite would hold the snapshot
    subquery instead of the table name, so tique aliases it with the native name
    (tique/column_names.py). MonetDB numbers it (`%2`) in an order the snapshot subqueries
    would shift, so tique learns the native number from the engine.
    """
    conn = connect()
    world = World(reference)
    cur = conn.cursor()
    cur.execute(SCHEMA[0])
    reference.write(SCHEMA[0])
    world.visible(cur, "INSERT INTO customers (c_id, c_name) VALUES (?, ?)", (1, "only"))
    conn.commit()
    q = Q("unaliased", "SELECT (SELECT count(*) FROM customers), EXISTS (SELECT 1 FROM customers WHERE c_id = ?),"
                       " ? IN (SELECT c_id FROM customers)", (1, 1))
    problem = compare(cur, reference, q)
    assert problem is None, problem

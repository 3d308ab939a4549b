"""Lateral point reads (tique/rewrite/lateral.py): a join that pins a tique table's key
to the rows of a narrow side reads that table per row, through its key index, and
means exactly what the join means."""
from __future__ import annotations

import pytest

import tique
from tique.planner import ReadPlan, make_plan
from tique.rewrite.snapshot import Formulation

STOCK_LEVEL = ("SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id = ol_i_id "
               "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ?")

# The same question in other spellings: comma joins, qualified and aliased columns, a
# computed key value, and an outer alias the snapshot templates use themselves (`c`).
SPELLINGS = [
    STOCK_LEVEL,
    "SELECT COUNT(DISTINCT st.s_i_id) FROM order_line AS ol, stock AS st WHERE st.s_i_id = ol.ol_i_id "
    "AND ol.ol_w_id = ? AND ol.ol_d_id = ? AND ol.ol_o_id < ? AND ol.ol_o_id >= ? AND st.s_w_id = ? AND st.s_quantity < ?",
    "SELECT COUNT(DISTINCT s_i_id) FROM order_line INNER JOIN stock ON s_i_id = ol_i_id + 0 AND s_w_id = ol_w_id "
    "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ?",
    "SELECT COUNT(DISTINCT s.s_i_id) FROM order_line AS c JOIN stock AS s ON s.s_i_id = c.ol_i_id "
    "WHERE c.ol_w_id = ? AND c.ol_d_id = ? AND c.ol_o_id < ? AND c.ol_o_id >= ? AND s.s_w_id = ? AND s.s_quantity < ?",
]
# Written with the pinned table first: read in the other order (lateral.narrow_side_first).
STOCK_FIRST = [
    "SELECT COUNT(DISTINCT s_i_id) FROM stock JOIN order_line ON s_i_id = ol_i_id "
    "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ?",
    "SELECT COUNT(DISTINCT st.s_i_id) FROM stock AS st, order_line AS ol WHERE st.s_i_id = ol.ol_i_id "
    "AND ol.ol_w_id = ? AND ol.ol_d_id = ? AND ol.ol_o_id < ? AND ol.ol_o_id >= ? AND st.s_w_id = ? AND st.s_quantity < ?",
    "SELECT COUNT(DISTINCT s_i_id) FROM stock CROSS JOIN order_line "
    "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ? AND s_i_id = ol_i_id",
]
SPELLINGS += STOCK_FIRST
PARAMS = (1, 1, 30, 10, 1, 50)


def _schema(cur: tique.Cursor) -> None:
    cur.execute("CREATE TABLE stock (s_w_id INTEGER, s_i_id INTEGER, s_quantity INTEGER, PRIMARY KEY (s_w_id, s_i_id))")
    cur.execute("CREATE TABLE order_line (ol_w_id INTEGER, ol_d_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, "
                "ol_i_id INTEGER, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))")
    cur.executemany("INSERT INTO stock VALUES (?, ?, ?)", [(w, i, (i * 37) % 100) for w in (1, 2) for i in range(1, 301)])
    cur.executemany("INSERT INTO order_line VALUES (?, ?, ?, ?, ?)",
                    [(1, d, o, n, (o * 7 + n * 13) % 300 + 1) for d in (1, 2) for o in range(1, 41) for n in range(1, 6)])


def _expected(stock: dict[tuple[int, int], int], lines: list[tuple[int, int, int, int, int]]) -> int:
    w, d, hi, lo, sw, below = PARAMS
    return len({i for (lw, ld, lo_id, _, i) in lines if lw == w and ld == d and lo <= lo_id < hi
                and stock.get((sw, i), below) < below})


def test_lateral_reads_mean_what_the_join_means(connect) -> None:  # type: ignore[no-untyped-def]
    """Committed rows in storage and in the cache, deleted and updated keys, and the
    transaction's own uncommitted writes: every spelling gives the join's answer."""
    setup = connect(autocommit=True)
    cur = setup.cursor()
    _schema(cur)
    stock = {(w, i): (i * 37) % 100 for w in (1, 2) for i in range(1, 301)}
    lines = [(1, d, o, n, (o * 7 + n * 13) % 300 + 1) for d in (1, 2) for o in range(1, 41) for n in range(1, 6)]
    # Committed changes that stay in the cache: updates and deletes of stock rows the
    # district's lines name.
    cur.execute("UPDATE stock SET s_quantity = s_quantity + 60 WHERE s_w_id = 1 AND s_i_id < 100")
    for key in [k for k in stock if k[0] == 1 and k[1] < 100]:
        stock[key] += 60
    cur.execute("DELETE FROM stock WHERE s_w_id = 1 AND s_i_id BETWEEN 150 AND 160")
    for i in range(150, 161):
        del stock[(1, i)]

    conn = connect()
    c = conn.cursor()
    for sql in SPELLINGS:
        c.execute(sql, PARAMS)
        assert c.fetchall() == [(_expected(stock, lines),)], sql
    # Own writes: a new line naming a low-stock item, and a stock row lowered.
    c.execute("INSERT INTO order_line VALUES (1, 1, 15, 9, 299)")
    lines.append((1, 1, 15, 9, 299))
    c.execute("UPDATE stock SET s_quantity = 0 WHERE s_w_id = 1 AND s_i_id = 10")
    stock[(1, 10)] = 0
    for sql in SPELLINGS:
        c.execute(sql, PARAMS)
        assert c.fetchall() == [(_expected(stock, lines),)], sql
    # A star lists the columns in FROM order as written, whatever order the join is read in.
    c.execute("SELECT * FROM stock JOIN order_line ON s_i_id = ol_i_id WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ? "
              "AND s_w_id = ? ORDER BY ol_number", (1, 1, 15, 1))
    assert [d[0] for d in c.description] == ["s_w_id", "s_i_id", "s_quantity", "ol_w_id", "ol_d_id", "ol_o_id", "ol_number", "ol_i_id"]
    rows = c.fetchall()
    assert rows == [(1, i, stock[(1, i)], 1, 1, 15, n, i) for (lw, ld, o, n, i) in sorted(lines, key=lambda line: line[3])
                    if (lw, ld, o) == (1, 1, 15) and (1, i) in stock]
    conn.rollback()


def _plan(engine_url: str, sql: str) -> ReadPlan:
    conn = tique.connect(engine_url)
    try:
        plan = make_plan(sql, conn.backend, conn._snapshot, Formulation.AUTO, frozenset())
    finally:
        conn.close()
    assert isinstance(plan, ReadPlan)
    return plan


@pytest.mark.parametrize("engine", ["postgres"])
def test_stock_level_probes_the_stock_key_index_on_postgres(connect, url) -> None:  # type: ignore[no-untyped-def]
    """The join reads stock through its primary key per order line (a nested loop of
    index scans), not by ranking the whole stock snapshot."""
    cur = connect(autocommit=True).cursor()
    _schema(cur)
    plan = _plan(url, STOCK_LEVEL)
    assert "LATERAL" in plan.statement.sql and not plan.analytic
    import psycopg

    conn = tique.connect(url)
    txid, sts = conn.backend.oracle.begin(conn._raw)
    values = plan.statement.values(PARAMS, {"tq_txid": txid, "tq_sts": sts, "tq_seq_limit": 1})
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor) as raw:
        explained = "\n".join(r[0] for r in raw.cursor().execute("EXPLAIN " + plan.statement.sql, values).fetchall())
    conn.backend.oracle.end(conn._raw, txid)
    conn.close()
    assert "Nested Loop" in explained
    assert "Index Cond: ((s_w_id = " in explained and "stock_storage_pkey" in explained, explained


@pytest.mark.parametrize("engine", ["postgres"])
def test_stock_written_first_is_read_after_its_narrow_side_on_postgres(connect, url) -> None:  # type: ignore[no-untyped-def]
    """`FROM stock JOIN order_line` reads order_line first and stock laterally through its
    key index, as the other order does; where the order matters (a star, an outer join)
    the statement keeps it and stock its ordinary snapshot."""
    cur = connect(autocommit=True).cursor()
    _schema(cur)
    for sql in STOCK_FIRST:
        plan = _plan(url, sql)
        assert "LATERAL" in plan.statement.sql and not plan.analytic, sql
        assert plan.statement.sql.index("order_line_storage") < plan.statement.sql.index("stock_storage"), sql
    kept = [
        "SELECT * FROM stock JOIN order_line ON s_i_id = ol_i_id WHERE ol_w_id = ? AND ol_d_id = ? AND s_w_id = ?",
        "SELECT stock.*, ol_o_id FROM stock JOIN order_line ON s_i_id = ol_i_id WHERE ol_w_id = ? AND ol_d_id = ? AND s_w_id = ?",
        "SELECT COUNT(*) FROM stock LEFT JOIN order_line ON s_i_id = ol_i_id AND ol_w_id = ? AND ol_d_id = ? WHERE s_w_id = ?",
        "SELECT COUNT(*) FROM stock JOIN order_line ON s_i_id = ol_i_id WHERE ol_w_id = ? AND s_w_id = ?",  # not narrow
    ]
    for sql in kept:
        plan = _plan(url, sql)
        assert "LATERAL" not in plan.statement.sql, sql
        assert plan.statement.sql.index("stock_storage") < plan.statement.sql.index("order_line_storage"), sql


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_wide_join_is_left_to_the_engine(connect, url) -> None:  # type: ignore[no-untyped-def]
    """A join whose driving side is not narrow (an analytical join over every order
    line) keeps the ordinary snapshot: one probe per row would lose to a hash join."""
    cur = connect(autocommit=True).cursor()
    _schema(cur)
    wide = "SELECT COUNT(*) FROM order_line JOIN stock ON s_i_id = ol_i_id AND s_w_id = ol_w_id WHERE s_quantity < 50"
    plan = _plan(url, wide)
    assert "LATERAL" not in plan.statement.sql
    one_column = ("SELECT COUNT(*) FROM order_line JOIN stock ON s_i_id = ol_i_id AND s_w_id = ol_w_id "
                  "WHERE ol_w_id = ? AND s_quantity < 50")
    assert "LATERAL" not in _plan(url, one_column).statement.sql


@pytest.mark.parametrize("engine", ["postgres"])
def test_stock_level_reads_stock_and_order_line_through_their_key_indexes(connect, url) -> None:  # type: ignore[no-untyped-def]
    """At TPC-C's shape (stock of 2 warehouses x 5,000 items, 10 districts of 100 orders
    of 10 lines, adopted as loaded, with committed changes of both in the caches), the
    rewritten Stock-Level reads both storage tables through their primary keys: the
    order lines by the district's key range, the stock row per line by its whole key.
    Asserted on the plan, not on time; the answer is checked against the data."""
    import psycopg

    from tique.adopt import adopt

    stock = {(w, i): (i * 37) % 100 for w in (1, 2) for i in range(1, 5001)}
    lines = [(1, d, o, n, (o * 7 + n * 13 + d) % 5000 + 1) for d in range(1, 11) for o in range(1, 101) for n in range(1, 11)]
    with psycopg.connect(url, autocommit=True) as native:
        native.execute("CREATE TABLE stock (s_w_id INTEGER, s_i_id INTEGER, s_quantity INTEGER, PRIMARY KEY (s_w_id, s_i_id))")
        native.execute("CREATE TABLE order_line (ol_w_id INTEGER, ol_d_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, "
                       "ol_i_id INTEGER, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))")
        with native.cursor() as cur:
            with cur.copy("COPY stock (s_w_id, s_i_id, s_quantity) FROM STDIN") as copy:
                for (w, i), q in stock.items():
                    copy.write_row((w, i, q))
            with cur.copy("COPY order_line FROM STDIN") as copy:
                for row in lines:
                    copy.write_row(row)
    assert adopt(connect(autocommit=True), ["stock", "order_line"]) == {"stock": 10000, "order_line": 10000}
    writer = connect(autocommit=True).cursor()
    writer.execute("UPDATE stock SET s_quantity = s_quantity + 1 WHERE s_w_id = 1 AND s_i_id <= 300")
    for key in [k for k in stock if k[0] == 1 and k[1] <= 300]:
        stock[key] += 1
    writer.execute("INSERT INTO order_line VALUES (1, 1, 101, 1, 7), (1, 1, 101, 2, 4999)")
    lines += [(1, 1, 101, 1, 7), (1, 1, 101, 2, 4999)]

    sql = STOCK_LEVEL
    values = (1, 1, 102, 82, 1, 50)  # district (1, 1), orders 82-101, stock below 50
    reader = connect().cursor()
    reader.execute(sql, values)
    w, d, hi, lo, sw, below = values
    expected = len({i for (lw, ld, o, _, i) in lines if lw == w and ld == d and lo <= o < hi and stock.get((sw, i), below) < below})
    assert reader.fetchall() == [(expected,)]

    plan = _plan(url, sql)
    conn = tique.connect(url)
    txid, sts = conn.backend.oracle.begin(conn._raw)
    bound = plan.statement.values(values, {"tq_txid": txid, "tq_sts": sts, "tq_seq_limit": 1})
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor) as raw:
        explained = "\n".join(r[0] for r in raw.cursor().execute("EXPLAIN " + plan.statement.sql, bound).fetchall())
    conn.backend.oracle.end(conn._raw, txid)
    conn.close()
    assert "Seq Scan on stock_storage" not in explained and "Seq Scan on order_line_storage" not in explained, explained
    assert "Index Scan using stock_storage_pkey on stock_storage" in explained, explained
    assert "Scan on order_line_storage_pkey" in explained or "using order_line_storage_pkey" in explained, explained
    assert "Seq Scan on stock_cache" not in explained, explained

"""Joins whose other side pins a tique table's key (tique/rewrite/lateral.py): on
PostgreSQL the pinned table is read per row of the narrow side, through its key indexes
(planned for probes: PostgresBackend.execute's `probing`). Whatever the rewrite, the
join answers what the same join over each table's plain scan snapshot answers, read in
the same transaction: through commits in storage and in the cache, deletes, key moves,
newer versions that fail the query's filter, uncommitted and aborted writers, NULL join
values, the reader's own writes; and where the rewrite must not apply (outer joins), the
statement keeps its null-extended rows."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import tique
from test_lateral_reads import _plan
from tique.checkpoint import checkpoint
from tique.rewrite.snapshot import Formulation

Connect = Callable[..., tique.Connection]

# parts (pw, pi) is pinned by lines' (lw, li); lines is narrow: (lw, ld) pinned to values.
INNER = ("SELECT lo, ln, pi, qty FROM lines JOIN parts ON pw = lw AND pi = li "
         "WHERE lw = ? AND ld = ? AND qty < ? ORDER BY lo, ln")
LEFT = ("SELECT lo, ln, pi, qty FROM lines LEFT JOIN parts ON pw = lw AND pi = li AND qty < ? "
        "WHERE lw = ? AND ld = ? ORDER BY lo, ln")
# The pinned table written first: read after its narrow partner (lateral.narrow_side_first).
FIRST = ("SELECT lo, ln, pi, qty FROM parts AS p JOIN lines AS l ON p.pw = l.lw AND p.pi = l.li "
         "WHERE l.lw = ? AND l.ld = ? AND p.qty < ? ORDER BY lo, ln")
PARAMS = (1, 1, 50)
LEFT_PARAMS = (50, 1, 1)


def _schema(cur: tique.Cursor) -> None:
    cur.execute("CREATE TABLE parts (pw INTEGER, pi INTEGER, qty INTEGER, PRIMARY KEY (pw, pi))")
    cur.execute("CREATE TABLE lines (lw INTEGER, ld INTEGER, lo INTEGER, ln INTEGER, li INTEGER, PRIMARY KEY (lw, ld, lo, ln))")
    cur.executemany("INSERT INTO parts VALUES (?, ?, ?)", [(w, i, (i * 37) % 100) for w in (1, 2) for i in range(1, 121)])
    cur.executemany("INSERT INTO lines VALUES (?, ?, ?, ?, ?)",
                    [(1, d, o, n, None if (o + n) % 17 == 0 else (o * 7 + n * 13) % 120 + 1)
                     for d in (1, 2) for o in range(1, 16) for n in range(1, 6)])


def _expected(cur: tique.Cursor, outer: bool) -> list[tuple[Any, ...]]:
    """The join computed here over both tables' plain scan snapshots, read by `cur` in its
    transaction (the same snapshot, and its own writes)."""
    cur.execute("SELECT pw, pi, qty FROM parts")
    parts = {(w, i): q for w, i, q in cur.fetchall()}
    cur.execute("SELECT lw, ld, lo, ln, li FROM lines")
    found = []
    for lw, ld, lo, ln, li in cur.fetchall():
        if (lw, ld) != (1, 1):
            continue
        qty = parts.get((lw, li)) if li is not None else None  # NULL joins nothing
        if qty is not None and qty < 50:
            found.append((lo, ln, li, qty))
        elif outer:
            found.append((lo, ln, None, None))
    return sorted(found, key=lambda row: (row[0], row[1]))


def _check(cur: tique.Cursor) -> None:
    for sql in (INNER, FIRST):
        cur.execute(sql, PARAMS)
        assert cur.fetchall() == _expected(cur, outer=False), sql
    cur.execute(LEFT, LEFT_PARAMS)
    assert cur.fetchall() == _expected(cur, outer=True)


def test_a_key_pinning_join_reads_what_the_scan_snapshots_join(connect: Connect, engine: str, url: str) -> None:
    setup = connect(autocommit=True)
    cur = setup.cursor()
    _schema(cur)
    if engine == "postgres":  # the rewrite under test applies, and only where it may
        assert all(_plan(url, sql).probing for sql in (INNER, FIRST))
        assert not _plan(url, LEFT).probing
    reader = connect()
    _check(reader.cursor())
    reader.rollback()

    # Committed versions in the cache: a newer version failing `qty < 50` hides an older
    # one passing it, and the other way round; deletes; key moves (old key gone).
    cur.execute("UPDATE parts SET qty = qty + 60 WHERE pw = 1 AND pi <= 40")
    cur.execute("UPDATE parts SET qty = 1 WHERE pw = 1 AND pi BETWEEN 41 AND 60 AND qty >= 50")
    cur.execute("DELETE FROM parts WHERE pw = 1 AND pi BETWEEN 61 AND 70")
    cur.execute("UPDATE parts SET pi = pi + 1000 WHERE pw = 1 AND pi BETWEEN 71 AND 80")
    cur.execute("UPDATE lines SET li = li + 1 WHERE lw = 1 AND ld = 1 AND lo <= 5")
    cur.execute("DELETE FROM lines WHERE lw = 1 AND ld = 1 AND lo = 6")
    _check(reader.cursor())
    reader.rollback()

    # A reader's snapshot: what commits after it began stays out of its reads.
    early = connect()
    early_cur = early.cursor()
    _check(early_cur)
    cur.execute("UPDATE parts SET qty = 0 WHERE pw = 1")
    _check(early_cur)
    early.rollback()

    # An uncommitted writer, and a writer that aborted at commit (its versions stay in the
    # cache with a failed outcome): neither is seen.
    pending = connect()
    pending.cursor().execute("UPDATE parts SET qty = 99 WHERE pw = 1 AND pi <= 30")
    first, second = connect(), connect()
    first.cursor().execute("UPDATE parts SET qty = 2 WHERE pw = 1 AND pi BETWEEN 90 AND 100")
    second.cursor().execute("UPDATE parts SET qty = 77 WHERE pw = 1 AND pi BETWEEN 95 AND 110")
    first.commit()
    with pytest.raises(tique.SerializationFailure):
        second.commit()
    _check(reader.cursor())
    reader.rollback()

    # The reader's own writes, then the same after a checkpoint moved the committed
    # versions to storage.
    own = reader.cursor()
    own.execute("UPDATE parts SET qty = 3 WHERE pw = 1 AND pi BETWEEN 100 AND 120")
    own.execute("DELETE FROM parts WHERE pw = 1 AND pi = 11")
    own.execute("INSERT INTO lines VALUES (1, 1, 99, 1, 101), (1, 1, 99, 2, NULL)")
    _check(own)
    reader.rollback()
    pending.rollback()
    checkpoint(setup)
    _check(reader.cursor())
    reader.rollback()


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_lateral_read_probes_the_log_by_its_index_on_postgres(connect: Connect, url: str) -> None:
    """Planned for probes, each probe of the pinned table's cache finds its versions'
    outcomes through tq_outcome's txid index, not by scanning or hashing the log once per
    probe (what PostgreSQL picks for a small log otherwise). Asserted on the plan."""
    import psycopg

    setup = connect(autocommit=True)
    cur = setup.cursor()
    _schema(cur)
    cur.execute("UPDATE parts SET qty = qty + 1 WHERE pw = 1")
    plan = _plan(url, INNER)
    conn = tique.connect(url)
    txid, sts = conn.backend.oracle.begin(conn._raw)
    values = plan.statement.values(PARAMS, {"tq_txid": txid, "tq_sts": sts, "tq_seq_limit": 1})
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor) as raw:
        raw.execute("ANALYZE tq_outcome")
        raw.execute("ANALYZE parts_cache")
        raw.execute("SET enable_seqscan = off")
        raw.execute("SET enable_material = off")
        explained = "\n".join(r[0] for r in raw.cursor().execute("EXPLAIN " + plan.statement.sql, values).fetchall())
    conn.backend.oracle.end(conn._raw, txid)
    conn.close()
    lateral = explained[explained.index("parts_storage"):]
    assert "Seq Scan on tq_outcome" not in lateral and "tq_outcome_txid" in lateral, explained


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_lateral_read_carries_its_planner_settings_alone_on_postgres(connect: Connect) -> None:
    """A lateral read is planned and run with seq scans and materialization off, and
    nothing else is: the settings travel with the statement, and when it fails they are
    undone with its request, so the session's later statements are planned as before."""
    setup = connect(autocommit=True)
    cur = setup.cursor()
    _schema(cur)
    conn = connect()
    c = conn.cursor()
    settings = "current_setting('enable_seqscan'), current_setting('enable_material'), current_setting('enable_nestloop')"
    c.execute(f"SELECT COUNT(*), {settings} FROM lines JOIN parts ON pw = lw AND pi = li WHERE lw = ? AND ld = ?", (1, 1))
    assert c.fetchall()[0][1:] == ("off", "off", "on")
    c.execute(f"SELECT COUNT(*), {settings} FROM lines WHERE lw = ? AND ld = ?", (1, 1))  # a narrow scan: the defaults
    assert c.fetchall() == [(75, "on", "on", "on")]
    c.execute(f"SELECT COUNT(*), {settings} FROM lines WHERE ln = ?", (1,))  # an analytical scan
    assert c.fetchall() == [(30, "on", "on", "off")]
    with pytest.raises(tique.DataError):
        c.execute("SELECT lo, pi FROM lines JOIN parts ON pw = lw AND pi = li WHERE lw = ? AND ld = ? AND qty / (qty - qty) > 0", (1, 1))
    conn.rollback()
    raw = conn._raw.conn
    assert raw.execute("SHOW enable_seqscan").fetchone() == ("on",)
    assert raw.execute("SHOW enable_material").fetchone() == ("on",)
    c.execute(INNER, PARAMS)
    assert c.fetchall() == _expected(c, outer=False)
    conn.rollback()


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_scan_pinning_a_key_prefix_is_planned_once_on_postgres(connect: Connect, url: str) -> None:
    """A scan whose key filters pin the leading key columns to values (an order's lines,
    a district's customers) is an OLTP read, on the generic plans; a scan of a whole
    table, or of one pinned only through a non-key column, stays analytical."""
    cur = connect(autocommit=True).cursor()
    _schema(cur)
    assert not _plan(url, "SELECT li FROM lines WHERE lw = ? AND ld = ? AND lo = ?").analytic
    assert not _plan(url, "SELECT MIN(lo) FROM lines WHERE lw = ? AND ld = ?").analytic
    assert _plan(url, "SELECT li FROM lines WHERE lw = ?").analytic
    assert _plan(url, "SELECT pi FROM parts WHERE pw = 1 AND pi > ? ORDER BY pi").analytic  # a range, not a value
    assert _plan(url, "SELECT li FROM lines WHERE lw = ? AND li = ?").analytic
    assert _plan(url, "SELECT COUNT(*) FROM parts WHERE qty < ?").analytic
    # The WHERE of a null-extended side pins nothing of its snapshot (key_filters).
    assert _plan(url, "SELECT li FROM lines LEFT JOIN parts ON pi = li WHERE lw = ? AND ld = ? AND pw = ?").analytic

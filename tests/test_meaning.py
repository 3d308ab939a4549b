"""The rewrite never changes what a statement means: each statement runs natively (on
plain tables of the same engine) and through tique, and both give the same answers;
what the engine rejects, tique rejects; what tique cannot carry over faithfully it
refuses with NotSupportedError. On every engine."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import pytest

import tique
from sqlhelp import rows, run
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]

pytestmark = pytest.mark.timeout(300)

# Words that must never reach the application: tique's physical tables and columns.
INTERNAL = re.compile(r"_storage\b|_cache\b|\btq_|tq_rank|tq_seq", re.IGNORECASE)


def _native_name(sql: str, tables: Sequence[str]) -> str:
    """`sql` over the native twins (n_<table>) of the tique tables it names."""
    for name in tables:
        sql = re.sub(rf"\b{name}\b", f"n_{name}", sql)
    return sql


class Twins:
    """Each table twice: a tique table, and a native one named n_<table> with the same
    rows, so one statement text can run on both."""

    def __init__(self, conn: tique.Connection, native: Native) -> None:
        self.conn, self.native, self.tables = conn, native, []

    def create(self, ddl: str, *inserts: str) -> None:
        name = re.match(r"CREATE TABLE (\w+)", ddl).group(1)  # type: ignore[union-attr]
        self.tables.append(name)
        run(self.conn, ddl)
        self.native(_native_name(ddl, [name]))
        for insert in inserts:
            run(self.conn, insert)
            self.native(_native_name(insert, [name]))
        self.conn.commit()

    def tique(self, sql: str) -> list[tuple]:
        return rows(self.conn, sql)

    def natively(self, sql: str) -> list[tuple]:
        return self.native(_native_name(sql, self.tables))

    def same(self, sql: str, ordered: bool = True) -> list[tuple]:
        mine, theirs = self.tique(sql), self.natively(sql)
        if not ordered:
            mine, theirs = sorted(mine, key=repr), sorted(theirs, key=repr)
        assert mine == theirs, f"{sql}\n tique:  {mine}\n native: {theirs}"
        return mine

    def write(self, sql: str) -> int:
        """Runs a write on both sides; returns tique's row count after checking it is the engine's."""
        count = run(self.conn, sql)
        self.conn.commit()
        cur = self.conn._raw  # the native side, through the engine connection directly
        native_cursor = self.conn.backend.execute(cur, _native_name(sql, self.tables), [])
        assert count == self.conn.backend.affected(native_cursor), sql
        return count


@pytest.fixture
def twins(connect: Connect, native: Native) -> Twins:
    return Twins(connect(), native)


# -- 1. regenerated SQL keeps its meaning --------------------------------------------------

NULL_ORDERS = [
    "SELECT a FROM n ORDER BY a NULLS LAST",
    "SELECT a FROM n ORDER BY a NULLS FIRST",
    "SELECT a FROM n ORDER BY a ASC NULLS LAST",
    "SELECT a FROM n ORDER BY a DESC NULLS LAST",
    "SELECT a FROM n ORDER BY a DESC NULLS FIRST",
    "SELECT a, row_number() OVER (ORDER BY a NULLS LAST) AS r FROM n ORDER BY r",
    "SELECT a, row_number() OVER (ORDER BY a DESC NULLS LAST) AS r FROM n ORDER BY r",
]


def test_explicit_null_order_is_kept(twins: Twins) -> None:
    """MonetDB sorts NULL first and PostgreSQL last: a NULLS clause equal to sqlglot's idea
    of the default was dropped, and the engine's own default decided."""
    twins.create("CREATE TABLE n (id INTEGER PRIMARY KEY, a INTEGER)", "INSERT INTO n VALUES (1, 2), (2, NULL), (3, 1)")
    for sql in NULL_ORDERS:
        twins.same(sql)
    for sql in ("SELECT a FROM n ORDER BY a", "SELECT a FROM n ORDER BY a DESC"):
        twins.same(sql)  # no null order written: the engine's default, as natively


def test_explicit_null_order_beats_the_session_default(twins: Twins, engine: str) -> None:
    if engine != "duckdb":
        pytest.skip("default_null_order is a DuckDB setting")
    twins.create("CREATE TABLE n (id INTEGER PRIMARY KEY, a INTEGER)", "INSERT INTO n VALUES (1, 2), (2, NULL), (3, 1)")
    run(twins.conn, "SET default_null_order = 'nulls_first'")
    assert twins.same("SELECT a FROM n ORDER BY a NULLS LAST") == [(1,), (2,), (None,)]
    assert twins.same("SELECT a FROM n ORDER BY a") == [(None,), (1,), (2,)]
    twins.same("SELECT a FROM n ORDER BY a DESC NULLS LAST")


def test_ignore_nulls_of_a_window_call_is_kept(twins: Twins, engine: str) -> None:
    if engine != "duckdb":
        pytest.skip("an aggregate's IGNORE NULLS inside its call is DuckDB syntax")
    twins.create("CREATE TABLE w (idx INTEGER PRIMARY KEY, value INTEGER)", "INSERT INTO w VALUES (1, 10), (2, NULL), (3, 30)")
    assert twins.same("SELECT last(value ORDER BY idx IGNORE NULLS) OVER (ORDER BY idx) FROM w ORDER BY idx") == [(10,), (10,), (30,)]
    twins.same("SELECT last_value(value IGNORE NULLS) OVER (ORDER BY idx) FROM w ORDER BY idx")
    twins.same("SELECT first_value(value RESPECT NULLS) OVER (ORDER BY idx DESC) FROM w ORDER BY idx")


def test_what_sqlglot_cannot_render_is_refused(connect: Connect, engine: str) -> None:
    if engine != "duckdb":
        pytest.skip("the construct is DuckDB's")
    conn = connect()
    run(conn, "CREATE TABLE w (idx INTEGER PRIMARY KEY, value INTEGER)")
    conn.commit()
    # An aggregate's IGNORE NULLS, which sqlglot's DuckDB generator drops.
    with pytest.raises(tique.NotSupportedError, match="IGNORE NULLS"):
        rows(conn, "SELECT last(value IGNORE NULLS) FROM w")


# -- 2. what the engine rejects ------------------------------------------------------------

def test_select_into(twins: Twins, engine: str) -> None:
    twins.create("CREATE TABLE t (id INTEGER PRIMARY KEY, s VARCHAR(10))", "INSERT INTO t VALUES (1, '1'), (2, 'x')")
    if engine == "postgres":  # PostgreSQL's SELECT INTO creates a table, here of the snapshot's rows
        run(twins.conn, "SELECT * INTO t2 FROM t")
        twins.conn.commit()
        assert twins.native("SELECT id, s FROM t2 ORDER BY id") == [(1, "1"), (2, "x")]
        return
    with pytest.raises(Exception):
        twins.natively("SELECT * INTO t2 FROM t")
    with pytest.raises(tique.DatabaseError):
        run(twins.conn, "SELECT * INTO t2 FROM t")
    twins.conn.rollback()
    assert "t2" not in {r[0] for r in twins.native("SELECT name FROM tq_tables")}


LOCKING = ["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE", "FOR UPDATE NOWAIT", "FOR UPDATE SKIP LOCKED"]


@pytest.mark.parametrize("clause", LOCKING)
def test_locking_reads_where_the_engine_has_none(twins: Twins, engine: str, clause: str) -> None:
    if engine == "postgres":
        pytest.skip("PostgreSQL has locking reads")
    twins.create("CREATE TABLE t (id INTEGER PRIMARY KEY, s VARCHAR(10))", "INSERT INTO t VALUES (1, '1')")
    with pytest.raises(Exception):
        twins.natively(f"SELECT * FROM t {clause}")
    with pytest.raises(tique.ProgrammingError, match="syntax error") as caught:
        rows(twins.conn, f"SELECT * FROM t WHERE id = 1 {clause}")
    assert not INTERNAL.search(str(caught.value))


@pytest.mark.parametrize("clause", ["FOR SHARE NOWAIT", "FOR KEY SHARE SKIP LOCKED", "FOR UPDATE NOWAIT", "FOR UPDATE SKIP LOCKED",
                                    "FOR NO KEY UPDATE SKIP LOCKED"])
def test_postgres_locking_reads_tique_refuses(twins: Twins, engine: str, clause: str) -> None:
    if engine != "postgres":
        pytest.skip("PostgreSQL only")
    twins.create("CREATE TABLE t (id INTEGER PRIMARY KEY, s VARCHAR(10))", "INSERT INTO t VALUES (1, '1')")
    with pytest.raises(tique.NotSupportedError, match="drop") as caught:
        rows(twins.conn, f"SELECT * FROM t WHERE id = 1 {clause}")
    assert not INTERNAL.search(str(caught.value))


@pytest.mark.parametrize("clause", ["FOR UPDATE", "FOR NO KEY UPDATE", "FOR UPDATE OF t", "FOR SHARE", "FOR KEY SHARE", "FOR SHARE OF t"])
def test_postgres_for_update_reads_as_natively(twins: Twins, engine: str, clause: str) -> None:
    if engine != "postgres":
        pytest.skip("PostgreSQL only")
    twins.create("CREATE TABLE t (id INTEGER PRIMARY KEY, s VARCHAR(10))", "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    twins.create("CREATE TABLE u (id INTEGER, note VARCHAR(10))", "INSERT INTO u VALUES (1, 'x'), (1, 'y'), (3, 'z')")
    twins.same(f"SELECT id, s FROM t WHERE id >= 2 ORDER BY id {clause}")
    twins.same(f"SELECT t.id, s, note FROM t JOIN u ON u.id = t.id ORDER BY t.id, note {clause}")
    twins.same(f"SELECT id, s FROM t ORDER BY id LIMIT 1 {clause}")
    twins.conn.commit()
    # Reading did not change a row (the rows were written back as they were).
    twins.same("SELECT id, s FROM t ORDER BY id")
    twins.same("SELECT id, note FROM u ORDER BY id, note")


def test_postgres_for_update_makes_a_concurrent_writer_lose(connect: Connect, engine: str) -> None:
    """Repeatable read on PostgreSQL: a row read FOR UPDATE cannot be written by a
    concurrent transaction that commits after the locker. tique takes the lock
    optimistically (the rows read join the write-set), so whichever commits second loses."""
    if engine != "postgres":
        pytest.skip("PostgreSQL only")
    admin = connect()
    run(admin, "CREATE TABLE acc (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)")
    run(admin, "INSERT INTO acc VALUES (1, 100), (2, 100)")
    admin.commit()

    # The locker commits first: the writer of a locked row loses.
    locker, writer = connect(), connect()
    assert rows(locker, "SELECT bal FROM acc WHERE id = ? FOR UPDATE", (1,)) == [(100,)]
    run(writer, "UPDATE acc SET bal = bal - 10 WHERE id = 1")
    locker.commit()
    with pytest.raises(tique.SerializationFailure):
        writer.commit()

    # The writer commits first: the locker loses, as PostgreSQL's would on locking it.
    locker, writer = connect(), connect()
    assert rows(locker, "SELECT id, bal FROM acc WHERE id >= 1 ORDER BY id FOR NO KEY UPDATE") == [(1, 100), (2, 100)]
    run(writer, "UPDATE acc SET bal = bal + 5 WHERE id = 2")
    writer.commit()
    with pytest.raises(tique.SerializationFailure):
        locker.commit()

    # Rows not read stay free: a writer of another row commits after the locker.
    locker, writer = connect(), connect()
    rows(locker, "SELECT bal FROM acc WHERE id = 1 FOR UPDATE")
    run(writer, "UPDATE acc SET bal = 0 WHERE id = 2")
    locker.commit()
    writer.commit()
    assert rows(admin, "SELECT id, bal FROM acc ORDER BY id") == [(1, 100), (2, 0)]


# -- 3. UPDATE ... FROM and DELETE ... USING -----------------------------------------------

@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "primary-key"])
def test_update_from_writes_each_target_row_once(twins: Twins, engine: str, keyed: bool) -> None:
    key = " PRIMARY KEY" if keyed else ""
    twins.create(f"CREATE TABLE x (a INTEGER{key}, b INTEGER)", "INSERT INTO x VALUES (1, 0), (2, 0)")
    twins.create("CREATE TABLE s (a INTEGER, v INTEGER)", "INSERT INTO s VALUES (1, 1), (1, 2), (1, 3), (2, 7)")
    statement = "UPDATE x SET b = s.v FROM s WHERE x.a = s.a"
    if engine == "monetdb":
        # MonetDB refuses an UPDATE ... FROM that matches a row more than once ("mergejoin: more than one match").
        with pytest.raises(Exception):
            twins.natively(statement)
        assert run(twins.conn, statement) == 2
        twins.conn.commit()
        found = twins.tique("SELECT a, b FROM x ORDER BY a")
        assert found[0][0] == 1 and found[0][1] in (1, 2, 3) and found[1] == (2, 7)
        return
    assert twins.write(statement) == 2
    twins.same("SELECT count(*) FROM x")
    twins.same("SELECT a, b IN (1, 2, 3, 7) FROM x ORDER BY a")


def test_update_from_several_sources(twins: Twins, engine: str) -> None:
    twins.create("CREATE TABLE y (a INTEGER, b INTEGER)", "INSERT INTO y VALUES (1, 0), (2, 0), (3, 0)")
    # One match per row of y at most: MonetDB refuses more (see above).
    twins.create("CREATE TABLE y1 (a INTEGER)", "INSERT INTO y1 VALUES (1), (2)")
    twins.create("CREATE TABLE y2 (a INTEGER)", "INSERT INTO y2 VALUES (1), (2), (3)")
    twins.write("UPDATE y SET b = 1 FROM y1, y2 WHERE y.a = y1.a AND y1.a = y2.a AND y2.a < 2")
    twins.same("SELECT a, b FROM y ORDER BY a")
    twins.write("UPDATE y SET b = y.b + 10 FROM y1 JOIN y2 ON y1.a = y2.a WHERE y.a = y1.a AND y2.a = 1")
    twins.same("SELECT a, b FROM y ORDER BY a")
    twins.write("UPDATE y SET b = 5 FROM y2 AS z, (SELECT a FROM y1 WHERE a > 1) AS q WHERE z.a = y.a AND q.a = z.a")
    twins.same("SELECT a, b FROM y ORDER BY a")


def test_delete_using_several_sources(twins: Twins, engine: str) -> None:
    twins.create("CREATE TABLE y (a INTEGER PRIMARY KEY, b INTEGER)", "INSERT INTO y VALUES (1, 0), (2, 0), (3, 0)")
    twins.create("CREATE TABLE y1 (a INTEGER)", "INSERT INTO y1 VALUES (1), (2), (2)")
    twins.create("CREATE TABLE y2 (a INTEGER)", "INSERT INTO y2 VALUES (2), (2), (3)")
    statement = "DELETE FROM y USING y1, y2 WHERE y.a = y1.a AND y1.a = y2.a"
    if engine == "monetdb":
        # MonetDB has no DELETE ... USING; on tique tables tique gives it PostgreSQL's meaning.
        with pytest.raises(Exception):
            twins.natively(statement)
        assert run(twins.conn, statement) == 1
        twins.conn.commit()
        assert twins.tique("SELECT a, b FROM y ORDER BY a") == [(1, 0), (3, 0)]
        return
    assert twins.write(statement) == 1
    twins.same("SELECT a, b FROM y ORDER BY a")


# -- 4. a parenthesised join on the right of a FULL OUTER JOIN -----------------------------

def test_full_outer_join_with_parenthesised_right_side(twins: Twins) -> None:
    for name, values in (("f1", "(1), (2)"), ("f2", "(1), (3), (4)"), ("f3", "(1), (3)")):
        twins.create(f"CREATE TABLE {name} (a INTEGER)", f"INSERT INTO {name} VALUES {values}")
    twins.same("SELECT * FROM f1 FULL OUTER JOIN (f2 JOIN f3 ON f2.a = f3.a) ON f1.a = f2.a", ordered=False)
    twins.same("SELECT f1.a, f2.a, f3.a FROM f1 LEFT JOIN (f2 LEFT JOIN f3 ON f2.a = f3.a) ON f1.a = f2.a", ordered=False)
    twins.same("SELECT count(*) FROM (f1 JOIN f2 ON f1.a = f2.a) FULL JOIN f3 ON f3.a = f2.a")
    # Again once the tables' caches are empty: DuckDB then reads storage directly.
    checkpoint(twins.conn)
    twins.conn.commit()
    twins.same("SELECT * FROM f1 FULL OUTER JOIN (f2 JOIN f3 ON f2.a = f3.a) ON f1.a = f2.a", ordered=False)
    twins.same("SELECT count(*) FROM (f1 JOIN f2 ON f1.a = f2.a) FULL JOIN f3 ON f3.a = f2.a")


# -- 5. engine errors raised while fetching ------------------------------------------------

def test_engine_error_while_fetching_is_translated(twins: Twins, engine: str) -> None:
    """DuckDB streams a result and raises a conversion error only when the failing row is
    fetched; on every engine the error reaches the application as tique's, in its terms."""
    twins.create("CREATE TABLE t (id INTEGER PRIMARY KEY, s VARCHAR(10))")
    fill = ("INSERT INTO t SELECT i, CASE WHEN i = 150000 THEN 'x' ELSE CAST(i AS VARCHAR(10)) END FROM "
            + {"duckdb": "range(1, 150001) AS r(i)", "postgres": "generate_series(1, 150000) AS r(i)",
               "monetdb": "(SELECT CAST(value AS INTEGER) AS i FROM sys.generate_series(1, 150001)) AS r"}[engine])
    run(twins.conn, fill)
    twins.conn.commit()
    conn = twins.conn
    cur = conn.cursor()
    with pytest.raises(tique.DatabaseError) as caught:
        cur.execute("SELECT CAST(s AS INTEGER) FROM t")
        cur.fetchall()
    assert not INTERNAL.search(str(caught.value)), str(caught.value)
    assert "SELECT CAST(s AS INTEGER) FROM t" in str(caught.value)
    # As natively, the failed statement leaves the connection usable after rollback.
    conn.rollback()
    assert rows(conn, "SELECT count(*) FROM t") == [(150000,)]
    cur = conn.cursor()
    for fetch in (lambda c: c.fetchone(), lambda c: c.fetchmany(200000), lambda c: list(c)):
        with pytest.raises(tique.DatabaseError):
            cur.execute("SELECT CAST(s AS INTEGER) FROM t")
            while fetch(cur):
                pass
        conn.rollback()


# -- 6. a lost certification names what it lost on -----------------------------------------

def test_serialization_failure_names_table_and_key(connect: Connect) -> None:
    admin = connect()
    run(admin, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)")
    run(admin, "CREATE TABLE notes (body VARCHAR(20))")
    run(admin, "INSERT INTO accounts VALUES (7, 100), (8, 100)")
    run(admin, "INSERT INTO notes VALUES ('hello')")
    admin.commit()
    first, second = connect(), connect()
    run(first, "UPDATE accounts SET bal = bal + 1 WHERE id = 7")
    run(second, "UPDATE accounts SET bal = bal + 2 WHERE id = 7")
    first.commit()
    with pytest.raises(tique.SerializationFailure) as caught:
        second.commit()
    message = str(caught.value)
    assert "accounts" in message and "id = 7" in message, message
    assert not INTERNAL.search(message), message

    # A table without a primary key: the table is named, its hidden row id is not.
    first, second = connect(), connect()
    run(first, "UPDATE notes SET body = 'a'")
    run(second, "UPDATE notes SET body = 'b'")
    first.commit()
    with pytest.raises(tique.SerializationFailure) as caught:
        second.commit()
    message = str(caught.value)
    assert "notes" in message and not INTERNAL.search(message), message

"""Column properties that change what a table answers survive on tique tables: collations,
defaults (DEFAULT in VALUES and SET, sequences), generated columns, typed columns and
DuckDB's rowid. Each is kept with its meaning or refused with NotSupportedError.

Differential: every statement runs on a tique table and, in the same database, natively
on a plain table of the same definition (named with the prefix n_); both answer alike,
or both refuse. Reads run while the rows are in the cache and again after a checkpoint
moved them to storage, as the two read different physical tables.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, Sequence

import pytest

import tique
from tique.checkpoint import checkpoint

from sqlhelp import Native, rows, run

Outcome = tuple[str, Any]


def _sorted(found: Sequence[tuple]) -> list[tuple]:
    return sorted((tuple(r) for r in found), key=repr)


def _answer(sql: str, found: Sequence[tuple], ordered: bool) -> Outcome:
    """A query's rows; of any other statement only that it succeeded (engines report row
    counts differently: DuckDB as a result row)."""
    if not sql.lstrip().upper().startswith("SELECT"):
        return "ok", None
    return "rows", [tuple(r) for r in found] if ordered else _sorted(found)


class Twins:
    """One statement text, `{t}` standing for the table: run through tique on table t,
    and natively on table n_t."""

    def __init__(self, conn: tique.Connection, native: Native) -> None:
        self.conn = conn
        self.native = native

    def tique(self, sql: str, ordered: bool = False) -> Outcome:
        try:
            cur = self.conn.cursor()
            cur.execute(sql.format(t="", s="t_"))
            found = cur.fetchall() if cur.description else []
        except tique.Error as error:
            return "error", type(error).__name__
        return _answer(sql, found, ordered)

    def engine(self, sql: str, ordered: bool = False) -> Outcome:
        try:
            found = self.native(sql.format(t="n_", s="n_"))
        except Exception as error:  # the driver's own classes
            return "error", type(error).__name__
        return _answer(sql, found, ordered)

    def both(self, sql: str, ordered: bool = False) -> tuple[Outcome, Outcome]:
        return self.tique(sql, ordered), self.engine(sql, ordered)

    def same(self, sql: str, ordered: bool = False) -> Outcome:
        """Runs `sql` both ways; asserts both answer the same rows or both fail."""
        mine, theirs = self.both(sql, ordered)
        assert mine[0] == theirs[0], f"{sql}: tique {mine}, natively {theirs}"
        if mine[0] == "rows":
            assert mine == theirs, f"{sql}: tique {mine[1]}, natively {theirs[1]}"
        return mine


@pytest.fixture
def twins(connect: Callable[..., tique.Connection], native: Native) -> Twins:
    conn = connect()
    conn.autocommit = True
    return Twins(conn, native)


# -- collations -----------------------------------------------------------------------------

COLLATIONS = {
    "duckdb": ["NOCASE", "NOACCENT", "NOCASE.NOACCENT", "NFC", "de", "en_us"],
    "postgres": ['"C"', '"POSIX"', '"und-x-icu"'],
}
# "e\u0301" is "é" decomposed: equal to it under NFC.
WORDS = ("ABC", "abc", "Abc", "b", "B", "é", "e\u0301", "e", "E", "ä", "a", "Zed", "zed", None)

COLLATED_QUERIES = (
    ("SELECT id, a FROM {t}k WHERE a = 'abc'", False),
    ("SELECT id, a FROM {t}k WHERE a = 'e'", False),
    ("SELECT id FROM {t}k WHERE a = 'é'", False),
    ("SELECT id FROM {t}k WHERE a > 'b'", False),
    # Which of several equal values a DISTINCT, EXCEPT or INTERSECT shows is the engine's
    # choice; how many there are is the collation's.
    ("SELECT count(*) FROM (SELECT DISTINCT a FROM {t}k) AS d", False),
    ("SELECT count(DISTINCT a) FROM {t}k", False),
    ("SELECT count(*) FROM {t}k GROUP BY a", False),
    ("SELECT count(*) FROM (SELECT a FROM {t}k EXCEPT SELECT 'abc') AS d", False),
    ("SELECT count(*) FROM (SELECT a FROM {t}k INTERSECT SELECT 'ZED') AS d", False),
    ("SELECT count(*) FROM (SELECT a FROM {t}k UNION SELECT 'zed') AS d", False),
    ("SELECT id FROM {t}k ORDER BY a, id", True),
    ("SELECT id, rank() OVER (ORDER BY a) FROM {t}k", False),
    ("SELECT id, count(*) OVER (PARTITION BY a) FROM {t}k", False),
    ("SELECT min(a) IS NULL, count(*) FROM {t}k", False),
    ("SELECT x.id, y.id FROM {t}k AS x JOIN {t}k AS y ON x.a = y.a WHERE x.id < y.id", False),
    ("SELECT id FROM {t}k WHERE a IN ('abc', 'E')", False),
)


def _collations(engine: str, native: Native) -> list[str]:
    found = COLLATIONS.get(engine, [])
    if engine == "postgres":  # ICU collations exist only where PostgreSQL was built with ICU
        present = {name for (name,) in native("SELECT collname FROM pg_collation")}
        found = [c for c in found if c.strip('"') in present]
    return found


def test_collated_columns_answer_as_natively(engine: str, twins: Twins, native: Native) -> None:
    collations = _collations(engine, native)
    if not collations:  # MonetDB has none: it rejects COLLATE, and so does tique
        mine, theirs = twins.both("CREATE TABLE {t}k (id INT PRIMARY KEY, a VARCHAR(10) COLLATE NOCASE)")
        assert mine == ("error", "NotSupportedError") and theirs[0] == "error"
        return
    for n, collation in enumerate(collations):
        # A table of its own per collation: PostgreSQL's prepared plans of the native side
        # would otherwise outlive a table of the same name.
        def same(sql: str, ordered: bool = False) -> None:
            twins.same(sql.replace("{t}k", f"{{t}}k{n}"), ordered)

        same(f"CREATE TABLE {{t}}k (id INT PRIMARY KEY, a VARCHAR(10) COLLATE {collation})")
        for i, word in enumerate(WORDS):
            value = "NULL" if word is None else f"'{word}'"
            same(f"INSERT INTO {{t}}k VALUES ({i}, {value})")
        for stage in ("cache", "storage"):
            for sql, ordered in COLLATED_QUERIES:
                same(sql, ordered)
            checkpoint(twins.conn)
        same("UPDATE {t}k SET a = 'zED' WHERE a = 'ABC'")
        same("DELETE FROM {t}k WHERE a = 'b'")
        for sql, ordered in COLLATED_QUERIES:
            same(sql, ordered)


def test_collated_key_columns(engine: str, twins: Twins, native: Native, connect: Callable[..., tique.Connection]) -> None:
    """DuckDB's key index compares bytes while its queries compare by the collation: tique
    refuses a collated key there. PostgreSQL's deterministic collations make equal keys
    equal bytes, so a key may have one; a nondeterministic one is refused."""
    if engine == "duckdb":
        with pytest.raises(tique.NotSupportedError, match="COLLATE"):
            twins.conn.cursor().execute("CREATE TABLE k (a VARCHAR COLLATE NOCASE PRIMARY KEY, b INT)")
        return
    if engine == "monetdb":
        pytest.skip("MonetDB has no collations (see test_collated_columns_answer_as_natively)")
    twins.same('CREATE TABLE {t}k (a VARCHAR(10) COLLATE "C" PRIMARY KEY, b INT)')
    twins.same("INSERT INTO {t}k VALUES ('a', 1), ('A', 2), ('b', 3)")
    assert twins.same("INSERT INTO {t}k VALUES ('a', 4)")[0] == "error"
    twins.same("UPDATE {t}k SET a = 'B' WHERE a = 'b'")
    twins.same("SELECT * FROM {t}k ORDER BY a", ordered=True)
    # Certification: two transactions writing the same collated key, one commits.
    first, second = connect(), connect()
    run(first, "UPDATE k SET b = 10 WHERE a = 'a'")
    run(second, "UPDATE k SET b = 20 WHERE a = 'a'")
    first.commit()
    with pytest.raises(tique.SerializationFailure):
        second.commit()
    assert rows(twins.conn, "SELECT b FROM k WHERE a = 'a'") == [(10,)]
    if not native("SELECT 1 FROM pg_collation WHERE collprovider = 'i'"):
        return
    native("CREATE COLLATION IF NOT EXISTS tq_test_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
    with pytest.raises(tique.NotSupportedError, match="nondeterministic"):
        twins.conn.cursor().execute("CREATE TABLE ci (a TEXT COLLATE tq_test_ci PRIMARY KEY)")
    # Off the key, a nondeterministic collation only compares: kept as natively.
    twins.same("CREATE TABLE {t}ci (id INT PRIMARY KEY, a TEXT COLLATE tq_test_ci)")
    twins.same("INSERT INTO {t}ci VALUES (1, 'ABC'), (2, 'abc'), (3, 'x')")
    twins.same("SELECT id FROM {t}ci WHERE a = 'Abc'")
    twins.same("SELECT count(DISTINCT a) FROM {t}ci")


# -- defaults -------------------------------------------------------------------------------

def test_defaults_in_values_and_set(engine: str, twins: Twins) -> None:
    twins.same("CREATE TABLE {t}d (id INT, a INT DEFAULT 7, b VARCHAR(10) DEFAULT 'x', c DECIMAL(10, 2) DEFAULT 1.5, e INT)")
    for sql in (
        "INSERT INTO {t}d VALUES (1, DEFAULT, DEFAULT, DEFAULT, 1)",
        "INSERT INTO {t}d VALUES (2, 1, DEFAULT, 2.25, 2), (3, DEFAULT, 'y', DEFAULT, 3)",
        "INSERT INTO {t}d VALUES (4, DEFAULT, DEFAULT, DEFAULT, 4), (5, DEFAULT, DEFAULT, DEFAULT, 5)",
        "INSERT INTO {t}d (id, e) VALUES (6, 6)",
        "INSERT INTO {t}d (e, id, b) VALUES (7, 7, DEFAULT), (8, 8, 'z')",
        "INSERT INTO {t}d (id) SELECT 9",
        "INSERT INTO {t}d VALUES (10, 10, 'w', 10, DEFAULT)",  # MonetDB: e has no default to take
        "INSERT INTO {t}d DEFAULT VALUES",
        "UPDATE {t}d SET a = DEFAULT, c = DEFAULT WHERE id = 2",
        "UPDATE {t}d SET e = DEFAULT WHERE id = 3",
    ):
        twins.same(sql)
        twins.same("SELECT * FROM {t}d")
    checkpoint(twins.conn)
    twins.same("SELECT * FROM {t}d")


def test_sequence_defaults(engine: str, twins: Twins, native: Native) -> None:
    draw = "NEXT VALUE FOR {s}seq" if engine == "monetdb" else "nextval('{s}seq')"
    twins.same("CREATE SEQUENCE {s}seq")
    twins.same(f"CREATE TABLE {{t}}q (id BIGINT DEFAULT {draw} PRIMARY KEY, v INT)")
    for sql in ("INSERT INTO {t}q (v) VALUES (1), (2)",
                "INSERT INTO {t}q VALUES (DEFAULT, 3), (100, 4)",
                "INSERT INTO {t}q (v) SELECT 5",
                "INSERT INTO {t}q VALUES (DEFAULT, 6)"):
        twins.same(sql)
    twins.same("SELECT * FROM {t}q")
    assert twins.same("INSERT INTO {t}q VALUES (100, 7)")[0] == "error"  # the key repeats
    # The table depends on its sequence: neither side drops it from under the table.
    assert twins.same("DROP SEQUENCE {s}seq")[0] == "error"
    twins.same("INSERT INTO {t}q (v) VALUES (8)")
    twins.same("SELECT * FROM {t}q")


# -- generated columns ----------------------------------------------------------------------

GENERATED = {
    "duckdb": "CREATE TABLE {t}g (id INT PRIMARY KEY, a INT, b INT GENERATED ALWAYS AS (a * 2) VIRTUAL, c VARCHAR DEFAULT 'x', d VARCHAR AS (upper(c) || '!'))",
    "postgres": "CREATE TABLE {t}g (id INT PRIMARY KEY, a INT, b INT GENERATED ALWAYS AS (a * 2) STORED, c VARCHAR DEFAULT 'x', d VARCHAR GENERATED ALWAYS AS (upper(c) || '!') STORED)",
    "monetdb": "CREATE TABLE {t}g (id INT PRIMARY KEY, a INT, b INT GENERATED ALWAYS AS (a * 2) STORED)",
}


def test_generated_columns(engine: str, twins: Twins) -> None:
    if engine == "monetdb":
        mine, theirs = twins.both(GENERATED[engine])
        assert mine == ("error", "NotSupportedError") and theirs[0] == "error"
        return
    twins.same(GENERATED[engine])
    positional = "INSERT INTO {t}g VALUES (1, 10, 'a')" if engine == "duckdb" else "INSERT INTO {t}g VALUES (1, 10, DEFAULT, 'a', DEFAULT)"
    for sql in (
        positional,
        "INSERT INTO {t}g (id, a) VALUES (2, 20), (3, NULL)",
        "INSERT INTO {t}g (id, c, a) SELECT 4, 'q', 40",
        "INSERT INTO {t}g (id, a, b) VALUES (5, 50, 1)",          # a generated column is never written
        "INSERT INTO {t}g (id, a, b) VALUES (6, 60, DEFAULT)",    # PostgreSQL takes DEFAULT, DuckDB not even that
        "INSERT INTO {t}g VALUES (7, 70, 7, 'a', 'b')",
        "UPDATE {t}g SET a = a + 1, c = 'z' WHERE id = 2",
        "UPDATE {t}g SET a = id * 100 WHERE id >= 3",
        "UPDATE {t}g SET b = 1",
        "UPDATE {t}g SET b = DEFAULT, c = DEFAULT WHERE id = 1",  # PostgreSQL only
        "DELETE FROM {t}g WHERE b = 600",
    ):
        twins.same(sql)
        twins.same("SELECT * FROM {t}g")
    checkpoint(twins.conn)
    twins.same("SELECT id, b, d FROM {t}g WHERE b > 50")


# -- rowid ----------------------------------------------------------------------------------

def test_rowid(engine: str, twins: Twins) -> None:
    conn = twins.conn
    run(conn, "CREATE TABLE r (a INT, b VARCHAR(5))")
    run(conn, "INSERT INTO r VALUES (5, 'x'), (6, 'y'), (7, 'z')")
    if engine != "duckdb":  # PostgreSQL and MonetDB have no rowid: it is an unknown column both ways
        twins.same("CREATE TABLE {t}r2 (a INT)")
        mine, theirs = twins.both("SELECT rowid, a FROM {t}r2")
        assert mine == ("error", "ProgrammingError") and theirs[0] == "error"
        return
    ids = dict((a, i) for i, a in rows(conn, "SELECT rowid, a FROM r"))
    assert len(set(ids.values())) == 3
    cur = conn.cursor()
    cur.execute("SELECT rowid, a FROM r WHERE a = 5")
    assert [d[0] for d in cur.description] == ["rowid", "a"]
    # The id stays with its row through updates, other rows' deletes, and checkpoints.
    run(conn, "UPDATE r SET a = 66 WHERE rowid = ?", (ids[6],))
    assert run(conn, "DELETE FROM r WHERE rowid = ?", (ids[5],)) == 1
    run(conn, "INSERT INTO r VALUES (8, 'w')")
    checkpoint(conn)
    after = dict((a, i) for i, a in rows(conn, "SELECT r.rowid, a FROM r"))
    assert after[66] == ids[6] and after[7] == ids[7] and after[8] not in ids.values()
    assert rows(conn, "SELECT a FROM r WHERE a IN (SELECT x.a FROM r AS x WHERE x.rowid = ?)", (ids[7],)) == [(7,)]
    assert rows(conn, "SELECT b FROM r ORDER BY rowid") == [("y",), ("z",), ("w",)]
    # A star would show the row id as a column, which natively it is not.
    with pytest.raises(tique.NotSupportedError, match="name the columns"):
        conn.cursor().execute("SELECT *, rowid FROM r")
    # A table with a primary key has no row id on tique: its key identifies the row.
    run(conn, "CREATE TABLE p (k INT PRIMARY KEY)")
    with pytest.raises(tique.NotSupportedError, match="use its key"):
        conn.cursor().execute("SELECT rowid, k FROM p")
    # A column of its own named rowid is that column, as natively.
    twins.same("CREATE TABLE {t}own (rowid INT, v INT)")
    twins.same("INSERT INTO {t}own VALUES (10, 1), (20, 2)")
    twins.same("SELECT rowid, v FROM {t}own WHERE rowid = 20")


# -- types and what else a column declares --------------------------------------------------

TYPES = {
    "duckdb": ["VARCHAR(10)", "DECIMAL(5, 2)", "DECIMAL(38, 10)", "NUMERIC", "CHAR(3)", "TIMESTAMP WITH TIME ZONE",
               "TIMESTAMP(3)", "INTERVAL", "DOUBLE PRECISION", "REAL", "INT[]", "STRUCT(x INT, y VARCHAR)",
               "MAP(VARCHAR, INT)", "UUID", "BLOB", "HUGEINT", "UTINYINT", "BIT", "TIME", "ENUM('a', 'b')", "JSON",
               "DECIMAL(4, 1)[]", "VARCHAR[3]", "UNION(n INT, s VARCHAR)", "TIMESTAMP_NS", "TIMESTAMP_S", "TIME WITH TIME ZONE",
               "UHUGEINT", "USMALLINT", "VARINT", "FLOAT4", "INT64", "STRUCT(a DECIMAL(9, 3), b INT[])"],
    "postgres": ["VARCHAR(10)", "CHAR(3)", "NUMERIC(5, 2)", "NUMERIC", "DECIMAL(12)", "TIMESTAMP(3) WITH TIME ZONE",
                 "TIMESTAMP(0)", "TIME(2)", "INTERVAL", "DOUBLE PRECISION", "REAL", "INT[]", "TEXT[]", "BIT(3)",
                 "VARBIT(5)", "UUID", "BYTEA", "JSONB", "INET", "MONEY", "SMALLINT", "CHARACTER VARYING(7)",
                 "CHARACTER(4)", "BIT VARYING(5)", "TIME WITH TIME ZONE", "TIMESTAMP WITHOUT TIME ZONE", "NUMERIC(5)",
                 "FLOAT(10)", "INTERVAL DAY TO SECOND", "INTERVAL(3)", "INT4RANGE", "TSVECTOR", "XML", "CIDR",
                 "MACADDR", "POINT", "DATE[]", "NUMERIC(4, 1)[]", "VARCHAR(3)[]", "TEXT COLLATE \"C\""],
    "monetdb": ["VARCHAR(10)", "CHAR(3)", "DECIMAL(5, 2)", "NUMERIC(18, 3)", "TIMESTAMP WITH TIME ZONE", "TIME(3)",
                "INTERVAL SECOND", "DOUBLE PRECISION", "REAL", "CLOB", "BLOB", "HUGEINT", "TINYINT", "UUID", "JSON",
                "CHARACTER VARYING(7)", "INTERVAL DAY", "INTERVAL MONTH", "TIMESTAMP(3)", "TIME WITH TIME ZONE", "FLOAT(10)",
                "NUMERIC(4)", "INET", "URL", "STRING", "BOOLEAN", "DATE"],
}

# Types sqlglot cannot read (PostgreSQL's BIT VARYING(n), INTERVAL(p)): their statements
# cannot be rewritten. VARBIT(n) and INTERVAL SECOND(p) say the same.
UNPARSED = {"BIT VARYING(5)", "INTERVAL(3)"}

_TYPE_OF = {
    "duckdb": "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{table}' ORDER BY ordinal_position",
    "postgres": ("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute AS a"
                 " WHERE a.attrelid = '{table}'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
    "monetdb": ("SELECT c.name, c.type || '(' || c.type_digits || ',' || c.type_scale || ')' FROM sys.columns AS c"
                " JOIN sys.tables AS t ON t.id = c.table_id JOIN sys.schemas AS s ON s.id = t.schema_id"
                " WHERE s.name = current_schema AND t.name = '{table}' ORDER BY c.number"),
}


@pytest.mark.parametrize("index", range(45))
def test_column_types_as_declared(engine: str, twins: Twins, native: Native, index: int) -> None:
    """Each type, parameters included, is the type natively given to the same declaration,
    in storage and in the cache alike."""
    if index >= len(TYPES[engine]):
        pytest.skip("no more types on this engine")
    declared = TYPES[engine][index]
    if declared in UNPARSED:  # refused as a syntax error, never taken as another type
        with pytest.raises(tique.ProgrammingError, match="syntax error"):
            twins.conn.cursor().execute(f"CREATE TABLE ty (v {declared})")
        return
    mine, theirs = twins.both(f"CREATE TABLE {{t}}ty (v {declared})")
    assert mine[0] == theirs[0], f"{declared}: tique {mine}, natively {theirs}"
    if mine[0] == "error":
        return
    expected = native(_TYPE_OF[engine].format(table="n_ty"))
    for physical in ("ty_storage", "ty_cache"):
        found = native(_TYPE_OF[engine].format(table=physical))
        assert [tuple(r) for r in found[:1]] == [tuple(r) for r in expected], f"{declared} in {physical}"


def _refusals(engine: str) -> list[str]:
    draw = "NEXT VALUE FOR s" if engine == "monetdb" else "nextval('s')"
    common = ["CREATE TABLE x (a INT GENERATED ALWAYS AS IDENTITY, b INT)"]
    return common + {
        "duckdb": ["CREATE TABLE x (a INT, b INT AS (a + 1) STORED)"],
        "postgres": ["CREATE TABLE x (a SERIAL, b INT)", "CREATE TABLE x (a BIGSERIAL PRIMARY KEY)",
                     "CREATE TABLE x (a INT GENERATED BY DEFAULT AS IDENTITY, b INT)"],
        "monetdb": ["CREATE TABLE x (a SERIAL, b INT)", "CREATE TABLE x (a INT AUTO_INCREMENT, b INT)"],
    }[engine] + [draw]


def test_refused_properties_say_what_to_do(engine: str, twins: Twins) -> None:
    """What tique cannot keep with its meaning it refuses, saying what to do instead."""
    *statements, draw = _refusals(engine)
    for statement in statements:
        with pytest.raises(tique.NotSupportedError) as refused:
            twins.conn.cursor().execute(statement)
        message = str(refused.value)
        assert "_storage" not in message and "_cache" not in message
        if "IDENTITY" in statement or "SERIAL" in statement or "AUTO_INCREMENT" in statement:
            assert draw in message, message
    # The advice works: a sequence and a default numbering the rows.
    run(twins.conn, "CREATE SEQUENCE s")
    run(twins.conn, f"CREATE TABLE x (a BIGINT DEFAULT {draw}, b INT)")
    run(twins.conn, "INSERT INTO x (b) VALUES (1), (2)")
    assert rows(twins.conn, "SELECT a, b FROM x ORDER BY b") == [(1, 1), (2, 2)]


def test_generated_column_rules(engine: str, twins: Twins) -> None:
    if engine == "monetdb":
        pytest.skip("MonetDB has no generated columns")
    stored = "STORED" if engine == "postgres" else "VIRTUAL"
    with pytest.raises(tique.NotSupportedError, match="primary key"):
        twins.conn.cursor().execute(f"CREATE TABLE y (a INT, b INT GENERATED ALWAYS AS (a + 1) {stored} PRIMARY KEY)")
    mine, theirs = twins.both(f"CREATE TABLE {{t}}y (a INT, b INT GENERATED ALWAYS AS (nope + 1) {stored})")
    assert mine[0] == theirs[0] == "error"
    if engine == "duckdb":  # DuckDB infers a generated column's type; tique asks for it
        with pytest.raises(tique.NotSupportedError, match="declare its type"):
            twins.conn.cursor().execute("CREATE TABLE y (a INT, b AS (a * 2))")


def test_decimal_default_rounds_as_natively(engine: str, twins: Twins) -> None:
    twins.same("CREATE TABLE {t}m (id INT, c DECIMAL(10, 2) DEFAULT 1.255)")
    twins.same("INSERT INTO {t}m VALUES (1, DEFAULT)")
    twins.same("INSERT INTO {t}m (id) VALUES (2)")
    mine = twins.same("SELECT c FROM {t}m")
    assert mine[1] and all(isinstance(c, Decimal) for (c,) in mine[1])


def test_computed_values_are_stored_as_their_column_types_natively(twins: Twins) -> None:
    """A value computed for a DECIMAL column is stored as the engine's own UPDATE and
    INSERT store it. MonetDB 11.45's SELECT answers `price * 1000` for 1.50 as 1.50 (its
    optimizer drops the constant's trailing zeros), while its writes store 1500.00; tique
    computes new rows in a SELECT, so it must not inherit that."""
    twins.same("CREATE TABLE {t}item (id INT PRIMARY KEY, price DECIMAL(6,2), qty INT)")
    twins.same("INSERT INTO {t}item VALUES (1, 1.50, 7), (2, 2.25, 3)")
    twins.same("UPDATE {t}item SET price = price * 1000 WHERE id = 1")
    twins.same("UPDATE {t}item SET price = price * 20, qty = qty * 1000 WHERE id = 2")
    twins.same("INSERT INTO {t}item SELECT id + 10, price * 100, qty * 10 FROM {t}item")
    twins.same("INSERT INTO {t}item VALUES (20, (SELECT price * 10 FROM {t}item WHERE id = 2), 1)")
    twins.same("SELECT id, price, qty FROM {t}item ORDER BY id", ordered=True)


# -- adopting a native table keeps them too -------------------------------------------------

ADOPTED = {
    "duckdb": "CREATE TABLE {t}ad (id INT PRIMARY KEY, a VARCHAR COLLATE NOCASE, n INT DEFAULT 7, g INT GENERATED ALWAYS AS (n * 2) VIRTUAL)",
    "postgres": 'CREATE TABLE {t}ad (id SERIAL PRIMARY KEY, a VARCHAR(10) COLLATE "C", n INT DEFAULT 7, g INT GENERATED ALWAYS AS (n * 2) STORED)',
    "monetdb": "CREATE TABLE {t}ad (id INT PRIMARY KEY, a VARCHAR(10), n INT DEFAULT 7)",
}


def test_adopt_keeps_column_properties(engine: str, connect: Callable[..., tique.Connection], twins: Twins, native: Native) -> None:
    from tique.adopt import adopt

    for prefix in ("", "n_"):  # created on the engine directly: SERIAL stays SERIAL
        native(ADOPTED[engine].format(t=prefix))
        if engine == "postgres":
            native(f"INSERT INTO {prefix}ad (a) VALUES ('ABC')")
        else:
            native(f"INSERT INTO {prefix}ad (id, a, n) VALUES (1, 'ABC', 3)")
    assert adopt(connect(autocommit=True), ["ad"]) == {"ad": 1}
    twins.conn._load_catalog()
    insert = "INSERT INTO {t}ad (a) VALUES ('abc')" if engine == "postgres" else "INSERT INTO {t}ad (id, a) VALUES (2, 'abc')"
    twins.same(insert)
    twins.same("SELECT * FROM {t}ad")
    twins.same("SELECT id FROM {t}ad WHERE a = 'abc'")
    twins.same("UPDATE {t}ad SET n = DEFAULT")
    twins.same("SELECT * FROM {t}ad")


def test_defaults_and_generated_columns_with_parameters(engine: str, twins: Twins) -> None:
    """Statements with parameters take the path that repeats one row's text per row."""
    conn = twins.conn
    generated = {"duckdb": ", g INT AS (n + 1)", "postgres": ", g INT GENERATED ALWAYS AS (n + 1) STORED"}.get(engine, "")
    run(conn, f"CREATE TABLE pd (id INT PRIMARY KEY, n INT DEFAULT 5, s VARCHAR(10) DEFAULT 'dflt'{generated})")
    conn.cursor().executemany("INSERT INTO pd (id, n, s) VALUES (?, DEFAULT, ?)", [(1, "a"), (2, "b"), (3, None)])
    conn.cursor().executemany("INSERT INTO pd (id, s) VALUES (?, DEFAULT)", [(4,), (5,)])
    run(conn, "INSERT INTO pd (id, n) VALUES (?, ?), (?, DEFAULT)", (6, 60, 7))
    run(conn, "UPDATE pd SET n = DEFAULT, s = ? WHERE id = ?", ("u", 6))
    expected_g = bool(generated)
    found = rows(conn, "SELECT * FROM pd ORDER BY id")
    assert [r[:3] for r in found] == [(1, 5, "a"), (2, 5, "b"), (3, 5, None), (4, 5, "dflt"), (5, 5, "dflt"),
                                      (6, 5, "u"), (7, 5, "dflt")]
    if expected_g:
        assert all(r[3] == r[1] + 1 for r in found)
    if engine == "duckdb":
        run(conn, "CREATE TABLE rr (a INT)")
        run(conn, "INSERT INTO rr VALUES (1), (2)")
        run(conn, "CREATE TABLE copy (id BIGINT, a INT)")
        run(conn, "INSERT INTO copy SELECT rowid, a FROM rr")
        run(conn, "UPDATE rr SET a = rowid * 10")
        assert sorted(rows(conn, "SELECT c.id * 10 = r.a FROM copy AS c JOIN rr AS r ON r.rowid = c.id")) == [(True,), (True,)]

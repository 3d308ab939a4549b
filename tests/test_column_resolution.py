"""Which columns a read's snapshot carries is decided by binding each column reference to the
table it belongs to, as the engine binds it (sqlglot's qualify_columns over the catalog,
and its scopes: tique/rewrite/reads.py used_columns). A snapshot that left out a column
the engine binds to its table would make the engine bind the name elsewhere (an outer
query's table of the same column name) or fail; so every query here also runs natively,
and tique must answer exactly as the engine does, rows or error."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

import tique
from fuzz.compare import ordered_outermost, same_rows
from fuzz.engines import Native, run_tique
from native_pair import native_pair
from tique.backends.base import Backend
from tique.catalog import CatalogSnapshot, table_def_from_create
from tique.planner import parse_one
from tique.rewrite import passes
from tique.rewrite.reads import referenced_tables, used_columns
from tique.rewrite.snapshot import Formulation

TABLES = [
    "CREATE TABLE t (k INTEGER PRIMARY KEY, a INTEGER, s VARCHAR(10), w INTEGER)",
    "CREATE TABLE u (k INTEGER PRIMARY KEY, a INTEGER, n INTEGER)",
]
ROWS = [
    "INSERT INTO t VALUES (1, 10, 'ab', 1), (2, 7, 'cd', 2), (3, NULL, 'ef', 3)",
    "INSERT INTO u VALUES (1, 7, 100), (2, 10, 200), (4, 7, 300)",
]


def _backend(dialect: str) -> Backend:
    """A backend that never connects: planning alone."""
    if dialect == "duckdb":
        from tique.backends.duckdb import DuckDBBackend
        return DuckDBBackend("duckdb:///:memory:")
    if dialect == "postgres":
        from tique.backends.postgres import PostgresBackend
        return PostgresBackend("postgresql://nobody@127.0.0.1:1/none")
    from tique.backends.monetdb import MonetDBBackend
    return MonetDBBackend("monetdb://nobody@127.0.0.1:1/none")


def _used(dialect: str, sql: str) -> list[tuple[str, tuple[str, ...] | None]]:
    """(alias, columns its snapshot carries) of each tique table reference of `sql`, in order."""
    backend = _backend(dialect)
    try:
        tables = {}
        for ddl in TABLES:
            table = backend.new_table(table_def_from_create(parse_one(ddl, dialect), dialect, ddl))
            tables[table.name] = table
        catalog = CatalogSnapshot.of(tables)
        context = passes.PassContext(catalog, dialect, Formulation.AUTO, backend.key_hash, sql)
        tree = passes.run(passes.PREPARE, parse_one(sql, dialect), context)
        refs = referenced_tables(tree, catalog)
        found = used_columns(tree, refs, catalog, dialect)
        return [(ref.alias_or_name, found.get(id(ref))) for ref, _ in refs]
    finally:
        backend.close()


# (query, what each tique table reference's snapshot carries, in reference order; None: all)
PRECISE: list[tuple[str, list[tuple[str, tuple[str, ...] | None]]]] = [
    # A name both tables have belongs to the one its qualifier names.
    ("SELECT t.s FROM t JOIN u ON u.k = t.k WHERE u.a > 1", [("t", ("k", "s")), ("u", ("k", "a"))]),
    # Unqualified in a subquery: the subquery's own table first, the outer one otherwise.
    ("SELECT s FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND a = 7)", [("t", ("k", "s")), ("u", ("k", "a"))]),
    ("SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND w = 2)", [("t", ("k", "w")), ("u", ("k",))]),
    # The inner alias hides the outer one of the same name.
    ("SELECT x.s FROM t AS x WHERE EXISTS (SELECT 1 FROM u AS x WHERE x.a = 7)", [("x", ("s",)), ("x", ("a",))]),
    # A star reads all of the tables it covers, and only those.
    ("SELECT s FROM t WHERE EXISTS (SELECT * FROM u WHERE u.k = t.k)", [("t", ("k", "s")), ("u", None)]),
    ("SELECT t.*, u.n FROM t JOIN u ON u.k = t.k", [("t", None), ("u", ("k", "n"))]),
    ("SELECT count(*) FROM t", [("t", ("k",))]),
    # USING binds its names to both tables.
    ("SELECT s, n FROM t JOIN u USING (k, a)", [("t", ("k", "a", "s")), ("u", ("k", "a", "n"))]),
    # A name two tables have, unqualified, is ambiguous: both carry it, so the engine says so.
    ("SELECT a FROM t JOIN u ON u.k = t.k", [("t", ("k", "a")), ("u", ("k", "a"))]),
    # A name no table has is the engine's to report; it carries nothing.
    ("SELECT s, nocol FROM t", [("t", ("s",))]),
    ("SELECT t.nocol, t.s FROM t", [("t", ("s",))]),
    # Identifiers fold as the engine folds them.
    ("SELECT S, T.W FROM T WHERE K = 1", [("T", ("k", "s", "w"))]),
    # A column list on the alias renames by position: every column.
    ("SELECT x.b FROM t AS x(a, b)", [("x", None)]),
]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "monetdb"])
@pytest.mark.parametrize("query, expected", PRECISE)
def test_a_snapshot_carries_the_columns_bound_to_its_table(dialect: str, query: str, expected: list) -> None:
    assert _used(dialect, query) == expected


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "monetdb"])
def test_a_name_a_table_of_unknown_columns_may_hold_counts_for_the_tique_table(dialect: str) -> None:
    """A native table's columns are not in the catalog, so an unqualified name in a
    correlated subquery over one may be its or the outer table's: the outer table carries it."""
    assert _used(dialect, "SELECT s FROM t WHERE EXISTS (SELECT 1 FROM elsewhere AS e WHERE e.k = t.k AND a = 7)") == [("t", ("k", "a", "s"))]
    # So does a name two tique tables have, there, whichever sqlglot could not bind.
    assert _used(dialect, "SELECT t.s FROM t JOIN u ON u.k = t.k WHERE EXISTS (SELECT 1 FROM elsewhere AS e WHERE e.n = a)") == [
        ("t", None), ("u", None)]


# Run natively and through tique: rows, or an error on both. Chosen so that binding a
# name to the wrong table would change the rows.
QUERIES: list[tuple[str, tuple]] = [
    ("SELECT t.s FROM t JOIN u ON u.k = t.k WHERE u.a > ?", (8,)),
    ("SELECT s FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND a = 7)", ()),
    ("SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND w = 2)", ()),
    ("SELECT x.s FROM t AS x WHERE EXISTS (SELECT 1 FROM u AS y WHERE y.k = x.k AND x.a = 10)", ()),
    ("SELECT x.s FROM t AS x WHERE EXISTS (SELECT 1 FROM u AS x WHERE x.a = 10)", ()),
    ("SELECT (SELECT max(n) FROM u WHERE u.a = t.a) FROM t", ()),
    ("SELECT s FROM t WHERE a IN (SELECT a FROM u WHERE n > ?)", (150,)),
    ("SELECT s, n FROM t JOIN u USING (k)", ()),
    ("SELECT s, n FROM t JOIN u USING (k, a)", ()),
    ("SELECT s, count(*) FROM t GROUP BY s HAVING max(a) > ?", (8,)),
    ("SELECT k AS a FROM t ORDER BY a", ()),
    ("SELECT q.s FROM (SELECT s, a FROM t) AS q WHERE q.a > ?", (8,)),
    ("SELECT S, T.W FROM T WHERE K = ?", (2,)),
    ("SELECT a FROM t JOIN u ON u.k = t.k", ()),  # ambiguous
    ("SELECT nocol FROM t", ()),
    ("SELECT t.nocol FROM t", ()),
    ("SELECT s FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND nocol = 1)", ()),
]
EXTRA = {"duckdb": [("SELECT a * 2 AS dbl FROM t WHERE dbl > ?", (15,))]}


@pytest.fixture
def pair(engine: str, connect: Any, request: pytest.FixtureRequest) -> Iterator[tuple[tique.Connection, Native]]:
    """A tique database and a native one with the same tables and rows."""
    yield from native_pair(engine, connect, request, TABLES + ROWS, "bind")


def test_reads_bind_columns_as_natively(engine: str, pair: tuple[tique.Connection, Native]) -> None:
    """Inside a transaction that wrote both tables, so that cache versions pass through
    the narrowed snapshots too."""
    conn, native = pair
    conn.autocommit = False
    for write in ("UPDATE u SET n = n + 1 WHERE k = 1", "UPDATE t SET w = w + 10 WHERE k = 2"):
        conn.cursor().execute(write)
        assert native.execute(write, (), write=True).kind == "count"
    for query, params in QUERIES + EXTRA.get(engine, []):
        want = native.execute(query, params, write=False)
        got = run_tique(conn, query, params)
        if want.kind == "error":
            assert got.kind == "error", f"{query}: natively {want.brief()}, through tique {got.brief()}"
            assert got.error.startswith("ProgrammingError"), got.error
            assert not any(word in got.error for word in ("_storage", "_cache", "tq_")), got.error
            conn.rollback()
            for write in ("UPDATE u SET n = n + 1 WHERE k = 1", "UPDATE t SET w = w + 10 WHERE k = 2"):
                conn.cursor().execute(write)
            continue
        assert got.kind == "rows", f"{query}: natively {want.brief()}, through tique {got.brief()}"
        assert same_rows(want.rows, got.rows, ordered=ordered_outermost(query)), f"{query}\n{want.brief()}\n{got.brief()}"
    conn.rollback()

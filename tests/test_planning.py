"""Planning is pure: a plan is a function of (statement, dialect, catalog snapshot, options).

The planner runs here on backends that have no connection at all (none is ever opened):
if planning asked the engine for anything, these tests could not run.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tique.backends.base import Backend
from tique.catalog import CatalogSnapshot, TableDef, table_def_from_create
from tique.planner import NativePlan, ReadPlan, WritePlan, make_plan, parse_one, plan_statement
from tique.rewrite.snapshot import Formulation

TABLES = {
    "accounts": "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner VARCHAR(20), balance INTEGER)",
    "entries": "CREATE TABLE entries (account INTEGER, n INTEGER, amount INTEGER, PRIMARY KEY (account, n))",
}
STATEMENTS = [
    "SELECT balance FROM accounts WHERE id = ?",
    "SELECT a.owner, sum(e.amount) FROM accounts AS a JOIN entries AS e ON e.account = a.id WHERE a.id = ? GROUP BY a.owner",
    "WITH big AS (SELECT * FROM accounts WHERE balance > ?) SELECT count(*) FROM big",
    "INSERT INTO accounts VALUES (?, ?, ?)",
    "UPDATE accounts SET balance = balance + ? WHERE id = ?",
    "DELETE FROM entries WHERE account = ? AND n = ?",
    "SELECT 1 + ?",
]


def _backend(dialect: str) -> Backend:
    """A fresh backend (so nothing is shared between plans through its caches) that
    never connects."""
    if dialect == "duckdb":
        from tique.backends.duckdb import DuckDBBackend
        return DuckDBBackend("duckdb:///:memory:")
    if dialect == "postgres":
        from tique.backends.postgres import PostgresBackend
        return PostgresBackend("postgresql://nobody@127.0.0.1:1/none")
    from tique.backends.monetdb import MonetDBBackend
    return MonetDBBackend("monetdb://nobody@127.0.0.1:1/none")


def _tables(backend: Backend, ddl: dict[str, str]) -> dict[str, TableDef]:
    return {name: backend.new_table(table_def_from_create(parse_one(text, backend.dialect), backend.dialect, text))
            for name, text in ddl.items()}


def _comparable(plan: Any) -> Any:
    """What a plan says, as values. A one-row insert's row template holds the backend's
    finishing function, a closure per backend: it is compared by what it makes."""
    if isinstance(plan, WritePlan) and plan.rows is not None:
        return dataclasses.replace(plan, rows=None), plan.rows.expand(3)
    return plan


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "monetdb"])
def test_same_text_same_snapshot_same_plan_without_a_connection(dialect: str) -> None:
    first, second = _backend(dialect), _backend(dialect)
    try:
        snapshot = CatalogSnapshot.of(_tables(first, TABLES))
        for sql in STATEMENTS:
            one = make_plan(sql, first, snapshot, Formulation.AUTO, frozenset())
            two = make_plan(sql, second, snapshot, Formulation.AUTO, frozenset())
            assert _comparable(one) == _comparable(two), sql
            assert not isinstance(one, NativePlan) or sql == "SELECT 1 + ?"
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_a_plan_cannot_see_a_catalog_change_made_after_its_snapshot(dialect: str) -> None:
    backend = _backend(dialect)
    try:
        tables = _tables(backend, TABLES)
        snapshot = CatalogSnapshot.of(tables)
        before = make_plan("SELECT * FROM ledger", backend, snapshot, Formulation.AUTO, frozenset())
        point_before = make_plan("SELECT owner FROM accounts WHERE id = ?", backend, snapshot, Formulation.AUTO, frozenset())
        # The catalog the snapshot was taken from changes: a new table, a redefined key.
        tables.update(_tables(backend, {
            "ledger": "CREATE TABLE ledger (id INTEGER PRIMARY KEY, v INTEGER)",
            "accounts": "CREATE TABLE accounts (id INTEGER, owner VARCHAR(20) PRIMARY KEY, balance INTEGER)",
        }))
        assert snapshot.table("ledger") is None
        assert snapshot.table("accounts") is not None and snapshot.table("accounts").key == ("id",)  # type: ignore[union-attr]
        plan, unknown = plan_statement("SELECT * FROM ledger", backend, snapshot, Formulation.AUTO, frozenset())
        assert isinstance(plan, NativePlan) and plan == before
        assert unknown == {"ledger"}  # what the caller may look up, then plan again with
        assert make_plan("SELECT owner FROM accounts WHERE id = ?", backend, snapshot, Formulation.AUTO, frozenset()) == point_before
        # A new snapshot sees the change.
        fresh = CatalogSnapshot.of(tables)
        after, unknown = plan_statement("SELECT * FROM ledger", backend, fresh, Formulation.AUTO, frozenset())
        assert isinstance(after, ReadPlan) and after.tables == ("ledger",) and not unknown
        redefined = make_plan("SELECT owner FROM accounts WHERE id = ?", backend, fresh, Formulation.AUTO, frozenset())
        assert redefined != point_before
    finally:
        backend.close()


def test_unknown_names_leave_out_ctes_and_the_created_table() -> None:
    backend = _backend("postgres")
    snapshot = CatalogSnapshot.of(_tables(backend, TABLES))
    _, unknown = plan_statement("WITH t AS (SELECT 1 AS x) SELECT * FROM t JOIN other.u ON true JOIN v ON true",
                                backend, snapshot, Formulation.AUTO, frozenset())
    assert unknown == {"v"}
    plan, unknown = plan_statement("CREATE TABLE fresh (id INTEGER PRIMARY KEY)", backend, snapshot, Formulation.AUTO, frozenset())
    assert not unknown and not isinstance(plan, (ReadPlan, WritePlan))


def test_a_connection_learns_a_table_another_client_created(connect) -> None:  # type: ignore[no-untyped-def]
    """The connection, not the planner, looks up names its snapshot lacks, then plans
    again against the new snapshot."""
    reader, creator = connect(autocommit=True), connect()
    cur = reader.cursor()
    cur.execute("SELECT 1")
    creator.cursor().execute("CREATE TABLE late (id INTEGER PRIMARY KEY, v INTEGER)")
    creator.cursor().execute("INSERT INTO late VALUES (1, 10)")
    creator.commit()
    assert reader._snapshot.table("late") is None
    plan = reader._plan("SELECT v FROM late WHERE id = ?")  # no transaction begun: planning alone
    assert isinstance(plan, ReadPlan) and plan.tables == ("late",)
    assert reader._snapshot.table("late") is not None
    cur.execute("SELECT v FROM late WHERE id = ?", (1,))
    assert cur.fetchall() == [(10,)]


def test_the_pass_lists_are_what_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read is planned by PREPARE then READ, each pass once, in the listed order; the
    plan's statement is exactly what those passes make of the parsed statement."""
    from tique.rewrite import passes
    from tique.rewrite.params import normalize_placeholders
    from tique.rewrite.templates import forget_positions

    backend = _backend("duckdb")
    try:
        snapshot = CatalogSnapshot.of(_tables(backend, TABLES))
        sql = "SELECT a.owner, e.amount FROM accounts AS a JOIN entries AS e ON e.account = a.id WHERE a.id = ?"
        ran: list[str] = []

        def recorded(each: passes.Pass) -> passes.Pass:
            def run(tree: Any, context: passes.PassContext) -> Any:
                ran.append(each.__name__)
                return each(tree, context)
            return run

        plain = make_plan(sql, backend, snapshot, Formulation.AUTO, frozenset())
        assert isinstance(plain, ReadPlan)
        monkeypatch.setattr(passes, "PREPARE", tuple(recorded(p) for p in passes.PREPARE))
        monkeypatch.setattr(passes, "READ", tuple(recorded(p) for p in passes.READ))
        traced = make_plan(sql, backend, snapshot, Formulation.AUTO, frozenset())
        assert isinstance(traced, ReadPlan)
        traced.statement  # on DuckDB the snapshot read is made on first use, not when planned
        assert ran == ["expand_views", "alias_as_written", "name_output_columns_as_native", "expose_rowid", "refuse_engine_rejects",
                       "narrow_side_first_for_lateral", "reverse_min_on_monetdb", "null_safe_case_conditions_on_monetdb",
                       "replace_tables_with_snapshots", "fence_snapshots_in_joins"]
        assert traced == plain
        monkeypatch.undo()

        # The same passes applied by hand to the parsed statement make the plan's statement.
        tree = forget_positions(parse_one(sql, "duckdb"))
        normalize_placeholders(tree)
        context = passes.PassContext(snapshot, "duckdb", Formulation.AUTO, backend.key_hash, sql, lateral=backend.lateral_point_reads)
        by_hand = passes.run(passes.READ, passes.run(passes.PREPARE, tree, context), context)
        assert backend.compile(by_hand) == plain.statement
        assert "accounts_cache" in plain.statement.sql and "entries_storage" in plain.statement.sql

        # Without the snapshot pass the read would name the application's tables: the list decides.
        monkeypatch.setattr(passes, "READ", ())
        bare = make_plan(sql, backend, snapshot, Formulation.AUTO, frozenset())
        assert isinstance(bare, ReadPlan) and "_cache" not in bare.statement.sql
    finally:
        backend.close()


def test_monetdb_plans_say_which_inserts_run_as_a_read_then_an_insert() -> None:
    """The plan records what the rewriter knows (tique/rewrite/facts.py): which compiled
    inserts are tique's own inserts of a query's rows, and which subqueries are snapshots
    (whose plain storage form names MonetDB's result columns). The backend reads these
    facts, not the SQL text."""
    from tique.backends.monetdb import FormatSQL

    backend = _backend("monetdb")
    snapshot = CatalogSnapshot.of(_tables(backend, TABLES))
    update = make_plan("UPDATE accounts SET balance = balance + ? WHERE id = ?", backend, snapshot, Formulation.AUTO, frozenset())
    assert isinstance(update, WritePlan)
    (insert,) = update.inserts
    assert isinstance(insert.sql, FormatSQL) and insert.sql.insert_of_query is not None
    target, columns, query = insert.sql.insert_of_query
    assert target == '"accounts_cache"' and columns.startswith('("id", "owner", "balance"')
    assert insert.sql == f"INSERT INTO {target} {columns} {query}" and query.startswith("SELECT")
    values = make_plan("INSERT INTO accounts VALUES (?, ?, ?)", backend, snapshot, Formulation.AUTO, frozenset())
    assert isinstance(values, WritePlan) and values.inserts[0].sql.insert_of_query is None  # rows from no table
    assert values.rows is not None and values.rows.expand(3).sql.insert_of_query is None
    read = make_plan("SELECT owner, balance + 1 FROM accounts WHERE id = ?", backend, snapshot, Formulation.AUTO, frozenset())
    assert isinstance(read, ReadPlan) and read.statement.sql.naming is not None
    assert '"accounts_storage"' in read.statement.sql.naming.text and "tq_outcome" not in read.statement.sql.naming.text
    # An application's own table that only looks like tique's (a name ending in _cache) is
    # no insert of tique's: the statement runs as written.
    native = make_plan("INSERT INTO shop_cache (a) SELECT id FROM other", backend, snapshot, Formulation.AUTO, frozenset())
    assert isinstance(native, NativePlan) and native.statement.sql.insert_of_query is None


def _filled(connect):  # type: ignore[no-untyped-def]
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner VARCHAR(20), balance INTEGER)")
    cur.execute("CREATE TABLE entries (account INTEGER, n INTEGER, amount INTEGER, PRIMARY KEY (account, n))")
    cur.execute("INSERT INTO accounts VALUES (1, 'ann', 10), (2, 'bob', 20)")
    cur.execute("INSERT INTO entries VALUES (1, 1, 5), (2, 1, 7)")
    conn.commit()
    return conn, cur


def test_a_cte_shadows_a_tique_table_of_its_name_where_it_is_visible(connect) -> None:  # type: ignore[no-untyped-def]
    """Which table or CTE a name means is sqlglot's scope's answer (tique/rewrite/reads.py):
    a CTE hides the tique table of its name in the query that owns its WITH, in a
    subquery, and not outside the scope it is declared in."""
    _, cur = _filled(connect)
    cur.execute("WITH accounts AS (SELECT 99 AS id) SELECT id FROM accounts")
    assert cur.fetchall() == [(99,)]
    cur.execute("SELECT owner FROM accounts WHERE id IN (WITH accounts AS (SELECT 2 AS id) SELECT id FROM accounts)")
    assert cur.fetchall() == [("bob",)]
    # Declared in a nested scope only: the outer reference reads the tique table.
    cur.execute("SELECT a.owner, x.id FROM accounts AS a, (WITH accounts AS (SELECT 1 AS id) SELECT id FROM accounts) AS x "
                "WHERE a.id = x.id")
    assert cur.fetchall() == [("ann", 1)]
    # A CTE's own body reads the table (no RECURSIVE), the main query the CTE.
    cur.execute("WITH accounts AS (SELECT id + 10 AS id FROM accounts) SELECT id FROM accounts ORDER BY id")
    assert cur.fetchall() == [(11,), (12,)]


def test_a_cte_before_an_insert_is_read_by_its_query(connect, engine: str) -> None:  # type: ignore[no-untyped-def]
    """`WITH accounts AS (...) INSERT INTO accounts SELECT ... FROM accounts` reads the CTE
    and writes the table (its target is always a table)."""
    if engine == "monetdb":
        pytest.skip("MonetDB has no WITH before INSERT")
    conn, cur = _filled(connect)
    cur.execute("WITH accounts AS (SELECT 3 AS id, 'cy' AS owner, 30 AS balance) INSERT INTO accounts SELECT * FROM accounts")
    cur.execute("INSERT INTO entries WITH entries AS (SELECT 3 AS account, 1 AS n, 9 AS amount) SELECT * FROM entries")
    conn.commit()
    cur.execute("SELECT id, owner, balance FROM accounts ORDER BY id")
    assert cur.fetchall() == [(1, "ann", 10), (2, "bob", 20), (3, "cy", 30)]
    cur.execute("SELECT account, n, amount FROM entries ORDER BY account")
    assert cur.fetchall() == [(1, 1, 5), (2, 1, 7), (3, 1, 9)]


def test_update_from_and_delete_using_read_the_cte_or_refuse(connect, engine: str) -> None:  # type: ignore[no-untyped-def]
    """A source named like a tique table reads that table, unless a CTE of the statement's
    own WITH hides it: such a WITH before UPDATE or DELETE is refused, never dropped."""
    import tique

    conn, cur = _filled(connect)
    cur.execute("UPDATE accounts SET balance = e.amount FROM entries AS e WHERE e.account = accounts.id AND e.amount > 6")
    cur.execute("DELETE FROM entries USING accounts WHERE accounts.id = entries.account AND accounts.owner = 'ann'")
    conn.commit()
    cur.execute("SELECT id, balance FROM accounts ORDER BY id")
    assert cur.fetchall() == [(1, 10), (2, 7)]
    cur.execute("SELECT account FROM entries")
    assert cur.fetchall() == [(2,)]
    if engine == "monetdb":
        return  # MonetDB has no WITH before UPDATE or DELETE
    for sql in ("WITH entries AS (SELECT 1 AS account) UPDATE accounts SET balance = 0 FROM entries WHERE entries.account = accounts.id",
                "WITH entries AS (SELECT 1 AS account) DELETE FROM accounts USING entries WHERE entries.account = accounts.id"):
        with pytest.raises(tique.NotSupportedError):
            cur.execute(sql)
        conn.rollback()
    cur.execute("SELECT id, balance FROM accounts ORDER BY id")
    assert cur.fetchall() == [(1, 10), (2, 7)]


def test_correlated_subqueries_and_stars_through_derived_tables(connect) -> None:  # type: ignore[no-untyped-def]
    _, cur = _filled(connect)
    cur.execute("SELECT owner FROM accounts AS a WHERE balance > (SELECT sum(amount) FROM entries AS e WHERE e.account = a.id) ORDER BY owner")
    assert cur.fetchall() == [("ann",), ("bob",)]
    cur.execute("SELECT owner, (SELECT count(*) FROM entries WHERE entries.account = accounts.id AND amount > 6) FROM accounts ORDER BY owner")
    assert cur.fetchall() == [("ann", 0), ("bob", 1)]
    cur.execute("SELECT d.* FROM (SELECT * FROM (SELECT a.*, e.n FROM accounts AS a JOIN entries AS e ON e.account = a.id) AS x) AS d ORDER BY d.id")
    assert cur.fetchall() == [(1, "ann", 10, 1), (2, "bob", 20, 1)]


def test_which_references_name_tique_tables_follows_sql_scoping() -> None:
    """sqlglot's scopes, plus the two rules on top (tique/rewrite/reads.py): every CTE of a
    WITH RECURSIVE is visible in each of them, and a write's target is hidden only by the
    write's own WITH."""
    from tique.rewrite.reads import referenced_tables

    backend = _backend("postgres")
    snapshot = CatalogSnapshot.of(_tables(backend, TABLES))
    cases = {
        "WITH RECURSIVE a AS (SELECT * FROM accounts), accounts AS (SELECT 1 AS id) SELECT * FROM a": 0,
        "WITH a AS (SELECT * FROM accounts), accounts AS (SELECT 1 AS id) SELECT * FROM a": 1,
        "WITH x AS (SELECT 1) UPDATE accounts SET balance = 1 WHERE id IN (WITH accounts AS (SELECT 2) SELECT * FROM accounts)": 1,
        "WITH accounts AS (SELECT 1) DELETE FROM accounts": 0,
        "UPDATE accounts SET balance = 1 FROM (WITH entries AS (SELECT 1 AS account) SELECT * FROM entries) AS e, entries": 2,
        "DELETE FROM accounts USING entries WHERE EXISTS (WITH accounts AS (SELECT 1 AS id) SELECT 1 FROM accounts)": 2,
    }
    for sql, count in cases.items():
        assert len(referenced_tables(parse_one(sql, "postgres"), snapshot)) == count, sql


def test_rowid_belongs_to_the_table_its_scope_resolves(connect, engine: str) -> None:  # type: ignore[no-untyped-def]
    """DuckDB's rowid resolves through sqlglot's scopes (tique/rewrite/rowid.py): in a
    correlated subquery to the outer table it names, in a write's WHERE to its target."""
    if engine != "duckdb":
        pytest.skip("rowid is DuckDB's")
    conn, cur = _filled(connect)
    cur.execute("CREATE TABLE loose (a INTEGER, b VARCHAR)")
    cur.execute("INSERT INTO loose VALUES (1, 'x'), (2, 'y'), (5, 'z')")
    conn.commit()
    cur.execute("SELECT a, rowid FROM loose ORDER BY a")
    ids = dict(cur.fetchall())
    assert len(set(ids.values())) == 3
    cur.execute("SELECT l.a FROM loose AS l WHERE EXISTS (SELECT 1 FROM accounts WHERE accounts.id = l.a AND l.rowid = ?) ", (ids[2],))
    assert cur.fetchall() == [(2,)]
    cur.execute("UPDATE loose SET b = 'w' FROM accounts WHERE accounts.id = loose.a AND rowid = ?", (ids[1],))
    cur.execute("SELECT a, b, rowid FROM loose ORDER BY a")
    assert cur.fetchall() == [(1, "w", ids[1]), (2, "y", ids[2]), (5, "z", ids[5])]

"""Schema changes of tique objects: the engine statements of CREATE/DROP TABLE (and of
views and indexes over tique tables), run inside an engine transaction the caller holds.

Every schema change bumps the catalog version in the same engine transaction
(Backend.bump_catalog_version), so it becomes visible to other connections' begins
exactly when it commits; DuckDB, PostgreSQL and MonetDB all have transactional DDL, so
a schema change inside a tique transaction is invisible to others until its COMMIT and
gone after its ROLLBACK.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import sqlglot
from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import ROWID, Column, TableDef, canonical_ddl, declared_name, normalize, parse_catalog_row, same_name
from tique.errors import ProgrammingError, describe


def named_as(backend: Backend, column: str = "name") -> str:
    """The condition that a tq_* row's `column` names what $1 names, as the engine matches
    names (same_name): DuckDB without case, PostgreSQL and MonetDB exactly."""
    return f"lower({column}) = lower($1)" if backend.dialect == "duckdb" else f"{column} = $1"


def table_exists(backend: Backend, raw: Any, name: str) -> bool:
    return bool(backend.rows(raw, f"SELECT 1 FROM tq_tables WHERE {named_as(backend)}", [name]))


def stored_table(backend: Backend, raw: Any, name: str) -> TableDef | None:
    found = backend.rows(raw, f"SELECT ddl FROM tq_tables WHERE {named_as(backend)}", [name])
    return parse_catalog_row(found[0][0], backend.dialect) if found else None


def create_table(backend: Backend, raw: Any, table: TableDef, if_not_exists: bool, statement: str) -> bool:
    """Creates the tique table; False when it exists and IF NOT EXISTS said to leave it.
    Tables, views and indexes share one namespace, as natively."""
    kind = _object_kind(backend, raw, table.name)
    if kind is not None:
        if if_not_exists and kind == "table":
            return False
        raise ProgrammingError(describe(statement, f"{kind} {table.name!r} already exists"))
    for ddl in backend.physical_ddl(table):
        backend.execute(raw, ddl, [])
    backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [table.name, canonical_ddl(table, backend.dialect)])
    backend.bump_catalog_version(raw)
    return True


def drop_table(backend: Backend, raw: Any, name: str, if_exists: bool, statement: str, cascade: bool = False) -> bool:
    """Drops the tique table (its physical tables take their indexes with them); False
    when it does not exist and IF EXISTS said that is fine."""
    table = stored_table(backend, raw, name)
    if table is None:
        if if_exists:
            return False
        raise ProgrammingError(describe(statement, f"table {name!r} does not exist"))
    drop_dependent_views(backend, raw, "table", name, cascade, statement)
    for ddl in backend.drop_ddl(table):
        backend.execute(raw, ddl, [])
    backend.execute(raw, "DELETE FROM tq_tables WHERE name = $1", [table.name])
    backend.execute(raw, "DELETE FROM tq_objects WHERE kind = 'index' AND on_table = $1", [table.name])
    backend.bump_catalog_version(raw)
    return True


def table_of_columns(name: str, columns: list[tuple[str, str]], dialect: str, statement: str) -> TableDef:
    """A tique table with the (name, SQL type) columns the engine gave a query's result:
    no primary key (CREATE TABLE ... AS SELECT declares none), so rows get a hidden row id.
    Names repeat as the engine compares them: a and "A" are two columns on PostgreSQL and
    MonetDB, one on DuckDB (which renames the second itself)."""
    made = []
    for column, type_sql in columns:  # named as the engine names them, case kept
        if normalize(column).startswith("tq_"):
            raise ProgrammingError(describe(statement, f"column name {column!r} uses the prefix tq_, which tique reserves"))
        made.append(Column(column, type_sql))
    if any(same_name(a.name, b.name, dialect) for i, a in enumerate(made) for b in made[:i]):
        raise ProgrammingError(describe(statement, "the query's result repeats a column name; alias its columns apart"))
    return TableDef(name, tuple(made), (ROWID,), True)


# -- views and indexes over tique tables (kept in tq_objects) ----------------------------------
# A view over tique tables lives in tique's catalog only: the engine cannot hold it, since
# its tables are snapshots that depend on each reading transaction's start timestamp. The
# planner expands it into each statement that names it (planner._expand_views), so it is
# read through that statement's snapshot. An index on a tique table is two engine
# indexes: on its storage table (named as the application named it) and on its cache.


@dataclass(frozen=True)
class View:
    name: str
    query: exp.Query
    columns: tuple[str, ...]  # the view's column list, if it declared one

    kind = "view"


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple[str, ...]

    kind = "index"


TiqueObject = Union[View, Index]


def view_ddl(view: View, dialect: str) -> str:
    target: exp.Expression = exp.Table(this=exp.to_identifier(view.name, quoted=True))
    if view.columns:
        target = exp.Schema(this=target, expressions=[exp.to_identifier(c, quoted=True) for c in view.columns])
    return exp.Create(this=target, kind="VIEW", expression=view.query.copy()).sql(dialect)


def index_ddl(index: Index, on: str, dialect: str, name: str | None = None) -> str:
    q = lambda n: exp.to_identifier(n, quoted=True).sql(dialect)  # noqa: E731
    return f"CREATE INDEX {q(name or index.name)} ON {q(on)} ({', '.join(q(c) for c in index.columns)})"


def parse_object(name: str, kind: str, on_table: str | None, ddl: str, dialect: str) -> TiqueObject:
    create = sqlglot.parse_one(ddl, read=dialect)
    assert isinstance(create, exp.Create)
    if kind == "view":
        columns = tuple(declared_name(c, dialect) for c in create.this.expressions) if isinstance(create.this, exp.Schema) else ()
        return View(name, create.expression, columns)
    params = create.this.args["params"]
    # Stored quoted, as the catalog names the columns (index_ddl): read back as written.
    return Index(name, on_table or "", tuple(o.this.name for o in params.args["columns"]))


def _object_kind(backend: Backend, raw: Any, name: str) -> str | None:
    """'table', 'view' or 'index' when a tique object has the name."""
    named = named_as(backend)
    found = backend.rows(raw, f"SELECT 'table' FROM tq_tables WHERE {named} UNION ALL SELECT kind FROM tq_objects WHERE {named}", [name])
    return str(found[0][0]) if found else None


def create_view(backend: Backend, raw: Any, view: View, replace: bool, if_not_exists: bool, statement: str) -> bool:
    kind = _object_kind(backend, raw, view.name)
    if kind is not None:
        if if_not_exists:
            return False
        if not (replace and kind == "view"):
            raise ProgrammingError(describe(statement, f"{kind} {view.name!r} already exists"))
        backend.execute(raw, "DELETE FROM tq_objects WHERE name = $1", [view.name])
    backend.execute(raw, "INSERT INTO tq_objects (name, kind, on_table, ddl) VALUES ($1, 'view', NULL, $2)",
                    [view.name, view_ddl(view, backend.dialect)])
    backend.bump_catalog_version(raw)
    return True


def create_index(backend: Backend, raw: Any, index: Index, table: TableDef, if_not_exists: bool, statement: str) -> bool:
    kind = _object_kind(backend, raw, index.name)
    if kind is not None:
        if if_not_exists and kind == "index":
            return False
        raise ProgrammingError(describe(statement, f"{kind} {index.name!r} already exists"))
    backend.execute(raw, index_ddl(index, table.storage, backend.dialect), [])
    backend.execute(raw, index_ddl(index, table.cache, backend.dialect, name=f"{index.name}_cache"), [])
    backend.execute(raw, "INSERT INTO tq_objects (name, kind, on_table, ddl) VALUES ($1, 'index', $2, $3)",
                    [index.name, table.name, index_ddl(index, table.name, backend.dialect)])
    backend.bump_catalog_version(raw)
    return True


def drop_object(backend: Backend, raw: Any, name: str, kind: str, if_exists: bool, statement: str, cascade: bool = False) -> bool:
    if _object_kind(backend, raw, name) != kind:
        if if_exists:
            return False
        raise ProgrammingError(describe(statement, f"{kind} {name!r} does not exist"))
    if kind == "view":
        drop_dependent_views(backend, raw, kind, name, cascade, statement)
    if kind == "index":
        q = lambda n: exp.to_identifier(n, quoted=True).sql(backend.dialect)  # noqa: E731
        backend.execute(raw, f"DROP INDEX {q(name)}", [])
        backend.execute(raw, f"DROP INDEX {q(name + '_cache')}", [])
    backend.execute(raw, "DELETE FROM tq_objects WHERE name = $1", [name])
    backend.bump_catalog_version(raw)
    return True


def committed_conflict(backend: Backend, raw: Any, txid: int, sts: int, hashes: list[int]) -> bool:
    """Whether another transaction has logged a write to one of `hashes` with a commit
    timestamp after `sts` and not aborted: certification's question (common/certify.sql),
    asked of the newest committed state, before our own write-set is logged.

    A transaction that changed the schema certifies with it, after its own write-set was
    logged and committed on a connection beside its engine transaction and before that
    engine transaction commits (tique/transaction.py, commit_schema_change)."""
    for first in range(0, len(hashes), 500):
        chunk = hashes[first:first + 500]
        markers = ", ".join(f"${i + 3}" for i in range(len(chunk)))
        found = backend.fresh_rows(raw, "SELECT 1 FROM tq_write_sets AS theirs LEFT JOIN tq_outcome AS o ON o.cts = theirs.cts "
                                        f"WHERE theirs.key_hash IN ({markers}) AND theirs.txid <> $1 AND theirs.cts > $2 "
                                        "AND (o.did_commit IS NULL OR o.did_commit) LIMIT 1", [txid, sts, *chunk])
        if found:
            return True
    return False


def drop_dependent_views(backend: Backend, raw: Any, kind: str, name: str, cascade: bool, statement: str) -> None:
    """Views over the table or view being dropped: where the engine tracks dependencies
    (PostgreSQL, MonetDB) it refuses the drop, or with CASCADE drops them too, so tique
    does the same; DuckDB binds views when they are read and drops the table regardless."""
    if not backend.tracks_view_dependencies:
        return
    views = [parse_object(n, "view", None, d, backend.dialect) for n, d in backend.rows(raw, "SELECT name, ddl FROM tq_objects WHERE kind = 'view'", [])]
    dependent = sorted(v.name for v in views if isinstance(v, View) and v.name != name
                       and any(not t.args.get("db") and isinstance(t.this, exp.Identifier)
                               and same_name(declared_name(t.this, backend.dialect), name, backend.dialect)
                               for t in v.query.find_all(exp.Table)))
    if not dependent:
        return
    if not cascade:
        raise ProgrammingError(describe(statement, f"cannot drop {kind} {name!r}: view {dependent[0]!r} depends on it (DROP ... CASCADE drops it too)"))
    for view in dependent:
        drop_object(backend, raw, view, "view", True, statement, cascade=True)

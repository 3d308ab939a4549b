"""Schema changes of tique objects: the engine statements of CREATE/DROP TABLE (and of
views and indexes over tique tables), run inside an engine transaction the caller holds.

Every schema change bumps the catalog version in the same engine transaction
(Backend.bump_catalog_version), so it becomes visible to other connections' begins
exactly when it commits; DuckDB, PostgreSQL and MonetDB all have transactional DDL, so
a schema change inside a tique transaction is invisible to others until its COMMIT and
gone after its ROLLBACK.
"""
from __future__ import annotations

from typing import Any

from tique.backends.base import Backend
from tique.catalog import ROWID, Column, TableDef, canonical_ddl, normalize, parse_catalog_row
from tique.errors import ProgrammingError, describe


def table_exists(backend: Backend, raw: Any, name: str) -> bool:
    return bool(backend.rows(raw, "SELECT 1 FROM tq_tables WHERE name = $1", [name]))


def stored_table(backend: Backend, raw: Any, name: str) -> TableDef | None:
    found = backend.rows(raw, "SELECT ddl FROM tq_tables WHERE name = $1", [name])
    return parse_catalog_row(found[0][0], backend.dialect) if found else None


def create_table(backend: Backend, raw: Any, table: TableDef, if_not_exists: bool, statement: str) -> bool:
    """Creates the tique table; False when it exists and IF NOT EXISTS said to leave it."""
    if table_exists(backend, raw, table.name):
        if if_not_exists:
            return False
        raise ProgrammingError(describe(statement, f"table {table.name!r} already exists"))
    for ddl in backend.physical_ddl(table):
        backend.execute(raw, ddl, [])
    backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [table.name, canonical_ddl(table, backend.dialect)])
    backend.bump_catalog_version(raw)
    return True


def drop_table(backend: Backend, raw: Any, name: str, if_exists: bool, statement: str) -> bool:
    """Drops the tique table (its physical tables take their indexes with them); False
    when it does not exist and IF EXISTS said that is fine."""
    table = stored_table(backend, raw, name)
    if table is None:
        if if_exists:
            return False
        raise ProgrammingError(describe(statement, f"table {name!r} does not exist"))
    for ddl in backend.drop_ddl(table):
        backend.execute(raw, ddl, [])
    backend.execute(raw, "DELETE FROM tq_tables WHERE name = $1", [name])
    backend.execute(raw, "DELETE FROM tq_objects WHERE kind = 'index' AND on_table = $1", [name])
    backend.bump_catalog_version(raw)
    return True


def table_of_columns(name: str, columns: list[tuple[str, str]], statement: str) -> TableDef:
    """A tique table with the (name, SQL type) columns the engine gave a query's result:
    no primary key (CREATE TABLE ... AS SELECT declares none), so rows get a hidden row id."""
    made = []
    for column, type_sql in columns:
        column = normalize(column)
        if column.startswith("tq_"):
            raise ProgrammingError(describe(statement, f"column name {column!r} uses the prefix tq_, which tique reserves"))
        made.append(Column(column, type_sql))
    if len({c.name for c in made}) != len(made):
        raise ProgrammingError(describe(statement, "the query's result repeats a column name; alias its columns apart"))
    return TableDef(name, tuple(made), (ROWID,), True)

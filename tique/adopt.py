"""`tique adopt`: turn existing native tables into tique tables without losing a row."""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import ROWID, Column, TableDef, canonical_ddl, normalize
from tique.errors import ProgrammingError

_COLUMNS_SQL = """SELECT column_name, data_type, is_nullable FROM information_schema.columns
WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position"""

_PRIMARY_KEY_SQL = """SELECT k.column_name FROM information_schema.table_constraints c
JOIN information_schema.key_column_usage k
  ON k.constraint_name = c.constraint_name AND k.table_name = c.table_name AND k.table_schema = c.table_schema
WHERE c.table_name = $1 AND c.table_schema = $2 AND c.constraint_type = 'PRIMARY KEY'
ORDER BY k.ordinal_position"""


def _schema(backend: Backend) -> str:
    return "main" if backend.dialect == "duckdb" else "public"


def describe_native(backend: Backend, raw: Any, name: str) -> TableDef:
    schema = _schema(backend)
    rows = backend.rows(raw, _COLUMNS_SQL, [name, schema])
    if not rows:
        raise ProgrammingError(f"adopt: no native table {name!r} in schema {schema!r}")
    columns = tuple(Column(normalize(c), t, n == "NO") for c, t, n in rows)
    key = tuple(normalize(r[0]) for r in backend.rows(raw, _PRIMARY_KEY_SQL, [name, schema]))
    if any(c.name.startswith("tq_") for c in columns):
        raise ProgrammingError(f"adopt: table {name!r} has a column with the reserved prefix tq_")
    return TableDef(normalize(name), columns, key or (ROWID,), not key)


def adopt(connection: Any, names: list[str]) -> dict[str, int]:
    """Moves each native table's rows into its new storage table, in one engine
    transaction per table; returns the number of rows adopted per table."""
    if connection.in_transaction:
        raise ProgrammingError("adopt: COMMIT or ROLLBACK the open transaction first")
    backend: Backend = connection.backend
    raw = connection._raw
    q = lambda n: exp.to_identifier(n, quoted=True).sql(backend.dialect)  # noqa: E731
    adopted: dict[str, int] = {}
    for name in names:
        if normalize(name) in connection.tables:
            raise ProgrammingError(f"adopt: {name!r} is already a tique table")
        table = describe_native(backend, raw, name)
        with backend.atomic(raw):
            (count,) = backend.rows(raw, f"SELECT count(*) FROM {q(name)}", [])[0]
            for ddl in backend.physical_ddl(table):
                backend.execute(raw, ddl, [])
            columns = ", ".join(q(c) for c in table.user_columns)
            if table.hidden_rowid:
                backend.execute(raw, f"INSERT INTO {q(table.storage)} ({columns}, {q(ROWID)}) SELECT {columns}, nextval({exp.Literal.string(table.rowid_sequence).sql(backend.dialect)}) FROM {q(name)}", [])
            else:
                backend.execute(raw, f"INSERT INTO {q(table.storage)} ({columns}) SELECT {columns} FROM {q(name)}", [])
            (moved,) = backend.rows(raw, f"SELECT count(*) FROM {q(table.storage)}", [])[0]
            if moved != count:
                raise ProgrammingError(f"adopt: {name!r} had {count} rows but {moved} reached storage; nothing was changed")
            backend.execute(raw, f"DROP TABLE {q(name)}", [])
            backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [table.name, canonical_ddl(table, backend.dialect)])
        adopted[table.name] = int(count)
    connection._load_catalog()
    return adopted

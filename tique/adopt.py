"""`tique adopt`: turn existing native tables into tique tables without losing a row."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import PACKED, ROWID, Column, TableDef, canonical_ddl, check_column_properties, normalize, same_name, table_def_from_create
from tique.rewrite.templates import packed_key
from tique.errors import NotSupportedError, ProgrammingError

_COLUMNS_SQL = """SELECT column_name, data_type, is_nullable, character_maximum_length, numeric_precision, numeric_scale
FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2 ORDER BY ordinal_position"""

_PRIMARY_KEY_SQL = """SELECT k.column_name FROM information_schema.table_constraints c
JOIN information_schema.key_column_usage k
  ON k.constraint_name = c.constraint_name AND k.table_name = c.table_name AND k.table_schema = c.table_schema
WHERE c.table_name = $1 AND c.table_schema = $2 AND c.constraint_type = 'PRIMARY KEY'
ORDER BY k.ordinal_position"""

# MonetDB has no information_schema; its own catalog says the same.
_MONETDB_COLUMNS_SQL = """SELECT c.name, c.type, c.type_digits, c.type_scale, c."null" FROM sys.columns AS c
JOIN sys.tables AS t ON t.id = c.table_id JOIN sys.schemas AS s ON s.id = t.schema_id
WHERE t.name = $1 AND s.name = $2 ORDER BY c.number"""

_MONETDB_PRIMARY_KEY_SQL = """SELECT o.name FROM sys.keys AS k JOIN sys.objects AS o ON o.id = k.id
JOIN sys.tables AS t ON t.id = k.table_id JOIN sys.schemas AS s ON s.id = t.schema_id
WHERE t.name = $1 AND s.name = $2 AND k.type = 0 ORDER BY o.nr"""

# sys.columns type names that differ from the SQL spelling.
_MONETDB_TYPES = {"int": "INTEGER", "clob": "TEXT", "double": "DOUBLE PRECISION", "timestamptz": "TIMESTAMP WITH TIME ZONE",
                  "timetz": "TIME WITH TIME ZONE"}


def _monetdb_type(name: str, digits: int, scale: int) -> str:
    if name in ("varchar", "char") and digits > 0:
        return f"{name.upper()}({digits})"
    if name == "decimal":
        return f"DECIMAL({digits}, {scale})"
    return _MONETDB_TYPES.get(name, "TEXT" if name == "varchar" else name.upper())


def _sized_type(name: str, length: Any, precision: Any, scale: Any) -> str:
    """PostgreSQL's information_schema names a type without its size ("character" for
    CHAR(2), "numeric" for DECIMAL(12, 2)), and bare "character" means CHAR(1); DuckDB's
    names carry the size already ("DECIMAL(12,2)")."""
    if name in ("character", "character varying") and length is not None:
        return f"{name}({int(length)})"
    if name == "numeric" and precision is not None:
        return f"numeric({int(precision)}, {int(scale or 0)})"
    return name


def _schema(backend: Backend, raw: Any) -> str:
    if backend.dialect == "monetdb":
        return str(backend.rows(raw, "SELECT current_schema", [])[0][0])
    return "main" if backend.dialect == "duckdb" else "public"


def _native_columns(backend: Backend, raw: Any, name: str, schema: str) -> tuple[list[Column], list[str]]:
    """The table's columns (name, SQL type, NOT NULL) and primary key columns, from the engine's catalog."""
    if backend.dialect == "monetdb":
        columns = [Column(c, _monetdb_type(t, int(d), int(sc)), not nullable)
                   for c, t, d, sc, nullable in backend.rows(raw, _MONETDB_COLUMNS_SQL, [name, schema])]
        return columns, [r[0] for r in backend.rows(raw, _MONETDB_PRIMARY_KEY_SQL, [name, schema])]
    columns = [Column(c, _sized_type(t, length, precision, scale), n == "NO")
               for c, t, n, length, precision, scale in backend.rows(raw, _COLUMNS_SQL, [name, schema])]
    return columns, [r[0] for r in backend.rows(raw, _PRIMARY_KEY_SQL, [name, schema])]


# Each UNIQUE and CHECK constraint of the table (besides its primary key and NOT NULL) as
# (name, kind, definition): the definition is SQL a CREATE TABLE accepts after CONSTRAINT
# name, or for UNIQUE the columns. tique enforces them itself; foreign keys it refuses.
_PG_CONSTRAINTS_SQL = """SELECT c.conname, c.contype, pg_get_constraintdef(c.oid) FROM pg_constraint AS c
JOIN pg_class AS t ON t.oid = c.conrelid JOIN pg_namespace AS n ON n.oid = t.relnamespace
WHERE t.relname = $1 AND n.nspname = $2 AND c.contype NOT IN ('p', 'n') ORDER BY c.oid"""

_DUCKDB_CONSTRAINTS_SQL = """SELECT constraint_name, constraint_type, expression, constraint_column_names FROM duckdb_constraints()
WHERE table_name = $1 AND schema_name = $2 AND constraint_type NOT IN ('PRIMARY KEY', 'NOT NULL') ORDER BY constraint_index"""

_MONETDB_CONSTRAINTS_SQL = """SELECT k.name, k.type, o.name FROM sys.keys AS k JOIN sys.objects AS o ON o.id = k.id
JOIN sys.tables AS t ON t.id = k.table_id JOIN sys.schemas AS s ON s.id = t.schema_id
WHERE t.name = $1 AND s.name = $2 AND k.type <> 0 ORDER BY k.id, o.nr"""


def _native_constraints(backend: Backend, raw: Any, name: str, schema: str) -> list[str]:
    """The table's UNIQUE and CHECK constraints as table-constraint SQL of the backend's
    dialect; refuses a table with a foreign key (or any other constraint), as tique
    cannot enforce it: adopting must never drop a constraint."""
    q = lambda n: exp.to_identifier(n, quoted=True).sql(backend.dialect)  # noqa: E731
    refused = f"adopt: table {name!r} has a FOREIGN KEY (or is one's target); tique does not support foreign keys, so drop it first"
    found: list[str] = []
    if backend.dialect == "postgres":
        for constraint, kind, definition in backend.rows(raw, _PG_CONSTRAINTS_SQL, [name, schema]):
            if kind not in ("u", "c"):
                raise NotSupportedError(refused if kind == "f" else f"adopt: table {name!r} has constraint {constraint!r} ({definition}), which tique cannot enforce; drop it first")
            found.append(f"CONSTRAINT {q(constraint)} {definition}")
    elif backend.dialect == "duckdb":
        for constraint, kind, expression, columns in backend.rows(raw, _DUCKDB_CONSTRAINTS_SQL, [name, schema]):
            if kind == "UNIQUE":
                found.append(f"CONSTRAINT {q(constraint)} UNIQUE ({', '.join(q(c) for c in columns)})")
            elif kind == "CHECK":
                condition = expression if expression.upper().startswith("CHECK") else f"CHECK ({expression})"
                found.append(f"CONSTRAINT {q(constraint)} {condition}")
            else:
                raise NotSupportedError(refused)
    else:
        keys: dict[str, tuple[int, list[str]]] = {}
        for constraint, kind, column_name in backend.rows(raw, _MONETDB_CONSTRAINTS_SQL, [name, schema]):
            keys.setdefault(constraint, (int(kind), []))[1].append(column_name)
        for constraint, (kind, columns) in keys.items():
            if kind != 1:
                raise NotSupportedError(refused)
            found.append(f"CONSTRAINT {q(constraint)} UNIQUE ({', '.join(q(c) for c in columns)})")
    if _is_referenced(backend, raw, name, schema):
        raise NotSupportedError(refused)
    return found


def _is_referenced(backend: Backend, raw: Any, name: str, schema: str) -> bool:
    """Whether another table's foreign key references this one."""
    if backend.dialect == "postgres":
        sql = """SELECT 1 FROM pg_constraint AS c JOIN pg_class AS t ON t.oid = c.confrelid
                 JOIN pg_namespace AS n ON n.oid = t.relnamespace WHERE c.contype = 'f' AND t.relname = $1 AND n.nspname = $2"""
    elif backend.dialect == "duckdb":
        sql = """SELECT 1 FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND referenced_table = $1 AND schema_name = $2"""
    else:
        sql = """SELECT 1 FROM sys.keys AS k JOIN sys.keys AS r ON r.id = k.rkey JOIN sys.tables AS t ON t.id = r.table_id
                 JOIN sys.schemas AS s ON s.id = t.schema_id WHERE k.type = 2 AND t.name = $1 AND s.name = $2"""
    return bool(backend.rows(raw, sql, [name, schema]))


_PROPERTIES_SQL = """SELECT column_name, column_default, is_generated, generation_expression, collation_name, is_identity
FROM information_schema.columns WHERE table_name = $1 AND table_schema = $2"""

_MONETDB_DEFAULTS_SQL = """SELECT c.name, c."default" FROM sys.columns AS c
JOIN sys.tables AS t ON t.id = c.table_id JOIN sys.schemas AS s ON s.id = t.schema_id
WHERE t.name = $1 AND s.name = $2"""


def _duckdb_collations(backend: Backend, raw: Any, name: str, schema: str) -> dict[str, str]:
    """Column -> COLLATE, read off DuckDB's own CREATE text (its information_schema has none)."""
    found = backend.rows(raw, "SELECT sql FROM duckdb_tables() WHERE table_name = $1 AND schema_name = $2", [name, schema])
    if not found:
        return {}
    create = sqlglot.parse_one(found[0][0], read="duckdb")
    return {item.name: constraint.kind.this.sql("duckdb")
            for item in create.find_all(exp.ColumnDef) for constraint in item.args.get("constraints") or []
            if isinstance(constraint.kind, exp.CollateColumnConstraint)}


def _with_properties(backend: Backend, raw: Any, name: str, schema: str, columns: list[Column]) -> list[Column]:
    """Each column with what else changes its meaning: its default, generated expression
    and collation. Adopting keeps them, as creating the table through tique would (or
    refuses what tique cannot keep); dropped, they would change what the table answers."""
    dialect = backend.dialect
    parse = lambda text: sqlglot.parse_one(text, read=dialect)  # noqa: E731
    if dialect == "monetdb":
        defaults = {c: parse(d) for c, d in backend.rows(raw, _MONETDB_DEFAULTS_SQL, [name, schema]) if d is not None}
        return [replace(c, default=defaults.get(c.name)) for c in columns]
    collations = _duckdb_collations(backend, raw, name, schema) if dialect == "duckdb" else {}
    kept = {}
    for column, default, generated, expression, collation, identity in backend.rows(raw, _PROPERTIES_SQL, [name, schema]):
        if identity == "YES":
            raise NotSupportedError(f"adopt: column {column!r} of {name!r} is an identity column, which tique tables do not have; "
                                    f"make it a plain column with DEFAULT nextval('a sequence') first")
        if generated == "ALWAYS":
            kept[column] = {"generated": parse(expression).unnest().sql(dialect)}
        else:
            kept[column] = {"default": parse(default) if default is not None else None}
        if collation is not None:
            collations[column] = exp.to_identifier(collation, quoted=True).sql(dialect)
    return [replace(c, collation=collations.get(c.name), **kept.get(c.name, {})) for c in columns]


def _release_owned_sequences(backend: Backend, raw: Any, table: TableDef, name: str) -> None:
    """Frees the sequences a PostgreSQL table owns (SERIAL's), which dropping the native
    table would drop with it while the adopted defaults still draw from them."""
    if backend.dialect != "postgres":
        return
    for col in table.columns:
        if col.default is None:
            continue
        # The table's name is read as SQL reads a name (folded unless quoted), the column's as it is.
        quoted_name = exp.to_identifier(name, quoted=True).sql(backend.dialect)
        (owned,) = backend.rows(raw, "SELECT pg_get_serial_sequence($1, $2)", [quoted_name, col.name])[0]
        if owned is not None:
            backend.execute(raw, f"ALTER SEQUENCE {owned} OWNED BY NONE", [])


def describe_native(backend: Backend, raw: Any, name: str) -> TableDef:
    schema = _schema(backend, raw)
    found, key_columns = _native_columns(backend, raw, name, schema)
    if not found:
        raise ProgrammingError(f"adopt: no native table {name!r} in schema {schema!r}")
    key = tuple(key_columns)  # the engine's names of the columns, case kept, as the catalog keeps them
    found = _with_properties(backend, raw, name, schema, found)
    check_column_properties(found, list(key), backend.dialect, f"adopt {name}")
    columns = tuple(found)
    if any(normalize(c.name).startswith("tq_") for c in columns):
        raise ProgrammingError(f"adopt: table {name!r} has a column with the reserved prefix tq_")
    table = TableDef(name, columns, key or (ROWID,), not key)  # the engine's name, case kept
    constraints = _native_constraints(backend, raw, name, schema)
    if not constraints:
        return table
    # Read through the same parser as CREATE TABLE, so adopted constraints are kept
    # exactly as a created table's would be.
    ddl = canonical_ddl(table, backend.dialect)
    declared = sqlglot.parse_one(f"{ddl[:-1]}, {', '.join(constraints)})", read=backend.dialect)
    assert isinstance(declared, exp.Create)
    parsed = table_def_from_create(declared, backend.dialect, f"adopt {name}")
    return TableDef(table.name, columns, table.key, table.hidden_rowid, uniques=parsed.uniques, checks=parsed.checks)


def _rename_to_storage(backend: Backend, raw: Any, table: TableDef, name: str) -> None:
    """The native table becomes the storage table in place, and its hidden columns are
    filled by one UPDATE: on MonetDB, copying every row into a new keyed table costs tens
    of seconds per million rows, renaming costs nothing."""
    q = lambda n: exp.to_identifier(n, quoted=True).sql(backend.dialect)  # noqa: E731
    storage_ddl = f"CREATE TABLE {q(table.storage)} "
    for ddl in backend.physical_ddl(table):
        if not ddl.startswith(storage_ddl):
            backend.execute(raw, ddl, [])
    backend.execute(raw, f"ALTER TABLE {q(name)} RENAME TO {q(table.storage)}", [])
    for unique in table.uniques:  # tique enforces them on snapshots; storage holds only stable rows
        backend.execute(raw, f"ALTER TABLE {q(table.storage)} DROP CONSTRAINT {q(unique.name)}", [])
    hidden = PACKED if table.packed else ROWID if table.hidden_rowid else None
    if hidden is None:
        return
    if table.packed:
        kind = exp.DataType.build("INT128").sql(backend.dialect)
        value = packed_key(table, [exp.column(k, quoted=True) for k in table.key]).sql(backend.dialect)
    else:
        kind = "BIGINT"
        value = exp.Anonymous(this="nextval", expressions=[exp.Literal.string(exp.to_identifier(table.rowid_sequence, quoted=True).sql())]).sql(backend.dialect)
    backend.execute(raw, f"ALTER TABLE {q(table.storage)} ADD COLUMN {q(hidden)} {kind}", [])
    backend.execute(raw, f"UPDATE {q(table.storage)} SET {q(hidden)} = {value}", [])
    backend.execute(raw, f"ALTER TABLE {q(table.storage)} ALTER COLUMN {q(hidden)} SET NOT NULL", [])
    if table.hidden_rowid:
        backend.execute(raw, f"ALTER TABLE {q(table.storage)} ADD PRIMARY KEY ({q(ROWID)})", [])


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
        if any(same_name(name, known, backend.dialect) for known in connection.tables):
            raise ProgrammingError(f"adopt: {name!r} is already a tique table")
        table = backend.new_table(describe_native(backend, raw, name))
        with backend.atomic(raw):
            (count,) = backend.rows(raw, f"SELECT count(*) FROM {q(name)}", [])[0]
            if backend.adopts_by_rename:
                _rename_to_storage(backend, raw, table, name)
                backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [table.name, canonical_ddl(table, backend.dialect)])
                adopted[table.name] = int(count)
                continue
            for ddl in backend.physical_ddl(table):
                backend.execute(raw, ddl, [])
            columns = ", ".join(q(c) for c in table.user_columns)
            if table.packed:
                packed = packed_key(table, [exp.column(k, quoted=True) for k in table.key]).sql(backend.dialect)
                backend.execute_own_insert(raw, f"INSERT INTO {q(table.storage)} ({columns}, {q(PACKED)}) SELECT {columns}, {packed} FROM {q(name)}")
            elif table.hidden_rowid:
                # rendered by the dialect: nextval('seq') on most engines, NEXT VALUE FOR on MonetDB
                nextval = exp.Anonymous(this="nextval", expressions=[exp.Literal.string(exp.to_identifier(table.rowid_sequence, quoted=True).sql())]).sql(backend.dialect)
                backend.execute_own_insert(raw, f"INSERT INTO {q(table.storage)} ({columns}, {q(ROWID)}) SELECT {columns}, {nextval} FROM {q(name)}")
            else:
                backend.execute_own_insert(raw, f"INSERT INTO {q(table.storage)} ({columns}) SELECT {columns} FROM {q(name)}")
            (moved,) = backend.rows(raw, f"SELECT count(*) FROM {q(table.storage)}", [])[0]
            if moved != count:
                raise ProgrammingError(f"adopt: {name!r} had {count} rows but {moved} reached storage; nothing was changed")
            _release_owned_sequences(backend, raw, table, name)
            backend.refresh_statistics(raw, [table.storage])  # a bulk-filled table, never analyzed
            backend.execute(raw, f"DROP TABLE {q(name)}", [])
            backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [table.name, canonical_ddl(table, backend.dialect)])
        adopted[table.name] = int(count)
    connection._load_catalog()
    return adopted

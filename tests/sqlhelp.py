"""Small helpers the tests share: run a statement for its rowcount, or for its rows, and
look up what the engine's catalog holds (tables, columns, sequences, indexes) in the
test's own database or, on MonetDB, its own schema."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tique

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]


def run(conn: tique.Connection, sql: str, params: Sequence[Any] = ()) -> int:
    """Executes a statement; returns its rowcount."""
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.rowcount


def rows(conn: tique.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall()


def run_for_rows(conn: tique.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    """Executes any statement; returns its rows, or [] for one without a result."""
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


# -- the engine's catalog ------------------------------------------------------------------
# MonetDB has no information_schema; its sys.* tables say the same, and every MonetDB test
# has a schema of its own on a shared server, so lookups there stay inside current_schema.

_MONETDB_IN_SCHEMA = "JOIN sys.schemas AS s ON s.id = {owner}.schema_id WHERE s.name = current_schema"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def table_names(native: Native, engine: str) -> set[str]:
    """Every table (and view) of the test's database or schema."""
    if engine == "monetdb":
        sql = f"SELECT t.name FROM sys.tables AS t {_MONETDB_IN_SCHEMA.format(owner='t')} AND NOT t.system"
    else:
        sql = "SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN ('information_schema', 'pg_catalog')"
    return {name for (name,) in native(sql)}


def column_names(native: Native, engine: str, table: str) -> set[str]:
    if engine == "monetdb":
        sql = (f"SELECT c.name FROM sys.columns AS c JOIN sys.tables AS t ON t.id = c.table_id "
               f"{_MONETDB_IN_SCHEMA.format(owner='t')} AND t.name = {_literal(table)}")
    else:
        sql = f"SELECT column_name FROM information_schema.columns WHERE table_name = {_literal(table)}"
    return {name for (name,) in native(sql)}


_SEQUENCES = {
    "duckdb": "SELECT sequence_name FROM duckdb_sequences()",
    "monetdb": f"SELECT q.name FROM sys.sequences AS q {_MONETDB_IN_SCHEMA.format(owner='q')}",
    "postgres": "SELECT sequence_name FROM information_schema.sequences",
}
_INDEXES = {
    "duckdb": "SELECT index_name FROM duckdb_indexes()",
    "monetdb": f"SELECT i.name FROM sys.idxs AS i JOIN sys.tables AS t ON t.id = i.table_id {_MONETDB_IN_SCHEMA.format(owner='t')}",
    "postgres": "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'",
}


def sequence_names(native: Native, engine: str) -> set[str]:
    return {name for (name,) in native(_SEQUENCES[engine])}


def index_names(native: Native, engine: str) -> set[str]:
    return {name for (name,) in native(_INDEXES[engine])}

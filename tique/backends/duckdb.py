"""DuckDB, embedded: connections of one process share the database and an in-process oracle."""
from __future__ import annotations

import re
from typing import Any, Sequence
from urllib.parse import unquote, urlsplit

import duckdb
from sqlglot import exp

from tique import errors
from tique.backends.base import Backend, PlanCache
from tique.plan_timing import ENGINE_PARSE
from tique.backends.duckdb_rows import ListRowTemplate, ListsStatement, lists_insert
from tique.cache_state import CacheState
from tique.oracle.local import LocalOracle
from tique.rewrite.params import RowTemplate
from tique.rewrite.templates import data_type, template_text
from tique.session import Session


def database_path(url: str) -> str:
    path = unquote(urlsplit(url).path)
    if path in ("", "/", "/:memory:"):
        return ":memory:"
    return path


def _open_file(url: str) -> Any:
    """Opens the database file; a file another process holds is an OperationalError that
    says why: DuckDB lets one process at a time open a file for writing."""
    path = database_path(url)
    try:
        return duckdb.connect(path)
    except duckdb.IOException as error:
        cause = str(error).strip()
        if "lock" in cause.lower():
            holder = re.search(r"\(PID (\d+)\)", cause)
            by = f" (PID {holder.group(1)})" if holder else ""
            shown = re.sub(r"^/+", "/", path)
            message = (f"DuckDB allows one process per database file, and another process{by} has {shown} open; "
                       "close it there, or share the database through one process")
        else:
            message = f"cannot open DuckDB database {path}: {cause}"
        raise errors.OperationalError(errors.describe(f"connect to {url}", message)) from error


# DuckDB's statistics propagation prunes filters and joins that a table's column
# statistics (min/max) say no row can satisfy. Those statistics are not versioned, and
# when transactions commit their first rows into an empty table at the same time, one
# commit's statistics can be lost: a statement that starts after both commits returned
# then proves `txid = <its own txid>` unsatisfiable and reads nothing. Certification
# (sql/common/certify.sql) read that way finds no conflict, and two concurrent writers
# of one key both commit: a lost update (issue 12, TPC-C consistency 1 and 8 broken by
# the first Payments of a fresh database). tique's metadata and cache tables are empty
# at first, and again whenever the checkpointer has purged them.
# Invariant: no statement tique runs on DuckDB is planned from table statistics, so what
# it reads is exactly what its snapshot holds (a commit that returned before the
# statement began is visible to it), as the commit protocol's invariant assumes.
_ENGINE_SETTINGS = "SET disabled_optimizers = 'statistics_propagation'"


def _engine_connection(base: Any) -> Any:
    """A connection to the shared database, with the settings tique's correctness needs."""
    conn = base.cursor()
    conn.execute(_ENGINE_SETTINGS)
    return conn


class DuckDBBackend(Backend):
    dialect = "duckdb"
    creates_or_replaces_tables = True
    tracks_view_dependencies = False  # views are bound when read
    missing_column = (re.compile(r'Referenced column "(?P<column>[^"]+)" not found'),
                      re.compile(r'(?:Table|Values list) "(?P<qualifier>[^"]+)" does not have a column named "(?P<column>[^"]+)"'))
    missing_table = (re.compile(r"Table with name (?P<table>\S+) does not exist"),)
    checkpoints_in_one_transaction = True  # a commit per step was a log sync each: ~40 a round
    # Certification (sql/common/certify.sql, certify_reads.sql) and the DDL check ask only
    # whether a matching write-set row exists, and recovery reads (cts, txid) DISTINCT, so a
    # key the transaction wrote twice may be logged twice. Without the per-table DISTINCT,
    # a New-Order's write-set insert (five tables) took 1.1 ms engine CPU instead of 1.7.
    distinct_write_set = False

    def __init__(self, url: str, **_: object) -> None:
        super().__init__()
        self.url = url
        self._base = _open_file(url)
        self.oracle = LocalOracle(self.insert_abort_outcome)
        self.cache_state = CacheState()  # one process per DuckDB file: every writer is here
        # Parsed statements by text. A rewritten snapshot query is kilobytes of SQL that
        # DuckDB's parser takes over a millisecond to read (as long as the point lookup
        # itself takes to run), and the Python client parses the text anew on every call.
        # A parse tree holds no values, data or catalog state (binding happens per call,
        # on a copy of the tree), so one is reused by every connection of the database.
        self._parsed = PlanCache(kind=ENGINE_PARSE)  # its misses are the engine's parsing, not tique's planning
        # The catalog version in process memory (one process opens a DuckDB file), so a
        # begin reads it for free; bumped once a schema change has committed.
        self._catalog_version = 0

    def begin(self, raw: Session) -> tuple[int, int, int]:
        txid, sts = self.oracle.begin(raw)
        return txid, sts, self._catalog_version

    def catalog_version(self, raw: Session) -> int:
        return self._catalog_version

    def bump_catalog_version(self, raw: Session) -> None:
        pass  # bumped in memory once committed (catalog_committed)

    def fresh_rows(self, raw: Session, sql: str, params: Sequence[Any]) -> list[tuple]:
        """On a connection of its own: an open transaction reads the snapshot it began with."""
        side = Session(_engine_connection(self._base), counters=raw.counters)
        try:
            return self.rows(side, sql, params)
        finally:
            side.conn.close()

    def catalog_committing(self) -> None:
        """Bumped before the engine commit too: a transaction may begin after the commit
        is published (its snapshot holding the rows written with the schema change) and
        before catalog_committed runs. One that begins before the commit and reloads
        then reads the old catalog, at an older snapshot; the bump after the commit makes
        its next transaction reload again."""
        self.catalog_committed()

    def catalog_committed(self) -> None:
        with self.setup_lock:
            self._catalog_version += 1

    def open(self) -> Session:
        return Session(_engine_connection(self._base))

    def close_raw(self, raw: Session) -> None:
        raw.conn.close()

    def close(self) -> None:
        super().close()
        self._base.close()

    def execute(self, raw: Session, sql: str, params: Sequence[Any], analytic: bool = False, probing: bool = False) -> Any:
        statement = self._statement(raw.conn, sql)
        with raw.round_trip(sql):
            return raw.conn.execute(statement, list(params)) if params else raw.conn.execute(statement)

    def execute_all(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """In-process, so one call each; a DuckDB connection holds one result at a time,
        so each is read before the next statement runs."""
        results = []
        for sql, params in statements:
            cur = self.execute(raw, sql, params)
            results.append(_Result(cur.description, cur.fetchall()))
        return results

    def _statement(self, raw: Any, sql: str) -> Any:
        """`sql` parsed once; a text of several statements stays text (run as a script)."""
        parsed = self._parsed.get(sql)
        if parsed is None:
            statements = raw.extract_statements(sql)
            if len(statements) != 1:
                return sql
            parsed = statements[0]
            self._parsed.put(sql, parsed)
        return parsed

    def affected(self, cursor: Any) -> int:
        """DuckDB reports a DML statement's row count as its one-row result."""
        row = cursor.fetchone()
        return int(row[0]) if row else 0

    def begin_engine(self, raw: Session) -> None:
        with raw.round_trip():
            raw.conn.begin()
        raw.in_transaction = True

    def _commit_open(self, raw: Session) -> None:
        raw.in_transaction = False
        with raw.round_trip(commit=True):
            raw.conn.commit()

    def rollback_engine(self, raw: Session) -> None:
        if not raw.in_transaction:
            return
        raw.in_transaction = False
        with raw.round_trip():
            raw.conn.rollback()

    def run_script(self, raw: Session, script: str) -> None:
        with raw.round_trip(script):
            raw.conn.execute(script)

    def compile_rows(self, tree: exp.Insert, width: int) -> RowTemplate:
        """Many rows go out as one list per parameter of the row (tique/backends/duckdb_rows.py)."""
        rows = super().compile_rows(tree, width)
        lists = lists_insert(tree, width)
        if lists is None:
            return rows
        compiled = self.compile(lists)
        return ListRowTemplate(rows.head, rows.row, rows.width, rows.finish, ListsStatement(compiled.sql, compiled.names, width))

    def param_node(self, n: int) -> exp.Expression:
        return exp.Placeholder(this=str(n))

    def key_hash(self, table_name: str, keys: list[exp.Expression]) -> exp.Expression:
        hashed = exp.Anonymous(this="hash", expressions=[exp.Literal.string(table_name), *keys])
        return exp.cast(exp.BitwiseRightShift(this=hashed, expression=exp.Literal.number(1)), data_type("BIGINT"))

    def metadata_script(self) -> str:
        return template_text("duckdb/metadata.sql")

    def refine(self, error: BaseException, target: type[errors.Error]) -> type[errors.Error]:
        if isinstance(error, duckdb.ConstraintException):
            return errors.IntegrityError
        if isinstance(error, duckdb.TransactionException):
            return errors.OperationalError
        if isinstance(error, duckdb.InvalidInputException) and "division by zero" in str(error).lower():
            return errors.DataError  # PEP 249 names division by zero a data error; DuckDB files it under invalid input
        return target

    def not_null_column(self, error: BaseException) -> str | None:
        found = re.search(r"NOT NULL constraint failed: [^.\s]+\.(\S+)", str(error))
        return found.group(1).strip('"') if isinstance(error, duckdb.ConstraintException) and found else None

    def is_unique_violation(self, error: BaseException) -> bool:
        text = str(error).lower()
        return isinstance(error, (duckdb.ConstraintException, duckdb.TransactionException)) and ("duplicate key" in text or "unique" in text)


class _Result:
    """A statement's result read off the connection (DB-API fetch methods only)."""

    def __init__(self, description: Any, rows: list[tuple]) -> None:
        self.description = description
        self._rows = rows
        self._at = 0

    def fetchone(self) -> tuple | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[tuple]:
        rest, self._at = self._rows[self._at:], len(self._rows)
        return rest

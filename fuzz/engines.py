"""The three ways a statement runs: on a plain native connection, and through tique; and the
per-engine environments that hand out fresh databases for each case.

Every statement is rendered once per engine to text with `?` markers (what an application
hands tique); the native drivers get the same text with their own markers.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

import tique

DIALECTS = {"duckdb": "duckdb", "postgres": "postgres", "monetdb": "monetdb"}
_MARKER = re.compile(r"__tqp(\d+)__")


def render(tree: exp.Expression, engine: str) -> tuple[str, tuple]:
    """SQL text with `?` markers in the engine's dialect, and its parameters in text order.

    ORDER BY items that do not spell out NULLS FIRST/LAST are given the dialect's own
    default, so the text does not spell it out either: the statement means what it means
    natively on that engine."""
    if engine == "monetdb":
        import tique.dialects.monetdb  # noqa: F401  (registers the dialect)
    dialect = DIALECTS[engine]
    tree = tree.copy()
    ordering = Dialect.get_or_raise(dialect).NULL_ORDERING
    for ordered in tree.find_all(exp.Ordered):
        if ordered.meta.get("explicit_nulls"):
            continue
        desc = bool(ordered.args.get("desc"))
        if ordering == "nulls_are_last":
            ordered.set("nulls_first", False)
        elif ordering == "nulls_are_small":
            ordered.set("nulls_first", not desc)
        else:
            ordered.set("nulls_first", desc)
    values: list[Any] = []
    for i, placeholder in enumerate(list(tree.find_all(exp.Placeholder))):
        values.append(placeholder.meta.get("value"))
        placeholder.replace(exp.Var(this=f"__tqp{i}__"))
    sql = tree.sql(dialect)
    params = tuple(values[int(m)] for m in _MARKER.findall(sql))
    return _MARKER.sub("?", sql), params


def numbered(sql: str) -> str:
    """`?` -> `$n` (generated text has no `?` inside literals)."""
    counter = itertools.count(1)
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def formatted(sql: str) -> str:
    """`?` -> `%s`, a literal `%` doubled, as pymonetdb binds."""
    return sql.replace("%", "%%").replace("?", "%s")


@dataclass(frozen=True)
class Outcome:
    """What a statement did: rows (with column names), a row count, an error, or a refusal."""
    kind: str  # "rows" | "count" | "error" | "refused"
    names: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    count: int = -1
    error: str = ""

    def brief(self, limit: int = 12) -> str:
        if self.kind == "rows":
            shown = ", ".join(repr(r) for r in self.rows[:limit])
            more = f", ... ({len(self.rows)} rows)" if len(self.rows) > limit else ""
            return f"columns {list(self.names)}: [{shown}{more}]"
        if self.kind == "count":
            return f"{self.count} rows written"
        return f"{self.kind}: {self.error}"


def _error(error: BaseException) -> Outcome:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return Outcome("error", error=f"{type(error).__name__}: {text[:300]}")


class Native:
    """A plain connection: no rewriting. Statements run one by one in explicit transactions
    (`begin`/`commit`/`rollback`), which is how the run keeps or undoes each of them."""

    engine: str
    begin_sql = "BEGIN"
    conn: Any

    def execute(self, sql: str, params: Sequence[Any], *, write: bool) -> Outcome:
        raise NotImplementedError

    # A connection whose own execute() runs a statement (DuckDB's, psycopg's); MonetDB's
    # runs them through cursors and says so.
    def begin(self) -> None:
        self.conn.execute(self.begin_sql)

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()


class NativeDuckDB(Native):
    begin_sql = "BEGIN TRANSACTION"
    engine = "duckdb"

    def __init__(self) -> None:
        import duckdb

        self.conn = duckdb.connect(":memory:")

    def execute(self, sql: str, params: Sequence[Any], *, write: bool) -> Outcome:
        try:
            cur = self.conn.execute(sql, list(params))
            if write:
                row = cur.fetchone() if cur.description else None
                return Outcome("count", count=int(row[0]) if row else -1)
            names = tuple(d[0] for d in cur.description or ())
            return Outcome("rows", names, tuple(tuple(r) for r in cur.fetchall()))
        except Exception as error:  # every engine error is an outcome to compare
            return _error(error)



class NativePostgres(Native):
    engine = "postgres"

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor, connect_timeout=10)

    def execute(self, sql: str, params: Sequence[Any], *, write: bool) -> Outcome:
        try:
            cur = self.conn.cursor()
            cur.execute(numbered(sql), list(params))
            if write:
                return Outcome("count", count=int(cur.rowcount))
            names = tuple(d[0] for d in cur.description or ())
            return Outcome("rows", names, tuple(tuple(r) for r in cur.fetchall()))
        except Exception as error:
            return _error(error)



NATIVE_MONETDB_TIMEOUT_S = 300  # generous: a case's statements take well under a second


@contextlib.contextmanager
def bounded_waits(seconds: float = NATIVE_MONETDB_TIMEOUT_S) -> Iterator[None]:
    """Every socket opened meanwhile gives up after `seconds` without an answer. pymonetdb
    leaves a connected socket at the default timeout, so this bounds each statement tique
    sends MonetDB on any of its sessions (which it opens as it needs them, out of the
    fuzzer's reach): MonetDB can loop forever on a statement (fuzz/exclusions.py), and a
    run must stop with the statement rather than wait forever (run_tique)."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def timed_out(error: BaseException) -> bool:
    """Whether `error` is, or was raised from, a socket giving up (bounded_waits)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TimeoutError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class NativeMonetDB(Native):
    engine = "monetdb"

    def __init__(self, url: str, schema: str, timeout_s: float = NATIVE_MONETDB_TIMEOUT_S) -> None:
        import pymonetdb

        parts = urlsplit(url)
        self.schema = schema
        self.conn = pymonetdb.connect(hostname=parts.hostname, port=parts.port, username=parts.username,
                                      password=parts.password, database=parts.path.lstrip("/"), autocommit=True)
        self.conn.cursor().execute(f"CREATE SCHEMA {schema}")
        self.conn.cursor().execute(f"SET SCHEMA {schema}")
        # MonetDB can loop forever on a query over a few rows (fuzz/exclusions.py) and honours
        # no query timeout then: the run stops with the statement rather than wait forever.
        sock = getattr(getattr(self.conn, "mapi", None), "sock", None)
        if sock is not None:
            sock.settimeout(timeout_s)
        self.timeout_s = timeout_s

    def execute(self, sql: str, params: Sequence[Any], *, write: bool) -> Outcome:
        try:
            cur = self.conn.cursor()
            cur.execute(formatted(sql) if params else sql, list(params))
            if write:
                return Outcome("count", count=int(cur.rowcount))
            names = tuple(d[0] for d in cur.description or ())
            return Outcome("rows", names, tuple(tuple(r) for r in cur.fetchall()))
        except TimeoutError as error:
            raise RuntimeError(f"native MonetDB gave no answer in {self.timeout_s} s to: {sql}") from error
        except Exception as error:
            return _error(error)

    def _control(self, sql: str) -> None:
        """A transaction-control statement, which names itself if MonetDB never answers it
        (as execute does for the case's statements)."""
        try:
            self.conn.cursor().execute(sql)
        except TimeoutError as error:
            raise RuntimeError(f"native MonetDB gave no answer in {self.timeout_s} s to: {sql}") from error

    def begin(self) -> None:
        self._control("START TRANSACTION")

    def commit(self) -> None:
        self._control("COMMIT")

    def rollback(self) -> None:
        self._control("ROLLBACK")

    def close(self) -> None:
        try:
            self.conn.cursor().execute("SET SCHEMA sys")
            self.conn.cursor().execute(f"DROP SCHEMA {self.schema} CASCADE")
        finally:
            self.conn.close()


def run_tique(conn: tique.Connection, sql: str, params: Sequence[Any]) -> Outcome:
    """One statement through tique; a NotSupportedError is a refusal, not an error."""
    try:
        cur = conn.cursor()
        cur.execute(sql, tuple(params))
        if cur.description:
            return Outcome("rows", tuple(d[0] for d in cur.description), tuple(tuple(r) for r in cur.fetchall()))
        return Outcome("count", count=int(cur.rowcount))
    except tique.NotSupportedError as error:
        return Outcome("refused", error=str(error).splitlines()[0][:300])
    except Exception as error:
        if timed_out(error):
            raise RuntimeError(f"tique gave no answer in {socket.getdefaulttimeout()} s to: {sql}") from error
        return _error(error)


@dataclass
class Environment:
    """Fresh databases on one engine: two native ones (the reference and its reordered copy)
    and tique ones, per case; `release` gives a case's back."""
    engine: str
    pg_cluster: Any = None  # drivers.pg_cluster.ThrowawayCluster, for postgres
    monetdb_url: str | None = None
    workdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="tique-fuzz-"))
    _made: list[str] = field(default_factory=list)

    def native(self) -> Native:
        if self.engine == "duckdb":
            return NativeDuckDB()
        if self.engine == "postgres":
            return _DroppingPostgres(self, self._pg_database("native"))
        assert self.monetdb_url
        return NativeMonetDB(self.monetdb_url, f"native_{uuid.uuid4().hex[:12]}")

    def _pg_database(self, prefix: str) -> str:
        return self.pg_cluster.create_database(f"fz_{prefix}_{uuid.uuid4().hex[:12]}")

    def tique_url(self) -> str:
        if self.engine == "duckdb":
            url = f"duckdb:///{self.workdir}/t-{uuid.uuid4().hex[:12]}.db"
        elif self.engine == "postgres":
            url = self._pg_database("tique")
        else:
            assert self.monetdb_url
            url = f"{self.monetdb_url}?schema=tique_{uuid.uuid4().hex[:12]}"
        self._made.append(url)
        return url

    def release(self, url: str) -> None:
        """Forgets a tique database and removes it."""
        from tique.backends import forget_database

        forget_database(url)
        if url in self._made:
            self._made.remove(url)
        if self.engine == "duckdb":
            path = url.removeprefix("duckdb:///")
            for suffix in ("", ".wal"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
        elif self.engine == "postgres":
            drop_pg_database(self.pg_cluster, url.rsplit("/", 1)[1])
        else:
            import pymonetdb

            parts = urlsplit(url)
            schema = parts.query.split("=", 1)[1]
            conn = pymonetdb.connect(hostname=parts.hostname, port=parts.port, username=parts.username,
                                     password=parts.password, database=parts.path.lstrip("/"), autocommit=True)
            try:
                conn.cursor().execute(f"DROP SCHEMA {schema} CASCADE")
            except Exception:
                pass  # leaving a schema behind on a throwaway server harms nothing
            finally:
                conn.close()

    def close(self) -> None:
        for url in list(self._made):
            self.release(url)
        shutil.rmtree(self.workdir, ignore_errors=True)


class _DroppingPostgres(NativePostgres):
    """A native PostgreSQL database that is dropped on close."""

    def __init__(self, env: Environment, url: str) -> None:
        super().__init__(url)
        self.env, self.url = env, url

    def close(self) -> None:
        super().close()
        drop_pg_database(self.env.pg_cluster, self.url.rsplit("/", 1)[1])


def drop_pg_database(cluster: Any, name: str) -> None:
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

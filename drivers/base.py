"""What every system under test offers the workloads: DB-API connections that take `?`
parameters, bulk loading, and a verdict on which errors mean "aborted, retry"."""
from __future__ import annotations

import abc
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
from sqlglot import exp

import tique


def quote(identifier: str, dialect: str) -> str:
    return exp.to_identifier(identifier, quoted=True).sql(dialect)


@dataclass
class TableLoad:
    """One table to create and fill: its CREATE TABLE text (portable SQL) and its rows
    as batches of column arrays (one numpy array per column, equal lengths)."""

    name: str
    create_sql: str
    columns: Sequence[str]
    batches: Iterable[Sequence[np.ndarray]] = field(default_factory=list)


class Engine(abc.ABC):
    """Where one database lives (a DuckDB file, a PostgreSQL database, a MonetDB schema)
    and how to reach it natively. An engine may own a server it started."""

    name: str
    # Whether the native driver opens each transaction with a BEGIN of its own (a round trip).
    begins_explicitly: bool = False
    # Whether the native driver's executemany sends all its rows in one round trip
    # (psycopg pipelines them, DuckDB takes them in one call) or one per row (pymonetdb).
    executemany_batches: bool = True

    @property
    @abc.abstractmethod
    def tique_url(self) -> str:
        """The URL tique.connect takes for this database."""

    @abc.abstractmethod
    def native_connect(self) -> Any:
        """A DB-API connection straight to the engine, not in autocommit, taking `?` parameters."""

    @abc.abstractmethod
    def version(self) -> str: ...

    @abc.abstractmethod
    def is_abort(self, error: BaseException) -> bool:
        """Whether `error` is the engine's own serialization/conflict abort."""

    @abc.abstractmethod
    def bulk_load(self, raw: Any, table: str, columns: Sequence[str], batch: Sequence[np.ndarray]) -> int:
        """Appends one batch with the engine's fastest path; `raw` is a native connection."""

    def restart(self) -> None:
        """Crashes and restarts the server this engine owns (fault injection)."""
        raise NotImplementedError(f"{self.name}: restart needs a server this process started")

    def close(self) -> None:
        """Stops what this engine started; leaves databases given by URL alone."""


class System:
    """A system under test: `native-<engine>` or `tique-<engine>` over one Engine."""

    def __init__(self, engine: Engine, through_tique: bool, tique_options: dict[str, Any] | None = None) -> None:
        self.engine = engine
        self.through_tique = through_tique
        self.tique_options = dict(tique_options or {})
        self.name = f"{'tique' if through_tique else 'native'}-{engine.name}"
        self._lock = threading.Lock()

    def connect(self, **options: Any) -> Any:
        """A fresh DB-API connection; one per client thread or process. A native system
        takes one option, `isolation_level`, on an engine that has that level of its own."""
        if self.through_tique:
            return tique.connect(self.engine.tique_url, **{**self.tique_options, **options})
        from drivers.counting import CountingConnection

        level = options.get("isolation_level")
        native = self.engine.native_connect(level) if level is not None else self.engine.native_connect()
        return CountingConnection(native, self.engine.begins_explicitly, self.engine.executemany_batches)

    def is_abort(self, error: BaseException) -> bool:
        """Whether `error` means the transaction certainly did not commit and may be retried."""
        if self.through_tique:
            return isinstance(error, tique.SerializationFailure)
        return self.engine.is_abort(error)

    def version(self) -> str:
        engine = self.engine.version()
        return f"tique {tique.__version__} on {engine}" if self.through_tique else engine

    def execute_script(self, statements: Iterable[str]) -> None:
        """Runs DDL or setup statements through this system, each in its own transaction."""
        conn = self.connect()
        try:
            cur = conn.cursor()
            for statement in statements:
                cur.execute(statement)
                conn.commit()
        finally:
            conn.close()

    def load(self, tables: Sequence[TableLoad], progress: Any = None) -> int:
        """Creates and fills `tables`; returns the rows loaded.

        Both flavours bulk-load natively (the engine's fastest path); a tique system then
        adopts the loaded tables, which moves their rows into tique's storage tables in one
        engine transaction per table, so load speed is the engine's, not tique's.
        """
        raw = self.engine.native_connect()
        loaded = 0
        try:
            cur = raw.cursor()
            for table in tables:
                cur.execute(table.create_sql)
                raw.commit()
                for batch in table.batches:
                    rows = self.engine.bulk_load(raw, table.name, table.columns, batch)
                    raw.commit()
                    loaded += rows
                    if progress is not None:
                        progress(table.name, rows)
        finally:
            raw.close()
        if self.through_tique:
            from tique.adopt import adopt

            conn = tique.connect(self.engine.tique_url, autocommit=True)
            try:
                adopt(conn, [t.name for t in tables])
            finally:
                conn.close()
        return loaded

    def close(self) -> None:
        if self.through_tique:
            from tique.backends import forget_database

            forget_database(self.engine.tique_url)
        self.engine.close()

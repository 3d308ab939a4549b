"""DuckDB, embedded: one database file in a working directory."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

import duckdb
import numpy as np

from drivers.base import Engine, quote
from tique.backends.duckdb import database_path

_DML = ("insert", "update", "delete")


class DuckDBCursor:
    """DB-API behaviour over a DuckDB connection: a transaction begins at the first
    statement (DuckDB itself autocommits), and DML reports its row count in rowcount."""

    def __init__(self, owner: "DuckDBConnection") -> None:
        self._owner = owner
        self._con = owner.raw
        self.rowcount = -1

    @property
    def description(self) -> Any:
        return self._con.description

    def execute(self, sql: str, params: Sequence[Any] = ()) -> "DuckDBCursor":
        self._owner.begin_if_needed()
        self._con.execute(sql, list(params)) if params else self._con.execute(sql)
        self.rowcount = -1
        if sql.lstrip()[:6].lower() in _DML:
            row = self._con.fetchone()
            self.rowcount = int(row[0]) if row else 0
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[Any]]) -> None:
        """DuckDB's own executemany: every row in one call into the engine."""
        rows = [list(params) for params in seq_of_params]
        if not rows:
            return
        self._owner.begin_if_needed()
        self._con.executemany(sql, rows)
        self.rowcount = -1

    def fetchone(self) -> Any:
        return self._con.fetchone()

    def fetchall(self) -> list[tuple]:
        return self._con.fetchall()

    def fetchmany(self, size: int = 1) -> list[tuple]:
        return self._con.fetchmany(size)

    def close(self) -> None:
        pass


class DuckDBConnection:
    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._in_transaction = False

    def begin_if_needed(self) -> None:
        if not self._in_transaction:
            self.raw.begin()
            self._in_transaction = True

    def cursor(self) -> DuckDBCursor:
        return DuckDBCursor(self)

    def commit(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            self.raw.commit()

    def rollback(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            self.raw.rollback()

    def close(self) -> None:
        try:
            self.rollback()
        finally:
            self.raw.close()


class DuckDBEngine(Engine):
    name = "duckdb"
    begins_explicitly = True  # psycopg sends BEGIN; the DuckDB adapter calls begin()

    def __init__(self, url: str | None = None, workdir: str | Path | None = None) -> None:
        self._scratch: Path | None = None  # a directory we made, removed on close
        if url:
            self.path = str(Path(database_path(url)).resolve())
        else:
            if workdir is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="tique-duckdb-"))
            directory = Path(workdir) if workdir else self._scratch
            assert directory is not None
            directory.mkdir(parents=True, exist_ok=True)
            self.path = str((directory / "bench.db").resolve())
        # One in-process database shared by every native connection (DuckDB allows one
        # writer process per file); each connection is a cursor of it.
        self._base: Any = None

    @property
    def tique_url(self) -> str:
        return f"duckdb://{self.path}"  # the path is absolute: duckdb:///abs/path.db

    def _database(self) -> Any:
        if self._base is None:
            self._base = duckdb.connect(self.path)
        return self._base

    def native_connect(self) -> DuckDBConnection:
        return DuckDBConnection(self._database().cursor())

    def version(self) -> str:
        return f"DuckDB {duckdb.__version__}"

    def is_abort(self, error: BaseException) -> bool:
        return isinstance(error, duckdb.TransactionException) or "conflict" in str(error).lower()

    def bulk_load(self, raw: Any, table: str, columns: Sequence[str], batch: Sequence[np.ndarray]) -> int:
        """DuckDB scans a dict of numpy arrays in place (a replacement scan), no copy."""
        frame = {f"c{i}": np.asarray(a) for i, a in enumerate(batch)}  # noqa: F841 (read by DuckDB)
        names = ", ".join(quote(c, "duckdb") for c in columns)
        picks = ", ".join(f"c{i}" for i in range(len(columns)))
        con = raw.raw if isinstance(raw, DuckDBConnection) else raw
        con.execute(f"INSERT INTO {quote(table, 'duckdb')} ({names}) SELECT {picks} FROM frame")
        return len(batch[0]) if len(batch) else 0

    def close(self) -> None:
        if self._base is not None:
            self._base.close()
            self._base = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

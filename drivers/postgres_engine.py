"""PostgreSQL: a database on a server given by URL, or on a throwaway cluster we start."""
from __future__ import annotations

import itertools
import os
from typing import Any, Sequence

import numpy as np
import psycopg

from drivers.base import Engine, quote
from drivers.qmark import ConnectionAdapter, qmark_to_dollar

_names = itertools.count(1)

# The benchmarks' throwaway clusters are durable, as users run PostgreSQL: a commit is
# acknowledged once its WAL is on disk (fsync and synchronous_commit on). `--postgres-fast`
# turns fsync off (commits still wait for the WAL write, so a crash-restart fault loses
# none). The choice is recorded in every result file (bench/results.py).
DURABILITY = {"durable": True}


def set_durable(durable: bool) -> None:
    DURABILITY["durable"] = durable


def cluster_settings() -> dict[str, str]:
    return {"fsync": "on" if DURABILITY["durable"] else "off", "synchronous_commit": "on", "max_connections": "300"}


def _translate(sql: str, params: Sequence[Any]) -> tuple[str, Sequence[Any]]:
    return qmark_to_dollar(sql, "postgres"), list(params)


def native_level(isolation: str | None) -> psycopg.IsolationLevel:
    """PostgreSQL's own level for tique's `isolation`: READ COMMITTED, REPEATABLE READ (its
    snapshot isolation) or SERIALIZABLE (its SSI), so each stands beside tique's."""
    from tique.isolation import IsolationLevel, parse_level

    level = parse_level(isolation or IsolationLevel.SNAPSHOT)
    return {IsolationLevel.READ_COMMITTED: psycopg.IsolationLevel.READ_COMMITTED,
            IsolationLevel.SNAPSHOT: psycopg.IsolationLevel.REPEATABLE_READ,
            IsolationLevel.SERIALIZABLE: psycopg.IsolationLevel.SERIALIZABLE}[level]


class PostgresEngine(Engine):
    name = "postgres"
    begins_explicitly = True  # psycopg sends BEGIN; the DuckDB adapter calls begin()

    def __init__(self, url: str | None = None) -> None:
        self.cluster: Any = None
        if url is None:
            from drivers.pg_cluster import ThrowawayCluster

            self.cluster = ThrowawayCluster(settings=cluster_settings())
            url = self.cluster.create_database(f"tique_bench_{os.getpid()}_{next(_names)}")
        self.url = url

    @property
    def tique_url(self) -> str:
        return self.url

    def native_connect(self, isolation: str | None = None) -> ConnectionAdapter:
        """At PostgreSQL's level for tique's level `isolation` (parse_level names):
        REPEATABLE READ by default, PostgreSQL's snapshot isolation, the level tique provides."""
        conn = psycopg.connect(self.url, cursor_factory=psycopg.RawCursor, connect_timeout=10)
        conn.isolation_level = native_level(isolation)
        return ConnectionAdapter(conn, _translate)

    def version(self) -> str:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return f"PostgreSQL {row[0] if row else '?'}"

    def is_abort(self, error: BaseException) -> bool:
        """SQLSTATE 40001 (serialization failure, SSI's too) and 40P01 (deadlock)."""
        return isinstance(error, (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected))

    def bulk_load(self, raw: Any, table: str, columns: Sequence[str], batch: Sequence[np.ndarray]) -> int:
        names = ", ".join(quote(c, "postgres") for c in columns)
        conn = raw._conn if isinstance(raw, ConnectionAdapter) else raw
        count = len(batch[0]) if len(batch) else 0
        with conn.cursor() as cur, cur.copy(f"COPY {quote(table, 'postgres')} ({names}) FROM STDIN") as copy:
            for row in zip(*(a.tolist() for a in batch)):
                copy.write_row(row)
        return count

    def restart(self) -> None:
        if self.cluster is None:
            super().restart()
        self.cluster.restart("immediate")

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

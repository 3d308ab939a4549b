"""tique: transactions in the query engine.

A PEP 249 (DB-API 2.0) driver that gives analytical engines snapshot-isolated,
multi-statement transactions by rewriting the application's SQL:

    import tique
    conn = tique.connect("duckdb:///tmp/bank.db")
    cur = conn.cursor()
    cur.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (10, 1))
    conn.commit()  # raises tique.SerializationFailure if a concurrent writer won
"""
from __future__ import annotations

import datetime as _dt
import time as _time
from typing import Any

from tique.connection import Connection
from tique.cursor import Cursor
from tique.isolation import IsolationLevel
from tique.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    SerializationFailure,
    InFailedTransaction,
    Warning,
)

__version__ = "0.1.0"

apilevel = "2.0"
threadsafety = 1  # threads may share the module, not connections
paramstyle = "qmark"  # `?` markers; `$1`-style numeric markers are accepted too


def connect(url: str, **options: Any) -> Connection:
    """Opens a tique connection.

    url: `duckdb:///abs/path.db` (or `duckdb:///:memory:`), `postgresql://user:pw@host:port/db`.
    options: autocommit (False), buffered_writes (False), snapshot ('auto' | 'rank' | 'scan'),
    static_tables (names created natively), commit_timeout (seconds, 10),
    checkpoint_interval_ms (start a background checkpointer), faults (debug only),
    packed_keys (MonetDB: new tables with a multi-column integer key also store it packed
    in one column, True; read when the process first opens the database),
    priority (re-execute a transaction that fails certification once, holding a
    reservation on its keys, False), analytic_workers (the most engine workers one
    analytical read may use: 'auto', a number, or None for the engine's own),
    analytic_queue (MonetDB: the connection's capped analytical reads take turns with
    those of the other queueing connections of this process to the database, within
    half the server's worker threads, False: for analytics clients, not for the point
    transactions beside them),
    isolation_level (the default level of its transactions, 'SNAPSHOT'; see
    tique/isolation.py).
    """
    return Connection(url, **options)


Date = _dt.date
Time = _dt.time
Timestamp = _dt.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> _dt.date:
    return Date(*_time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> _dt.time:
    return Time(*_time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> _dt.datetime:
    return Timestamp(*_time.localtime(ticks)[:6])


class _TypeObject:
    def __init__(self, *names: str) -> None:
        self.names = {n.upper() for n in names}

    def __eq__(self, other: object) -> bool:
        return str(other).upper().split("(")[0] in self.names

    def __hash__(self) -> int:
        return hash(frozenset(self.names))


STRING = _TypeObject("VARCHAR", "TEXT", "CHAR", "STRING")
BINARY = _TypeObject("BLOB", "BYTEA", "BINARY", "VARBINARY")
NUMBER = _TypeObject("INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")
DATETIME = _TypeObject("DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")
ROWID = _TypeObject("ROWID")

__all__ = [
    "connect", "Connection", "Cursor", "IsolationLevel", "apilevel", "threadsafety", "paramstyle",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError", "SerializationFailure", "InFailedTransaction",
    "Date", "Time", "Timestamp", "Binary", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks",
    "STRING", "BINARY", "NUMBER", "DATETIME", "ROWID",
]

"""Native connections counted the way tique counts itself (tique/session.py), so that a
benchmark compares like with like: every statement sent is a round trip whose wall time
is engine time, `commit()` and `rollback()` are round trips, a commit is an engine
commit, and a driver that opens each transaction with a BEGIN of its own (psycopg, and
DuckDB's adapter) pays one more round trip at the transaction's first statement.
executemany costs what the driver's own costs: one round trip where it sends every row
at once (psycopg's pipeline, DuckDB's one call), one per row where it loops (pymonetdb)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from drivers.qmark import CursorAdapter
from tique.session import Counters


class CountingCursor(CursorAdapter):
    """A native cursor (already taking `?`), each execute counted as a round trip."""

    def __init__(self, owner: "CountingConnection", cursor: Any) -> None:
        super().__init__(cursor, lambda sql, params: (sql, params))
        self._owner = owner

    def execute(self, sql: str, params: Sequence[Any] = (), *, many: bool = False) -> "CountingCursor":
        """`many`: `params` is a sequence of rows for the driver's executemany, one round trip."""
        owner = self._owner
        counters = owner.counters_live
        trace = counters.trace
        if owner.begins_explicitly and not owner.in_transaction:
            counters.round_trips += 1  # the driver's BEGIN
            if trace is not None:  # sent inside the statement's execute: its time is the statement's
                with trace.step("begin (driver)"):
                    trace.round_trip_began()
                    trace.round_trip_ended(0, False)
        owner.in_transaction = True
        if trace is not None:
            trace.round_trip_began()
        started = time.perf_counter_ns()
        try:
            if many:
                self._cursor.executemany(sql, params)
            else:
                self._cursor.execute(sql, params)
        finally:
            elapsed = time.perf_counter_ns() - started
            counters.round_trips += 1
            counters.engine_ns += elapsed
            if trace is not None:
                trace.round_trip_ended(elapsed, False)
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[Any]]) -> None:
        rows = list(seq_of_params)
        if not self._owner.executemany_batches:
            for params in rows:  # as the driver does: one execute, one round trip, per row
                self.execute(sql, params)
        elif rows:
            self.execute(sql, rows, many=True)


class CountingConnection:
    def __init__(self, conn: Any, begins_explicitly: bool, executemany_batches: bool = True) -> None:
        self._conn = conn
        self.begins_explicitly = begins_explicitly
        self.executemany_batches = executemany_batches
        self.in_transaction = False
        self.counters_live = Counters()

    @property
    def counters(self) -> Counters:
        return self.counters_live.copy()

    def cursor(self) -> CountingCursor:
        return CountingCursor(self, self._conn.cursor())

    def _end(self, action: Any, commit: bool) -> None:
        counters = self.counters_live
        trace = counters.trace
        if trace is not None:
            trace.round_trip_began()
        started = time.perf_counter_ns()
        try:
            action()
        finally:
            elapsed = time.perf_counter_ns() - started
            committed = commit and self.in_transaction
            counters.round_trips += 1
            counters.engine_ns += elapsed
            if committed:
                counters.engine_commits += 1
            self.in_transaction = False
            if trace is not None:
                trace.round_trip_ended(elapsed, committed)

    def commit(self) -> None:
        self._end(self._conn.commit, True)

    def rollback(self) -> None:
        self._end(self._conn.rollback, False)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "CountingConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

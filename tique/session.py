"""One engine connection as tique uses it, and the one place that counts what it costs.

Every statement a backend sends to its engine goes through `Session.round_trip`, so the
figures the benchmarks report (round trips, engine commits, engine time per transaction)
cannot undercount: a send that bypasses it would be a bug in the backend, not a gap in
the accounting.
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, Iterator

# Statements that change the database: autocommitted, each is an engine commit. The
# oracle's PostgreSQL functions write their log tables, except begin and end (tq_begin,
# tq_leave), which take and drop an advisory lock; MonetDB's oracle keeps its state in
# server memory, so its calls are reads.
_WRITES = re.compile(
    r"^\s*(?:INSERT|UPDATE|DELETE|MERGE|CREATE|DROP|ALTER|TRUNCATE|COPY|ANALYZE|VACUUM)\b"
    r"|\btq_(?:take_cts|publish|recover|resolve)\s*\(",
    re.IGNORECASE,
)


def writes(sql: str) -> bool:
    """Whether statement text changes the database (and so commits when autocommitted)."""
    return _WRITES.search(sql) is not None


class Unbound:
    """A transaction's id or start timestamp, bound before it is known: the oracle's begin
    travels in the same request as the transaction's first statement (PostgreSQL), so the
    engine fills the value in from what that begin left in the session
    (PostgresBackend.bind_unbound). Not a number, so no client-side use of it can pass."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} of the begin in flight>"


UNBOUND_TXID = Unbound("txid")
UNBOUND_STS = Unbound("sts")


@dataclass
class Counters:
    """What a session has cost so far. `engine_ns` is the wall time spent waiting for the
    engine (its execution plus the wire), measured around each round trip."""

    round_trips: int = 0
    engine_commits: int = 0
    engine_ns: int = 0

    def copy(self) -> "Counters":
        return Counters(self.round_trips, self.engine_commits, self.engine_ns)

    def __sub__(self, other: "Counters") -> "Counters":
        return Counters(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def __add__(self, other: "Counters") -> "Counters":
        return Counters(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass(eq=False)  # a session is itself, never equal to another: hashable by identity
class Session:
    """A driver connection and its counters. `in_transaction`: an engine transaction is
    open on it (statements do not commit on their own)."""

    conn: Any
    counters: Counters = field(default_factory=Counters)
    in_transaction: bool = False
    # An engine transaction was opened but its BEGIN not sent yet: it goes out in the
    # same request as the transaction's first statement (engines that can pipeline).
    pending_begin: bool = False
    # The oracle's begin of a tique transaction waits to travel in front of the session's
    # next request (PostgresBackend.fold_begin); `begun` then holds what it returned
    # (txid, start timestamp, catalog version), or stays None if it did not run.
    oracle_begin_pending: bool = False
    begun: tuple[int, int, int] | None = None
    # The oracle's registrations this session holds (txid -> start timestamp), each given
    # up when its transaction ends or publishes (PostgresOracle).
    registered: dict[int, int] = field(default_factory=dict)
    # The most engine workers one analytical read may use (MonetDB's worker threads,
    # PostgreSQL's parallel workers per gather); "auto" is the backend's default, None the
    # engine's own. A bounded share of the engine keeps analytics from starving the
    # point transactions running beside them.
    analytic_workers: int | str | None = "auto"

    @contextmanager
    def round_trip(self, sql: str = "", *, commit: bool = False, other_commits: int = 0) -> Iterator[None]:
        """Accounts one request to the engine around the block that sends it. `commit`:
        the request ends an engine transaction; otherwise an autocommitted statement
        that writes counts as a commit of its own. `other_commits`: further engine
        transactions the request carries whole (PostgresBackend.commit_then)."""
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            counters = self.counters
            counters.round_trips += 1
            counters.engine_ns += time.perf_counter_ns() - start
            counters.engine_commits += other_commits
            if commit or (not self.in_transaction and sql and writes(sql)):
                counters.engine_commits += 1

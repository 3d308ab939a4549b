"""One engine connection as tique uses it, and the one place that counts what it costs.

Every statement a backend sends to its engine goes through `Session.round_trip`, so the
figures the benchmarks report (round trips, engine commits, engine time per transaction)
cannot undercount: a send that bypasses it would be a bug in the backend, not a gap in
the accounting.
"""
from __future__ import annotations

import functools
import re
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, fields
from typing import Any, Iterator, Protocol

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
    """Whether statement text changes the database (and so commits when autocommitted).
    Remembered per text up to a bounded size: tique's texts recur, and searching one of a
    few kilobytes costs tens of microseconds, paid on every round trip."""
    if len(sql) > _REMEMBERED_LENGTH:
        return _WRITES.search(sql) is not None
    return _remembered_writes(sql)


_REMEMBERED_LENGTH = 8192  # at most 1024 texts of this size are kept (8 MB)


@functools.lru_cache(maxsize=1024)
def _remembered_writes(sql: str) -> bool:
    return _WRITES.search(sql) is not None


class Trace(Protocol):
    """Who records every round trip with its purpose while a benchmark traces a
    transaction (bench/trace.py). Sessions that share counters share it, so a second
    connection's requests (MonetDB's analytical session) are traced with the first's."""

    def step(self, name: str) -> AbstractContextManager[None]:
        """Labels the round trips sent inside the block with `name` (innermost wins)."""

    def round_trip_began(self) -> None: ...

    def round_trip_ended(self, engine_ns: int, committed: int) -> None:
        """`committed`: how many engine transactions the round trip committed."""

    def carried(self, held: int) -> None:
        """The round trip about to be sent carries `held` inserts held from earlier statements."""


_UNTRACED: AbstractContextManager[None] = nullcontext()


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

    def __post_init__(self) -> None:
        # Not a field (copies and differences carry numbers only): set only while a
        # benchmark traces, so an untraced round trip pays one attribute test.
        self.trace: Trace | None = None

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
    # The session's capped analytical reads wait their turn for the database's analytic
    # budget in this process (tique/worker_budget.py): many analytics clients together
    # then take no more of the engine than one. For analytics clients: point
    # transactions' own scan reads would queue behind long queries.
    analytic_queue: bool = False

    @contextmanager
    def round_trip(self, sql: str = "", *, commit: bool = False, other_commits: int = 0) -> Iterator[None]:
        """Accounts one request to the engine around the block that sends it. `commit`:
        the request ends an engine transaction; otherwise an autocommitted statement
        that writes counts as a commit of its own. `other_commits`: further engine
        transactions the request carries whole (PostgresBackend.commit_then)."""
        counters = self.counters
        trace = counters.trace
        if trace is not None:
            trace.round_trip_began()
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            elapsed = time.perf_counter_ns() - start
            counters.round_trips += 1
            counters.engine_ns += elapsed
            committed = int(commit or bool(not self.in_transaction and sql and writes(sql))) + other_commits
            counters.engine_commits += committed
            if trace is not None:
                trace.round_trip_ended(elapsed, committed)


def step(session: Session, name: str) -> AbstractContextManager[None]:
    """`with step(raw, "certify"):` labels the round trips of the block with their purpose
    when a benchmark traces the session (bench/trace.py); otherwise a shared no-op."""
    trace = session.counters.trace
    return _UNTRACED if trace is None else trace.step(name)

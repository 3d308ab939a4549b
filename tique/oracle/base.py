"""The oracle interface every backend implements.

Invariants every oracle keeps:
- transaction ids and commit timestamps are unique and increase;
- the snapshot is the largest commit timestamp S such that every commit timestamp at
  or below S has an outcome row (so it advances in commit order, and a transaction
  that begins reads every commit at or below its start timestamp, and no other);
- `publish` returns only once the snapshot has reached the given commit timestamp;
- no wait is unbounded: an owner that holds a commit timestamp past the timeout is
  aborted by inserting its abort outcome, which the owner's own commit marker then
  loses to (the outcome table has one row per commit timestamp).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol


class Oracle(Protocol):
    def begin(self, raw: Any) -> tuple[int, int]:
        """A new transaction id and its start timestamp, registered for the checkpointer."""

    def end(self, raw: Any, txid: int) -> None:
        """A transaction that never took a commit timestamp is over."""

    def statement_snapshot(self, raw: Any) -> int:
        """The newest snapshot (READ COMMITTED: what a statement starting now reads): it
        includes every commit whose publish has returned. Registers nothing: the
        transaction's start timestamp keeps the checkpointer below it."""

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float, then: Callable[[int], None] | None = None) -> int:
        """A commit timestamp; others may abort it if it stays undecided past `timeout`
        seconds. `then(cts)` runs before it returns; an in-process oracle runs it before
        it hands out any later timestamp."""

    def take_statement(self, txid: int, durable: bool = False) -> tuple[str, list] | None:
        """take_commit_timestamp as (sql, params) to run inside the committing request,
        returning the timestamp as its one value; None where the oracle cannot."""

    def taken_after_failure(self, raw: Any) -> int | None:
        """After a failed request that held take_statement: the timestamp it took, if any."""

    def decide(self, raw: Any, cts: int) -> bool:
        """For engines whose outcome table cannot arbitrate (no unique key): claim cts for
        its owner's commit marker. Oracles whose outcome table has one row per cts return True."""

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        """After cts's outcome is written: wait for predecessors, advance the snapshot past cts."""

    def publish_statement(self, raw: Any, txid: int, cts: int, timeout: float) -> tuple[str, list] | None:
        """publish() as (sql, params), to send in one request after the commit marker
        (then `published` once that request ran it); None where publish is no statement."""

    def published(self, raw: Any, txid: int) -> None:
        """The request that carried publish_statement ran it (or failed in it)."""

    def await_predecessors(self, raw: Any, cts: int, timeout: float) -> None:
        """Waits until every commit timestamp below `cts` has an outcome (so its write-set,
        logged before its outcome, is visible), aborting owners that stall past their
        timeout as publish does; `cts` itself stays undecided. Ordered certification of
        read-sets (tique/read_sets.py) waits here, and never longer than those timeouts."""

    def await_statement(self, cts: int, timeout: float) -> tuple[str, list] | None:
        """await_predecessors as (sql, params), to send in one request with the read-set
        certification after it; None where the oracle waits in process memory."""

    def wait_for_snapshot(self, raw: Any, at_least: int) -> int | None:
        """Waits until the snapshot reaches `at_least` and returns it; None where the
        oracle does not offer it."""

    def stable_timestamp(self, raw: Any) -> int:
        """At most the start timestamp of every running transaction, including one that
        has taken its start timestamp but not yet registered it."""

    def recover(self, raw: Any, force: bool) -> bool:
        """Abort unfinished transactions and re-seed from the committed log; True if it ran."""

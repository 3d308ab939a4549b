"""In-process oracle for embedded engines (DuckDB), shared by every connection of one database.

An embedded database is opened by one process, so the oracle's state lives in that
process; on open it is re-seeded from the committed log (see `recover`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

AbortWriter = Callable[[Any, int, int], None]  # (raw, cts, txid): insert an abort outcome
_ABORT_ATTEMPTS = 10


@dataclass
class _Pending:
    txid: int
    deadline: float


class LocalOracle:
    def __init__(self, abort_writer: AbortWriter) -> None:
        self._cond = threading.Condition()
        self._resolving = threading.Lock()
        self._abort_writer = abort_writer
        self._next_txid = 1
        self._next_cts = 1
        self._snapshot = 0
        self._active: dict[int, int] = {}
        self._pending: dict[int, _Pending] = {}
        self._resolved: set[int] = set()

    def seed(self, next_txid: int, last_cts: int) -> None:
        with self._cond:
            self._next_txid = max(self._next_txid, next_txid)
            self._next_cts = max(self._next_cts, last_cts + 1)
            self._snapshot = max(self._snapshot, last_cts)

    @property
    def snapshot(self) -> int:
        with self._cond:
            return self._snapshot

    @property
    def begun(self) -> int:
        """How many transactions have begun (the next transaction id): in process memory,
        so the checkpointer can tell readers at work from an idle database."""
        with self._cond:
            return self._next_txid

    def begin(self, raw: Any) -> tuple[int, int]:
        with self._cond:
            txid = self._next_txid
            self._next_txid += 1
            self._active[txid] = self._snapshot
            return txid, self._snapshot

    def end(self, raw: Any, txid: int) -> None:
        with self._cond:
            self._active.pop(txid, None)

    def statement_snapshot(self, raw: Any) -> int:
        return self.snapshot  # process memory: no round trip

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float, then: Callable[[int], None] | None = None) -> int:
        with self._cond:
            cts = self._next_cts
            self._next_cts += 1
            self._pending[cts] = _Pending(txid, time.monotonic() + timeout)
            if then is not None:
                then(cts)  # before anyone takes a later timestamp
        return cts

    def _advance(self) -> None:
        moved = False
        while self._snapshot + 1 in self._resolved:
            self._snapshot += 1
            self._resolved.discard(self._snapshot)
            moved = True
        if moved:
            self._cond.notify_all()

    def _resolve(self, cts: int) -> None:
        self._pending.pop(cts, None)
        if cts > self._snapshot:
            self._resolved.add(cts)
        self._advance()

    def take_statement(self, txid: int, durable: bool = False) -> None:
        return None  # the timestamp comes from process or server memory, not a statement

    def taken_after_failure(self, raw: Any) -> int | None:
        return None

    def decide(self, raw: Any, cts: int) -> bool:
        return True  # the outcome table's key on cts arbitrates

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        with self._cond:
            self._active.pop(txid, None)
            self._resolve(cts)
        self._wait_until(raw, cts)

    def await_predecessors(self, raw: Any, cts: int, timeout: float) -> None:
        self._wait_until(raw, cts - 1)

    def publish_statement(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        return None  # publish waits in process or server memory, not as a statement

    def published(self, raw: Any, txid: int) -> None:
        pass

    def await_statement(self, cts: int, timeout: float) -> None:
        return None  # the wait runs in process or server memory, not as a statement

    def wait_for_snapshot(self, raw: Any, at_least: int) -> int | None:
        """Waits until the snapshot reaches `at_least` (aborting owners that stall past
        their timeout, as publish does) and returns it."""
        self._wait_until(raw, at_least)
        return self.snapshot

    def _wait_until(self, raw: Any, cts: int) -> None:
        while True:
            with self._cond:
                if self._snapshot >= cts:
                    return
                blocker = self._snapshot + 1
                pending = self._pending.get(blocker)
                if pending is None:  # resolved meanwhile, or a cts whose owner never logged it yet
                    self._cond.wait(0.05)
                    continue
                remaining = pending.deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                stale = pending
            # The owner held its commit timestamp past the timeout: abort it. If its
            # commit marker got in first, the insert is a no-op and it stays committed.
            # Waiters share one deadline, so they would all insert the same outcome row at
            # once, which the engine rejects as a duplicate despite ON CONFLICT DO NOTHING:
            # one resolver at a time, and only while the timestamp is still undecided.
            # The owner stays registered as running until it ends itself: while it may
            # resume, the stable timestamp must stay below it, or a checkpoint would purge
            # the abort marker its own commit marker has to lose to.
            with self._resolving:
                with self._cond:
                    if self._pending.get(blocker) is not stale:
                        continue
                self._insert_abort(raw, blocker, stale.txid)
                with self._cond:
                    self._resolve(blocker)

    def _insert_abort(self, raw: Any, cts: int, txid: int) -> None:
        """The owner may insert its own outcome at the same moment, and the engine then
        rejects one of the two; once that insert has settled a retry is a no-op (or, if
        it failed, the abort)."""
        for attempt in range(_ABORT_ATTEMPTS):
            try:
                self._abort_writer(raw, cts, txid)
                return
            except Exception:
                if attempt + 1 == _ABORT_ATTEMPTS:
                    raise
                time.sleep(0.01 * (attempt + 1))

    def stable_timestamp(self, raw: Any) -> int:
        with self._cond:
            oldest = min(self._active.values(), default=self._snapshot)
            return min(oldest, self._snapshot)

    def recover(self, raw: Any, force: bool) -> bool:
        return False

"""PostgreSQL oracle: sequences, one clock row and advisory locks, all server-side
(sql/postgres/metadata.sql), so many client processes share it and waits block
inside the server instead of polling."""
from __future__ import annotations

from typing import Any, Callable


# The newest snapshot as a query: a statement can carry it instead of a bound value
# (PostgresBackend.statement_snapshot_expression).
STATEMENT_SNAPSHOT = "SELECT c.snapshot FROM tq_clock c WHERE c.id = 1"


class PostgresOracle:
    def __init__(self, run: Any) -> None:
        self._run = run  # (raw, sql, params) -> rows

    def begin(self, raw: Any) -> tuple[int, int]:
        (row,) = self._run(raw, "SELECT o_txid, o_sts FROM tq_begin()", [])
        raw.registered[int(row[0])] = int(row[1])
        return int(row[0]), int(row[1])

    def begin_with(self, raw: Any, also: str) -> tuple[int, int, int]:
        """begin() and the value of the expression `also`, evaluated after tq_begin() in the same statement."""
        (row,) = self._run(raw, f"SELECT o_txid, o_sts, ({also}) FROM tq_begin()", [])
        raw.registered[int(row[0])] = int(row[1])
        return int(row[0]), int(row[1]), int(row[2])

    def end(self, raw: Any, txid: int) -> None:
        """Gives up the registration tq_begin took (no write: a read-only transaction
        commits nothing); nothing to do for a transaction this session never registered."""
        sts = raw.registered.pop(txid, None)
        if sts is not None:
            self._run(raw, "SELECT tq_leave($1)", [sts])

    def statement_snapshot(self, raw: Any) -> int:
        """tq_publish returns only once the clock row holds its commit, so the clock is
        the newest snapshot (tq_begin may also count outcomes just above it, decided but
        not yet published; a caller keeps the larger of the two)."""
        (row,) = self._run(raw, STATEMENT_SNAPSHOT, [])
        return int(row[0])

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float, then: Callable[[int], None] | None = None) -> int:
        (row,) = self._run(raw, "SELECT tq_take_cts($1)", [txid])
        if then is not None:
            then(int(row[0]))
        return int(row[0])

    def take_statement(self, txid: int, durable: bool = False) -> tuple[str, list]:
        """take_commit_timestamp as a statement to send with others in one request.
        `durable`: its engine transaction also commits the outcome row, so it commits with
        the server's synchronous_commit (else asynchronously: see metadata.sql, Durability)."""
        return "SELECT tq_take_cts($1, $2)", [txid, durable]

    def taken_after_failure(self, raw: Any) -> int | None:
        """After a failed request that held take_statement: the timestamp it took, if
        it got that far. tq_take_cts holds a session-level advisory lock on the
        timestamp until publish, and a session holds at most one, so the lock says."""
        rows = self._run(raw, "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks "
                              "WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid = 1 AND granted "
                              "AND (classid::bigint >> 16) <> 29714", [])  # not a registration (tq_registration)
        return int(rows[0][0]) if rows else None

    def decide(self, raw: Any, cts: int) -> bool:
        return True  # the outcome table's key on cts arbitrates

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        """Its outcome is in, so the transaction reads nothing more: it gives up its
        registration first (tq_leave, in FROM, runs before the call), in the same statement."""
        sts = raw.registered.pop(txid, None)
        if sts is None:
            self._run(raw, "SELECT tq_publish($1, $2, $3)", [txid, cts, max(1, int(timeout * 1000))])
        else:
            self._run(raw, "SELECT tq_publish($1, $2, $3) FROM tq_leave($4)", [txid, cts, max(1, int(timeout * 1000)), sts])

    def publish_statement(self, raw: Any, txid: int, cts: int, timeout: float) -> tuple[str, list]:
        """publish() as a statement; the registration is given up in it as in publish(),
        and forgotten by published() once the request ran it."""
        sts = raw.registered.get(txid)
        if sts is None:
            return "SELECT tq_publish($1, $2, $3)", [txid, cts, max(1, int(timeout * 1000))]
        return "SELECT tq_publish($1, $2, $3) FROM tq_leave($4)", [txid, cts, max(1, int(timeout * 1000)), sts]

    def publish_taken_statement(self, raw: Any, txid: int, timeout: float) -> tuple[str, list]:
        """publish_statement for the commit timestamp this session took last (tq_take_cts's
        nextval), read from the session by a statement in the request that took it."""
        sts = raw.registered.get(txid)
        if sts is None:
            return "SELECT tq_publish($1, currval('tq_cts_seq'), $2)", [txid, max(1, int(timeout * 1000))]
        return "SELECT tq_publish($1, currval('tq_cts_seq'), $2) FROM tq_leave($3)", [txid, max(1, int(timeout * 1000)), sts]

    def published(self, raw: Any, txid: int) -> None:
        raw.registered.pop(txid, None)

    def await_predecessors(self, raw: Any, cts: int, timeout: float) -> None:
        self._run(raw, *self.await_statement(cts, timeout))

    def await_statement(self, cts: int, timeout: float) -> tuple[str, list]:
        return "SELECT tq_await($1, $2)", [cts, max(1, int(timeout * 1000))]

    def wait_for_snapshot(self, raw: Any, at_least: int) -> int | None:
        return None  # not offered: a reservation keeps the snapshot it began with

    def stable_timestamp(self, raw: Any) -> int:
        (row,) = self._run(raw, "SELECT o_stable FROM tq_stable()", [])
        return int(row[0])

    def recover(self, raw: Any, force: bool) -> bool:
        (row,) = self._run(raw, "SELECT tq_recover($1)", [force])
        return bool(row[0])

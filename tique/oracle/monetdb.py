"""MonetDB oracle: the C UDF `tq_oracle` (sql/monetdb/oracle.sql) holds the state in the
server; waits block on its pthread condition variable, never in client loops. Abort
markers for stalled owners are written here, in SQL, since a UDF cannot write tables."""
from __future__ import annotations

from typing import Any, Callable

from tique.errors import OperationalError

CLAIM, SEED, BEGIN, END, TAKE, PUBLISH, RESOLVE, STABLE, STATUS, ACTIVE, EXPIRE, LATCH, DECIDE = range(1, 14)
_CALL = "SELECT r1, r2, r3 FROM tq_oracle($1, $2, $3)"


class MonetDBOracle:
    def __init__(self, rows: Callable[[Any, str, list], list[tuple]], recover_from_log: Callable[[Any], tuple[int, int]],
                 abort_writer: Callable[[Any, int, int], None]) -> None:
        self._rows = rows
        self._recover_from_log = recover_from_log
        self._abort_writer = abort_writer

    def _call(self, raw: Any, op: int, a: int = 0, b: int = 0) -> list[tuple]:
        return self._rows(raw, _CALL, [op, a, b])

    def _one(self, raw: Any, op: int, a: int = 0, b: int = 0) -> tuple:
        rows = self._call(raw, op, a, b)
        return tuple(int(v) for v in rows[0])

    def begin(self, raw: Any) -> tuple[int, int]:
        for _ in range(2):
            session = int(self._rows(raw, "SELECT current_sessionid()", [])[0][0])
            txid, sts, _ = self._one(raw, BEGIN, session)
            if txid >= 0:
                return txid, sts
            self.recover(raw, force=False)  # the server restarted since the oracle was seeded
        raise OperationalError("the MonetDB oracle could not be seeded after a restart")

    def end(self, raw: Any, txid: int) -> None:
        self._one(raw, END, txid)

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float) -> int:
        cts = self._one(raw, TAKE, txid, max(1, int(timeout * 1000)))[0]
        if cts < 0:
            raise OperationalError("the MonetDB oracle lost its state (server restart) during the transaction")
        return cts

    def decide(self, raw: Any, cts: int) -> bool:
        """Claims cts for its owner's commit marker; False if a resolver aborted it first."""
        return self._one(raw, DECIDE, cts)[0] == 1

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        while True:
            status, stuck_cts, detail = self._one(raw, PUBLISH, txid, cts)
            if status <= 0:
                return
            if status == 1:
                # Its owner held it past its deadline undecided: the oracle has expired it,
                # so the owner can no longer write a commit marker; write the abort.
                self._abort_writer(raw, stuck_cts, detail)
                self._one(raw, RESOLVE, stuck_cts)
                continue
            # Claimed by an owner that has not published: only its death decides for it.
            alive = self._rows(raw, "SELECT count(*) FROM sys.sessions WHERE sessionid = $1", [detail])[0][0]
            if not alive:
                written = self._rows(raw, "SELECT count(*) FROM tq_outcome WHERE cts = $1", [stuck_cts])[0][0]
                if not written:
                    self._abort_writer(raw, stuck_cts, None)
                self._one(raw, RESOLVE, stuck_cts)

    def stable_timestamp(self, raw: Any) -> int:
        # Transactions of sessions that no longer exist will never end by themselves.
        dead = self._rows(raw, "SELECT a.r1 FROM tq_oracle($1, 0, 0) AS a WHERE a.r3 NOT IN (SELECT sessionid FROM sys.sessions)", [ACTIVE])
        for (txid,) in dead:
            self._rows(raw, "INSERT INTO tq_rolled_back (txid) VALUES ($1)", [int(txid)])
            self._one(raw, EXPIRE, int(txid))
        return self._one(raw, STABLE)[0]

    def recover(self, raw: Any, force: bool) -> bool:
        claimed_seeded = self._one(raw, CLAIM)[0] == 1
        if claimed_seeded and not force:
            return False
        next_txid, last_cts = self._recover_from_log(raw)
        if not claimed_seeded:
            self._one(raw, SEED, next_txid, last_cts)
        return True

    def try_latch(self, raw: Any, lease_ms: int) -> bool:
        return self._one(raw, LATCH, 1, lease_ms)[0] == 1

    def release_latch(self, raw: Any) -> None:
        self._one(raw, LATCH, 0)

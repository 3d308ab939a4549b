"""MonetDB oracle: the C UDF `tq_oracle` (sql/monetdb/oracle.sql) holds the state in the
server; waits block on its pthread condition variable, never in client loops. Abort
markers for stalled owners are written here, in SQL, since a UDF cannot write tables."""
from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

from tique.errors import OperationalError

CLAIM, SEED, BEGIN, END, TAKE, PUBLISH, RESOLVE, STABLE, STATUS, ACTIVE, EXPIRE, LATCH, DECIDE, REBIND, AWAIT, VERDICT = range(1, 17)
_CALL = "SELECT r1, r2, r3 FROM tq_oracle($1, $2, $3)"
STALE_MS = 200  # a commit timestamp undecided this long may belong to a dead owner


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

    def _session_token(self, raw: Any) -> int:
        """MonetDB reuses session ids, so a session is its id and its login second."""
        token = getattr(raw, "session_token", None)
        if token is None:
            (sid, login), = self._rows(raw, "SELECT sessionid, login FROM sys.sessions WHERE sessionid = current_sessionid()", [])
            token = _token(int(sid), login)
            # A session id the server hands out again belonged to a session that ended:
            # transactions still registered under it are dead, whatever their login time.
            self._one(raw, REBIND, int(sid))
            raw.session_token = token
        return token

    def _live_sessions(self, raw: Any) -> set[int]:
        return {_token(int(sid), login) for sid, login in self._rows(raw, "SELECT sessionid, login FROM sys.sessions", [])}

    def begin(self, raw: Any) -> tuple[int, int]:
        txid, sts, _ = self.begin_with(raw, None)
        return txid, sts

    def begin_with(self, raw: Any, also: str | None) -> tuple[int, int, int]:
        """begin() and the one value the query `also` selects, in the same statement. The
        query reads the statement's snapshot, taken just before the oracle call: a schema
        change whose commit is published in between (several round trips of its owner
        within microseconds of this statement) would be missed until the next begin."""
        call = _CALL if also is None else _CALL.replace(" FROM tq_oracle", f", ({also}) FROM tq_oracle")
        for attempt in range(3):
            txid, sts, blocked_ms, *extra = (int(v) for v in self._rows(raw, call, [BEGIN, self._session_token(raw), 0])[0])
            if txid < 0:
                self.recover(raw, force=False)  # the server restarted since the oracle was seeded
                continue
            if blocked_ms < STALE_MS or attempt == 2:
                return txid, sts, (extra[0] if extra else 0)
            # The next commit has been pending a while: if its outcome is written (its
            # owner died after the commit marker), it is decided; publish it and start over.
            decided = self._rows(raw, "SELECT cts FROM tq_outcome WHERE cts > $1", [sts])
            if not decided:
                return txid, sts, (extra[0] if extra else 0)
            for (cts,) in decided:
                self._one(raw, RESOLVE, int(cts))
            self.end(raw, txid)
        raise OperationalError("the MonetDB oracle could not be seeded after a restart")

    def end(self, raw: Any, txid: int) -> None:
        self._one(raw, END, txid)

    def statement_snapshot(self, raw: Any) -> int:
        """The oracle's snapshot (STATUS), one call: only the UDF knows it, and several calls
        inside one statement could each see another, so it is never folded into one."""
        return self._one(raw, STATUS)[0]

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float, then: Callable[[int], None] | None = None) -> int:
        cts = self._one(raw, TAKE, txid, max(1, int(timeout * 1000)))[0]
        if cts < 0:
            raise OperationalError("the MonetDB oracle lost its state (server restart) during the transaction")
        if then is not None:
            then(cts)
        return cts

    def statement(self, op: str, a: int, b: int) -> tuple[str, list[int]]:
        """The oracle call `op` (take, decide, publish) as a statement, for a request of
        several (tique/transaction.py, _commit_in_requests); it answers r1, r2, r3."""
        return _CALL, [{"take": TAKE, "decide": DECIDE, "publish": PUBLISH}[op], a, b]

    def call(self, op: exp.Expression, a: exp.Expression, b: exp.Expression, alias: str) -> exp.Table:
        """The oracle call as a table expression (columns r1, r2, r3) for a statement that
        builds on it; `op` an expression over code(), so one statement can choose its call."""
        return exp.Table(this=exp.Anonymous(this="tq_oracle", expressions=[op, a, b]), alias=exp.TableAlias(this=exp.to_identifier(alias)))

    @staticmethod
    def code(op: str) -> exp.Literal:
        return exp.Literal.number({"publish": PUBLISH, "status": STATUS, "decide": DECIDE, "verdict": VERDICT}[op])

    def take_statement(self, txid: int, durable: bool = False) -> None:
        return None  # the timestamp comes from process or server memory, not a statement

    def taken_after_failure(self, raw: Any) -> int | None:
        return None

    def decide(self, raw: Any, cts: int) -> bool:
        """Claims cts for its owner's commit marker; False if a resolver aborted it first."""
        return self._one(raw, DECIDE, cts)[0] == 1

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        self._wait(raw, lambda: self._one(raw, PUBLISH, txid, cts))

    def await_predecessors(self, raw: Any, cts: int, timeout: float) -> None:
        self._wait(raw, lambda: self._one(raw, AWAIT, cts))

    def _wait(self, raw: Any, call: Callable[[], tuple]) -> None:
        """Runs the oracle's wait `call` until it reports the snapshot reached, deciding
        for the stuck owners it reports on the way."""
        while True:
            status, stuck_cts, detail = call()
            if status <= 0:
                return
            if status == 1:
                # Its owner held it past its deadline undecided: the oracle has expired it,
                # so the owner can no longer write a commit marker; write the abort.
                self._abort_writer(raw, stuck_cts, detail)
                self._one(raw, RESOLVE, stuck_cts)
                continue
            # Claimed by an owner that has not published: only its death decides for it.
            if detail not in self._live_sessions(raw):
                written = self._rows(raw, "SELECT count(*) FROM tq_outcome WHERE cts = $1", [stuck_cts])[0][0]
                if not written:
                    self._abort_writer(raw, stuck_cts, None)
                self._one(raw, RESOLVE, stuck_cts)

    def publish_statement(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        return None  # publish waits in process or server memory, not as a statement

    def published(self, raw: Any, txid: int) -> None:
        pass

    def await_statement(self, cts: int, timeout: float) -> None:
        return None  # the wait runs in process or server memory, not as a statement

    def wait_for_snapshot(self, raw: Any, at_least: int) -> int | None:
        return None  # not offered: a reservation keeps the snapshot it began with

    def stable_timestamp(self, raw: Any) -> int:
        # Transactions of sessions that no longer exist will never end by themselves.
        # A session is dead only if the server lists it neither before nor after the active
        # transactions are read: one opened after the first list may have begun a
        # transaction before the second read, and one that ends after that read (its
        # transaction ended first) was listed before it. A live writer declared dead
        # would be logged as rolled back, and the checkpointer purges such versions.
        live = self._live_sessions(raw)
        active = self._call(raw, ACTIVE)
        if any(int(session) not in live for _, _, session in active):
            live |= self._live_sessions(raw)
        dead = [txid for txid, _, session in active if int(session) not in live]
        for txid in dead:
            self._rows(raw, "INSERT INTO tq_rolled_back (txid) VALUES ($1)", [int(txid)])
            self._one(raw, EXPIRE, int(txid))
        return self._one(raw, STABLE)[0]

    def fence(self, raw: Any) -> int:
        """A transaction id handed out now: every transaction that begins later gets a
        larger one (ids increase), every one begun earlier a smaller one."""
        txid, _ = self.begin(raw)
        self.end(raw, txid)
        return txid

    def began_before(self, raw: Any, fence: int) -> bool:
        """Whether a transaction with an id below `fence` is still registered (running)."""
        return any(int(txid) < fence for txid, _, _ in self._call(raw, ACTIVE))

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


def _token(session_id: int, login: Any) -> int:
    return int(login.timestamp()) * 65536 + session_id

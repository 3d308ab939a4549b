"""One tique transaction and its commit protocol.

A writing transaction runs all its writes in one engine transaction on its session,
opened by its first write: each write statement appends versions to the cache tables
(and checks its keys) inside it, so the transaction reads its own writes and nobody
else sees them, and a failed statement leaves nothing anywhere (the engine transaction
and with it the tique transaction are rolled back, as natively).

Commit of a writer, in order:
1. take a commit timestamp from the oracle (in memory on DuckDB and MonetDB; on
   PostgreSQL a server function that also logs it in tq_committing, inside the engine
   transaction, so that row commits with the write-set);
2. log the write-set (hashed keys of every written table, with the commit timestamp)
   in tq_write_sets, inside the engine transaction, and commit it: this one engine
   commit carries every write of the transaction and its write-set;
3. certify and mark, in one statement: a join of our write-set against every
   transaction whose write-set carries a commit timestamp above our start timestamp
   and that is not aborted (first committer wins), whose result is the `committed`
   flag of the outcome row we insert. That insert is the single atomic commit point;
4. publish: the oracle advances the snapshot past our commit timestamp in commit
   order, and commit returns only once transactions that begin later see it.
Invariant: step 2 commits before step 3 starts in every transaction, so of two
overlapping writers of a key the one that certifies second always sees the other's
write-set. Versions in the cache are invisible to every other transaction until their
transaction's outcome row says it committed, so committing them (step 2) before the
marker (step 3) exposes nothing; an abort outcome makes the checkpointer purge them.

READ COMMITTED (Transaction.level): each statement reads the newest snapshot, taken
from the oracle when the statement starts (the begin's own for the first statement),
never older than the one before it; the transaction's own writes rank above every
committed version, so it reads them whatever the snapshot. Versions still become
visible only through their committed outcome row, so no statement ever reads an
uncommitted or aborted write (no G1a/G1b), and a transaction reads only transactions
that committed (took their commit timestamp) before its statement began.
Write rule: first committer wins per key against every transaction that committed
after the snapshot of the transaction's first write statement (`write_sts`, the
certification timestamp instead of sts; conservative: a later write statement reads
a newer snapshot, and commits between the two also abort it). Every write statement
reads at or above write_sts, so a concurrent write it did not read had a commit
timestamp above write_sts and is caught, at most one of two overlapping writers of a
key commits, and neither overwrites the other blindly: no lost update within a
statement (UPDATE t SET n = n + 1). Dependencies then follow commit order: a ww edge
goes to the later commit timestamp (versions rank by it), a wr edge from a commit at or
below a statement's snapshot, taken before the reader's commit timestamp; so no G0 or
G1c cycle. A value read in one statement and written back in another is not
protected, as in any READ COMMITTED (write it in one statement, or use REPEATABLE READ).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import TableDef
from tique.errors import IntegrityError, OperationalError, SerializationFailure, describe
from tique.isolation import IsolationLevel
from tique.rewrite.constraints import write_set_parts as unique_write_set
from tique.rewrite.params import Compiled
from tique.rewrite.templates import table_template, template


@dataclass
class BufferedWrite:
    plan: Any
    params: tuple
    context: dict[str, int]
    statement: str


@dataclass
class Transaction:
    txid: int
    sts: int
    next_seq: int = 1
    written: set[str] = field(default_factory=set)
    buffered: list[BufferedWrite] = field(default_factory=list)
    # The timestamp statements read at; only the stale-snapshot debug fault moves it off
    # sts (certification always uses sts).
    read_sts: int | None = None
    # Priority mode: the statements run so far (to re-execute them), and the commit
    # timestamp a re-execution already holds.
    statements: list[tuple[str, tuple]] | None = None
    reserved_cts: int | None = None
    # An engine transaction is open on the session, holding this transaction's writes.
    engine_open: bool = False
    # Tables this transaction told the backend's CacheState it writes; told again when it ends.
    noted: set[str] = field(default_factory=set)
    engine_epoch: int = 0  # CacheState's epoch just before the engine transaction began
    level: IsolationLevel = IsolationLevel.SNAPSHOT
    read_only: bool = False
    used: bool = False  # a read or write has run: the level and access mode are fixed
    # Tique objects whose schema this transaction changed (DDL inside it, tique/ddl.py):
    # its engine transaction carries the change, so the commit commits it even without writes.
    schema_changed: set[str] = field(default_factory=set)

    # READ COMMITTED: the snapshot of the first write statement, which certification
    # compares against instead of sts (see the module's invariant).
    write_sts: int | None = None

    @property
    def statement_sts(self) -> int:
        return self.sts if self.read_sts is None else self.read_sts

    @property
    def certification_sts(self) -> int:
        """Writers that committed above this timestamp conflict with ours."""
        return self.sts if self.write_sts is None else self.write_sts

    def context(self) -> dict[str, int]:
        return {"tq_txid": self.txid, "tq_sts": self.statement_sts, "tq_seq_limit": self.next_seq}

    def write_context(self) -> dict[str, int]:
        base = self.next_seq
        self.next_seq += 2
        return {"tq_txid": self.txid, "tq_sts": self.statement_sts, "tq_seq_limit": base, "tq_seq_tomb": base, "tq_seq_write": base + 1,
                "tq_seq_after": base + 2}


class CommitStatements:
    """Compiled commit-path SQL for one backend, built once per written-table set."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._write_sets: dict[tuple[TableDef, ...], Compiled] = {}
        (certify,) = template("common/certify.sql")
        (marker,) = template("common/commit_marker.sql")
        for call in list(marker.find_all(exp.Anonymous)):
            if call.name.upper() == "TQ_CERTIFY":
                call.replace(certify.copy())
        self.commit_marker = backend.compile(marker)
        # Engines without RETURNING certify first, then insert the marker with the verdict.
        self.certify = backend.compile(certify)
        self.outcome = backend.compile(exp.insert(
            exp.select(exp.cast(exp.Placeholder(this="tq_cts"), "BIGINT"), exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"),
                       exp.cast(exp.Placeholder(this="tq_committed"), "BOOLEAN")),
            "tq_outcome", columns=["cts", "txid", "did_commit"]))
        self.failed_write_set = backend.compile(exp.select("key_hash").distinct().from_("tq_write_sets").where(
            exp.EQ(this=exp.column("txid"), expression=exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"))))
        self.rolled_back = backend.compile(exp.insert(exp.select(exp.Placeholder(this="tq_txid")), "tq_rolled_back", columns=["txid"]))

    def conflict(self, tables: list[TableDef]) -> Compiled:
        """A key of ours that a concurrent committer also wrote, with its table: the rows
        (table name, key values as text, padded with NULLs) of our cache versions whose
        write-set hash some transaction that certifies against us logged. Read only after
        certification failed, to say what the conflict was on."""
        key = ("conflict", *sorted(tables, key=lambda t: t.name))
        compiled = self._write_sets.get(key)  # type: ignore[call-overload]
        if compiled is None:
            width = max(len(t.key) for t in tables)
            text = exp.DataType.build("VARCHAR")
            parts = []
            for table in sorted(tables, key=lambda t: t.name):
                shown = [] if table.hidden_rowid else list(table.key)
                values = [exp.cast(exp.column(k, "c", quoted=True), text) for k in shown]
                values += [exp.cast(exp.Null(), text)] * (width - len(values))
                parts.append(exp.select(exp.alias_(exp.Literal.string(table.name), "tq_table"),
                                        *[exp.alias_(v, f"k{i}") for i, v in enumerate(values)],
                                        exp.alias_(self.backend.key_hash(table.name, [exp.column(k, "c", quoted=True) for k in table.match_key]), "key_hash"))
                             .from_(exp.table_(exp.to_identifier(table.cache, quoted=True), alias="c"))
                             .where(exp.EQ(this=exp.column("tq_txid", "c"), expression=exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"))))
            union = parts[0]
            for part in parts[1:]:
                union = exp.union(union, part, distinct=False)
            (certify,) = template("common/certify.sql")
            theirs = certify.select(exp.column("key_hash", "theirs"), append=False)
            theirs.set("limit", None)
            theirs.set("where", None)
            theirs.set("joins", [j for j in theirs.args["joins"] if j.alias_or_name != "theirs"])
            theirs.set("from_", exp.From(this=exp.table_("tq_write_sets", alias="theirs")))
            theirs.where(exp.NEQ(this=exp.column("txid", "theirs"), expression=exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT")), copy=False)
            theirs.where(exp.GT(this=exp.column("cts", "theirs"), expression=exp.cast(exp.Placeholder(this="tq_sts"), "BIGINT")), copy=False)
            theirs.where("o.did_commit IS NULL OR o.did_commit", copy=False)
            query = (exp.select("*").from_(exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier("mine"))))
                     .where(exp.In(this=exp.column("key_hash", "mine"), query=exp.Subquery(this=theirs))).limit(1))
            compiled = self.backend.compile(query)
            self._write_sets[key] = compiled  # type: ignore[index]
        return compiled

    def write_set(self, tables: list[TableDef], taken_in_request: bool = False) -> Compiled:
        """The write-set insert. `taken_in_request`: the commit timestamp is taken by the
        statement before it in the same request, so it is read from the session
        (Backend.taken_commit_timestamp) instead of bound."""
        key = (tuple(sorted(tables, key=lambda t: t.name)), taken_in_request)
        compiled = self._write_sets.get(key)
        if compiled is None:
            parts = [table_template("common/write_set.sql", t, t.physical_columns, self.backend.key_hash)[0] for t in key[0]]
            parts += [part for t in key[0] for part in unique_write_set(t, self.backend.key_hash)]
            union = parts[0]
            for part in parts[1:]:
                union = exp.union(union, part, distinct=False)
            insert = exp.insert(union, "tq_write_sets", columns=["txid", "cts", "key_hash"])
            if taken_in_request:
                taken = self.backend.taken_commit_timestamp()
                assert taken is not None
                for p in list(insert.find_all(exp.Placeholder)):
                    if p.this == "tq_cts":
                        p.replace(taken.copy())
            compiled = self.backend.compile(insert)
            self._write_sets[key] = compiled
        return compiled


def run_write(backend: Backend, raw: Any, plan: Any, params: tuple, context: dict[str, int], statement: str) -> int:
    """Runs a write's cache inserts and key checks inside the open engine transaction.
    A failure leaves rows behind only in that engine transaction, which the caller then
    rolls back with the whole tique transaction."""
    # The inserts and the key check go out as one request where the engine pipelines.
    statements = [(c.sql, c.values(params, context)) for c in plan.inserts]
    if plan.validation is not None:
        statements.append((plan.validation.sql, plan.validation.values(params, context)))
    try:
        cursors = backend.execute_all(raw, statements)
    except Exception as error:
        column = backend.not_null_column(error)
        if column is None:
            raise
        raise IntegrityError(describe(statement, f"NULL in a NOT NULL column of {plan.table.name}: {column}")) from error
    counts = [backend.affected(cur) for cur in cursors[:len(plan.inserts)]]
    if plan.validation is not None:
        (row,) = cursors[-1].fetchall()
        counts_of_violations = row[2:] if plan.checks_keys else row
        # CHECK first, as engines check a row before its keys; then keys, then UNIQUE.
        for (kind, message), count in zip(plan.violations, counts_of_violations):
            if count and kind == "CHECK":
                raise IntegrityError(describe(statement, message))
        if plan.checks_keys and (row[0] or row[1]):
            raise key_violation(plan.table, statement, int(row[0]) + int(row[1]))
        for (_, message), count in zip(plan.violations, counts_of_violations):
            if count:
                raise IntegrityError(describe(statement, message))
    return counts[0]


def key_violation(table: TableDef, statement: str, repeated: int) -> IntegrityError:
    key = ", ".join(table.key)
    return IntegrityError(describe(statement, f"duplicate primary key ({key}) in {table.name}: {repeated} row(s) would repeat a key"))


class _Lost(Exception):
    """A timeout resolver decided this commit timestamp (an abort) before its owner did."""


def commit_writer(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements,
                  timeout: float, faults: frozenset[str] = frozenset()) -> int:
    """Commits `txn`, whose writes are in the engine transaction open on `raw`, and
    returns its commit timestamp, or raises SerializationFailure."""
    oracle = backend.oracle
    ctx: dict[str, int] = {"tq_txid": txn.txid, "tq_sts": txn.certification_sts}
    cts: int | None = txn.reserved_cts
    take = oracle.take_statement(txn.txid) if cts is None else None
    try:
        if take is not None:
            # One request: take the timestamp, log the write-set under it, commit.
            ws = sql.write_set(tables, taken_in_request=True)
            txn.engine_open = False
            cursors = backend.commit_engine(raw, [take, (ws.sql, ws.values((), ctx))])
            cts = int(cursors[0].fetchone()[0])
            ctx["tq_cts"] = cts
        else:
            if cts is None:
                cts = oracle.take_commit_timestamp(raw, txn.txid, timeout)
            ctx["tq_cts"] = cts
            ws = sql.write_set(tables)
            txn.engine_open = False
            backend.commit_engine(raw, [(ws.sql, ws.values((), ctx))])
    except BaseException as error:
        txn.engine_open = False
        try:
            backend.rollback_engine(raw)  # a no-op where the failed commit already ended it
        except Exception:
            pass
        if cts is None and take is not None:
            cts = oracle.taken_after_failure(raw)  # the failed request may have taken one
        if cts is not None:
            _give_back(backend, raw, txn.txid, cts, timeout)
        else:
            _end_quietly(backend, raw, txn.txid)
        if isinstance(error, Exception) and backend.is_transient_conflict(error):
            raise SerializationFailure(f"could not serialize transaction {txn.txid}: the engine aborted its writes for a concurrent change; the transaction was rolled back") from error
        if isinstance(error, Exception) and not isinstance(error, OperationalError):
            raise OperationalError(f"commit of transaction {txn.txid} failed: {error}") from error
        raise
    lost = False  # True when a timeout resolver's abort marker beat our commit marker
    try:
        try:
            if not oracle.decide(raw, cts):
                raise _Lost()
            if "no-certify" in faults:  # debug fault: commit without certifying
                committed = True
                backend.execute(raw, sql.outcome.sql, sql.outcome.values((), {**ctx, "tq_committed": True}))
            elif backend.supports_returning:
                cur = backend.execute(raw, sql.commit_marker.sql, sql.commit_marker.values((), ctx))
                committed = bool(cur.fetchone()[0])
            else:
                committed = not backend.rows(raw, sql.certify.sql, sql.certify.values((), ctx))
                backend.execute(raw, sql.outcome.sql, sql.outcome.values((), {**ctx, "tq_committed": committed}))
        except _Lost:
            committed, lost = False, True
        except Exception as error:
            if not backend.is_unique_violation(error):
                raise
            committed, lost = False, True
    except BaseException as error:
        # Outcome unknown to us: make sure it is an abort, so nobody waits on it.
        _give_back(backend, raw, txn.txid, cts, timeout)
        if isinstance(error, Exception) and not isinstance(error, OperationalError):
            raise OperationalError(f"commit of transaction {txn.txid} failed: {error}") from error
        raise
    try:
        oracle.publish(raw, txn.txid, cts, timeout)
    except BaseException as error:
        # The outcome row for cts is in, so the transaction is decided and nothing is left
        # to roll back: a rollback mark would let the checkpointer purge committed versions.
        txn.written.clear()
        if isinstance(error, Exception) and not isinstance(error, OperationalError):
            state = "committed" if committed else "aborted"
            raise OperationalError(f"transaction {txn.txid} is {state}, but waiting for its commit timestamp {cts} to become visible failed: {error}") from error
        raise
    if lost:
        raise SerializationFailure(f"transaction {txn.txid} was aborted: it held its commit timestamp longer than the commit timeout ({timeout}s) and another client resolved it as aborted")
    if not committed:
        on = _conflict_named(backend, raw, sql, tables, ctx)
        failure = SerializationFailure(f"could not serialize transaction {txn.txid}: a concurrent transaction committed a write to the same {on} first (first committer wins); the transaction was rolled back")
        failure.lost_certification = True  # type: ignore[attr-defined]  # what priority mode retries
        raise failure
    return cts


def _conflict_named(backend: Backend, raw: Any, sql: CommitStatements, tables: list[TableDef], ctx: dict[str, int]) -> str:
    """What certification failed on, in the application's terms: `row of accounts with
    id = 7`, or `row of accounts` where the key cannot be told (a table without primary
    key, or versions already purged). One read, on the failure path only."""
    try:
        query = sql.conflict(tables)
        found = backend.rows(raw, query.sql, query.values((), ctx))
    except Exception:
        found = []
    if not found:
        names = sorted(t.name for t in tables)
        return f"key of {names[0]}" if len(names) == 1 else f"key (in one of {', '.join(names)})"
    name, *values = found[0][:-1]
    table = next(t for t in tables if t.name == name)
    if table.hidden_rowid:
        return f"row of {name}"
    shown = [_literal(v) for v in values[:len(table.key)]]
    if len(table.key) == 1:
        return f"key of {name} ({table.key[0]} = {shown[0]})"
    return f"key of {name} (({', '.join(table.key)}) = ({', '.join(shown)}))"


def _literal(value: Any) -> str:
    text = str(value)
    try:
        float(text)
        return text
    except ValueError:
        return "'" + text.replace("'", "''") + "'"


def _give_back(backend: Backend, raw: Any, txid: int, cts: int, timeout: float) -> None:
    """An abort outcome for a held commit timestamp, then publish, so nobody waits on it."""
    try:
        backend.insert_abort_outcome(raw, cts, txid)
        backend.oracle.publish(raw, txid, cts, timeout)
    except Exception:
        pass


def _end_quietly(backend: Backend, raw: Any, txid: int) -> None:
    try:
        backend.oracle.end(raw, txid)
    except Exception:
        pass


def reserve(backend: Backend, raw: Any, failed: Transaction, sql: CommitStatements, timeout: float) -> Transaction:
    """Priority mode, after `failed` lost certification: a new transaction that already
    holds a commit timestamp and has logged the failed write-set under it.

    Until it decides, every other writer of those keys that certifies sees a transaction
    committing after its start and aborts, so the re-execution (on the new, fresher
    snapshot) can only lose to a writer that had already taken its commit timestamp when
    the reservation was made. Where the oracle can wait for the snapshot to reach the
    reservation (in-process), the re-execution reads only once all of those are decided
    and visible, so with the same key-set a priority transaction aborts at most once;
    elsewhere such a writer can still win. The price: commits after the reserved timestamp become visible only once
    it is decided, and the reservation is a commit timestamp like any other, so a
    re-execution that outlives `timeout` is aborted by the others."""
    oracle = backend.oracle
    hashes = [row[0] for row in backend.rows(raw, sql.failed_write_set.sql, sql.failed_write_set.values((), {"tq_txid": failed.txid}))]
    txid, sts = oracle.begin(raw)

    def log_write_set(cts: int) -> None:
        for first in range(0, len(hashes), 500):  # plain multi-row VALUES: never an engine conflict
            chunk = hashes[first:first + 500]
            values = ", ".join(f"(${3 * i + 1}, ${3 * i + 2}, ${3 * i + 3})" for i in range(len(chunk)))
            backend.execute(raw, f"INSERT INTO tq_write_sets (txid, cts, key_hash) VALUES {values}",
                            [v for h in chunk for v in (txid, cts, h)])

    taken: list[int] = []
    try:
        # The oracle logs the write-set before it hands out a later timestamp where it
        # can (in-process): then no writer that takes its timestamp after ours certifies
        # without seeing the reservation.
        cts = oracle.take_commit_timestamp(raw, txid, timeout, then=lambda c: (taken.append(c), log_write_set(c)))
    except BaseException:
        if taken:
            release(backend, raw, txid, taken[0], timeout)
        else:
            oracle.end(raw, txid)
        raise
    # Read at the newest snapshot below the reservation where the oracle can wait for it:
    # every writer that took its timestamp before ours is then decided and visible, so the
    # re-execution cannot lose to one of them (the window reserve() otherwise leaves).
    try:
        fresh = oracle.wait_for_snapshot(raw, cts - 1)
    except BaseException:
        release(backend, raw, txid, cts, timeout)
        raise
    if fresh is not None:
        sts = max(sts, min(fresh, cts - 1))
    return Transaction(txid, sts, statements=[], reserved_cts=cts, level=failed.level)


def release(backend: Backend, raw: Any, txid: int, cts: int, timeout: float) -> None:
    """Gives up a reserved commit timestamp: an abort outcome, then publish, so nobody waits on it."""
    try:
        backend.insert_abort_outcome(raw, cts, txid)
    finally:
        backend.oracle.publish(raw, txid, cts, timeout)

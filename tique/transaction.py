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
On PostgreSQL steps 1-4 travel in one request and steps 1-3 commit as one engine
transaction (_commit_whole, PostgresBackend.commit_whole): inside the engine transaction
of the writes, one statement that takes the timestamp, logs the write-set under it and
takes the write-set's key locks (PostgresBackend.take_log_and_lock), then the outcome
row (certify and mark), and its COMMIT; then publish, which starts only once that COMMIT
returned. The statements after the timestamp read it from the session (currval). A
commit at SERIALIZABLE, with rows read FOR SHARE, or held at a debug pause point sends
steps 1-2 (with the key locks) in one request and steps 3-4 in one more
(PostgresBackend.commit_then).
On MonetDB the steps travel in two requests (_commit_in_requests): the write-set's
hashes are read, and only then the timestamp taken, in the first; the write-set insert and
the COMMIT of the writes, then certify + decide (a read: the oracle claims cts and keeps the
verdict), then the outcome row with the kept verdict in an engine transaction of its own
and its COMMIT, then publish, in the second. The server runs a request's statements in
order, so the certification starts after the writes' commit, and publish after the
outcome's; it also runs the statements after one that failed, so decide claims the
timestamp only if our write-set is there (a failed COMMIT of the writes rolled it back),
and publish checks in SQL that an outcome row is there.
Cache inserts an UPDATE or DELETE computed there wait
on the session (Session.held) and travel in front of the transaction's next statement,
inside the same engine transaction, so the transaction reads them and the write-set
read sees them; only rows that provably fit their columns wait, so no error moves from
the statement that caused it to a later one.
Invariant: of two overlapping writers of a key, the one that certifies second sees the
other's write-set committed. On DuckDB and MonetDB, and on PostgreSQL's two-request path,
because step 2 commits before step 3 starts in every transaction. On PostgreSQL, where a
whole commit certifies inside the engine transaction of its write-set (nothing of it is
committed yet), because every engine transaction that commits a write-set first takes
an exclusive lock on each of its key hashes (tq_lock_keys: in a whole commit in the
statement that logs the write-set, elsewhere by tq_lock_write_set; in one statement, in hash
order, so no two wait for each other in a cycle; a write-set of more than 64 keys takes
one exclusive lock instead, which every smaller one takes shared before its key locks, so
it still excludes every overlapping writer, in the same acyclic order, and a large write
leaves PostgreSQL's shared lock table room), held until it ends, and certifies, if
it does, only in a later statement: at READ COMMITTED that statement's snapshot is taken
after the locks were granted, that is after every overlapping write-set that locked a key
first was committed (PostgreSQL makes a commit visible before it releases the locks). So
of two overlapping writers A and B, say A locked first: B's certification (a later
statement of B's locking transaction, or after its commit) reads A's write-set and, if
A committed it with its outcome, that outcome; B aborts unless A aborted. If A certifies
after its lock transaction committed (the two-request path), it sees B's write-set only
if B's transaction committed first, but then B had seen A's undecided write-set, which
counts as a conflict, and aborted. So at most one of the two commits, whichever paths
they take. A schema-changing commit (below) locks its write-set in the transaction that
logs it beside the engine transaction. A priority reservation (reserve) logs a write-set
without locks, but certifies nothing on it: its re-execution commits like any writer.
Versions in the cache are invisible to every other transaction until their
transaction's outcome row says it committed, so committing them (step 2) before the
marker (step 3) exposes nothing; an abort outcome makes the checkpointer purge them.

Begin (PostgreSQL): tq_begin takes the transaction id and start timestamp and registers
the transaction for the checkpointer by a session-level advisory lock on its start
timestamp (sql/postgres/metadata.sql, tq_registration), so begin writes nothing; it
travels in the request of the transaction's first statement (Connection._first_statement),
which binds the id and timestamp the begin left in the session (tique.session.Unbound).
A transaction gives the registration up when it ends (tq_leave, a read) or when it
publishes (in the same statement). The registration is taken under the latch tq_stable
waits for, and is visible to it at once, not at a commit, so the stable timestamp never
passes a running transaction's start: its snapshot's versions stay in the cache, and the
write-sets it certifies against (above its start) stay logged.

Engine commits and durability (PostgreSQL, where each could wait for a WAL flush): a
reader makes none (begin and end take and drop a lock, its reads write nothing); a
writer's whole commit makes two: steps 1-3 (its writes, its write-set and the outcome
row, which commit with the server's synchronous_commit: tq_take_cts with p_durable, which
logs no tq_committing row, since that row could never be seen without the outcome) and step 4 (publish moves the clock row, with synchronous_commit = off).
A writer on the two-request path makes three: step 2 (asynchronous), step 3 (the outcome
row, durable) and step 4 (asynchronous). No acknowledged commit can be lost:
commit() returns only after the outcome row committed, so its commit record is flushed
(publish, in the same request, starts only after that COMMIT returned), and the WAL is
flushed in order, so a step 2 committed apart (before step 3's start) is on disk with
it. A crash can lose only a suffix of the WAL: losing a whole commit, or a step 2, loses
a transaction whose outcome row was never flushed, which the client was never told
committed; losing step 4 (or a resolver's abort outcome, written by publish) leaves a
commit timestamp undecided or unpublished, which recovery (tq_recover) aborts or
publishes, as it would after any crash. Readers see a version only through a committed
outcome row, which PostgreSQL makes visible only once it is flushed, so nobody reads a
commit a crash can take back. A durable writer waits for one flush, a reader for none.

READ COMMITTED (Transaction.level): each statement reads the newest snapshot, taken
from the oracle when the statement starts (the begin's own for the first statement),
never older than the one before it; the transaction's own writes rank above every
committed version, so it reads them whatever the snapshot. Versions still become
visible only through their committed outcome row, so no statement ever reads an
uncommitted or aborted write (no G1a/G1b), and a transaction reads only transactions
that committed (took their commit timestamp) before its statement began.
The engine must show the statement every outcome up to its snapshot. PostgreSQL's
engine transaction holding the writes runs at its READ COMMITTED, so it does. DuckDB's
and MonetDB's read as of their begin, which came after the snapshot of the statement
that opened them was published (the statement takes it first): they show every commit
up to that snapshot and none after. So there, a statement after a write asks the oracle
for the newest snapshot and, if it is newer, first commits the engine transaction
(Connection._fresh_engine_snapshot): the writes so far go to the caches under the
transaction's txid, invisible to every other transaction as above, since no outcome row
names that txid until the transaction commits; the statement then runs outside an
engine transaction, or a write in a new one begun after the new snapshot. Commit logs
the write-set in the engine transaction of the last writes (or a new one) as in steps
1-4, so its outcome still decides every version at once. A transaction that ends
without committing (rollback, failed statement, lost certification) logs its txid in
tq_rolled_back, and a crash leaves a txid with cache rows but no outcome, which recovery
logs there: the checkpointer purges the versions of txids logged there or aborted, and
moves only those of committed outcomes at or below the stable timestamp, so it leaves
a running transaction's committed versions alone. The cost falls only on transactions
at this level that write and then run another statement: a request for the snapshot on
MonetDB (none on DuckDB, whose oracle is in process), and an engine commit when another
transaction committed meanwhile. A transaction whose engine transaction holds a schema
change (DDL) does not commit it early and reads as of its first write until it ends.
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

SERIALIZABLE (write-snapshot isolation, Yabandeh and Ferro, EuroSys 2012; what a
transaction reads is recorded as in tique/read_sets.py). A writer at this level also
logs its read-set in step 2, and between steps 2 and 3 it waits until every commit
timestamp below its own has an outcome (Oracle.await_predecessors), then certifies its
reads: if a transaction that did not abort and whose commit timestamp lies between our
start and our commit timestamp wrote a key we read or a table we scanned, our outcome
is an abort. Readers that never write are not checked and log nothing. Rows read FOR
SHARE (PostgreSQL, at any level: tique/rewrite/locks.py) are certified the same way, and
a transaction holding some commits like a writer even if it wrote nothing.
Invariant (ordered certification): a SERIALIZABLE writer T (start sts, commit cts)
certifies its reads only once every commit timestamp below cts is decided. Proof that
the committed SERIALIZABLE transactions are serializable in commit-timestamp order, each
reader placed right after the commit its start timestamp names:
(a) a snapshot at S holds exactly the commits at or below S (the oracle's invariant), so
    a reader sees the state of that prefix of the order;
(b) when T certifies, every U with sts < cts_U < cts is decided, so its write-set is
    visible (step 2 of U commits before U's outcome row exists) and so are its cache
    versions (purged only at or below the stable timestamp, which is at most sts while T
    runs); if U committed and wrote a key T read or a table T scanned, T aborts. So what
    T read at sts equals the state after every commit below cts;
(c) T's writes become visible only with its outcome, to snapshots at or above cts.
So every committed T reads exactly what the serial order gives it. The read-only
anomaly (issue 12: T_b takes cts 10 and writes x, T_a takes 11 having read x, a reader
at 10 sees T_b but not T_a) fails at (b): T_a certifies only after cts 10 is decided,
finds T_b's write of x, and aborts; without the wait T_a could certify before T_b's
write-set is logged. The guarantee is among SERIALIZABLE transactions: a SNAPSHOT writer
certifies no reads, so a cycle through one is not excluded.
No wait is unbounded: T waits only for lower timestamps (no cycle), each bounded by its
owner's commit timeout, after which the waiter aborts it as publish does; meanwhile
T's own timestamp may be aborted by its successors the same way, and its marker then
loses (SerializationFailure).

Schema-changing commits (commit_schema_change). A schema change inside a transaction
(tique/ddl.py) joins its engine transaction, and becomes permanent at that engine's
commit, which cannot be taken back; so a transaction carrying one is decided before it.
Its write-set (and read-set) is logged under its commit timestamp on a connection beside
the open engine transaction and committed there, alone (step 2 split in two); then it
certifies, by reads of the newest committed state; then, certified, its outcome row goes
into the engine transaction, whose one commit makes writes, schema change and outcome
permanent together; refused, the engine transaction is rolled back (schema change with
it) and an abort outcome logged. Then publish.
Invariant: the write-set's own commit precedes the certification in the same
transaction, as step 2 precedes step 3 for every writer, so of two overlapping writers
of a key the one that certifies second sees the other: either this transaction sees the
other's write-set (and is refused, leaving nothing), or the other sees ours, logged
before we certified, whether or not we have committed yet, and aborts. No lock or wait
serializes the two, so writers without a schema change pay nothing. Until our outcome
row commits, our cache versions are uncommitted (invisible to everyone) and our
write-set only makes others abort, as an undecided write-set always may. An engine
commit that fails (a timeout resolver's abort outcome for our timestamp, a lost
connection) leaves the engine transaction rolled back, or the resolver's abort in force.
At SERIALIZABLE (and for rows read FOR SHARE) the read certification comes after the
wait for every lower commit timestamp, as for any writer, and sees their write-sets and
versions committed; our writes become visible only with our outcome: proof (a)-(c) above
holds unchanged, so DDL is allowed at every level.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import TableDef
from tique.errors import IntegrityError, OperationalError, SerializationFailure, describe
from tique.isolation import IsolationLevel
from tique.pause import Pause
from tique.read_sets import ReadSet, ReadSetStatements
from tique.session import step
from tique.rewrite.constraints import write_set_parts as unique_write_set
from tique.rewrite import facts
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
    # The caches this transaction may have appended versions to, each with the keys (or
    # key prefixes) it wrote there, None when not known: a superset, never cleared. A
    # statement reading other caches or other keys needs no own-versions branch
    # (tique/rewrite/own_versions.py).
    own_versions: dict[str, set[tuple[int, ...]] | None] = field(default_factory=dict)
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
    # READ COMMITTED on an engine whose transactions read as of their begin: writes were
    # committed to the caches in engine transactions of their own before a later statement
    # (Connection._fresh_engine_snapshot), invisible to others until the outcome row. A
    # transaction that ends without committing logs its txid in tq_rolled_back, so the
    # checkpointer purges them.
    flushed: bool = False
    # Tables this transaction told the backend's CacheState it writes; told again when it ends.
    noted: set[str] = field(default_factory=set)
    engine_epoch: int = 0  # CacheState's epoch just before the engine transaction began
    level: IsolationLevel = IsolationLevel.SNAPSHOT
    read_only: bool = False
    used: bool = False  # a read or write has run: the level and access mode are fixed
    # Tique objects whose schema this transaction changed (DDL inside it, tique/ddl.py):
    # its engine transaction carries the change, so the commit commits it even without writes.
    schema_changed: set[str] = field(default_factory=set)
    # Tables it dropped, as it first knew them: its reads of them are certified at commit.
    dropped: dict[str, TableDef] = field(default_factory=dict)
    # SERIALIZABLE: what the transaction has read (tique/read_sets.py); None at other levels.
    read_set: ReadSet | None = None
    # Rows read FOR SHARE / FOR KEY SHARE (tique/rewrite/locks.py), certified at every level;
    # a transaction with some commits like a writer, even if it wrote nothing.
    shared_set: ReadSet | None = None

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
        self._marker = marker
        self._marker_taken: Compiled | None = None
        # Engines without RETURNING certify first, then insert the marker with the verdict.
        self.certify = backend.compile(certify)
        self.outcome = backend.compile(exp.insert(
            exp.select(exp.cast(exp.Placeholder(this="tq_cts"), "BIGINT"), exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"),
                       exp.cast(exp.Placeholder(this="tq_committed"), "BOOLEAN")),
            "tq_outcome", columns=["cts", "txid", "did_commit"]))
        self.failed_write_set = backend.compile(exp.select("key_hash").distinct().from_("tq_write_sets").where(
            exp.EQ(this=exp.column("txid"), expression=exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"))))
        self.rolled_back = backend.compile(exp.insert(exp.select(exp.Placeholder(this="tq_txid")), "tq_rolled_back", columns=["txid"]))
        self.reads = ReadSetStatements(backend)
        self._decide_marker: tuple[Compiled, Compiled, Compiled] | None = None

    def decide_marker_publish(self) -> tuple[Compiled, Compiled, Compiled]:
        """For a commit sent in one request after the write-set's hashes (_commit_in_requests),
        the statements after the write-set's COMMIT:
        - certify and decide, a read: the oracle claims cts for its owner (decide) and keeps
          the number of conflicts certification found, answering both; it claims nothing
          when the request logged a write-set that is not there (the writes' COMMIT
          failed, and the server ran on: sql/monetdb/certify_count.sql);
        - the marker, in an engine transaction of its own: the outcome row, with the verdict
          the oracle kept (verdict), only if the owner claimed cts. It reads no table, so
          MonetDB does not abort it for others' appends to the tables it would read;
        - publish, only once an outcome row for cts is committed (else the oracle's status,
          a read), reading tq_outcome once.
        Each is one plan with as few operators as it can have: MonetDB's cost at these sizes
        is per operator, not per row."""
        if self._decide_marker is None:
            oracle = self.backend.oracle
            cts = exp.cast(exp.Placeholder(this="tq_cts"), "BIGINT")
            txid = exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT")

            def called(arguments: exp.Select, alias: str) -> exp.Table:
                # tq_oracle((SELECT op, a, b ...)): MonetDB takes a table function's input
                # from one subquery, so the call's arguments can be computed from tables.
                call = oracle.call(exp.Null(), exp.Null(), exp.Null(), alias)
                call.this.set("expressions", [exp.Subquery(this=arguments)])
                return call

            (certify,) = template("monetdb/certify_count.sql")
            decide = exp.select(exp.column("r1", "d"), exp.column("r2", "d")).from_(called(
                exp.select(exp.cast(oracle.code("decide"), "INT"), cts.copy(), exp.cast(exp.column("conflicts", "c"), "BIGINT"))
                .from_(exp.Subquery(this=certify, alias=exp.TableAlias(this=exp.to_identifier("c")))), "d"))
            verdict = oracle.call(exp.cast(oracle.code("verdict"), "INT"), cts.copy(), exp.cast(exp.Literal.number(0), "BIGINT"), "v")
            committed = exp.EQ(this=exp.column("r2", "v"), expression=exp.Literal.number(0))
            marker = exp.insert(exp.select(cts.copy(), txid.copy(), committed).from_(verdict)
                                .where(exp.EQ(this=exp.column("r1", "v"), expression=exp.Literal.number(1))),
                                "tq_outcome", columns=["cts", "txid", "did_commit"])
            op = exp.Case(ifs=[exp.If(this=exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                                      true=oracle.code("publish"))], default=oracle.code("status"))
            publish = exp.select(exp.column("r1", "p"), exp.column("r2", "p"), exp.column("r3", "p")).from_(called(
                exp.select(exp.cast(op, "INT"), txid.copy(), cts.copy()).from_("tq_outcome")
                .where(exp.EQ(this=exp.column("cts"), expression=cts.copy())), "p"))
            self._decide_marker = (self.backend.compile(decide), self.backend.compile(marker), self.backend.compile(publish))
        return self._decide_marker

    def commit_marker_taken(self) -> Compiled:
        """The commit marker with the commit timestamp read from the session
        (Backend.taken_commit_timestamp), for a request that took it (_commit_whole)."""
        if self._marker_taken is None:
            taken = self.backend.taken_commit_timestamp()
            assert taken is not None
            marker = self._marker.copy()
            for p in list(marker.find_all(exp.Placeholder)):
                if p.this == "tq_cts":
                    p.replace(taken.copy())
            self._marker_taken = self.backend.compile(marker)
        return self._marker_taken

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

    def _write_set_rows(self, tables: tuple[TableDef, ...]) -> exp.Query:
        """(txid, cts, key_hash) of every key the transaction wrote: the one place that hashes keys."""
        parts = [table_template("common/write_set.sql", t, t.physical_columns, self.backend.key_hash)[0] for t in tables]
        parts += [part for t in tables for part in unique_write_set(t, self.backend.key_hash)]
        union = parts[0]
        for part in parts[1:]:
            union = exp.union(union, part, distinct=False)
        return union

    def write_set_hashes(self, tables: list[TableDef]) -> Compiled:
        """The write-set's hashes alone, read before the commit timestamp is taken (for
        engines that then send them back as a plain INSERT ... VALUES, see _commit_in_requests)."""
        key = ("hashes", *sorted(tables, key=lambda t: t.name))
        compiled = self._write_sets.get(key)  # type: ignore[call-overload]
        if compiled is None:
            rows = self._write_set_rows(tuple(sorted(tables, key=lambda t: t.name)))
            query = exp.select("key_hash").distinct().from_(exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier("ws"))))
            compiled = self.backend.compile(query)
            self._write_sets[key] = compiled  # type: ignore[index]
        return compiled

    def write_set(self, tables: list[TableDef], taken_in_request: bool | str = False) -> Compiled | None:
        """The write-set insert (None without written tables: a FOR SHARE reader). `taken_in_request`:
        the commit timestamp is taken by the statement before it in the same request, so it is read
        from the session (Backend.taken_commit_timestamp) instead of bound; "statement": by the
        statement this insert becomes part of (PostgresBackend.take_log_and_lock)."""
        if not tables:
            return None
        key = (tuple(sorted(tables, key=lambda t: t.name)), taken_in_request)
        compiled = self._write_sets.get(key)
        if compiled is None:
            rows = self._write_set_rows(key[0])
            if not self.backend.distinct_write_set:
                for part in rows.find_all(exp.Select):
                    part.set("distinct", None)
            insert = facts.internal_insert(exp.insert(rows, "tq_write_sets", columns=["txid", "cts", "key_hash"]))
            if taken_in_request:
                taken = (self.backend.taken_in_statement_timestamp() if taken_in_request == "statement"  # type: ignore[attr-defined]
                         else self.backend.taken_commit_timestamp())
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
    statements = [c.bind(params, context) for c in plan.inserts]
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


@dataclass(frozen=True)
class ReadsToCertify:
    """The reads a commit certifies (a SERIALIZABLE writer's, and rows read FOR SHARE):
    keys read (with their tables), and tables scanned."""
    keyed: list[tuple[TableDef, tuple[int, ...]]]
    scanned: list[TableDef]


COMMIT_STAGES = ("timestamp-taken", "certifying", "certified")


@dataclass
class CommitPause(Pause):
    """Debug fault, off unless a test arms one on a Connection (commit_pause): holds a
    commit at stage `at` (an armed pause makes the commit take its timestamp on its own,
    never in the write-set's request): `timestamp-taken` (commit timestamp taken,
    write-set not yet logged) or
    `certifying` (write-set logged, about to wait for lower commit timestamps and
    certify its reads; a schema-changing commit: about to certify) or `certified` (a
    schema-changing commit only: certified, its engine commit not yet sent). The commit sets `reached` and runs nothing further until
    `resume` is set, for at most `timeout` seconds, after which the commit fails (its
    timestamp given back as an abort), so neither side waits forever."""
    at: str

    def __post_init__(self) -> None:
        if self.at not in COMMIT_STAGES:
            raise ValueError(f"no commit stage {self.at!r}; the stages are {', '.join(COMMIT_STAGES)}")

    def hold(self, stage: str) -> None:
        if stage != self.at:
            return
        if not self._held_until_resumed():
            raise OperationalError(f"commit paused at {stage} for {self.timeout} s and was not resumed")


def _rollback_quietly(backend: Backend, raw: Any, txn: Transaction) -> None:
    txn.engine_open = False
    try:
        backend.rollback_engine(raw)  # a no-op where the failed commit already ended it
    except Exception:
        pass


def _failed_before_outcome(backend: Backend, raw: Any, txn: Transaction, cts: int | None, timeout: float,
                           error: BaseException) -> NoReturn:
    """A commit failed before its outcome row: its timestamp, if it took one, is given back
    as an abort (nobody may wait on it), else the transaction just ends; then the error is
    raised in PEP 249 terms (an engine's write conflict is a SerializationFailure)."""
    if cts is not None:
        _give_back(backend, raw, txn.txid, cts, timeout)
    else:
        _end_quietly(backend, raw, txn.txid)
    if isinstance(error, Exception) and backend.is_transient_conflict(error):
        raise SerializationFailure(f"could not serialize transaction {txn.txid}: the engine aborted its writes for a concurrent change; the transaction was rolled back") from error
    if isinstance(error, Exception) and not isinstance(error, OperationalError):
        raise OperationalError(f"commit of transaction {txn.txid} failed: {error}") from error
    raise error


def _timestamp(backend: Backend, session: Any, txn: Transaction, cts: int | None, ctx: dict[str, int], timeout: float,
               pause: CommitPause | None) -> int:
    """The commit timestamp: `cts` where one is already reserved, else taken now on
    `session`; recorded in `ctx`, then the "timestamp-taken" pause point."""
    if cts is None:
        with step(session, "take cts"):
            cts = backend.oracle.take_commit_timestamp(session, txn.txid, timeout)
    ctx["tq_cts"] = cts
    if pause is not None:
        pause.hold("timestamp-taken")
    return cts


class _Lost(Exception):
    """A timeout resolver decided this commit timestamp (an abort) before its owner did."""


def commit_writer(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements,
                  timeout: float, faults: frozenset[str] = frozenset(), reads: ReadsToCertify | None = None,
                  pause: CommitPause | None = None) -> int:
    """Commits `txn`, whose writes are in the engine transaction open on `raw`, and
    returns its commit timestamp, or raises SerializationFailure. `reads`: the read-set
    to log and certify (SERIALIZABLE), in commit-timestamp order (see the invariant)."""
    # The four-request commit has no read certification, no pause point and needs a write-set.
    if (txn.reserved_cts is None and "no-certify" not in faults and backend.commits_in_requests and reads is None
            and pause is None and tables):
        return _commit_in_requests(backend, raw, txn, tables, sql, timeout)
    if (txn.reserved_cts is None and "no-certify" not in faults and backend.commits_whole and reads is None
            and pause is None and tables):
        return _commit_whole(backend, raw, txn, tables, sql, timeout)
    oracle = backend.oracle
    ctx: dict[str, int] = {"tq_txid": txn.txid, "tq_sts": txn.certification_sts}
    cts: int | None = txn.reserved_cts
    take = oracle.take_statement(txn.txid) if cts is None and pause is None else None
    try:
        if take is not None:
            # One request: take the timestamp, log the write-set (and read-set) under it, commit.
            ws = sql.write_set(tables, taken_in_request=True)
            logged = sql.reads.log(reads.keyed, ctx, taken_in_request=True) if reads is not None else []
            txn.engine_open = False
            with step(raw, "take cts + write-set + engine commit"):
                cursors = backend.commit_engine(raw, [take, *_logged_and_locked(backend, txn, ws, ctx), *logged])
            cts = int(cursors[0].fetchone()[0])
            ctx["tq_cts"] = cts
        else:
            cts = _timestamp(backend, raw, txn, cts, ctx, timeout, pause)
            ws = sql.write_set(tables)
            logged = sql.reads.log(reads.keyed, ctx, taken_in_request=False) if reads is not None else []
            txn.engine_open = False
            with step(raw, "write-set + engine commit"):
                backend.commit_engine(raw, [*_logged_and_locked(backend, txn, ws, ctx), *logged])
    except BaseException as error:
        _rollback_quietly(backend, raw, txn)
        if cts is None and take is not None:
            cts = oracle.taken_after_failure(raw)  # the failed request may have taken one
        _failed_before_outcome(backend, raw, txn, cts, timeout, error)
    lost = False  # True when a timeout resolver's abort marker beat our commit marker
    read_conflict = False
    try:
        try:
            if reads is not None:
                # Ordered certification: only once every lower commit timestamp is decided.
                if pause is not None:
                    pause.hold("certifying")
                check = sql.reads.certify(reads.scanned)
                waiting = oracle.await_statement(cts, timeout)
                with step(raw, "certify reads"):
                    if waiting is not None:  # one request: the wait, then the certification
                        cursors = backend.execute_all(raw, [waiting, (check.sql, check.values((), ctx))])
                        read_conflict = bool(cursors[1].fetchall())
                    else:
                        oracle.await_predecessors(raw, cts, timeout)
                        read_conflict = bool(backend.rows(raw, check.sql, check.values((), ctx)))
            if not oracle.decide(raw, cts):
                raise _Lost()
            if read_conflict:
                committed = False
                backend.execute(raw, sql.outcome.sql, sql.outcome.values((), {**ctx, "tq_committed": False}))
            elif "no-certify" in faults:  # debug fault: commit without certifying
                committed = True
                backend.execute(raw, sql.outcome.sql, sql.outcome.values((), {**ctx, "tq_committed": True}))
            elif backend.supports_returning and (publishing := oracle.publish_statement(raw, txn.txid, cts, timeout)) is not None:
                # One request: the marker in an engine transaction of its own, committed
                # (durably: see the invariant), then publish, which starts only after that
                # commit returned (the server runs a request's statements in order).
                with step(raw, "certify + outcome + publish"):
                    cur, publish_error = backend.commit_then(raw, (sql.commit_marker.sql, sql.commit_marker.values((), ctx)), publishing)
                oracle.published(raw, txn.txid)
                committed = bool(cur.fetchone()[0])
                return _published(backend, raw, txn, tables, sql, ctx, cts, committed, False, timeout, publish=False,
                                  publish_error=publish_error)
            elif backend.supports_returning:
                with step(raw, "certify + outcome"):
                    cur = backend.execute(raw, sql.commit_marker.sql, sql.commit_marker.values((), ctx))
                committed = bool(cur.fetchone()[0])
            else:
                with step(raw, "certify"):
                    committed = not backend.rows(raw, sql.certify.sql, sql.certify.values((), ctx))
                with step(raw, "outcome"):
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
    return _published(backend, raw, txn, tables, sql, ctx, cts, committed, lost, timeout, read_conflict=read_conflict)


def _logged_and_locked(backend: Backend, txn: Transaction, ws: Compiled | None, ctx: dict[str, int]) -> list[tuple[str, Any]]:
    """The write-set's insert and, where whole commits certify inside the engine
    transaction of their write-set, its key locks (see the invariant): none without a write-set."""
    if ws is None:
        return []
    lock = backend.lock_write_set(txn.txid)
    return [(ws.sql, ws.values((), ctx)), *([lock] if lock is not None else [])]


def _commit_whole(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements,
                  timeout: float) -> int:
    """commit_writer's steps 1-4 in one request and one durable engine commit (PostgreSQL,
    PostgresBackend.commit_whole): inside the engine transaction of the writes, take the
    commit timestamp, log the write-set under it and take its key locks (one statement),
    then certify and insert the outcome row, and COMMIT that engine transaction; then
    publish. Certification is a statement after the one that took the key locks, so (the engine transaction runs
    at READ COMMITTED) it reads as of a snapshot taken once every overlapping writer that
    locked a key first has committed: see the invariant. The statements after the
    timestamp read it from the session (currval), so none waits for the client."""
    oracle = backend.oracle
    ctx: dict[str, int] = {"tq_txid": txn.txid, "tq_sts": txn.certification_sts}
    ws = sql.write_set(tables, taken_in_request="statement")
    assert ws is not None
    take = oracle.take_statement(txn.txid, durable=True)
    assert take is not None
    logged = backend.take_log_and_lock(take, (ws.sql, ws.values((), ctx)))  # type: ignore[attr-defined]
    marker = sql.commit_marker_taken()
    txn.engine_open = False
    with step(raw, "take cts + write-set + key locks + certify + outcome + engine commit + publish"):
        done = backend.commit_whole(raw, [logged], (marker.sql, marker.values((), ctx)),  # type: ignore[attr-defined]
                                    oracle.publish_taken_statement(raw, txn.txid, timeout))  # type: ignore[attr-defined]
    if not done.committed:
        _rollback_quietly(backend, raw, txn)  # a no-op: commit_whole left no engine transaction open
        cts = oracle.taken_after_failure(raw)  # the request may have taken one
        if cts is not None and done.error is not None and backend.is_unique_violation(done.error):
            # A timeout resolver decided cts first (an abort): the outcome row's insert failed,
            # and the engine transaction with the writes was rolled back.
            ctx["tq_cts"] = cts
            return _published(backend, raw, txn, tables, sql, ctx, cts, False, True, timeout)
        _failed_before_outcome(backend, raw, txn, cts, timeout,
                               done.error or OperationalError(f"the engine rolled back the writes of transaction {txn.txid} at commit"))
    cts = int(done.cursors[0].fetchone()[0])
    ctx["tq_cts"] = cts
    oracle.published(raw, txn.txid)
    committed = bool(done.marker.fetchone()[0])
    if done.error is not None:
        # Publish failed after the outcome row committed: once more on its own, as the
        # two-request commit's give-back does, so that the snapshot still moves past cts.
        try:
            oracle.publish(raw, txn.txid, cts, timeout)
        except Exception:
            pass
    return _published(backend, raw, txn, tables, sql, ctx, cts, committed, False, timeout, publish=False, publish_error=done.error)


def _published(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements, ctx: dict[str, int],
               cts: int, committed: bool, lost: bool, timeout: float, publish: bool = True, read_conflict: bool = False,
               publish_error: BaseException | None = None) -> int:
    """Step 4, once the outcome of cts is decided: publish (unless the caller's request
    already did: `publish_error` is how that failed, if it did), then report the outcome."""
    try:
        if publish_error is not None:
            raise publish_error
        if publish:
            with step(raw, "publish"):
                backend.oracle.publish(raw, txn.txid, cts, timeout)
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
    if read_conflict:
        raise SerializationFailure(f"could not serialize transaction {txn.txid}: a transaction that committed after it began wrote data it "
                                   "read (SERIALIZABLE certifies reads); the transaction was rolled back")
    if not committed:
        on = _conflict_named(backend, raw, sql, tables, ctx)
        failure = SerializationFailure(f"could not serialize transaction {txn.txid}: a concurrent transaction committed a write to the same {on} first (first committer wins); the transaction was rolled back")
        failure.lost_certification = True  # type: ignore[attr-defined]  # what priority mode retries
        raise failure
    return cts


def commit_schema_change(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements,
                         timeout: float, faults: frozenset[str] = frozenset(), reads: ReadsToCertify | None = None,
                         pause: CommitPause | None = None) -> int:
    """Commits `txn`, whose engine transaction on `raw` holds a schema change as well as
    writes (or reads to certify), deciding it before that engine transaction commits (see
    the module's invariant, "Schema-changing commits"): a failed commit rolls the schema
    change back with the writes. Returns the commit timestamp or raises SerializationFailure.
    1. the write-set's hashes, read inside the engine transaction;
    2. on a connection beside it: take the commit timestamp, log the write-set (and the
       read-set) under it, and commit that, alone;
    3. certify (reads in commit-timestamp order, as commit_writer does, then writes) by
       reads of the newest committed state;
    4. certified: the outcome row inside the engine transaction and its engine commit, which
       makes writes, schema change and outcome permanent at once; else roll it back and log
       an abort outcome;
    5. publish."""
    oracle = backend.oracle
    ctx: dict[str, int] = {"tq_txid": txn.txid, "tq_sts": txn.certification_sts, "tq_cts": 0}
    hashes: list[int] = []
    if tables:
        query = sql.write_set_hashes(tables)
        with step(raw, "write-set hashes"):
            hashes = [int(h) for (h,) in backend.rows(raw, query.sql, query.values((), ctx))]
    with backend.beside(raw) as side:
        # The session holding the timestamp publishes it (PostgreSQL: its advisory lock); a
        # priority re-execution took its reservation on `raw`.
        owner = raw if txn.reserved_cts is not None else side
        cts: int | None = txn.reserved_cts
        conflict_on: str | None = None
        read_conflict = False
        try:
            cts = _timestamp(backend, side, txn, cts, ctx, timeout, pause)
            logged = [_write_set_insert(txn.txid, cts, hashes[first:first + 500]) for first in range(0, len(hashes), 500)]
            if hashes and (lock := backend.lock_write_set(txn.txid)) is not None:
                logged.append(lock)  # see the invariant: committed, then certified, like any write-set
            logged += sql.reads.log(reads.keyed, ctx, taken_in_request=False) if reads is not None else []
            if logged:
                with step(side, "write-set + its own engine commit"):
                    with backend.atomic(side):
                        for text, values in logged:
                            backend.execute(side, text, values)
            if pause is not None:
                pause.hold("certifying")
            if "no-certify" not in faults:
                if reads is not None:
                    # A table this transaction created is one nobody else can have written. One
                    # it dropped (or replaced) is not read by its cache, which the engine
                    # transaction no longer has (and PostgreSQL keeps locked from other
                    # sessions until it ends): any concurrent committer counts as its writer.
                    scanned = [t for t in reads.scanned if t.name not in txn.schema_changed]
                    check = sql.reads.certify(scanned)
                    with step(raw, "certify reads"):
                        oracle.await_predecessors(side, cts, timeout)
                        read_conflict = bool(backend.fresh_rows(raw, check.sql, check.values((), ctx)))
                        if not read_conflict and any(t.name in txn.dropped for t in reads.scanned):
                            read_conflict = bool(backend.fresh_rows(raw, _ANY_CONCURRENT_COMMITTER, [txn.txid, ctx["tq_sts"], cts]))
                if not read_conflict and hashes:
                    from tique.ddl import committed_conflict
                    with step(raw, "certify"):
                        if committed_conflict(backend, raw, txn.txid, txn.certification_sts, hashes):
                            conflict_on = _conflict_named(backend, raw, sql, tables, ctx)
            if pause is not None:
                pause.hold("certified")
            if read_conflict or conflict_on is not None or not oracle.decide(owner, cts):
                raise _Refused()
            txn.engine_open = False
            with step(raw, "outcome + engine commit"):
                backend.commit_engine(raw, [(sql.outcome.sql, sql.outcome.values((), {**ctx, "tq_committed": True}))])
        except BaseException as error:
            _rollback_quietly(backend, raw, txn)
            if cts is None:
                _end_quietly(backend, raw, txn.txid)
            else:
                _give_back(backend, owner, txn.txid, cts, timeout)  # an abort outcome: nobody waits on it
                if owner is not raw:
                    _end_quietly(backend, raw, txn.txid)
            if read_conflict:
                raise SerializationFailure(f"could not serialize transaction {txn.txid}: a transaction that committed after it began wrote data it "
                                           "read (SERIALIZABLE certifies reads); the transaction was rolled back, its schema change with it") from None
            if conflict_on is not None:
                failure = SerializationFailure(f"could not serialize transaction {txn.txid}: a concurrent transaction committed a write to the same "
                                               f"{conflict_on} first (first committer wins); the transaction was rolled back, its schema change with it")
                failure.lost_certification = True  # type: ignore[attr-defined]  # what priority mode retries
                raise failure from None
            if isinstance(error, _Refused) or (isinstance(error, Exception) and backend.is_unique_violation(error)):
                raise SerializationFailure(f"transaction {txn.txid} was aborted: it held its commit timestamp longer than the commit timeout "
                                           f"({timeout}s) and another client resolved it as aborted; its schema change was rolled back") from None
            if isinstance(error, Exception) and backend.is_transient_conflict(error):
                raise SerializationFailure(f"could not serialize transaction {txn.txid}: the engine aborted its writes for a concurrent change; "
                                           "the transaction was rolled back") from error
            if isinstance(error, Exception) and not isinstance(error, OperationalError):
                raise OperationalError(f"commit of transaction {txn.txid} failed: {error}") from error
            raise
        try:
            with step(owner, "publish"):
                oracle.publish(owner, txn.txid, cts, timeout)
        except BaseException as error:
            txn.written.clear()  # decided: nothing is left to roll back
            if isinstance(error, Exception) and not isinstance(error, OperationalError):
                raise OperationalError(f"transaction {txn.txid} is committed, but waiting for its commit timestamp {cts} to become visible failed: {error}") from error
            raise
        finally:
            if owner is not raw:
                _end_quietly(backend, raw, txn.txid)  # the registration taken on `raw` (PostgreSQL)
    return cts


# A transaction other than $1 that committed, or is committing, between $2 and $3.
_ANY_CONCURRENT_COMMITTER = ("SELECT 1 FROM tq_write_sets AS theirs LEFT JOIN tq_outcome AS o ON o.cts = theirs.cts "
                             "WHERE theirs.txid <> $1 AND theirs.cts > $2 AND theirs.cts < $3 AND (o.did_commit IS NULL OR o.did_commit) LIMIT 1")


class _Refused(Exception):
    """Certification found a conflict, or a timeout resolver decided the timestamp first."""


def _write_set_insert(txid: int, cts: int, hashes: list[int]) -> tuple[str, list[int]]:
    """A plain multi-row INSERT ... VALUES of write-set rows: never an engine conflict."""
    rows = ", ".join(f"(${3 * i + 1}, ${3 * i + 2}, ${3 * i + 3})" for i in range(len(hashes)))
    return f"INSERT INTO tq_write_sets (txid, cts, key_hash) VALUES {rows}", [v for h in hashes for v in (txid, cts, h)]


def _commit_in_requests(backend: Backend, raw: Any, txn: Transaction, tables: list[TableDef], sql: CommitStatements,
                        timeout: float) -> int:
    """commit_writer's steps 1-4 in two requests, for engines that run several
    statements per request (MonetDB):
    1. the held cache inserts and the write-set's hashes (a read), then take the commit
       timestamp: nothing is flushed while the timestamp is held;
    2. the write-set as a plain INSERT ... VALUES and COMMIT (the one engine commit of
       the writes); then certify and decide in one read (the oracle claims cts and keeps
       the verdict); then, in an engine transaction of its own, the outcome row with that
       verdict (the commit point) and its COMMIT; then publish.
    The server runs a request's statements in order, so the writes' COMMIT precedes the
    certification as the invariant requires, and publish starts only after the outcome
    row is committed; it also runs the statements after one that failed, so publish
    checks in SQL that an outcome row for cts is there, and decide claims cts only if the
    write-set it certifies is there (a failed COMMIT of the writes rolled it back).
    No statement after the writes' COMMIT that writes reads a table: MonetDB aborts a
    write whose statement read a table others append to (an INSERT ... SELECT over the
    caches or the logs), so certification is a read and the verdict travels through the
    oracle to the outcome row. Measured under contention (8 clients, bench keys): no
    engine conflicts in this layout; aborts are certification's."""
    oracle = backend.oracle
    ctx: dict[str, int] = {"tq_txid": txn.txid, "tq_sts": txn.certification_sts, "tq_cts": 0}
    cts: int | None = None
    try:
        hashes_query = sql.write_set_hashes(tables)
        with step(raw, "write-set hashes + take cts"):
            (found, taken), _ = backend.request(raw, [(hashes_query.sql, hashes_query.values((), ctx)),
                                                      oracle.statement("take", txn.txid, max(1, int(timeout * 1000)))])
        cts = int(taken[0][0])
        if cts < 0:
            raise OperationalError("the MonetDB oracle lost its state (server restart) during the transaction")
        ctx["tq_cts"] = cts
        hashes = [int(row[0]) for row in found]
    except BaseException as error:
        _rollback_quietly(backend, raw, txn)
        _failed_before_outcome(backend, raw, txn, cts, timeout, error)
    rows = ", ".join(f"(${3 * i + 1}, ${3 * i + 2}, ${3 * i + 3})" for i in range(len(hashes)))
    logged = (f"INSERT INTO tq_write_sets (txid, cts, key_hash) VALUES {rows}", [v for h in hashes for v in (txn.txid, cts, h)])
    decide, marker, publish = sql.decide_marker_publish()
    ctx["tq_logged"] = bool(hashes)
    txn.engine_open = False
    try:
        with step(raw, "write-set + engine commit + certify + decide + outcome + publish"):
            (claim, answer), counts = backend.request(raw, [*([logged] if hashes else []), ("COMMIT", []),
                                                            (decide.sql, decide.values((), ctx)), ("START TRANSACTION", []),
                                                            (marker.sql, marker.values((), ctx)), ("COMMIT", []),
                                                            (publish.sql, publish.values((), ctx))], commit=True, other_commits=1)
    except BaseException as error:
        _rollback_quietly(backend, raw, txn)
        # Which step failed decides what we are: an outcome row for cts means it is decided.
        try:
            decided = backend.rows(raw, "SELECT did_commit FROM tq_outcome WHERE cts = $1", [cts])
        except Exception:
            decided = None
        if not decided:  # none (or unknown): undecided, so give the timestamp back as an abort
            _failed_before_outcome(backend, raw, txn, cts, timeout, error)
        if isinstance(error, Exception) and backend.is_unique_violation(error):
            return _published(backend, raw, txn, tables, sql, ctx, cts, False, True, timeout)  # a resolver's abort came first
        return _published(backend, raw, txn, tables, sql, ctx, cts, bool(decided[0][0]), False, timeout)
    claimed, conflicts = int(claim[0][0]), int(claim[0][1])
    lost = counts[-1] != 1  # a timeout resolver aborted cts before we could claim it
    # Our outcome row committed, so publish ran; it is done unless the oracle reported a
    # stuck predecessor (the wait goes on in _published). Lost: the resolver's row may
    # not have been there yet, so publish once more (publishing twice is harmless).
    published = not lost and int(answer[0][0]) <= 0
    return _published(backend, raw, txn, tables, sql, ctx, cts, claimed == 1 and conflicts == 0 and not lost, lost, timeout,
                      publish=not published)


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

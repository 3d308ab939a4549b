"""The checkpointer (paper, section 2.4.1): moves the newest stable version of each key
to storage, applies deletes, and purges cache and metadata rows nobody can need.

Invariant: it only touches versions at or below the stable timestamp, which is at most
every running transaction's start timestamp, and every step is a single statement that
leaves each key readable from either the cache or storage (autocommitted, or on engines
where no step can conflict, the whole round in one engine transaction). So it never
blocks, and never aborts, a foreground transaction; a crash between steps is repaired
by the next run. One checkpointer runs at a time per database (a lock in the process,
an advisory lock on a server): two interleaved runs could delete a storage row on the
strength of a cache version the other has just purged. A run that finds the latch
taken skips its round.

What a round leaves out is only work it could have done, never work another step relies
on: every step is cleanup, idempotent, and finds the same rows next round.
- A round whose stable timestamp and rollback horizon are those of the last full round
  stops there: no cache row can have become stable or dead since (a version becomes
  stable only when the stable timestamp passes its commit timestamp, and an aborted
  writer's versions are purged once its outcome or rollback is logged, which a later
  round meets).
- Otherwise one probe statement names the caches holding a version at or below the
  stable timestamp, or of an aborted or rolled-back writer, and the logs holding rows
  the purge would remove. The round runs statements only for those. The probe reads
  after the stable timestamp was taken, so it sees every version the steps would touch:
  a writer's versions commit before its outcome, and its outcome before the stable
  timestamp passes it. A log is purged only after the caches (a skipped cache had no
  row of the transactions whose log rows go).
- Older readers (backends with purge_waits_for_older_readers: MonetDB). An engine
  transaction that is open when a DELETE of cache rows commits may afterwards miss some
  of those rows: seen on MonetDB 11.45 while others append to the table (each New-Order
  appends to new_order's cache), where what an open transaction read of a cache shrank
  from one statement to the next by rows the checkpointer had purged meanwhile (as if
  their slots went to the appended rows), while it still saw the storage rows it began
  with. A reader whose engine transaction began before a round's steps 1 and 2 needs the
  cache versions they moved: its storage is the one before them. Losing them let a
  Delivery read, in storage, the new_order row another Delivery had deleted (its
  tombstone gone from the cache, the storage row still there in the reader's snapshot),
  and deliver that order twice. So there, step 3 (and the metadata purge after it) of
  the rows a round moved runs only once no tique transaction begun before the move
  ended is still running (every engine transaction of tique's is opened inside a
  tique transaction, after its begin, and ends before it): right after the move when
  none is or, after a wait of at most reader_wait_s for them to end (a TPC-C transaction
  takes a fraction of that), when they all have; else at the start of a later round,
  which moves nothing new before (a new move would delete those keys' storage rows again
  while their cache versions wait). Deferring is what the wait saves: the deferred rows
  stay in the caches, where every read pays for them, for a whole paced interval more.
  The wait holds no engine transaction open (the steps are autocommitted there) and
  only asks the oracle who runs, so it costs the foreground nothing; it is left out of
  the pacing below.
  Invariant: cache rows are purged only when every engine transaction open then began
  after the storage rows that replace them committed, so every reader sees each key in
  the cache or in storage whatever the engine does with the purged rows. Storage rows
  that step 1 deletes need no such wait: a reader that began before it still sees the
  stable cache version that replaces them (its start timestamp is at or above the
  stable timestamp), and that version stays until the purge.
- One statement a step on MonetDB, measured (TPC-C, 1 warehouse, loaded machine):
  sending a round's move (steps 1 and 2 of every table) as one engine transaction in
  one request made its rounds shorter but the foreground slower: after one such round
  on a fresh load, Order-Status's read of order_line took 180-200 ms and Stock-Level's
  280-300 ms, against 1.5-2.5 ms and 4-6 ms after a round of autocommitted steps, and
  throughput fell 19-41% (4 of 4 interleaved comparisons). The purge (step 3
  and the metadata purge) as one transaction lost throughput as well (2 of 2 pairs).
  Why, as far as seen: MonetDB puts an INSERT's rows into the slots of rows that a
  committed transaction deleted. Autocommitted, step 2 can refill the slots step 1
  freed ("Refilled" says when), so an updated key keeps its place in storage (whose
  packed key then stays in the order it was loaded in, sys.storage shows it sorted
  again), and writers' appends refill the slots step 3 freed; in one transaction with
  the DELETE neither can, and the tables grow out of order instead.
- Not in place. Updating a packed table's storage rows in place on MonetDB (an UPDATE
  ... FROM the stable versions, deleting only tombstoned keys' rows and appending only
  keys storage lacks) left storage without deleted rows, which MonetDB needs to answer an
  equality filter through a column's hash; but MonetDB 11.45 crashed (a segfault in its
  optimizer's column statistics) within seconds of TPC-C at 6 clients with that step, in
  every run, and in none without it (tests/test_monetdb_checkpoint_load.py). So every
  engine deletes and appends.
- Refilled (backends with appends_refill_after_readers: MonetDB). MonetDB's append
  takes a deleted row's slot only once every engine transaction open at the DELETE has
  ended and another has ended after it (11.45, measured: a DELETE and an append of as
  many rows left every deleted row behind when the append came right after the DELETE,
  with or without other sessions, and none when any statement ran in between). Under
  load some transaction is nearly always open, so deleting and appending per table left
  each round's moved rows deleted in storage, and a table with deleted rows answers an
  equality filter by scanning the column instead of through its hash (on 1M rows, 3-5 ms
  against 0.3-1 ms a point read). So a round runs step 1 of every table, waits (as
  "Older readers" does, at most reader_wait_s, holding no engine transaction) for the
  tique transactions begun before it to end, asking the oracle in statements of its own
  (which end after them), and only then step 2 of every table, whose appends refill the
  slots step 1 freed. Step 1 and step 2 of a table need not follow each other: between
  them each moved key is read from its stable cache version, which stays until step 3.
  A wait that runs out appends all the same (the slots left deleted are refilled by a
  later round's appends); only the tombstoned keys' rows step 1 deletes with nothing to
  append stay deleted until one.
- The background thread paces its rounds so that they take at most MAX_BUSY_SHARE of
  its time: a round of d seconds (less its wait for older readers) is followed by a
  wait of d * (1 - share) / share, at least the configured interval and at most
  MAX_PACED_WAIT_S. Rounds cost about the same
  per statement whatever the rows, so fewer, larger rounds cost the foreground less; the
  caches still hold only the writes of a few rounds, since each round moves every
  stable version.
- Unless the writes have paused. The pacing shares the engine with writers; once none
  commits, what the caches hold stays there for the rest of the paced wait, and every
  read pays for it: a snapshot over a non-empty cache is an anti-join and a ranked union
  where one over an empty cache is the storage table alone (CH-benCHmark on DuckDB after
  a TPC-C run: 3-4x the time of the same queries over empty caches). So during the wait
  the thread looks, LOOKS_PER_INTERVAL times an interval, at the oracle's newest commit
  (one call that registers nothing; free in process memory on DuckDB). When it has not
  moved for PAUSE_GAPS mean gaps between the commits since the last round began, and at
  least an interval, or READS_AFTER_WRITES transactions have begun since it last moved
  (where the oracle counts them in process memory: the workload has turned to reads),
  and the last round's stable timestamp is below it, and the last round
  ended an interval ago or more, the round runs at once and the pacing starts again
  from it. It is the same round, for any workload: it moves what is stable, and the
  writes it no longer waits for are the ones that paused. So rounds are never closer
  than the configured interval, as before the pacing, and only while nothing commits;
  one that finds the stable timestamp where the last round left it (a reader older
  than the newest commit still runs) ends at its first statement (see above).
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from tique.backends.base import Backend, user_terms
from tique.pause import Pause
from tique.rewrite import facts
from tique.rewrite.params import Compiled
from tique.rewrite.templates import table_template, template


CONFLICT_RETRIES = 20
# How often the background thread looks at the oracle's newest commit during its paced
# wait, per interval, and how many transactions begun since the newest commit, with none
# committing meanwhile, show the workload has turned to reads (see the invariant): five in
# a row is rare under a write load (TPC-C's read-only transactions are 8% of its mix:
# 0.08^4 after each commit), the rule under analytics.
LOOKS_PER_INTERVAL = 10
READS_AFTER_WRITES = 5
# ... or how many mean gaps between commits, and at least an interval, without one: gaps
# that long are rare under a steady write load, however slow (TPC-C's longest
# transactions take a few mean gaps).
PAUSE_GAPS = 10
# The largest share of its time the background checkpointer spends in rounds (see the
# invariant above): it waits at least round * (1 - share) / share between them.
MAX_BUSY_SHARE = 0.05
# ... but never longer than this, whatever one round took (one slowed by a lock wait or a
# loaded machine must not let the caches fill for minutes).
MAX_PACED_WAIT_S = 30.0
# How often the checkpointer refreshes a cache table's planner statistics (see
# Checkpointer._refresh_statistics), and the metadata tables it refreshes beside the caches.
STATISTICS_INTERVAL_S = 10.0
STATISTICS_METADATA = ("tq_write_sets", "tq_outcome")
# How long a round waits after its move for the transactions begun before it to end, so
# that it purges what it moved itself (see the invariant, "Older readers"), and the
# longest pause between two looks at who still runs (the pauses start at 1 ms and double).
READER_WAIT_S = 1.0
READER_POLL_MAX_S = 0.05
_log = logging.getLogger("tique.checkpoint")
# Per table, in order. Where the checkpointer updates storage in place (see the invariant,
# "In place"), delete_storage is that update, then the delete of tombstoned keys' rows.
TABLE_STEPS = ("delete_storage", "insert_storage", "purge_cache")


class CheckpointPauseTimeout(RuntimeError):
    """An armed pause point was reached and nobody resumed the run in time."""


@dataclass
class PausePoint(Pause):
    """Debug fault, off unless a test arms one on a Checkpointer: holds the run just after
    `after` (one of TABLE_STEPS) of `table` has committed, so a test can read what the
    database shows between two steps.

    Invariant: the run sets `reached` only once that step's statement has committed, and
    runs no further statement until `resume` is set. Neither side waits forever: the run
    gives up after `timeout` seconds (failing its round, which leaves the database as a
    crash between steps would, repaired by the next run), and a test waits on `reached`
    with a bound of its own. A held run keeps the checkpoint latch, so other runs skip
    their rounds meanwhile."""
    table: str
    after: str

    def __post_init__(self) -> None:
        if self.after not in TABLE_STEPS:
            raise ValueError(f"no checkpoint step {self.after!r}; the steps are {', '.join(TABLE_STEPS)}")

    def hold(self, table: str, step: str) -> None:
        if table != self.table or step != self.after:
            return
        if not self._held_until_resumed():
            raise CheckpointPauseTimeout(f"checkpoint paused after {step} of {table} for {self.timeout} s and was not resumed")


@dataclass
class ReaderWaitPause(Pause):
    """Debug fault, off unless a test arms one on a Checkpointer: holds a round whose wait
    for older readers (see the invariant) found one still running, before the wait's
    bound starts counting, so a test can end that reader while the round waits. Neither
    side waits forever, as with PausePoint."""

    def hold(self) -> None:
        if not self._held_until_resumed():
            raise CheckpointPauseTimeout(f"checkpoint paused waiting for older readers for {self.timeout} s and was not resumed")


@dataclass
class _WaitingPurge:
    """Step 3 and the metadata purge of a round whose move is done, waiting for the
    transactions begun before `fence` to end (see the invariant, "Older readers")."""
    tables: list[tuple[str, str]]
    metadata: list[Compiled]
    context: dict[str, int]
    fence: int


@dataclass
class CheckpointReport:
    stable: int
    tables: int
    moved: int
    purged: int
    seconds: float
    skipped: bool = False
    waited: float = 0.0  # of `seconds`, spent waiting for older readers to end (no engine work)


class Checkpointer:
    """One checkpointer over one backend, with its own engine connection."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.raw = backend.open_background()
        self._compiled: dict[tuple[str, str], list[list[Compiled]]] = {}
        self._metadata = [backend.compile(t) for t in template("common/checkpoint_purge_metadata.sql")]
        self.pause: PausePoint | None = None  # debug fault (see PausePoint); None in normal use
        self._statistics_taken: float | None = None  # when _refresh_statistics last ran
        self._settled: tuple[int, int] | None = None  # (stable, horizon) of the last full round
        self._noted: list[str] = []  # the tables the last full round looked at
        self._probes: dict[tuple[str, ...], Compiled] = {}
        self._metadata_tables = [_target(t) for t in template("common/checkpoint_purge_metadata.sql")]
        self._waiting: _WaitingPurge | None = None  # a purge waiting for older readers
        self.reader_wait_s = READER_WAIT_S  # see the invariant, "Older readers"
        self.reader_pause: ReaderWaitPause | None = None  # debug fault; None in normal use
        self._waited = 0.0  # seconds the current round spent waiting for older readers

    def close(self) -> None:
        try:
            self.backend.close_raw(self.raw)
        except Exception:  # already closed, or dropped by the engine: nothing left to release
            pass

    def _table_statements(self, name: str, ddl: str) -> list[list[Compiled]]:
        """The statements of each step of TABLE_STEPS for one table, in order."""
        key = (name, ddl)
        found = self._compiled.get(key)
        if found is None:
            table = self.backend.catalog_tables(self.raw, [(name, ddl)])[name]
            names = {step: f"common/checkpoint_{step}.sql" for step in TABLE_STEPS}
            found = []
            for step in TABLE_STEPS:
                (tree,) = table_template(names[step], table, table.physical_columns, self.backend.key_hash)
                found.append([self.backend.compile(facts.internal_insert(tree) if isinstance(tree, exp.Insert) else tree)])
            self._compiled[key] = found
        return found

    def _execute(self, step: Compiled, context: dict[str, int]) -> Any:
        """Each step is idempotent, so one the engine aborted for a concurrent append
        (MonetDB does, for a statement reading a table others insert into) runs again."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                return self.backend.execute(self.raw, step.sql, step.values((), context))
            except Exception as error:
                if attempt + 1 == CONFLICT_RETRIES or not self.backend.is_transient_conflict(error):
                    raise
                time.sleep(0.002 * (attempt + 1))

    def run_once(self) -> CheckpointReport:
        started = time.perf_counter()
        backend, raw = self.backend, self.raw
        if not backend.checkpoint_lock.acquire(blocking=False):
            return CheckpointReport(0, 0, 0, 0, time.perf_counter() - started, skipped=True)
        try:
            if not backend.try_checkpoint_latch(raw):
                return CheckpointReport(0, 0, 0, 0, time.perf_counter() - started, skipped=True)
            self._waited = 0.0
            try:
                report = self._run(started)
            finally:
                backend.release_checkpoint_latch(raw)
            report.waited = self._waited
            return report
        finally:
            backend.checkpoint_lock.release()

    def newest_commit(self) -> tuple[int, int | None]:
        """The oracle's newest snapshot, which moves with every commit (one call, which
        registers nothing), and how many transactions have begun where the oracle keeps
        that in process memory (None elsewhere)."""
        begun = getattr(self.backend.oracle, "begun", None)
        return self.backend.oracle.statement_snapshot(self.raw), begun

    def _note_caches(self, names: list[str]) -> None:
        """Records the caches left empty, so reads of their tables can skip the snapshot,
        and which ended writers have no rows left in each, so reads of keys no one else
        wrote can (tique/cache_state.py). What each count is confirmed against is taken
        before the count begins; one statement counts every cache there is something to
        learn of."""
        state = self.backend.cache_state
        if state is None:
            return
        taken: dict[str, tuple[int | None, frozenset[int], int | None]] = {}
        for name in names:
            version = state.before_count(name)
            ended, generation = state.ended_writers(name)
            if version is not None or ended or generation is not None:
                taken[name] = (version, ended, generation)
        if not taken:
            return
        present: dict[str, set[int]] = {name: set() for name in taken}
        for name, txid in self.backend.rows(self.raw, self._writers_statement(sorted(taken)), []):
            present[str(name)].add(int(txid))
        for name, (version, ended, generation) in taken.items():
            if ended:
                state.counted_writers(name, ended, present[name])
            if generation is not None:
                state.counted_unarmed(name, generation, present[name])
            if not present[name] and version is not None:
                state.counted_empty(name, version)

    def _writers_statement(self, names: list[str]) -> str:
        """The writers with rows in each cache of `names`: (table name, txid) rows."""
        parts = [exp.select(exp.Literal.string(name).as_("tq_table"), exp.column("tq_txid"))
                 .from_(exp.to_table(exp.to_identifier(f"{name}_cache", quoted=True))).distinct()
                 for name in names]
        union: exp.Expression = parts[0]
        for part in parts[1:]:
            union = exp.union(union, part, distinct=False)
        return union.sql(self.backend.dialect)

    def _hold(self, table: str, step: str) -> None:
        pause = self.pause
        if pause is not None:
            pause.hold(table, step)

    def _run(self, started: float) -> CheckpointReport:
        backend, raw = self.backend, self.raw
        stable = backend.oracle.stable_timestamp(raw)  # also retires dead sessions' transactions
        purged_first = 0
        waiting = self._waiting
        if waiting is not None:
            if backend.began_before(raw, waiting.fence):
                # Readers older than the last move still run: nothing is purged or moved.
                return CheckpointReport(stable, 0, 0, 0, time.perf_counter() - started)
            self._waiting = None  # a failed purge is not retried as such: the next round moves those rows again
            purged_first = self._purge(waiting)
        (row,) = backend.rows(raw, "SELECT coalesce(max(txid), 0) FROM tq_rolled_back", [])
        context = {"tq_stable": stable, "tq_horizon": int(row[0])}
        # A cache known to hold nothing has nothing to move or purge (tique/cache_state.py:
        # clean means empty, with no writer open, when counted, and none begun since).
        clean = backend.cache_state.clean() if backend.cache_state is not None else frozenset()
        if self._settled == (stable, context["tq_horizon"]):
            # Nothing became stable or dead since the last full round (see the invariant).
            # The caches' writers may have ended meanwhile: what that tells is noted.
            self._note_caches([name for name in self._noted if name not in clean])
            return CheckpointReport(stable, 0, 0, purged_first, time.perf_counter() - started)
        catalog = backend.rows(raw, "SELECT name, ddl FROM tq_tables", [])
        names = [name for name, _ in catalog if name not in clean]
        pending = self._pending(names, context)
        work = [(name, ddl) for name, ddl in catalog if ("cache", name) in pending]
        self._refresh_statistics([name for name, _ in work])
        metadata = [step for step, table in zip(self._metadata, self._metadata_tables) if ("log", table) in pending]
        if not work and not metadata:
            moved = purged = 0
        elif backend.checkpoints_in_one_transaction:
            moved, purged = self._run_in_one_transaction(work, metadata, context)
        else:
            moved, purged = self._move_and_purge(work, metadata, context)
        self._settled, self._noted = (stable, context["tq_horizon"]), names
        # Counted afterwards, in a snapshot that sees this round's purge committed.
        self._note_caches(names)
        return CheckpointReport(stable, len(catalog), moved, purged_first + purged, time.perf_counter() - started)

    def _pending(self, names: list[str], context: dict[str, int]) -> set[tuple[str, str]]:
        """The tables among `names` whose caches hold a row this round would move or
        purge, as ("cache", name), and the logs holding a row it would purge, as ("log",
        name): one statement."""
        key = tuple(names)
        probe = self._probes.get(key)
        if probe is None:
            probe = self._probes[key] = self.backend.compile(_probe(names))
        return {(str(kind), str(name)) for kind, name in self._execute(probe, context).fetchall()}

    def _refresh_statistics(self, names: list[str]) -> None:
        """The tables the planner estimates snapshot reads and certification by (the
        caches this round works on, the write-sets, the outcomes), refreshed every
        STATISTICS_INTERVAL_S, before this round purges them, so that the statistics
        describe them as readers and certifiers meet them; where the engine leaves deleted
        rows to a vacuum (PostgreSQL), it vacuums them too, so that the rows earlier rounds
        purged do not pile up between autovacuum's passes. Statistics only guide plans:
        a failure here (a table dropped meanwhile) leaves the round to go on."""
        now = time.monotonic()
        if self._statistics_taken is not None and now - self._statistics_taken < STATISTICS_INTERVAL_S:
            return
        try:
            self.backend.refresh_statistics(self.raw, [*(f"{n}_cache" for n in names), *STATISTICS_METADATA], vacuum=True)
        except Exception as error:  # noqa: BLE001 - advisory, see above
            _log.debug("statistics not refreshed: %s", error)
            return
        self._statistics_taken = now

    def _run_in_one_transaction(self, work: list[tuple[str, str]], metadata: list[Compiled],
                                context: dict[str, int]) -> tuple[int, int]:
        """The whole round as one engine transaction: one commit instead of one per step
        (on DuckDB each is a write-ahead-log sync), and readers see the round all at once."""
        backend, raw = self.backend, self.raw
        backend.begin_engine(raw)
        try:
            done = self._move_and_purge(work, metadata, context)
        except BaseException:
            backend.rollback_engine(raw)
            raise
        backend.commit_engine(raw)
        return done

    def _move_and_purge(self, work: list[tuple[str, str]], metadata: list[Compiled],
                        context: dict[str, int]) -> tuple[int, int]:
        backend = self.backend
        if backend.purge_waits_for_older_readers:
            moved = self._move(work, context)
            # Taken after the move committed: a transaction with a larger id began after it.
            waiting = _WaitingPurge(work, metadata, context, backend.purge_fence(self.raw))
            if not self._older_readers_ended(waiting.fence):
                self._waiting = waiting  # purged by a later round (see the invariant)
                return moved, 0
            return moved, self._purge(waiting)
        moved = purged = 0
        for name, ddl in work:
            moved += self._move([(name, ddl)], context)
            purged += self._purge(_WaitingPurge([(name, ddl)], [], context, 0))
        for step in metadata:
            self._execute(step, context)
        return moved, purged

    def _older_readers_ended(self, fence: int, pausable: bool = True) -> bool:
        """Whether every tique transaction begun before `fence` has ended, waiting at most
        reader_wait_s for them (see the invariant, "Older readers"). It asks the oracle
        again after pauses of 1 ms doubling up to READER_POLL_MAX_S: the transactions it
        waits for are short, and a commit ends in the oracle, which no query watches.
        `pausable`: the wait before a purge, where a test's ReaderWaitPause holds it."""
        backend, raw = self.backend, self.raw
        if not backend.began_before(raw, fence):
            return True
        if pausable and self.reader_pause is not None:
            self.reader_pause.hold()
        began = time.monotonic()
        deadline = began + self.reader_wait_s
        pause = 0.001
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(pause, left))
                if not backend.began_before(raw, fence):
                    return True
                pause = min(pause * 2, READER_POLL_MAX_S)
        finally:
            self._waited += time.monotonic() - began

    def _move(self, work: list[tuple[str, str]], context: dict[str, int]) -> int:
        """Steps 1 and 2 of each table of `work`: per table, or where appends refill
        deleted rows only once their readers have ended (see the invariant, "Refilled"),
        step 1 of every table, the wait for the transactions begun before it, then step 2
        of every table."""
        if self.backend.appends_refill_after_readers:
            for name, ddl in work:
                self._delete_storage(name, ddl, context)
            self._older_readers_ended(self.backend.purge_fence(self.raw), pausable=False)
            return sum(self._insert_storage(name, ddl, context) for name, ddl in work)
        moved = 0
        for name, ddl in work:
            self._delete_storage(name, ddl, context)
            moved += self._insert_storage(name, ddl, context)
        return moved

    def _delete_storage(self, name: str, ddl: str, context: dict[str, int]) -> None:
        for statement in self._table_statements(name, ddl)[0]:
            self._execute(statement, context)
        self._hold(name, "delete_storage")

    def _insert_storage(self, name: str, ddl: str, context: dict[str, int]) -> int:
        (insert,) = self._table_statements(name, ddl)[1]
        moved = max(self.backend.affected(self._execute(insert, context)), 0)
        self._hold(name, "insert_storage")
        return moved

    def _purge(self, purge: _WaitingPurge) -> int:
        """Step 3 of each table of `purge`, then its metadata purge."""
        purged = 0
        for name, ddl in purge.tables:
            (purge_cache,) = self._table_statements(name, ddl)[2]
            purged += max(self.backend.affected(self._execute(purge_cache, purge.context)), 0)
            self._hold(name, "purge_cache")
        for step in purge.metadata:
            self._execute(step, purge.context)
        return purged


def _target(statement: exp.Expression) -> str:
    """The table a DELETE removes rows from."""
    return statement.this.name


# What makes a cache row pending: the union of what the three steps touch (committed at
# or below the stable timestamp, aborted, rolled back), as checkpoint_purge_cache.sql says.
_PENDING_CACHE = """
SELECT 'cache' AS tq_kind, '{name}' AS tq_table WHERE EXISTS (
  SELECT 1 FROM {cache} AS c
  WHERE c.tq_txid IN (SELECT txid FROM tq_outcome WHERE cts <= CAST(:tq_stable AS BIGINT) OR NOT did_commit)
     OR c.tq_txid IN (SELECT txid FROM tq_rolled_back WHERE txid <= CAST(:tq_horizon AS BIGINT)))
"""
# What makes a log row pending: the conditions of checkpoint_purge_metadata.sql.
_PENDING_LOGS = """
SELECT 'log', 'tq_write_sets' WHERE EXISTS (SELECT 1 FROM tq_write_sets WHERE cts <= CAST(:tq_stable AS BIGINT))
UNION ALL SELECT 'log', 'tq_read_sets' WHERE EXISTS (SELECT 1 FROM tq_read_sets WHERE cts <= CAST(:tq_stable AS BIGINT))
UNION ALL SELECT 'log', 'tq_outcome' WHERE EXISTS (SELECT 1 FROM tq_outcome WHERE cts <= CAST(:tq_stable AS BIGINT))
UNION ALL SELECT 'log', 'tq_committing' WHERE EXISTS (SELECT 1 FROM tq_committing WHERE cts <= CAST(:tq_stable AS BIGINT))
UNION ALL SELECT 'log', 'tq_rolled_back' WHERE EXISTS (SELECT 1 FROM tq_rolled_back WHERE txid <= CAST(:tq_horizon AS BIGINT))
"""


def _probe(names: list[str]) -> exp.Expression:
    """The probe of a round (see the invariant): one statement naming the caches of
    `names` and the logs that hold something to move or purge."""
    from sqlglot import parse_one

    from tique.rewrite.templates import TEMPLATE_DIALECT, forget_positions

    parts = []
    for name in names:
        part = parse_one(_PENDING_CACHE.replace("{cache}", "tq_probed_cache"), read=TEMPLATE_DIALECT)
        for literal in part.find_all(exp.Literal):
            if literal.this == "{name}":
                literal.replace(exp.Literal.string(name))
        for table in part.find_all(exp.Table):
            if table.name == "tq_probed_cache":
                table.set("this", exp.to_identifier(f"{name}_cache", quoted=True))
        parts.append(part)
    union: exp.Expression = parse_one(_PENDING_LOGS, read=TEMPLATE_DIALECT)
    for part in parts:
        union = exp.union(union, part, distinct=False)
    return forget_positions(union)


def checkpoint(connection: Any) -> CheckpointReport:
    """Runs one checkpoint over the database of a tique connection."""
    checkpointer = Checkpointer(connection.backend)
    try:
        return checkpointer.run_once()
    finally:
        checkpointer.close()


class BackgroundCheckpointer(threading.Thread):
    def __init__(self, backend: Backend, interval: float) -> None:
        super().__init__(name="tique-checkpointer", daemon=True)
        self.interval = interval
        self.checkpointer = Checkpointer(backend)
        self.stopping = threading.Event()
        self.runs = 0
        self.early_runs = 0  # of `runs`, those run because the writes had paused (see the invariant)
        self.failures = 0
        self.busy_s = 0.0  # time spent in rounds, what the checkpointer costs the engine
        self.waited_s = 0.0  # time rounds spent waiting for older readers, not in busy_s
        self.last_error: BaseException | None = None

    def run(self) -> None:
        try:
            now = time.monotonic()
            due = now + self.interval  # of the next paced round
            ended = now  # when the last round ended
            pause = _WritePause(now)
            settled_at = -1  # the stable timestamp the last round ran at
            while not self.stopping.wait(max(0.0, min(self.interval / LOOKS_PER_INTERVAL, due - time.monotonic()))):
                if time.monotonic() < due:
                    # In the paced wait: a round only if the writes have paused (see the invariant).
                    began = time.perf_counter()
                    try:
                        newest, begun = self.checkpointer.newest_commit()
                    except Exception as error:  # the next look tries again
                        self._failed(error)
                        continue
                    finally:
                        self.busy_s += time.perf_counter() - began
                    now = time.monotonic()
                    if not (pause.paused(newest, begun, now, self.interval) and settled_at < newest and now - ended >= self.interval):
                        continue
                    self.early_runs += 1
                began = time.perf_counter()
                waited = 0.0
                try:
                    pause.round_begins(time.monotonic(), self.checkpointer.newest_commit()[0])
                    report = self.checkpointer.run_once()
                    waited = report.waited
                    if not report.skipped:
                        settled_at = report.stable
                    self.runs += 1
                except Exception as error:  # a failed round is retried next interval
                    self._failed(error)
                # A wait for older readers is no work of the engine's (see the invariant).
                took = time.perf_counter() - began - waited
                self.waited_s += waited
                self.busy_s += took
                ended = time.monotonic()
                due = ended + max(self.interval, min(took * (1 - MAX_BUSY_SHARE) / MAX_BUSY_SHARE, MAX_PACED_WAIT_S))
        finally:
            self.checkpointer.close()

    def _failed(self, error: Exception) -> None:
        """A failed round is logged when its error differs from the last one's: a step
        that fails every round (a storage key violation, say) must not pass unseen, nor
        flood the log."""
        self.failures += 1
        if self.last_error is None or str(error) != str(self.last_error):
            _log.warning("background checkpoint round failed (%d so far; retried every %.3gs): %s",
                         self.failures, self.interval, user_terms(str(error)))
        self.last_error = error

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


class _WritePause:
    """Whether the writes have paused, from looks at the oracle (see the invariant): the
    newest commit has not moved since the last look, and either READS_AFTER_WRITES
    transactions have begun since it last moved (the workload has turned to reads; the
    oracle counts them only in process memory, on DuckDB), or it has not moved for
    PAUSE_GAPS times the mean gap between the commits since the last round began
    (commit timestamps count the commits), and for at least an interval."""

    def __init__(self, now: float) -> None:
        self.since: tuple[float, int] | None = None  # (when, newest) as the last round began
        self.changed: tuple[float, int, int | None] = (now, -1, None)  # when the newest commit last moved, to what, begun then

    def round_begins(self, now: float, newest: int) -> None:
        self.since = (now, newest)

    def paused(self, newest: int, begun: int | None, now: float, interval: float) -> bool:
        when, last, begun_then = self.changed
        if newest != last:
            self.changed = (now, newest, begun)
            return False
        if begun is not None and begun_then is not None and begun - begun_then >= READS_AFTER_WRITES:
            return True
        if self.since is None or newest <= self.since[1]:
            return False  # no commit since the last round began: nothing new waits for it
        gap = (when - self.since[0]) / (newest - self.since[1])
        return now - when >= max(interval, PAUSE_GAPS * gap)


_background: "weakref.WeakKeyDictionary[Backend, BackgroundCheckpointer]" = weakref.WeakKeyDictionary()
_background_lock = threading.Lock()


def ensure_background_checkpointer(backend: Backend, interval: float) -> BackgroundCheckpointer:
    """One background checkpointer per database per process, however many connections ask."""
    with _background_lock:
        running = _background.get(backend)
        if running is None or not running.is_alive():
            running = _background[backend] = BackgroundCheckpointer(backend, interval)
            running.start()
        return running


def stop_background_checkpointer(backend: Backend) -> None:
    with _background_lock:
        running = _background.pop(backend, None)
    if running is not None:
        running.stop()


def stop_all_background_checkpointers() -> None:
    with _background_lock:
        running = list(_background.values())
        _background.clear()
    for thread in running:
        thread.stop()

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
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from tique.backends.base import Backend, user_terms
from tique.rewrite import facts
from tique.rewrite.params import Compiled
from tique.rewrite.templates import table_template, template


CONFLICT_RETRIES = 20
# How often the checkpointer refreshes a cache table's planner statistics (see
# Checkpointer._refresh_statistics), and the metadata tables it refreshes beside the caches.
STATISTICS_INTERVAL_S = 10.0
STATISTICS_METADATA = ("tq_write_sets", "tq_outcome")
_log = logging.getLogger("tique.checkpoint")
TABLE_STEPS = ("delete_storage", "insert_storage", "purge_cache")  # per table, in order


class CheckpointPauseTimeout(RuntimeError):
    """An armed pause point was reached and nobody resumed the run in time."""


@dataclass
class PausePoint:
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
    timeout: float = 60.0
    reached: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        if self.after not in TABLE_STEPS:
            raise ValueError(f"no checkpoint step {self.after!r}; the steps are {', '.join(TABLE_STEPS)}")

    def hold(self, table: str, step: str) -> None:
        if table != self.table or step != self.after:
            return
        self.reached.set()
        if not self.resume.wait(self.timeout):
            raise CheckpointPauseTimeout(f"checkpoint paused after {step} of {table} for {self.timeout} s and was not resumed")


@dataclass
class CheckpointReport:
    stable: int
    tables: int
    moved: int
    purged: int
    seconds: float
    skipped: bool = False


class Checkpointer:
    """One checkpointer over one backend, with its own engine connection."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.raw = backend.open_background()
        self._compiled: dict[tuple[str, str], list[Compiled]] = {}
        self._metadata = [backend.compile(t) for t in template("common/checkpoint_purge_metadata.sql")]
        self.pause: PausePoint | None = None  # debug fault (see PausePoint); None in normal use
        self._statistics_taken: float | None = None  # when _refresh_statistics last ran

    def close(self) -> None:
        try:
            self.backend.close_raw(self.raw)
        except Exception:  # already closed, or dropped by the engine: nothing left to release
            pass

    def _table_statements(self, name: str, ddl: str) -> list[Compiled]:
        key = (name, ddl)
        found = self._compiled.get(key)
        if found is None:
            table = self.backend.catalog_tables(self.raw, [(name, ddl)])[name]
            found = []
            for step in TABLE_STEPS:
                (tree,) = table_template(f"common/checkpoint_{step}.sql", table, table.physical_columns, self.backend.key_hash)
                found.append(self.backend.compile(facts.internal_insert(tree) if isinstance(tree, exp.Insert) else tree))
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
            try:
                return self._run(started)
            finally:
                backend.release_checkpoint_latch(raw)
        finally:
            backend.checkpoint_lock.release()

    def _note_if_empty(self, name: str) -> None:
        """Records a cache left empty, so reads of the table can skip the snapshot, and
        which ended writers have no rows left in it, so reads of keys no one else wrote
        can (tique/cache_state.py). Both are taken before the count begins."""
        state = self.backend.cache_state
        if state is None:
            return
        version = state.before_count(name)
        ended, generation = state.ended_writers(name)
        if version is None and not ended and generation is None:
            return
        q = exp.to_identifier(f"{name}_cache", quoted=True).sql(self.backend.dialect)
        present = {int(t) for (t,) in self.backend.rows(self.raw, f"SELECT DISTINCT tq_txid FROM {q}", [])}
        if ended:
            state.counted_writers(name, ended, present)
        if generation is not None:
            state.counted_unarmed(name, generation, present)
        if not present and version is not None:
            state.counted_empty(name, version)

    def _hold(self, table: str, step: str) -> None:
        pause = self.pause
        if pause is not None:
            pause.hold(table, step)

    def _run(self, started: float) -> CheckpointReport:
        backend, raw = self.backend, self.raw
        stable = backend.oracle.stable_timestamp(raw)
        (row,) = backend.rows(raw, "SELECT coalesce(max(txid), 0) FROM tq_rolled_back", [])
        context = {"tq_stable": stable, "tq_horizon": int(row[0])}
        catalog = backend.rows(raw, "SELECT name, ddl FROM tq_tables", [])
        # A cache known to hold nothing has nothing to move or purge (tique/cache_state.py:
        # clean means empty, with no writer open, when counted, and none begun since).
        clean = backend.cache_state.clean() if backend.cache_state is not None else frozenset()
        work = [(name, ddl) for name, ddl in catalog if name not in clean]
        self._refresh_statistics([name for name, _ in work])
        if backend.checkpoints_in_one_transaction:
            moved, purged = self._run_in_one_transaction(work, context)
        else:
            moved, purged = self._move_and_purge(work, context)
        # Counted afterwards, each in a snapshot that sees this round's purge committed.
        for name, _ in work:
            self._note_if_empty(name)
        return CheckpointReport(stable, len(catalog), moved, purged, time.perf_counter() - started)

    def _refresh_statistics(self, names: list[str]) -> None:
        """The tables the planner estimates snapshot reads and certification by (the
        caches that hold rows, the write-sets, the outcomes), refreshed every
        STATISTICS_INTERVAL_S, before this round purges them, so that the statistics
        describe them as readers and certifiers meet them. Statistics only guide plans:
        a failure here (a table dropped meanwhile) leaves the round to go on."""
        now = time.monotonic()
        if self._statistics_taken is not None and now - self._statistics_taken < STATISTICS_INTERVAL_S:
            return
        try:
            self.backend.refresh_statistics(self.raw, [*(f"{n}_cache" for n in names), *STATISTICS_METADATA])
        except Exception as error:  # noqa: BLE001 - advisory, see above
            _log.debug("statistics not refreshed: %s", error)
            return
        self._statistics_taken = now

    def _run_in_one_transaction(self, work: list[tuple[str, str]], context: dict[str, int]) -> tuple[int, int]:
        """The whole round as one engine transaction: one commit instead of one per step
        (on DuckDB each is a write-ahead-log sync), and readers see the round all at once."""
        backend, raw = self.backend, self.raw
        backend.begin_engine(raw)
        try:
            done = self._move_and_purge(work, context)
        except BaseException:
            backend.rollback_engine(raw)
            raise
        backend.commit_engine(raw)
        return done

    def _move_and_purge(self, work: list[tuple[str, str]], context: dict[str, int]) -> tuple[int, int]:
        backend = self.backend
        moved = purged = 0
        for name, ddl in work:
            delete_storage, insert_storage, purge_cache = self._table_statements(name, ddl)
            self._execute(delete_storage, context)
            self._hold(name, "delete_storage")
            moved += max(backend.affected(self._execute(insert_storage, context)), 0)
            self._hold(name, "insert_storage")
            purged += max(backend.affected(self._execute(purge_cache, context)), 0)
            self._hold(name, "purge_cache")
        for step in self._metadata:
            self._execute(step, context)
        return moved, purged


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
        self.failures = 0
        self.last_error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.wait(self.interval):
                try:
                    self.checkpointer.run_once()
                    self.runs += 1
                except Exception as error:  # a failed round is retried next interval
                    self._failed(error)
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

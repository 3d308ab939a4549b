"""PEP 249 connection: owns one engine connection, the catalog, the plan cache and
at most one open tique transaction."""
from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any, Callable, Iterable

from sqlglot import exp

from tique import ddl, errors
from tique.backends import open_database
from tique.backends.base import Backend
from tique.catalog import CatalogSnapshot, TableDef
from tique.cursor import Cursor
from tique.errors import InterfaceError, ProgrammingError, describe, redact
from tique.isolation import IsolationLevel, parse_level, supported
from tique.planner import (ControlPlan, CreateAsPlan, CreatePlan, DropPlan, LockingReadPlan, NativePlan, ObjectPlan, Plan, ReadPlan,
                           WritePlan, batch_rows, batched, make_plan, plan_statement)
from tique.recovery import recover
from tique.rewrite.params import Compiled
from tique.rewrite.own_versions import note_written, unaffected
from tique.rewrite.point_keys import Key, read_keys, storage_key_query, storage_key_values, written_keys
from tique.rewrite import passes
from tique.rewrite.snapshot import Formulation
from tique.session import UNBOUND_STS, UNBOUND_TXID, Counters, Unbound, step
from tique.read_sets import ReadSet, ReadShape, storable
from tique.transaction import (BufferedWrite, CommitPause, CommitStatements, ReadsToCertify, Transaction, commit_schema_change, commit_writer, key_violation,
                               release, reserve, run_write)

# Debug faults (negative controls for consistency checkers), never on by default:
# no-certify: commit without certification (lost updates);
# stale-snapshot: every statement reads the latest committed data, not the transaction's snapshot;
# early-visibility: a transaction's snapshot misses the same connection's previous commit,
# as if that commit had returned before the snapshot included it;
# no-read-certify: SERIALIZABLE transactions commit without certifying their read-sets
# (write skew, as at SNAPSHOT).
FAULTS = frozenset({"no-certify", "stale-snapshot", "early-visibility", "no-read-certify"})

# The key of a read's variant that computes its READ COMMITTED snapshot in its own SQL
# (Connection._read_at_statement_snapshot); no set of table names equals it.
_AT_STATEMENT_SNAPSHOT = frozenset({"\x00statement snapshot"})

_commit_statements: "weakref.WeakKeyDictionary[Backend, CommitStatements]" = weakref.WeakKeyDictionary()
_commit_statements_lock = threading.Lock()


def _shared_commit_statements(backend: Backend) -> CommitStatements:
    with _commit_statements_lock:
        found = _commit_statements.get(backend)
        if found is None:
            found = _commit_statements[backend] = CommitStatements(backend)
        return found


def _forget_commit_statements(backend: Backend) -> None:
    """Commit SQL is compiled per table shape; a table's shape changed, so compile it afresh."""
    with _commit_statements_lock:
        _commit_statements.pop(backend, None)


def _release(backend: Backend, raw: Any, holder: list) -> None:
    """Finalizer: a connection dropped with a transaction open rolls it back."""
    txn = holder[0] if holder else None
    try:
        if txn is not None:
            if txn.engine_open:
                backend.rollback_engine(raw)
            if txn.flushed:  # its cache rows are committed: purged once logged (Connection._log_rolled_back)
                rolled_back = _shared_commit_statements(backend).rolled_back
                backend.execute(raw, rolled_back.sql, rolled_back.values((), {"tq_txid": txn.txid}))
            if not isinstance(txn.txid, Unbound):
                backend.oracle.end(raw, txn.txid)
    except Exception:
        pass
    finally:
        try:
            backend.close_raw(raw)
        except Exception:
            pass


class Connection:
    # PEP 249 optional extension: the exception classes as connection attributes.
    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError
    SerializationFailure = errors.SerializationFailure

    def __init__(
        self,
        url: str,
        *,
        autocommit: bool = False,
        buffered_writes: bool = False,
        snapshot: str = "auto",
        static_tables: Iterable[str] = (),
        commit_timeout: float = 10.0,
        checkpoint_interval_ms: int | None = None,
        faults: Iterable[str] = (),
        packed_keys: bool = True,
        priority: bool = False,
        analytic_workers: int | str | None = "auto",
        analytic_queue: bool = False,
        isolation_level: str | IsolationLevel = IsolationLevel.SNAPSHOT,
    ) -> None:
        faults = frozenset(faults)
        unknown = faults - FAULTS
        if unknown:
            raise InterfaceError(f"unknown fault(s) {', '.join(sorted(unknown))}; debug faults are {', '.join(sorted(FAULTS))}")
        # The default level of this connection's transactions (tique/isolation.py).
        self._isolation = supported(parse_level(isolation_level))
        self._read_only = False  # SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY
        self.url = url
        self._backend = open_database(url, packed_keys=packed_keys)
        try:
            self._raw = self._backend.open()
        except Exception as error:
            raise self._backend.translate(error, f"connect to {redact(url)}") from error
        if not (analytic_workers is None or analytic_workers == "auto" or (isinstance(analytic_workers, int) and analytic_workers >= 1)):
            self._backend.close_raw(self._raw)
            raise InterfaceError(f"analytic_workers must be a positive number of workers, 'auto' or None, not {analytic_workers!r}")
        if not isinstance(analytic_queue, bool):
            self._backend.close_raw(self._raw)
            raise InterfaceError(f"analytic_queue must be True or False, not {analytic_queue!r}")
        self._raw.analytic_workers = analytic_workers
        self._raw.analytic_queue = analytic_queue
        self._autocommit = autocommit
        self.buffered_writes = buffered_writes
        self.snapshot_formulation = Formulation(snapshot)
        if self.snapshot_formulation is Formulation.STORAGE:  # tique's own choice per statement, never a setting
            raise ValueError("snapshot must be 'auto', 'rank' or 'scan'")
        self.static_tables = frozenset(t.lower() for t in static_tables)
        self.faults = faults
        self._last_commit_ts: int | None = None  # read by the early-visibility fault only
        self.commit_timeout = commit_timeout
        # Priority mode (paper 2.3.4): a transaction that fails certification is re-executed
        # once on a fresh snapshot while holding a reservation on its keys. Settable per
        # transaction; it assumes the statements, run again, write the same keys.
        self.priority = priority
        self.priority_retries = 0  # re-executions that committed
        self.commit_pause: CommitPause | None = None  # debug fault for tests (tique/transaction.py)
        self._txn_holder: list[Transaction | None] = [None]
        # Set when a statement of an explicit transaction failed: the transaction is gone,
        # and statements raise until rollback() (commit() raises and clears it).
        self._failed: str | None = None
        self._plans: dict[tuple[str, Formulation], Plan] = {}
        self._catalog: dict[str, TableDef] = {}
        self._catalog_version: int | None = None
        self._reloaded = False  # the last _begin() reloaded the catalog
        self._snapshot = CatalogSnapshot.of({})  # what planning reads: see _refresh_catalog_key
        self._fold_snapshot = False  # the running read computes its READ COMMITTED snapshot itself
        self.closed = False
        self._finalizer = weakref.finalize(self, _release, self._backend, self._raw, self._txn_holder)
        try:
            self._setup()
        except BaseException as error:
            self._finalizer()
            if isinstance(error, Exception) and not isinstance(error, errors.Error):
                raise self._backend.translate(error, f"connect to {redact(url)}") from error
            raise
        if checkpoint_interval_ms is not None:
            from tique.checkpoint import ensure_background_checkpointer
            ensure_background_checkpointer(self._backend, checkpoint_interval_ms / 1000.0)

    # -- setup ----------------------------------------------------------------
    def _setup(self) -> None:
        backend = self._backend
        with backend.setup_lock:
            if not backend.installed:
                backend.install(self._raw)
                self._load_catalog()
                recover(backend, self._raw, list(self._catalog.values()), force=False, first_open=True)
                backend.installed = True
            else:
                recover(backend, self._raw, [], force=False, first_open=False)
        self._load_catalog()

    def _load_catalog(self, version: int | None = None) -> None:
        # The version first: a schema change committing in between makes the next begin
        # reload again, never skip a reload.
        self._catalog_version = self._backend.catalog_version(self._raw) if version is None else version
        rows = self._backend.rows(self._raw, "SELECT name, ddl FROM tq_tables", [])
        self._catalog_ddl = dict(rows)
        self._catalog = self._backend.catalog_tables(self._raw, rows)
        self._objects_ddl: dict[str, tuple[str, str | None, str]] = {}
        self._objects: dict[str, ddl.TiqueObject] = {}
        for name, kind, on_table, text in self._backend.rows(self._raw, "SELECT name, kind, on_table, ddl FROM tq_objects", []):
            self._learn_object(name, kind, on_table, text)
        self._refresh_catalog_key()
        self._plans.clear()

    def _learn_object(self, name: str, kind: str, on_table: str | None, text: str) -> None:
        self._objects_ddl[name] = (kind, on_table, text)
        self._objects[name] = ddl.parse_object(name, kind, on_table, text, self._backend.dialect)

    def _refresh_catalog_key(self) -> None:
        """What plans depend on: the tables' and the views' and indexes' definitions."""
        self._catalog_key = frozenset(self._catalog_ddl.items()) | frozenset(self._objects_ddl.items())
        self._snapshot = CatalogSnapshot.of(self._catalog, self._objects, self._catalog_key, self._backend.dialect)

    def _catalog_changed(self) -> bool:
        """Reloads the catalog when another client created, dropped or redefined a table since we read it."""
        rows = dict(self._backend.rows(self._raw, "SELECT name, ddl FROM tq_tables", []))
        if rows == self._catalog_ddl:
            return False
        self._reload_catalog()
        return True

    @property
    def _commit_sql(self) -> CommitStatements:
        return _shared_commit_statements(self._backend)

    def _lookup(self, name: str) -> TableDef | None:
        return self._catalog.get(name)

    @property
    def tables(self) -> dict[str, TableDef]:
        """The tique tables this connection knows, by name."""
        return dict(self._catalog)

    @property
    def backend(self) -> Backend:
        return self._backend

    # -- properties -----------------------------------------------------------
    @property
    def _txn(self) -> Transaction | None:
        return self._txn_holder[0]

    @_txn.setter
    def _txn(self, value: Transaction | None) -> None:
        old = self._txn_holder[0]
        if old is not None and old is not value and old.noted:
            # Ends the transaction's writing for the CacheState; callers clear it only
            # once its engine transaction is committed or being rolled back.
            state = self._backend.cache_state
            if state is not None:
                state.done(old.noted)
                state.ended(old.txid)
            old.noted = set()
        self._txn_holder[0] = value

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        self._check_open()
        if value and self._txn is not None:
            self.commit()
        self._autocommit = bool(value)

    @property
    def isolation_level(self) -> IsolationLevel:
        """The level new transactions run at, unless they choose their own (SET TRANSACTION,
        BEGIN ... ISOLATION LEVEL); see tique/isolation.py."""
        return self._isolation

    @isolation_level.setter
    def isolation_level(self, value: str | IsolationLevel) -> None:
        self._check_open()
        level = supported(parse_level(value))
        if self._txn is not None and self._txn.used:
            raise ProgrammingError("cannot change isolation_level inside a transaction that has run a statement; commit or roll back first")
        self._isolation = level

    @property
    def counters(self) -> Counters:
        """What this connection has cost its engine so far (round trips, engine commits,
        engine time): subtract two readings to cost a transaction."""
        return self._raw.counters.copy()

    @property
    def transaction_failed(self) -> bool:
        """A statement failed and aborted the transaction; statements raise until rollback()."""
        return self._failed is not None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("connection is closed")

    # -- PEP 249 --------------------------------------------------------------
    def cursor(self) -> Cursor:
        self._check_open()
        return Cursor(self)

    def commit(self) -> None:
        self._check_open()
        if self._failed is not None:
            self._failed = None
            raise errors.InFailedTransaction("the transaction was rolled back because an earlier statement in it failed; nothing of it was committed")
        txn = self._txn
        if txn is None:
            return
        try:
            self._commit_or_abandon(txn)
        except errors.SerializationFailure as failure:
            if not (self.priority and txn.statements and getattr(failure, "lost_certification", False)):
                raise
            self._reexecute(txn)

    def _commit_or_abandon(self, txn: Transaction) -> None:
        """Commits `txn`; a failed commit leaves no transaction open on this connection."""
        try:
            self._commit_transaction(txn)
        except errors.SerializationFailure as failure:
            self._txn = None
            self._quietly(lambda: self._log_rolled_back(txn))
            if txn.schema_changed:
                self._schema_change_lost(txn, failure)
            raise
        except BaseException as error:
            self._abandon(txn)
            if isinstance(error, Exception) and not isinstance(error, errors.Error):
                raise self._backend.translate(error, "COMMIT") from error
            raise
        self._txn = None
        self._schema_change_over(txn, committed=True)

    def _commit_transaction(self, txn: Transaction) -> None:
        if isinstance(txn.txid, Unbound):  # its begin never left: it did nothing
            self._abandon(txn)
            return
        if txn.buffered:
            self._flush_buffered(txn)
        if txn.schema_changed:
            self._backend.catalog_committing()
        reads = self._reads_to_certify(txn)
        if txn.schema_changed and (txn.written or reads is not None):
            # Decided before the engine commit that makes the schema change permanent.
            tables = [self._catalog[name] for name in sorted(txn.written)]
            self._last_commit_ts = commit_schema_change(self._backend, self._raw, txn, tables, self._commit_sql, self.commit_timeout,
                                                        self.faults, reads, self.commit_pause)
            return
        if txn.engine_open and not txn.written:  # writes that wrote nothing: nothing to commit
            txn.engine_open = False
            with step(self._raw, "engine commit"):
                if txn.schema_changed:  # but a schema change to commit
                    self._backend.commit_engine(self._raw)
                else:
                    self._backend.rollback_engine(self._raw)
        if txn.shared_set and not txn.written and not txn.engine_open:
            self._open_engine_transaction(txn)  # a FOR SHARE reader commits like a writer of nothing
        if txn.flushed and not txn.engine_open:
            self._open_engine_transaction(txn)  # its write-set commits in an engine transaction
        if txn.written or txn.shared_set:
            tables = [self._catalog[name] for name in sorted(txn.written)]
            self._last_commit_ts = commit_writer(self._backend, self._raw, txn, tables, self._commit_sql, self.commit_timeout, self.faults,
                                                 reads, self.commit_pause)
        elif txn.reserved_cts is not None:  # a re-execution that wrote nothing gives its timestamp back
            release(self._backend, self._raw, txn.txid, txn.reserved_cts, self.commit_timeout)
        else:
            with step(self._raw, "end"):
                self._backend.oracle.end(self._raw, txn.txid)

    def _reads_to_certify(self, txn: Transaction) -> ReadsToCertify | None:
        """A SERIALIZABLE writer's read-set and the rows read FOR SHARE, to log and certify at
        commit (tique/read_sets.py)."""
        if txn.read_set is None and txn.shared_set is None:
            return None  # SNAPSHOT writers without FOR SHARE: nothing to certify
        reads = ReadSet()
        if txn.read_set is not None and not self.faults & {"no-read-certify", "no-certify"}:
            reads = reads.merge(txn.read_set)
        if txn.shared_set is not None and "no-certify" not in self.faults:
            reads = reads.merge(txn.shared_set)
        if not reads:
            return None
        # A table the transaction dropped is certified as it read it (others write that one).
        tables = {**self._catalog, **txn.dropped}
        keyed = [(tables[name], key) for name, key in reads.keyed()
                 if name in tables and storable(tables[name], key, self._backend.dialect)]
        scanned = [tables[name] for name in sorted(reads.scans) if name in tables]
        return ReadsToCertify(keyed, scanned)

    def _reexecute(self, failed: Transaction) -> None:
        """Priority mode's one retry: reserve the failed write-set, run the statements again
        on a fresh snapshot, commit with the reserved timestamp. A second failure raises."""
        retry = self._txn = reserve(self._backend, self._raw, failed, self._commit_sql, self.commit_timeout)
        retry.level = failed.level
        assert retry.reserved_cts is not None
        try:
            for sql, params in failed.statements or []:
                self._execute(sql, params)
        except BaseException:
            self._txn = None
            self._failed = None
            try:
                if retry.engine_open:
                    retry.engine_open = False
                    self._backend.rollback_engine(self._raw)
            finally:
                release(self._backend, self._raw, retry.txid, retry.reserved_cts, self.commit_timeout)
            raise
        self._commit_or_abandon(retry)
        self.priority_retries += 1

    def rollback(self) -> None:
        self._check_open()
        self._failed = None
        txn = self._txn
        if txn is not None:
            self._abandon(txn)

    def _abandon(self, txn: Transaction) -> None:
        """Rolls back: the engine transaction holding the writes, then the oracle's record."""
        self._txn = None
        if isinstance(txn.txid, Unbound):  # its begin never left: nothing to end
            self._backend.unfold_begin(self._raw)
            if txn.engine_open:
                txn.engine_open = False
                self._backend.rollback_engine(self._raw)
            return
        try:
            try:
                if txn.engine_open:
                    txn.engine_open = False
                    with step(self._raw, "engine rollback"):
                        self._backend.rollback_engine(self._raw)
                self._log_rolled_back(txn)
            finally:
                self._schema_change_over(txn, committed=False)
            if txn.reserved_cts is not None:
                release(self._backend, self._raw, txn.txid, txn.reserved_cts, self.commit_timeout)
            else:
                with step(self._raw, "end"):
                    self._backend.oracle.end(self._raw, txn.txid)
        except Exception as error:
            raise self._backend.translate(error, "ROLLBACK") from error

    def _fail(self, txn: Transaction) -> None:
        """A statement of an explicit transaction failed: as natively, the whole
        transaction is rolled back and later statements raise until ROLLBACK."""
        try:
            self._abandon(txn)
        finally:
            self._failed = "failed"

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._txn is not None:
                self.rollback()
        finally:
            self.closed = True
            self._finalizer()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.closed:
            return
        try:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()

    # -- execution ------------------------------------------------------------
    def _plan(self, sql: str, formulation: Formulation | None = None) -> Plan:
        formulation = formulation or self.snapshot_formulation
        key = (sql, formulation)
        plan = self._plans.get(key)
        if plan is None:
            # Every connection of the process that read the same catalog plans a text the
            # same way, so the plan is shared: many clients parse and rewrite it once.
            catalog = self._catalog_key
            shared_key = (sql, formulation, self.static_tables, catalog)
            plan = self._backend.shared_plans.get(shared_key)
            if plan is None:
                plan = self._plan_learning(sql, formulation)
                if self._catalog_key is catalog:  # planning met no table new to this connection
                    self._backend.shared_plans.put(shared_key, plan)
            self._plans[key] = plan
        return plan

    def _plan_learning(self, sql: str, formulation: Formulation) -> Plan:
        """Plans `sql` against the catalog snapshot; if it names tables or views the
        snapshot does not know that another client has created since, learns them and
        plans again against the new snapshot (planning itself never asks the engine)."""
        try:
            plan, unknown = plan_statement(sql, self._backend, self._snapshot, formulation, self.static_tables)
            failure: errors.Error | None = None
        except errors.Error as error:
            unknown, failure = getattr(error, "tq_unknown", frozenset()), error
        if [name for name in sorted(unknown) if self._learn(name)]:
            return make_plan(sql, self._backend, self._snapshot, formulation, self.static_tables)
        if failure is not None:
            raise failure
        return plan

    def _learn(self, name: str) -> bool:
        """Another client may have created the table or view `name` since we loaded the
        catalog: looks it up, and says whether it was found (and is now in the snapshot)."""
        if name in self._catalog or name in self._objects or name.startswith("tq_") or self._is_physical(name):
            return False
        named = ddl.named_as(self._backend)  # `name` as the engine matches names: DuckDB's without case
        rows = self._backend.rows(self._raw, f"SELECT 'table', ddl, NULL, name FROM tq_tables WHERE {named} "
                                             f"UNION ALL SELECT kind, ddl, on_table, name FROM tq_objects WHERE {named}", [name])
        if not rows:
            return False
        kind, text, on_table, name = rows[0]
        if kind == "table":
            self._catalog[name] = self._backend.catalog_tables(self._raw, [(name, text)])[name]
            self._catalog_ddl[name] = text
        else:
            self._learn_object(name, kind, on_table, text)
        self._refresh_catalog_key()
        return True

    def _is_physical(self, name: str) -> bool:
        for suffix in ("_storage", "_cache"):
            if name.endswith(suffix) and name[: -len(suffix)] in self._catalog:
                return True
        return False

    def _begin(self, fold: bool = False) -> Transaction:
        """Opens the tique transaction if none is; its begin also reads the catalog
        version (same round trip), and a moved version reloads the catalog, so the
        transaction plans against the schema as of its start (self._reloaded says so).
        With `fold`, the begin travels in the request of the transaction's first statement
        instead (see _first_statement)."""
        txn = self._txn
        self._reloaded = False
        if txn is None and fold:
            self._backend.fold_begin(self._raw)
            txn = self._txn = Transaction(UNBOUND_TXID, UNBOUND_STS, level=self._isolation, read_only=self._read_only)  # type: ignore[arg-type]
            return txn
        if txn is None:
            try:
                with step(self._raw, "begin"):
                    txid, sts, version = self._backend.begin(self._raw)
            except errors.Error:
                raise
            except Exception as error:
                raise self._backend.translate(error, "BEGIN") from error
            if "early-visibility" in self.faults and self._last_commit_ts is not None:
                # Debug fault: start below our own previous commit, once.
                sts, self._last_commit_ts = min(sts, self._last_commit_ts - 1), None
            txn = self._txn = Transaction(txid, sts, level=self._isolation, read_only=self._read_only)
            if version != self._catalog_version:
                try:
                    with step(self._raw, "catalog reload"):
                        self._reload_catalog(version)
                except BaseException as error:
                    self._abandon(txn)
                    if isinstance(error, Exception) and not isinstance(error, errors.Error):
                        raise self._backend.translate(error, "BEGIN") from error
                    raise
                self._reloaded = True
        return txn

    def _reload_catalog(self, version: int | None = None) -> None:
        """Another client changed the schema: the tables as the database now has them."""
        self._load_catalog(version)
        _forget_commit_statements(self._backend)

    def _latest_snapshot(self) -> int:
        """The snapshot a transaction beginning now would get (stale-snapshot fault only)."""
        try:
            txid, sts = self._backend.oracle.begin(self._raw)
            self._backend.oracle.end(self._raw, txid)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, "BEGIN") from error
        return sts

    def _execute_many(self, sql: str, rows: list[tuple]) -> int:
        """executemany: a one-row INSERT ... VALUES into a tique table goes out as one
        many-row insert (and one key check) per batch of rows; other statements run once
        per row. Under autocommit the whole call is one transaction, so a row the engine
        refuses leaves none of the others written. Returns the rowcount (-1: unknown)."""
        plan = self._plan(sql) if self._failed is None else None
        per_batch = batch_rows(plan) if plan is not None else 0
        if not per_batch or not rows:
            total, counted = 0, True
            for params in rows:
                _, _, count = self._execute(sql, params)
                counted = counted and count >= 0
                total += max(count, 0)
            return total if counted else -1
        assert isinstance(plan, WritePlan)
        # As in a loop of executes, the rows before one with a wrong number of values are
        # written, and that row raises execute's client-side error (the transaction stays).
        malformed = next((i for i, params in enumerate(rows) if len(params) != plan.params), len(rows))
        implicit = self._autocommit and self._txn is None
        if implicit and malformed:
            self._begin()
        try:
            total = 0
            for first in range(0, malformed, per_batch):
                chunk = rows[first:min(first + per_batch, malformed)]
                _, _, count = self._execute(sql, tuple(v for row in chunk for v in row), batch=len(chunk))
                total += count
        except BaseException:
            if implicit:  # the failed statement rolled the transaction back; no failed state to keep
                self._failed = None
                if self._txn is not None:
                    self._abandon(self._txn)
            raise
        if implicit and malformed:
            self.commit()
        if malformed < len(rows):
            self._execute(sql, rows[malformed])  # raises the parameter count mismatch
        return total

    def _execute(self, sql: str, params: tuple, batch: int = 0) -> tuple[Any, tuple | None, int]:
        """Runs one statement; `batch` > 0: `params` are that many rows of a one-row
        INSERT ... VALUES, run as one many-row insert (executemany)."""
        if self._failed is not None:
            plan = self._plan(sql)
            if not (isinstance(plan, ControlPlan) and plan.action in ("commit", "rollback")):
                raise errors.InFailedTransaction(describe(sql, "current transaction is aborted: an earlier statement in it failed, so commands are ignored until ROLLBACK"))
        try:
            try:
                return self._execute_once(sql, params, batch)
            except ProgrammingError as error:
                if not self._replan_after(error, sql):
                    raise
            return self._execute_once(sql, params, batch)
        except BaseException as error:
            # As natively (PostgreSQL, DuckDB, MonetDB), a failed statement aborts the
            # open transaction, whatever failed; only a wrong parameter count, caught
            # before anything ran, leaves it be (as psycopg's client-side check does).
            txn = self._txn
            if txn is not None and not getattr(error, "tq_client_side", False):
                self._fail(txn)
            raise

    def _fetch_failed(self, error: Exception, statement: str) -> errors.Error:
        """An engine error raised while fetching a result, as tique's; as natively, it
        aborts the open transaction like any failed statement."""
        translated = self._backend.translate(error, statement)
        txn = self._txn
        if txn is not None:
            self._fail(txn)
        return translated

    def _replan_after(self, error: ProgrammingError, sql: str) -> bool:
        """Plans follow the catalog as this connection last read it; if another client has
        since dropped or redefined a table, plan again from the database and retry once.
        Only while no engine transaction is open: a failed statement then left nothing
        behind, so running it again in the same tique transaction is safe. Never COMMIT:
        its transaction is gone, and a second try would report success."""
        txn = self._txn
        if txn is not None and txn.engine_open:
            return False
        if isinstance(self._plans.get((sql, self.snapshot_formulation)), ControlPlan):
            return False
        try:
            return self._catalog_changed()
        except Exception:
            return False

    def _planned(self, sql: str, batch: int) -> Plan:
        """The statement's plan; with `batch`, the many-row insert of that many rows."""
        plan = self._plan(sql)
        if batch:
            if not batch_rows(plan):  # another client redefined the table since executemany planned it
                raise InterfaceError(describe(sql, "the table changed during executemany; run it again"))
            assert isinstance(plan, WritePlan)
            plan = batched(plan, batch)
        return plan

    def _execute_once(self, sql: str, params: tuple, batch: int = 0) -> tuple[Any, tuple | None, int]:
        plan = self._planned(sql, batch)
        if isinstance(plan, ControlPlan):
            return self._control(plan), None, -1
        if isinstance(plan, (CreatePlan, DropPlan, ObjectPlan)):
            return self._ddl(plan, sql), None, -1
        if len(params) != plan.params:
            mismatch = ProgrammingError(describe(sql, f"the statement has {plan.params} parameter marker(s) but {len(params)} value(s) were given"))
            mismatch.tq_client_side = True  # type: ignore[attr-defined]
            raise mismatch
        if isinstance(plan, NativePlan):
            return self._run(sql, plan.statement.sql, plan.statement.values(params, {}))
        if isinstance(plan, CreateAsPlan):
            return self._create_as(plan, sql, params), None, -1
        implicit = self._autocommit and self._txn is None
        begun_now = self._txn is None
        self._fold_snapshot = False
        fold = (begun_now and self._backend.folds_begin and not self.faults
                and not (self.buffered_writes and not self._autocommit and not isinstance(plan, ReadPlan)))
        txn = self._begin(fold)
        if self._reloaded:  # planned against a catalog the transaction's begin found outdated
            plan = self._planned(sql, batch)
            if isinstance(plan, NativePlan):  # its tables are no tique tables any more
                native = plan
                return self._statement_transaction(txn, implicit, lambda: self._run(sql, native.statement.sql, native.statement.values(params, {})))
        if txn.level is IsolationLevel.READ_COMMITTED:
            self._statement_snapshot(txn, plan, begun_now)
        elif "stale-snapshot" in self.faults:  # debug fault: read the latest data, not the snapshot
            txn.read_sts = self._latest_snapshot()
        if self.priority and not implicit:
            if txn.statements is None:
                txn.statements = []
            if batch:  # a re-execution runs the batch's rows one by one
                width = len(params) // batch
                txn.statements.extend((sql, params[k * width:(k + 1) * width]) for k in range(batch))
            else:
                txn.statements.append((sql, params))
        txn.used = True
        if fold:
            return self._statement_transaction(txn, implicit, lambda: self._first_statement(plan, params, txn, sql, batch))
        return self._statement_transaction(txn, implicit, lambda: self._read_or_write(plan, params, txn, sql))

    def _first_statement(self, plan: Plan, params: tuple, txn: Transaction, sql: str, batch: int) -> tuple[Any, tuple | None, int]:
        """A transaction's first statement, its begin folded into its (first) request: the
        statement binds the transaction's id and start timestamp as Unbound values, which
        the engine takes from the begin that ran just before it. Once the request is back,
        the transaction takes the begin's values. If the begin did not run, there is no
        transaction. If it found the catalog moved, the statement was planned against an
        outdated schema: whatever it did is undone (its writes' engine transaction rolled
        back; a read has no effect) and it runs again, planned afresh, in the same
        transaction (as _begin's reload does before a statement)."""
        try:
            outcome = self._read_or_write(plan, params, txn, sql)
            failure: BaseException | None = None
        except BaseException as error:
            failure = error
        begun = self._backend.folded_begun(self._raw)
        if begun is None:
            self._backend.unfold_begin(self._raw)
            if failure is not None:
                self._txn = None
                if txn.engine_open:
                    txn.engine_open = False
                    self._quietly(lambda: self._backend.rollback_engine(self._raw))
                raise failure
            try:  # the statement sent nothing, so it depends on no begin: begin as usual
                begun = self._backend.begin(self._raw)
            except BaseException as error:
                self._txn = None
                if isinstance(error, Exception) and not isinstance(error, errors.Error):
                    raise self._backend.translate(error, "BEGIN") from error
                raise
        txid, sts, version = begun
        txn.txid, txn.sts = txid, sts
        if txn.write_sts is UNBOUND_STS:  # type: ignore[comparison-overlap]
            txn.write_sts = sts
        if version == self._catalog_version:
            if failure is not None:
                raise failure
            return outcome
        if txn.engine_open:
            txn.engine_open = False
            self._backend.rollback_engine(self._raw)
        txn.written.clear()
        txn.next_seq, txn.write_sts, txn.read_set, txn.shared_set = 1, None, None, None
        self._reload_catalog(version)
        plan = self._planned(sql, batch)
        if isinstance(plan, NativePlan):  # its tables are no tique tables any more
            return self._run(sql, plan.statement.sql, plan.statement.values(params, {}))
        return self._read_or_write(plan, params, txn, sql)

    @staticmethod
    def _quietly(action: Callable[[], object]) -> None:
        try:
            action()
        except Exception:
            pass

    def _statement_snapshot(self, txn: Transaction, plan: Plan, begun_now: bool) -> None:
        """READ COMMITTED: the statement reads the newest snapshot. A transaction begun by
        this statement has just taken it; a read, and a write after the transaction's
        first, carry it in their own SQL where the backend can (PostgreSQL); other
        statements ask the oracle
        (no round trip on DuckDB, whose oracle is in process). Never older than the
        transaction's previous statement's snapshot. On DuckDB and MonetDB, once the
        transaction has written, the engine transaction holding its writes sees no commit
        after it began: _fresh_engine_snapshot commits it first when the snapshot moved."""
        self._fold_snapshot = False
        if begun_now:
            return
        if txn.engine_open and not self._backend.engine_reads_later_commits:
            self._fresh_engine_snapshot(txn)
            return
        if self._backend.statement_snapshot_expression() is not None and (
                (isinstance(plan, ReadPlan) and plan.source is not None) or (isinstance(plan, WritePlan) and txn.write_sts is not None)):
            # Read by the statement itself when it starts: as new as one fetched before it.
            # Not by a transaction's first write, whose snapshot certification needs.
            self._fold_snapshot = True
            return
        txn.read_sts = max(self._newest_snapshot(), txn.statement_sts)

    def _newest_snapshot(self) -> int:
        """The oracle's newest published snapshot, in one round trip."""
        try:
            with step(self._raw, "snapshot"):
                return self._backend.oracle.statement_snapshot(self._raw)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, "BEGIN") from error

    def _fresh_engine_snapshot(self, txn: Transaction) -> None:
        """READ COMMITTED, a statement after a write, on an engine whose transaction reads
        the database as of its begin (DuckDB, MonetDB): the engine transaction holding the
        writes began after the snapshot of the statement that opened it was published, so
        it sees every commit up to that snapshot and none after. If the oracle has moved
        past it, the writes so far are committed to the caches in that engine transaction
        (invisible to others: no outcome row names them until the transaction commits) and
        the statement runs outside it, or in a new one if it writes, which sees the newest
        snapshot. A schema change in the engine transaction must not commit before the
        transaction does: such a transaction keeps reading as of its first write."""
        if txn.schema_changed or not txn.written or txn.buffered:
            return
        fresh = self._newest_snapshot()
        if fresh <= txn.statement_sts:
            return  # nothing committed since the engine transaction began
        txn.flushed = True  # before the commit: if it fails, a rollback still logs the txid
        txn.engine_open = False
        try:
            with step(self._raw, "engine commit"):
                self._backend.commit_engine(self._raw)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, "COMMIT") from error
        txn.read_sts = fresh

    def _log_rolled_back(self, txn: Transaction) -> None:
        """A transaction whose writes were committed to the caches ended without committing:
        its txid in tq_rolled_back makes the checkpointer purge them (recovery does the same
        after a crash). They were never visible to anyone else: no outcome row names them."""
        if txn.flushed:
            txn.flushed = False
            rolled_back = self._commit_sql.rolled_back
            with step(self._raw, "log rollback"):
                self._backend.execute(self._raw, rolled_back.sql, rolled_back.values((), {"tq_txid": txn.txid}))

    def _statement_transaction(self, txn: Transaction, implicit: bool, run: Callable[[], tuple[Any, tuple | None, int]]) -> tuple[Any, tuple | None, int]:
        """Runs a statement of `txn`; an implicit (autocommit) transaction ends with it:
        rolled back if it failed, committed if not."""
        try:
            outcome = run()
        except BaseException:
            if implicit:
                self._abandon(txn)
            raise
        if implicit:
            self.commit()
        return outcome

    def _read_or_write(self, plan: Plan, params: tuple, txn: Transaction, sql: str) -> tuple[Any, tuple | None, int]:
        if txn.read_only and not isinstance(plan, ReadPlan):
            verb = sql.split(None, 1)[0].upper() if sql.strip() else "a write"
            raise errors.InternalError(describe(sql, f"cannot execute {verb} in a read-only transaction"))
        if txn.level is IsolationLevel.SERIALIZABLE:
            shape = plan.read.reads if isinstance(plan, LockingReadPlan) else plan.reads
            self._note_reads(txn, shape, params)
        if isinstance(plan, LockingReadPlan) and (plan.shared.scans or plan.shared.points):
            if txn.shared_set is None:
                txn.shared_set = ReadSet()
            txn.shared_set.note(plan.shared, params)
        if isinstance(plan, LockingReadPlan):
            for lock in plan.locks:  # the rows read become writes first (tique/rewrite/locks.py)
                self._write(lock, params, txn, sql)
            plan = plan.read
        if isinstance(plan, ReadPlan):
            # A read that needs this transaction's uncommitted writes runs on the
            # session holding them; others may run where analytics run best.
            analytic = plan.analytic and not (txn.engine_open and txn.written.intersection(plan.tables))
            statement = self._read_statement(plan, txn, params, sql, analytic)
            result = self._run(sql, statement.sql, statement.values(params, txn.context()), analytic, plan.probing)
            if result[1] is None and result[2] < 0:  # neither rows nor a count of rows written
                raise self._no_result_set(sql)
            return result
        assert isinstance(plan, WritePlan)
        return self._write(plan, params, txn, sql)

    @staticmethod
    def _note_reads(txn: Transaction, shape: ReadShape, params: tuple) -> None:
        """SERIALIZABLE: what the statement reads joins the transaction's read-set."""
        if txn.read_set is None:
            txn.read_set = ReadSet()
        txn.read_set.note(shape, params)

    def _read_statement(self, plan: ReadPlan, txn: Transaction, params: tuple, sql: str, analytic: bool = False) -> Compiled:
        """The read's statement, reading from storage directly the tables whose caches are
        known empty (an embedded engine's CacheState, or the engine asked by an analytical
        read that runs on the analytical session: _empty_caches), and those it reads one
        key of that no transaction has versions of in the cache (a variant planned once
        per set of such tables)."""
        if self._fold_snapshot:
            return self._read_at_statement_snapshot(plan, sql)
        state = self._backend.cache_state
        if state is None and plan.source is not None and self._backend.counts_caches and analytic:
            clean = self._empty_caches(plan, txn)
            return plan.variant(clean) if clean else self._snapshot_read(plan, txn, sql, params)
        if state is None or plan.source is None:
            return self._snapshot_read(plan, txn, sql, params)
        since = txn.engine_epoch if txn.engine_open else None
        clean = state.clean(since=since).intersection(plan.tables) - txn.written
        points = read_keys(self._backend.shared_plans, (sql, self.snapshot_formulation, self.static_tables, self._catalog_key),
                           plan.source, self._snapshot, self._backend.dialect, params)
        clean |= {name for name, key in points.items() if name not in clean and state.keys_clean(name, (key,), since)}
        return plan.variant(frozenset(clean))

    def _snapshot_read(self, plan: ReadPlan, txn: Transaction, sql: str, params: tuple) -> Compiled:
        """The read through every table's snapshot; without the transaction's own versions
        where it has written none of the caches, or of the keys, it reads
        (tique/rewrite/own_versions.py)."""
        committed = plan.without_own_versions()
        if committed is None or txn.buffered:
            return plan.statement
        points: dict[str, list[Key]] = {}
        if not committed[1].isdisjoint(txn.own_versions):
            assert plan.source is not None
            found = read_keys(self._backend.shared_plans, (sql, self.snapshot_formulation, self.static_tables, self._catalog_key),
                              plan.source, self._snapshot, self._backend.dialect, params)
            for name, key in found.items():
                table = self._snapshot.table(name)
                if table is not None:
                    points[table.cache] = [key]
        return committed[0] if unaffected(txn.own_versions, committed[1], points) else plan.statement

    def _empty_caches(self, plan: ReadPlan, txn: Transaction) -> frozenset[str]:
        """The tables of an analytical read (on the analytical session, which holds no
        engine transaction) that it may read from storage alone: those whose caches the
        engine, asked on that session after this transaction's begin, finds without a
        row, and that this transaction has not written.

        Why storage alone is then the snapshot: every transaction with a commit timestamp
        at or below this one's start timestamp had appended its versions to the caches
        before that snapshot was published, so before the begin, and the count comes
        after it; a cache without a row has had all of them moved to storage and purged
        by the checkpointer. And storage holds nothing newer than the snapshot, then or
        later: the checkpointer moves only versions at or below the stable timestamp,
        which stays at or below the start timestamp of every running transaction, this
        one's included (tique/checkpoint.py). Rows appended to the cache after the count
        are of transactions this one cannot see (they commit later, above its snapshot),
        and its own writes are excluded (txn.written)."""
        if isinstance(txn.txid, Unbound) or isinstance(txn.sts, Unbound):
            return frozenset()  # the begin has not run yet: nothing can be decided
        caches = {}
        for name in plan.tables:
            table = self._snapshot.table(name)
            if table is not None and name not in txn.written:
                caches[name] = table.cache
        if not caches:
            return frozenset()
        try:
            with step(self._raw, "empty caches"):
                return self._backend.empty_caches(self._raw, caches)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, "SELECT") from error

    def _read_at_statement_snapshot(self, plan: ReadPlan, sql: str) -> Compiled:
        """READ COMMITTED: the read with the oracle's newest snapshot computed in its own
        SQL (never below the transaction's last one, still bound), planned once per read."""
        assert plan.source is not None
        found = plan.variants.get(_AT_STATEMENT_SNAPSHOT)
        if found is None:
            context = passes.PassContext(self._snapshot, self._backend.dialect, self.snapshot_formulation, self._backend.key_hash,
                                         sql, lateral=self._backend.lateral_point_reads)
            tree = passes.run(passes.READ, plan.source.copy(), context)
            newest = self._backend.statement_snapshot_expression()
            assert newest is not None
            for marker in [p for p in tree.find_all(exp.Placeholder) if p.this == "tq_sts"]:
                marker.replace(exp.Greatest(this=exp.cast(marker.copy(), "BIGINT"), expressions=[newest.copy()]))
            found = plan.variants[_AT_STATEMENT_SNAPSHOT] = self._backend.compile(tree, owned=True)
        return found

    def _run(self, statement: str, engine_sql: str, values: list, analytic: bool = False, probing: bool = False) -> tuple[Any, tuple | None, int]:
        try:
            if analytic:
                cur = self._backend.execute(self._raw, engine_sql, values, analytic)
            elif probing:
                cur = self._backend.execute(self._raw, engine_sql, values, probing=True)
            else:
                cur = self._backend.execute(self._raw, engine_sql, values)
            description = self._backend.description(cur)  # may ask the engine (MonetDB's native names)
        except Exception as error:
            raise self._backend.translate(error, statement) from error
        if description is not None:
            rowcount = getattr(cur, "rowcount", -1)
            return cur, description, rowcount if isinstance(rowcount, int) else -1
        return None, None, self._affected(cur)

    def _no_result_set(self, statement: str) -> errors.NotSupportedError:
        """A query the engine answered with no result set at all. MonetDB (11.45) does so
        for some plans (ordered, limited or set-operation queries over outer joins and
        derived tables: fuzz/departures.py, monetdb-select-without-resultset), natively
        too; a query always has a result, so passing the empty answer on as a write's
        would be a wrong answer. Nothing was written: it is refused. (A read that writes a
        native table, INSERT INTO native SELECT ..., answers with its count of rows.)"""
        engine = {"monetdb": "MonetDB", "duckdb": "DuckDB", "postgres": "PostgreSQL"}.get(self._backend.dialect, self._backend.dialect)
        return errors.NotSupportedError(describe(
            statement, f"{engine} answered this query with no result set, which it does for some query shapes "
                       "(an engine defect), so tique cannot give its answer; rewrite the query, for example "
                       "without its ORDER BY ... LIMIT or its outer join"))

    def _affected(self, cur: Any) -> int:
        try:
            return self._backend.affected(cur)
        except Exception:
            return -1

    def _write(self, plan: WritePlan, params: tuple, txn: Transaction, statement: str) -> tuple[Any, tuple | None, int]:
        if txn.level is IsolationLevel.READ_COMMITTED and txn.write_sts is None:
            txn.write_sts = txn.statement_sts  # the write rule's timestamp (tique/transaction.py)
        context = txn.write_context()
        if self._fold_snapshot:
            plan = self._write_at_statement_snapshot(plan)
        if self.buffered_writes and not self._autocommit:
            txn.buffered.append(BufferedWrite(plan, params, context, statement))
            return None, None, -1
        self._open_engine_transaction(txn)
        rows = self._rows_in(statement, params)
        clean_keys = self._note_writing(txn, plan.table, statement, params, rows)
        key_check = None
        storage_plan = self._plan(statement, Formulation.STORAGE) if clean_keys is not None else None
        if rows > 1 and isinstance(storage_plan, WritePlan):
            # An executemany batch: the storage plan's insert of that many rows, as _planned
            # makes the batch's own plan (TPC-C's order lines: one check by key, not the
            # engine's key check over the cache rows just written).
            storage_plan = batched(storage_plan, rows) if batch_rows(storage_plan) else None
        # Storage alone answers for keys without cached versions, but not for UNIQUE and
        # CHECK counts, which the validating read carries beside the key check.
        if isinstance(storage_plan, WritePlan) and storage_plan.params == plan.params and not storage_plan.violations:
            assert clean_keys is not None
            plan = storage_plan
            if plan.validation is not None and all(len(k) == len(plan.table.key) for k in clean_keys):
                # New keys of which no version is cached: checked here against storage by
                # key, not by the engine against the cache rows just written.
                plan, key_check = dataclasses.replace(plan, validation=None), clean_keys
        keys, alone = self._written_keys(plan.table, statement, params, rows)
        if plan.committed is not None and not txn.buffered and unaffected(
                txn.own_versions, plan.committed[1], {plan.table.cache: keys} if alone and keys is not None else {}):
            plan = plan.committed[0]  # no versions of ours that it reads (tique/rewrite/own_versions.py)
        note_written(txn.own_versions, plan.table.cache, keys)  # before it runs: a failure may leave its rows
        try:
            with step(self._raw, "write + validate" if plan.validation is not None else "write"):
                count = run_write(self._backend, self._raw, plan, params, context, statement)
            if key_check is not None:
                with step(self._raw, "key check"):
                    self._check_new_keys(plan.table, key_check, statement)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, statement) from error
        txn.written.add(plan.table.name)
        return None, None, count

    def _write_at_statement_snapshot(self, plan: WritePlan) -> WritePlan:
        """READ COMMITTED, after the transaction's first write: the write's statements with
        the oracle's newest snapshot read by each when it starts (PostgreSQL). Each is at
        or above the first write's snapshot, which certification counts from."""
        fold = self._backend.at_statement_snapshot
        inserts = tuple(fold(c) or c for c in plan.inserts)
        validation = (fold(plan.validation) or plan.validation) if plan.validation is not None else None
        return dataclasses.replace(plan, inserts=inserts, validation=validation, rows=None, batches={})

    def _check_new_keys(self, table: TableDef, keys: list[Key], statement: str) -> None:
        """Raises IntegrityError if `keys`, none of which has versions in the cache, repeat
        one another or a key storage holds."""
        shape = ("storage key check", table)  # one text per table, whatever the number of keys
        compiled = self._backend.shared_plans.get(shape)
        if compiled is None:
            compiled = self._backend.compile(storage_key_query(table))
            self._backend.shared_plans.put(shape, compiled)
        values = storage_key_values(table, keys)
        present = {tuple(row) for row in self._backend.rows(self._raw, compiled.sql, compiled.values((), values))}
        repeated = len(keys) - len(set(keys)) + len(set(keys) & present)
        if repeated:
            raise key_violation(table, statement, repeated)

    def _rows_in(self, statement: str, params: tuple) -> int:
        """How many rows of `statement`'s parameters `params` holds: executemany sends a
        one-row INSERT's rows as one batch."""
        single = self._plan(statement)
        if isinstance(single, WritePlan) and single.params and len(params) > single.params:
            return len(params) // single.params
        return 1

    def _written_keys(self, table: TableDef, statement: str, params: tuple, rows: int = 1) -> tuple[list[Key] | None, bool]:
        """The keys the write appends versions of (None: not known from its text), and
        whether its target is the only tique table it reads (point_keys.written_keys)."""
        if not self._backend.reads_without_own_versions:
            return None, False
        return self._keys_of_rows(table, statement, params, rows)

    def _keys_of_rows(self, table: TableDef, statement: str, params: tuple, rows: int) -> tuple[list[Key] | None, bool]:
        """point_keys.written_keys over each row of a batch, which takes `width` of its
        parameters: None (and not alone) as soon as one row's keys are not known."""
        keys: list[Key] = []
        alone = True
        width = len(params) // rows
        for row in range(rows):
            found, row_alone = written_keys(self._backend.shared_plans, statement, table, self._snapshot,
                                            self._backend.dialect, params[row * width:(row + 1) * width])
            if found is None:
                return None, False
            keys.extend(found)
            alone = alone and row_alone
        return keys, alone

    def _note_writing(self, txn: Transaction, table: TableDef, statement: str, params: tuple, rows: int = 1) -> list[Key] | None:
        """Marks the table's cache, and the keys the write appends versions of, as
        written before anything is (tique/cache_state.py). Returns those keys if the
        write touches only keys that had no versions in the cache until now, of its own
        transaction's neither, as the engine transaction sees it: then storage holds
        what it reads of them."""
        state = self._backend.cache_state
        if state is None:
            return None
        if table.name not in txn.noted:
            txn.noted.add(table.name)
            state.writing(table.name)
        keys, alone = self._keys_of_rows(table, statement, params, rows)
        from_storage = alone and keys is not None and txn.engine_open and state.keys_clean(table.name, keys, txn.engine_epoch)
        state.writing_keys(txn.txid, table.name, keys)
        return keys if from_storage else None

    def _open_engine_transaction(self, txn: Transaction) -> None:
        """The first write opens the engine transaction that carries all of them."""
        if not txn.engine_open:
            if self._backend.cache_state is not None:
                txn.engine_epoch = self._backend.cache_state.epoch()  # before the engine's snapshot
            try:
                with step(self._raw, "engine begin"):
                    self._backend.begin_engine(self._raw)
            except Exception as error:
                raise self._backend.translate(error, "BEGIN") from error
            txn.engine_open = True

    def _flush_buffered(self, txn: Transaction) -> None:
        pending, txn.buffered = txn.buffered, []
        self._open_engine_transaction(txn)
        for write in pending:
            txn.written.add(write.plan.table.name)  # rows may exist even if a check fails
            note_written(txn.own_versions, write.plan.table.cache, None)
            self._note_writing(txn, write.plan.table, write.statement, write.params, self._rows_in(write.statement, write.params))
            try:
                run_write(self._backend, self._raw, write.plan, write.params, write.context, write.statement)
            except errors.Error:
                raise
            except Exception as error:
                raise self._backend.translate(error, write.statement) from error

    def _control(self, plan: ControlPlan) -> None:
        level = supported(plan.level) if plan.level is not None else None
        if plan.action == "begin":
            if self._txn is not None:
                raise ProgrammingError("BEGIN inside an open transaction; COMMIT or ROLLBACK first")
            self._set_modes(self._begin(), level, plan.read_only)
        elif plan.action == "set_transaction":
            # As PostgreSQL: for the current transaction (begun by this statement outside
            # autocommit), before its first query; in autocommit, with none open, it does nothing.
            if self._txn is None and self._autocommit:
                return
            txn = self._begin()
            if txn.used:
                raise ProgrammingError("SET TRANSACTION must come before any query of the transaction")
            self._set_modes(txn, level, plan.read_only)
        elif plan.action == "set_session":
            if level is not None:
                self.isolation_level = level
            if plan.read_only is not None:
                self._read_only = plan.read_only
        elif plan.action == "commit":
            self.commit()
        else:
            self.rollback()

    @staticmethod
    def _set_modes(txn: Transaction, level: IsolationLevel | None, read_only: bool | None) -> None:
        if level is not None:
            txn.level = level
        if read_only is not None:
            txn.read_only = read_only

    # -- schema changes (tique/ddl.py) ------------------------------------------
    def _ddl(self, plan: CreatePlan | DropPlan | ObjectPlan, statement: str) -> None:
        """Inside an open transaction a schema change joins its engine transaction:
        invisible to other connections until COMMIT, gone on ROLLBACK (every engine tique
        runs on has transactional DDL). Between transactions it commits on its own, in
        either autocommit mode (as tique always has; psycopg would open a transaction)."""
        if self._txn is None:
            self._ddl_alone(plan, statement)
        else:
            self._ddl_in_transaction(self._txn, plan, statement)
        return None

    def _ddl_alone(self, plan: CreatePlan | DropPlan | ObjectPlan, statement: str) -> None:
        backend, raw = self._backend, self._raw
        committed = False
        try:
            with backend.atomic(raw):
                self._apply_ddl(plan, statement, None)
                backend.catalog_committing()
            committed = True
        except errors.Error:
            raise
        except Exception as error:
            raise backend.translate(error, statement) from error
        finally:
            self._schema_changed({_ddl_target(plan)}, committed)

    def _ddl_in_transaction(self, txn: Transaction, plan: CreatePlan | CreateAsPlan | DropPlan | ObjectPlan, statement: str, params: tuple = (),
                            alone: bool = False) -> None:
        """`alone`: the transaction is the statement's own (CREATE TABLE ... AS between transactions)."""
        txn.used = True
        verb = statement.split(None, 1)[0].upper() if statement.strip() else "DDL"
        if txn.read_only:
            raise errors.InternalError(describe(statement, f"cannot execute {verb} in a read-only transaction"))
        if txn.buffered:  # the writes before it run before it, as written
            self._flush_buffered(txn)
        self._open_engine_transaction(txn)
        if not txn.schema_changed:
            self._backend.schema_change_began(self._raw)
        txn.schema_changed.add(_ddl_target(plan))
        try:
            if isinstance(plan, CreateAsPlan):
                # A statement in a transaction of its own reads one snapshot and writes only a
                # table no other transaction can see before it commits: serializable at its
                # snapshot, so its reads are not certified.
                if txn.level is IsolationLevel.SERIALIZABLE and not alone:
                    self._note_reads(txn, plan.reads, params)
                self._apply_create_as(plan, statement, params, txn)
            else:
                self._apply_ddl(plan, statement, txn)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, statement) from error
        # The transaction's own schema: its engine transaction reads its uncommitted catalog rows.
        self._load_catalog()
        _forget_commit_statements(self._backend)

    def _apply_ddl(self, plan: CreatePlan | DropPlan | ObjectPlan, statement: str, txn: Transaction | None) -> None:
        """The schema change's engine statements, inside the engine transaction open on the session."""
        backend, raw = self._backend, self._raw
        if isinstance(plan, CreatePlan):
            if plan.replace:
                self._drop_table(plan.table.name, True, statement, txn)
            ddl.create_table(backend, raw, plan.table, plan.if_not_exists, statement)
        elif isinstance(plan, DropPlan):
            self._drop_table(plan.name, plan.if_exists, statement, txn, plan.cascade)
        elif plan.action == "drop":
            ddl.drop_object(backend, raw, plan.name, plan.kind, plan.if_exists, statement, plan.cascade)
        elif isinstance(plan.created, ddl.View):
            self._check_view(plan, statement, txn)
            ddl.create_view(backend, raw, plan.created, plan.replace, plan.if_exists, statement)
        else:
            assert isinstance(plan.created, ddl.Index)
            ddl.create_index(backend, raw, plan.created, self._catalog[plan.created.table], plan.if_exists, statement)

    def _check_view(self, plan: ObjectPlan, statement: str, txn: Transaction | None) -> None:
        """Runs the view's query once, reading nothing, so the engine rejects it at CREATE
        VIEW (a missing column, too many column names), as natively, not at its first read."""
        assert plan.check is not None and isinstance(plan.created, ddl.View)
        columns = [exp.to_identifier(c, quoted=True) for c in plan.created.columns]
        probe = exp.select("*").from_(exp.Subquery(this=plan.check.copy(), alias=exp.TableAlias(this=exp.to_identifier("tq_view"), columns=columns))).where("1 = 0")
        compiled = self._backend.compile(probe)
        context = txn.context() if txn is not None else {"tq_txid": 0, "tq_sts": 0, "tq_seq_limit": 0}
        self._backend.execute(self._raw, compiled.sql, compiled.values((), context))

    def _drop_table(self, name: str, if_exists: bool, statement: str, txn: Transaction | None, cascade: bool = False) -> None:
        if txn is not None and name in self._catalog:
            txn.dropped.setdefault(name, self._catalog[name])
        if ddl.drop_table(self._backend, self._raw, name, if_exists, statement, cascade) and txn is not None:
            txn.written.discard(name)  # its rows went with it: no write-set for them

    def _create_as(self, plan: CreateAsPlan, statement: str, params: tuple) -> None:
        """CREATE TABLE ... AS query: between transactions a transaction of its own (it reads
        a snapshot and writes rows), committed at once, as other DDL between transactions is."""
        implicit = self._txn is None
        txn = self._begin()
        try:
            self._ddl_in_transaction(txn, plan, statement, params, alone=implicit)
        except BaseException:
            if implicit:
                self._abandon(txn)
            raise
        if implicit:
            self.commit()

    def _apply_create_as(self, plan: CreateAsPlan, statement: str, params: tuple, txn: Transaction) -> None:
        """Stages the query's rows (read at the transaction's snapshot) in a native table of
        the transaction's own, whose columns the engine typed; creates the tique table with
        those columns (after dropping the old one for OR REPLACE, which the query may read);
        and inserts the staged rows through the ordinary write path."""
        backend, raw = self._backend, self._raw
        if plan.if_not_exists and ddl.table_exists(backend, raw, plan.name):
            return
        stage = f"tq_ctas_{txn.txid}"
        staged = backend.compile(exp.Create(this=exp.to_table(exp.to_identifier(stage, quoted=True)), kind="TABLE", expression=plan.query.copy()))
        backend.execute(raw, staged.sql, staged.values(params, txn.context()))
        table = backend.new_table(ddl.table_of_columns(plan.name, backend.query_columns(raw, stage), backend.dialect, statement))
        if plan.replace:
            self._drop_table(plan.name, True, statement, txn)
        ddl.create_table(backend, raw, table, False, statement)
        self._load_catalog()
        if plan.with_data:
            self._fill_from(plan.name, stage, statement, txn)
        backend.execute(raw, f"DROP TABLE {_quoted(stage, backend)}", [])

    def _fill_from(self, name: str, stage: str, statement: str, txn: Transaction) -> None:
        """Inserts the staged rows into the new tique table through the ordinary write path."""
        backend, raw = self._backend, self._raw
        text = f"INSERT INTO {_quoted(name, backend)} SELECT * FROM {_quoted(stage, backend)}"
        fill = self._plan(text)
        assert isinstance(fill, WritePlan)
        self._note_writing(txn, fill.table, text, ())  # keys unknown to the text: the whole table counts as written
        note_written(txn.own_versions, fill.table.cache, None)
        run_write(backend, raw, fill, (), txn.write_context(), statement)
        txn.written.add(name)

    def _schema_change_lost(self, txn: Transaction, failure: errors.SerializationFailure) -> None:
        """A transaction that changed the schema failed to commit: it was decided before the
        engine commit that would have made the schema change permanent (commit_schema_change),
        so the schema change was rolled back with its writes."""
        self._schema_change_over(txn, committed=False)

    def _schema_change_over(self, txn: Transaction, committed: bool) -> None:
        """The engine transaction holding `txn`'s schema change ended."""
        if not txn.schema_changed:
            return
        changed, txn.schema_changed = txn.schema_changed, set()
        self._backend.schema_change_ended(self._raw)
        self._schema_changed(changed, committed)

    def _schema_changed(self, names: set[str], committed: bool) -> None:
        """After a schema change committed or rolled back: what was known of the objects is void."""
        backend = self._backend
        if committed:
            backend.catalog_committed()
        if backend.cache_state is not None:
            for name in names:
                backend.cache_state.forget(name)
        _forget_commit_statements(backend)
        self._load_catalog()


def _ddl_target(plan: CreatePlan | CreateAsPlan | DropPlan | ObjectPlan) -> str:
    return plan.table.name if isinstance(plan, CreatePlan) else plan.name


def _quoted(name: str, backend: Backend) -> str:
    return exp.to_identifier(name, quoted=True).sql(backend.dialect)

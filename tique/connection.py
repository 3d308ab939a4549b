"""PEP 249 connection: owns one engine connection, the catalog, the plan cache and
at most one open tique transaction."""
from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any, Iterable

from sqlglot import exp

from tique import errors
from tique.backends import open_database
from tique.backends.base import Backend
from tique.catalog import TableDef, canonical_ddl, parse_catalog_row
from tique.cursor import Cursor
from tique.errors import InterfaceError, NotSupportedError, ProgrammingError, describe, redact
from tique.planner import ControlPlan, CreatePlan, DropPlan, NativePlan, Plan, ReadPlan, WritePlan, make_plan
from tique.recovery import recover
from tique.rewrite.params import Compiled
from tique.rewrite.point_keys import Key, read_keys, storage_key_query, written_keys
from tique.rewrite.reads import replace_tables
from tique.rewrite.snapshot import Formulation
from tique.rewrite.storage_reads import read_storage
from tique.session import Counters
from tique.transaction import (BufferedWrite, CommitStatements, Transaction, commit_writer, key_violation, release, reserve,
                               run_write)

# Debug faults (negative controls for consistency checkers), never on by default:
# no-certify: commit without certification (lost updates);
# stale-snapshot: every statement reads the latest committed data, not the transaction's snapshot;
# early-visibility: a transaction's snapshot misses the same connection's previous commit,
# as if that commit had returned before the snapshot included it.
FAULTS = frozenset({"no-certify", "stale-snapshot", "early-visibility"})

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
    ) -> None:
        faults = frozenset(faults)
        unknown = faults - FAULTS
        if unknown:
            raise InterfaceError(f"unknown fault(s) {', '.join(sorted(unknown))}; debug faults are {', '.join(sorted(FAULTS))}")
        self.url = url
        self._backend = open_database(url, packed_keys=packed_keys)
        try:
            self._raw = self._backend.open()
        except Exception as error:
            raise self._backend.translate(error, f"connect to {redact(url)}") from error
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
        self._txn_holder: list[Transaction | None] = [None]
        # Set when a statement of an explicit transaction failed: the transaction is gone,
        # and statements raise until rollback() (commit() raises and clears it).
        self._failed: str | None = None
        self._plans: dict[tuple[str, Formulation], Plan] = {}
        self._catalog: dict[str, TableDef] = {}
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

    def _load_catalog(self) -> None:
        rows = self._backend.rows(self._raw, "SELECT name, ddl FROM tq_tables", [])
        self._catalog_ddl = dict(rows)
        self._catalog_key = frozenset(self._catalog_ddl.items())
        self._catalog = self._backend.catalog_tables(self._raw, rows)
        self._plans.clear()

    def _catalog_changed(self) -> bool:
        """Reloads the catalog when another client created, dropped or redefined a table since we read it."""
        rows = dict(self._backend.rows(self._raw, "SELECT name, ddl FROM tq_tables", []))
        if rows == self._catalog_ddl:
            return False
        self._load_catalog()
        _forget_commit_statements(self._backend)
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
        except errors.SerializationFailure:
            self._txn = None
            raise
        except BaseException as error:
            self._abandon(txn)
            if isinstance(error, Exception) and not isinstance(error, errors.Error):
                raise self._backend.translate(error, "COMMIT") from error
            raise
        self._txn = None

    def _commit_transaction(self, txn: Transaction) -> None:
        if txn.buffered:
            self._flush_buffered(txn)
        if txn.engine_open and not txn.written:  # writes that wrote nothing: nothing to commit
            txn.engine_open = False
            self._backend.rollback_engine(self._raw)
        if txn.written:
            tables = [self._catalog[name] for name in sorted(txn.written)]
            self._last_commit_ts = commit_writer(self._backend, self._raw, txn, tables, self._commit_sql, self.commit_timeout, self.faults)
        elif txn.reserved_cts is not None:  # a re-execution that wrote nothing gives its timestamp back
            release(self._backend, self._raw, txn.txid, txn.reserved_cts, self.commit_timeout)
        else:
            self._backend.oracle.end(self._raw, txn.txid)

    def _reexecute(self, failed: Transaction) -> None:
        """Priority mode's one retry: reserve the failed write-set, run the statements again
        on a fresh snapshot, commit with the reserved timestamp. A second failure raises."""
        retry = self._txn = reserve(self._backend, self._raw, failed, self._commit_sql, self.commit_timeout)
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
        try:
            if txn.engine_open:
                txn.engine_open = False
                self._backend.rollback_engine(self._raw)
            if txn.reserved_cts is not None:
                release(self._backend, self._raw, txn.txid, txn.reserved_cts, self.commit_timeout)
            else:
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
                plan = make_plan(sql, self._backend, self._lookup_or_refresh, formulation, self.static_tables)
                if self._catalog_key is catalog:  # planning looked up no table new to this connection
                    self._backend.shared_plans.put(shared_key, plan)
            self._plans[key] = plan
        return plan

    def _lookup_or_refresh(self, name: str) -> TableDef | None:
        """Another client may have created the table since we loaded the catalog."""
        found = self._catalog.get(name)
        if found is None and not name.startswith("tq_") and not self._is_physical(name):
            rows = self._backend.rows(self._raw, "SELECT ddl FROM tq_tables WHERE name = $1", [name])
            if rows:
                found = self._catalog[name] = self._backend.catalog_tables(self._raw, [(name, rows[0][0])])[name]
                self._catalog_ddl[name] = rows[0][0]
                self._catalog_key = frozenset(self._catalog_ddl.items())
        return found

    def _is_physical(self, name: str) -> bool:
        for suffix in ("_storage", "_cache"):
            if name.endswith(suffix) and name[: -len(suffix)] in self._catalog:
                return True
        return False

    def _begin(self) -> Transaction:
        txn = self._txn
        if txn is None:
            try:
                txid, sts = self._backend.oracle.begin(self._raw)
            except errors.Error:
                raise
            except Exception as error:
                raise self._backend.translate(error, "BEGIN") from error
            if "early-visibility" in self.faults and self._last_commit_ts is not None:
                # Debug fault: start below our own previous commit, once.
                sts, self._last_commit_ts = min(sts, self._last_commit_ts - 1), None
            txn = self._txn = Transaction(txid, sts)
        return txn

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

    def _execute(self, sql: str, params: tuple) -> tuple[Any, tuple | None, int]:
        if self._failed is not None:
            plan = self._plan(sql)
            if not (isinstance(plan, ControlPlan) and plan.action in ("commit", "rollback")):
                raise errors.InFailedTransaction(describe(sql, "current transaction is aborted: an earlier statement in it failed, so commands are ignored until ROLLBACK"))
        try:
            try:
                return self._execute_once(sql, params)
            except ProgrammingError as error:
                if not self._replan_after(error, sql):
                    raise
            return self._execute_once(sql, params)
        except BaseException as error:
            # As natively (PostgreSQL, DuckDB, MonetDB), a failed statement aborts the
            # open transaction, whatever failed; only a wrong parameter count, caught
            # before anything ran, leaves it be (as psycopg's client-side check does).
            txn = self._txn
            if txn is not None and not getattr(error, "tq_client_side", False):
                self._fail(txn)
            raise

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

    def _execute_once(self, sql: str, params: tuple) -> tuple[Any, tuple | None, int]:
        plan = self._plan(sql)
        if isinstance(plan, ControlPlan):
            return self._control(plan), None, -1
        if isinstance(plan, (CreatePlan, DropPlan)):
            return self._ddl(plan, sql), None, -1
        if len(params) != plan.params:
            mismatch = ProgrammingError(describe(sql, f"the statement has {plan.params} parameter marker(s) but {len(params)} value(s) were given"))
            mismatch.tq_client_side = True  # type: ignore[attr-defined]
            raise mismatch
        if isinstance(plan, NativePlan):
            return self._run(sql, plan.statement.sql, plan.statement.values(params, {}))
        implicit = self._autocommit and self._txn is None
        txn = self._begin()
        if "stale-snapshot" in self.faults:  # debug fault: read the latest data, not the snapshot
            txn.read_sts = self._latest_snapshot()
        if self.priority and not implicit:
            if txn.statements is None:
                txn.statements = []
            txn.statements.append((sql, params))
        try:
            if isinstance(plan, ReadPlan):
                # A read that needs this transaction's uncommitted writes runs on the
                # session holding them; others may run where analytics run best.
                analytic = plan.analytic and not (txn.engine_open and txn.written.intersection(plan.tables))
                statement = self._read_statement(plan, txn, params)
                outcome = self._run(sql, statement.sql, statement.values(params, txn.context()), analytic)
            else:
                outcome = self._write(plan, params, txn, sql)
        except BaseException:
            if implicit:
                self._abandon(txn)
            raise
        if implicit:
            self.commit()
        return outcome

    def _read_statement(self, plan: ReadPlan, txn: Transaction, params: tuple) -> Compiled:
        """The read's statement, reading from storage directly the tables whose caches are
        known empty, and those it reads one key of that no transaction has versions of
        in the cache (a variant planned once per set of such tables)."""
        state = self._backend.cache_state
        if state is None or plan.source is None:
            return plan.statement
        since = txn.engine_epoch if txn.engine_open else None
        clean = state.clean(since=since).intersection(plan.tables) - txn.written
        points = read_keys(self._backend.shared_plans, plan.statement.sql, plan.source, self._lookup_or_refresh,
                           self._backend.dialect, params)
        clean |= {name for name, key in points.items() if name not in clean and state.keys_clean(name, (key,), since)}
        clean = frozenset(clean)
        if not clean:
            return plan.statement
        found = plan.variants.get(clean)
        if found is None:
            tree = read_storage(plan.source.copy(), self._lookup_or_refresh, clean)
            tree = replace_tables(tree, self._lookup_or_refresh, self.snapshot_formulation, self._backend.key_hash)
            found = plan.variants[clean] = self._backend.compile(tree)
        return found

    def _run(self, statement: str, engine_sql: str, values: list, analytic: bool = False) -> tuple[Any, tuple | None, int]:
        try:
            cur = self._backend.execute(self._raw, engine_sql, values, analytic) if analytic else self._backend.execute(self._raw, engine_sql, values)
        except Exception as error:
            raise self._backend.translate(error, statement) from error
        description = self._backend.description(cur)
        if description is not None:
            rowcount = getattr(cur, "rowcount", -1)
            return cur, description, rowcount if isinstance(rowcount, int) else -1
        return None, None, self._affected(cur)

    def _affected(self, cur: Any) -> int:
        try:
            return self._backend.affected(cur)
        except Exception:
            return -1

    def _write(self, plan: WritePlan, params: tuple, txn: Transaction, statement: str) -> tuple[Any, tuple | None, int]:
        context = txn.write_context()
        if self.buffered_writes and not self._autocommit:
            txn.buffered.append(BufferedWrite(plan, params, context, statement))
            return None, None, -1
        self._open_engine_transaction(txn)
        clean_keys = self._note_writing(txn, plan.table, statement, params)
        key_check = None
        if clean_keys is not None:
            storage_plan = self._plan(statement, Formulation.STORAGE)
            assert isinstance(storage_plan, WritePlan)
            plan = storage_plan
            if plan.validation is not None and all(len(k) == len(plan.table.key) for k in clean_keys):
                # New keys of which no version is cached: checked here against storage by
                # key, not by the engine against the cache rows just written.
                plan, key_check = dataclasses.replace(plan, validation=None), clean_keys
        try:
            count = run_write(self._backend, self._raw, plan, params, context, statement)
            if key_check is not None:
                self._check_new_keys(plan.table, key_check, statement)
        except errors.Error:
            raise
        except Exception as error:
            raise self._backend.translate(error, statement) from error
        txn.written.add(plan.table.name)
        return None, None, count

    def _check_new_keys(self, table: TableDef, keys: list[Key], statement: str) -> None:
        """Raises IntegrityError if `keys`, none of which has versions in the cache, repeat
        one another or a key storage holds."""
        query, values = storage_key_query(table, keys)
        shape = ("storage key check", table, tuple(len(p.expressions) for p in query.find_all(exp.In)))
        compiled = self._backend.shared_plans.get(shape)
        if compiled is None:
            compiled = self._backend.compile(query)
            self._backend.shared_plans.put(shape, compiled)
        present = {tuple(row) for row in self._backend.rows(self._raw, compiled.sql, compiled.values((), values))}
        repeated = len(keys) - len(set(keys)) + len(set(keys) & present)
        if repeated:
            raise key_violation(table, statement, repeated)

    def _note_writing(self, txn: Transaction, table: TableDef, statement: str, params: tuple) -> list[Key] | None:
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
        keys, alone = written_keys(self._backend.shared_plans, statement, table, self._lookup_or_refresh,
                                   self._backend.dialect, params)
        from_storage = alone and keys is not None and txn.engine_open and state.keys_clean(table.name, keys, txn.engine_epoch)
        state.writing_keys(txn.txid, table.name, keys)
        return keys if from_storage else None

    def _open_engine_transaction(self, txn: Transaction) -> None:
        """The first write opens the engine transaction that carries all of them."""
        if not txn.engine_open:
            if self._backend.cache_state is not None:
                txn.engine_epoch = self._backend.cache_state.epoch()  # before the engine's snapshot
            try:
                self._backend.begin_engine(self._raw)
            except Exception as error:
                raise self._backend.translate(error, "BEGIN") from error
            txn.engine_open = True

    def _flush_buffered(self, txn: Transaction) -> None:
        pending, txn.buffered = txn.buffered, []
        self._open_engine_transaction(txn)
        for write in pending:
            txn.written.add(write.plan.table.name)  # rows may exist even if a check fails
            self._note_writing(txn, write.plan.table, write.statement, write.params)
            try:
                run_write(self._backend, self._raw, write.plan, write.params, write.context, write.statement)
            except errors.Error:
                raise
            except Exception as error:
                raise self._backend.translate(error, write.statement) from error

    def _control(self, plan: ControlPlan) -> None:
        if plan.action == "begin":
            if self._txn is not None:
                raise ProgrammingError("BEGIN inside an open transaction; COMMIT or ROLLBACK first")
            self._begin()
        elif plan.action == "commit":
            self.commit()
        else:
            self.rollback()

    def _ddl(self, plan: CreatePlan | DropPlan, statement: str) -> None:
        if self._txn is not None:
            raise NotSupportedError(describe(statement, "DDL inside a transaction is not supported: tique tables change shape only between transactions; COMMIT or ROLLBACK first"))
        backend, raw = self._backend, self._raw
        try:
            with backend.atomic(raw):
                if isinstance(plan, CreatePlan):
                    exists = backend.rows(raw, "SELECT 1 FROM tq_tables WHERE name = $1", [plan.table.name])
                    if exists:
                        if plan.if_not_exists:
                            return None
                        raise ProgrammingError(describe(statement, f"table {plan.table.name!r} already exists"))
                    for ddl in backend.physical_ddl(plan.table):
                        backend.execute(raw, ddl, [])
                    backend.execute(raw, "INSERT INTO tq_tables (name, ddl) VALUES ($1, $2)", [plan.table.name, canonical_ddl(plan.table, backend.dialect)])
                else:
                    found = backend.rows(raw, "SELECT ddl FROM tq_tables WHERE name = $1", [plan.name])
                    table = parse_catalog_row(found[0][0], backend.dialect) if found else None
                    if table is None:
                        if plan.if_exists:
                            return None
                        raise ProgrammingError(describe(statement, f"table {plan.name!r} does not exist"))
                    for ddl in backend.drop_ddl(table):
                        backend.execute(raw, ddl, [])
                    backend.execute(raw, "DELETE FROM tq_tables WHERE name = $1", [plan.name])
        except errors.Error:
            raise
        except Exception as error:
            raise backend.translate(error, statement) from error
        finally:
            if backend.cache_state is not None:
                backend.cache_state.forget(plan.table.name if isinstance(plan, CreatePlan) else plan.name)
            self._load_catalog()
            _forget_commit_statements(backend)
        return None

"""What every engine backend provides to the transaction manager."""
from __future__ import annotations

import contextlib
import re
import threading
from abc import ABC, abstractmethod
from typing import Any, Iterator, Sequence

import sqlglot
from sqlglot import exp

from tique import errors
from tique.cache_state import CacheState
from tique.catalog import PACKED, Column, TableDef, parse_catalog_row, with_packed_key
from tique.oracle.base import Oracle
from tique.plan_timing import TIMING
from tique.rewrite.params import ROWS, Compiled, RowTemplate, compile_statement, dollar_markers, render_marked

_ERROR_NAMES = {cls.__name__: cls for cls in errors.EXCEPTIONS}

# Engine messages quote the statement the engine ran (tique's rewrite): DuckDB's and
# PostgreSQL's "LINE 1: ..." with a caret line under it. Their hints name physical tables.
_CONTEXT_LINE = re.compile(r"^\s*(LINE \d+:|\^|QUERY:|CONTEXT:)")
_CANDIDATES = re.compile(r"^\s*Candidate bindings:")
_HINT = re.compile(r'Did you mean "([^"]+)"\??')
_PHYSICAL = re.compile(r"\b(\w+?)_(?:storage|cache)\b")


def _physical_to_user(name: str) -> str:
    """A physical table's name as the application knows it: T_storage and T_cache are T."""
    return _PHYSICAL.sub(lambda m: m.group(1), name)


def user_terms(message: str) -> str:
    """An engine's message without the rewritten SQL it quotes, without candidate lists
    and hints that name tique's columns or tables, and with T_storage/T_cache said as T."""
    kept = []
    for line in message.strip().splitlines():
        if _CONTEXT_LINE.match(line) or _CANDIDATES.match(line) or not line.strip():
            continue
        hint = _HINT.search(line)
        if hint:
            suggested = _physical_to_user(hint.group(1))
            if suggested.startswith("tq_"):
                continue
            line = _HINT.sub(f'Did you mean "{suggested}"?', line)
        kept.append(_physical_to_user(line))
    return "\n".join(kept)


def _no_such_column(statement: str, dialect: str, column: str, qualifier: str | None) -> str:
    """The missing column, said of the table the statement names for it."""
    tables = _statement_tables(statement, dialect)
    if qualifier is not None:
        table = tables.get(qualifier.lower())
        return f"table {table} has no column {column!r}" if table else f"{qualifier} has no column {column!r}"
    named = sorted(set(tables.values()))
    if len(named) == 1:
        return f"table {named[0]} has no column {column!r}"
    if named:
        return f"none of the tables {', '.join(named)} has a column {column!r}"
    return f"column {column!r} does not exist"


def _statement_tables(statement: str, dialect: str) -> dict[str, str]:
    """Alias or name -> table name, for each table the statement reads (CTEs aside)."""
    from tique.planner import parse_one  # the planner imports this module

    try:
        tree = parse_one(statement, dialect)
    except errors.Error:
        return {}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if not table.name or table.name.lower() in ctes:
            continue
        found[table.alias_or_name.lower()] = table.name
        found.setdefault(table.name.lower(), table.name)
    return found


class PlanCache:
    """Plans shared by the connections of one database in this process (plans are never
    mutated once made). Bounded: when full it starts over, as a long-running process
    with ever-new statement texts would otherwise grow without end."""

    def __init__(self, capacity: int = 4096, kind: str | None = None) -> None:
        self.capacity = capacity
        self.kind = kind  # how its misses are recorded (tique/plan_timing.py); None: told by their keys
        self._plans: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        found = self._plans.get(key)
        if found is None:
            TIMING.missed(key, self.kind)
        return found

    def put(self, key: Any, plan: Any) -> None:
        TIMING.stored(key)
        with self._lock:
            if len(self._plans) >= self.capacity:
                self._plans.clear()
            self._plans[key] = plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()


class Backend(ABC):
    dialect: str
    oracle: Oracle
    closed: bool = False
    packs_keys: bool = False  # whether new tables with multi-column integer keys get a packed key
    adopts_by_rename: bool = False  # adopt renames a native table into storage instead of copying it
    creates_or_replaces_tables: bool = False  # the dialect has CREATE OR REPLACE TABLE
    tracks_view_dependencies: bool = True  # DROP refuses a table or view that views read (without CASCADE)

    def __init__(self) -> None:
        # Which caches hold nothing (tique/cache_state.py); only where every writer of the
        # database is in this process (embedded engines).
        self.cache_state: CacheState | None = None
        self.setup_lock = threading.Lock()
        self.shared_plans = PlanCache()
        self.checkpoint_lock = threading.Lock()
        self.installed = False

    # -- connections -------------------------------------------------------
    @abstractmethod
    def open(self) -> Any:
        """A raw engine connection in autocommit mode: every statement commits on its own."""

    def open_background(self) -> Any:
        """A raw connection for tique's own background work (the checkpointer). Its
        steps are idempotent and repaired after a crash, so where an engine can commit
        without waiting for the disk, it does (PostgreSQL: see metadata.sql, Durability)."""
        return self.open()

    @abstractmethod
    def close_raw(self, raw: Any) -> None: ...

    def close(self) -> None:
        self.closed = True

    supports_returning = True  # INSERT ... RETURNING: certification and commit marker in one statement
    # A join that pins a tique table's key to earlier tables reads it by LATERAL point
    # snapshots (tique/rewrite/lateral.py): for engines that push no join condition into
    # a subquery but run a lateral one per row through indexes.
    lateral_point_reads = False
    # The checkpointer runs a round as one engine transaction, where no step can meet an
    # engine conflict (only the checkpointer deletes; foreground writers only append).
    checkpoints_in_one_transaction = False
    # An engine transaction open when the checkpointer purges cache rows may lose sight of
    # them (MonetDB: see tique/checkpoint.py, "Older readers"), so the purge of the rows a
    # round moved waits until every transaction begun before the move has ended
    # (purge_fence, began_before).
    purge_waits_for_older_readers = False
    # An append fills the rows a committed DELETE freed only once every engine transaction
    # open at that DELETE has ended (and one more has ended since: MonetDB), so the
    # checkpointer runs step 1 of every table, waits for the tique transactions begun
    # before it (purge_fence, began_before), then appends: tique/checkpoint.py, "Refilled".
    appends_refill_after_readers = False

    def purge_fence(self, raw: Any) -> int:
        """A mark after which every tique transaction that begins is told apart from
        those begun before (a transaction id handed out now)."""
        raise NotImplementedError

    def began_before(self, raw: Any, fence: int) -> bool:
        """Whether a tique transaction begun before purge_fence returned `fence` is still running."""
        raise NotImplementedError

    @abstractmethod
    def execute(self, raw: Any, sql: str, params: Sequence[Any], analytic: bool = False, probing: bool = False) -> Any:
        """Runs one statement; returns a DB-API cursor positioned on its result.
        `analytic` marks a scan-heavy read, for engines that plan those differently;
        `probing` a read that probes a table's key indexes once per row of a narrow side
        (tique/rewrite/lateral.py), for engines that plan those differently."""

    def install(self, raw: Any) -> None:
        """Creates tique's metadata (idempotent)."""
        self.run_script(raw, self.metadata_script())

    def rows(self, raw: Any, sql: str, params: Sequence[Any]) -> list[tuple]:
        cur = self.execute(raw, sql, params)
        return cur.fetchall() if cur.description else []

    # Whether the oracle's begin can travel in the request of a transaction's first
    # statement (fold_begin); if so, statements bind tique.session's Unbound values.
    folds_begin = False

    def fold_begin(self, raw: Any) -> None:
        raise NotImplementedError

    def unfold_begin(self, raw: Any) -> None:
        raise NotImplementedError

    def folded_begun(self, raw: Any) -> tuple[int, int, int] | None:
        """(txid, start timestamp, catalog version) from the folded begin, if it ran."""
        raise NotImplementedError

    # -- engine transactions ---------------------------------------------
    # A tique transaction that writes runs its writes and its write-set in one engine
    # transaction on its session (see tique/transaction.py); DDL and adopt use atomic().
    @abstractmethod
    def begin_engine(self, raw: Any) -> None:
        """Opens an engine transaction on `raw`: its statements stop committing on their own."""

    # Whether a statement inside an open engine transaction sees engine commits made after
    # that transaction began (PostgreSQL's READ COMMITTED); DuckDB's and MonetDB's engine
    # transactions are snapshot isolated, so what they see of tq_outcome is fixed at begin.
    engine_reads_later_commits: bool = False

    # Whether an analytical read asks the engine which of its tables' caches hold no row
    # (empty_caches) and reads those from storage alone, where no CacheState can know it.
    counts_caches: bool = False
    # Whether a statement of a transaction that has not yet written the tables it reads
    # runs a variant whose snapshots join committed transactions only (MonetDB's
    # templates: tique/rewrite/own_versions.py).
    reads_without_own_versions: bool = False

    def empty_caches(self, raw: Any, caches: dict[str, str]) -> frozenset[str]:
        """Of `caches` (table name -> its cache table), the tables whose caches hold no
        committed row, asked on the session an analytical read runs on; see
        Connection._read_statement for when that may be used."""
        return frozenset()

    def statement_snapshot_expression(self) -> exp.Expression | None:
        """SQL for the oracle's newest snapshot that a READ COMMITTED read can carry in
        place of a bound snapshot timestamp, saving the request that would fetch it; every
        occurrence in one statement must read the same value. None where it cannot."""
        return None

    def at_statement_snapshot(self, compiled: Compiled) -> Compiled | None:
        """`compiled` with its bound snapshot timestamp replaced by the larger of it and
        statement_snapshot_expression, for READ COMMITTED writes; None where it cannot."""
        return None

    def taken_commit_timestamp(self) -> exp.Expression | None:
        """SQL for the commit timestamp this session took last, where the oracle's take
        can travel in the same request as the write-set (Oracle.take_statement)."""
        return None

    def execute_all(self, raw: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """Runs `statements` in order, as one request where the engine can (a pipeline),
        and returns a cursor for each; stops at the first that fails, raising its error."""
        return [self.execute(raw, sql, params) for sql, params in statements]

    # The commit protocol runs in a few requests of several statements each
    # (tique/transaction.py, _commit_in_requests): needs request().
    commits_in_requests = False
    # A writer's whole commit travels in one request (tique/transaction.py, _commit_whole):
    # needs commit_whole() (PostgreSQL).
    commits_whole = False
    # The write-set insert logs each hashed key once per transaction (SELECT DISTINCT); a
    # backend whose readers of tq_write_sets only ask whether a matching row exists may log
    # one row per cached version instead and save the engine its aggregates (DuckDB).
    distinct_write_set = True

    def lock_write_set(self, txid: int) -> tuple[str, list] | None:
        """A statement that takes the key locks of the write-set `txid` logged in the open
        engine transaction, held until it ends (see the invariant in tique/transaction.py),
        where certification may run inside the engine transaction that commits a write-set
        (commits_whole); None elsewhere."""
        return None

    def request(self, raw: Any, statements: Sequence[tuple[str, Sequence[Any]]],
                commit: bool = False, other_commits: int = 0) -> tuple[list[list[tuple]], list[int]]:
        """Sends `statements` as one request; returns the rows of each query among them
        and the row count of each insert. `commit`: the request ends the open engine
        transaction; `other_commits`: engine transactions it carries whole."""
        raise NotImplementedError

    def commit_engine(self, raw: Any, statements: Sequence[tuple[str, Sequence[Any]]] = ()) -> list[Any]:
        """Runs `statements` inside the engine transaction open on `raw`, then commits it
        (one engine commit), in one request where the engine can; returns their cursors."""
        cursors = self.execute_all(raw, statements)
        self._commit_open(raw)
        return cursors

    @abstractmethod
    def _commit_open(self, raw: Any) -> None:
        """Commits the engine transaction open on `raw`."""

    @abstractmethod
    def rollback_engine(self, raw: Any) -> None:
        """Rolls back the engine transaction open on `raw`, if any; never raises for a
        connection that is already gone (the engine then rolled it back itself)."""

    @contextlib.contextmanager
    def beside(self, raw: Any) -> Iterator[Any]:
        """A connection of its own next to `raw` (autocommit, counted with `raw`), closed
        after the block: it commits while `raw`'s engine transaction stays open (a
        schema-changing commit logs its write-set there, tique/transaction.py)."""
        side = self.open()
        side.counters = raw.counters
        try:
            yield side
        finally:
            try:
                self.close_raw(side)
            except Exception:
                pass

    @contextlib.contextmanager
    def atomic(self, raw: Any) -> Iterator[None]:
        """Runs the block's statements as one engine transaction (DDL, adopt)."""
        self.begin_engine(raw)
        try:
            yield
        except BaseException:
            self.rollback_engine(raw)
            raise
        self.commit_engine(raw)

    def description(self, cursor: Any) -> tuple | None:
        """PEP 249 description 7-tuples of the result `cursor` holds (None without one)."""
        return tuple(tuple(d) for d in cursor.description) if cursor.description else None

    @abstractmethod
    def affected(self, cursor: Any) -> int:
        """Rows written by the DML statement `cursor` ran."""

    @abstractmethod
    def run_script(self, raw: Any, script: str) -> None:
        """Runs several parameterless statements (schema installation)."""

    # -- SQL generation ----------------------------------------------------
    @abstractmethod
    def param_node(self, n: int) -> exp.Expression: ...

    @abstractmethod
    def key_hash(self, table_name: str, keys: list[exp.Expression]) -> exp.Expression:
        """A 64-bit hash of (table, key) for Write_Sets; collisions only cause false conflicts."""

    def compile(self, tree: exp.Expression, owned: bool = False) -> Compiled:
        """`tree` as the engine's statement. `owned`: the caller hands the tree over and
        never reads it again, so rendering may change it instead of a copy."""
        return compile_statement(tree, self.dialect, self.param_node, owned)

    def compile_rows(self, tree: exp.Insert, width: int) -> RowTemplate:
        """An INSERT over one VALUES row (aliased tq_new) as a template for any number of
        rows of that shape, each taking `width` of the application's parameters."""
        head, row = split_rows(tree)
        return RowTemplate(render_marked(head, self.dialect), render_marked(row, self.dialect), width, dollar_markers)

    @abstractmethod
    def metadata_script(self) -> str: ...

    # -- tables ------------------------------------------------------------
    def new_table(self, table: TableDef) -> TableDef:
        """How a table about to be created is stored on this engine."""
        return with_packed_key(table, self.dialect) if self.packs_keys else table

    def packed_tables(self, raw: Any) -> set[str]:
        """Names of the storage tables that carry a packed key column."""
        return set()

    def catalog_tables(self, raw: Any, rows: Sequence[tuple[str, str]]) -> dict[str, TableDef]:
        """The tables of catalog rows (name, ddl), as they are stored: whether one has a
        packed key is read off its storage table, so it never depends on settings."""
        packed = self.packed_tables(raw) if rows else set()
        tables = {}
        for name, ddl in rows:
            table = parse_catalog_row(ddl, self.dialect)
            tables[name] = with_packed_key(table, self.dialect) if table.storage in packed else table
        return tables

    def physical_ddl(self, table: TableDef) -> list[str]:
        """T_storage as declared (key included) and T_cache with the same columns plus
        tq_txid, tq_seq, tq_deleted. The cache repeats NOT NULL, so the engine rejects a
        NULL in the write statement itself and no separate check is needed."""
        q = lambda n: exp.to_identifier(n, quoted=True).sql(self.dialect)  # noqa: E731
        storage = [f"{q(c.name)} {c.type_sql}{self.collation_sql(c)}{self.default_sql(c)}{' NOT NULL' if c.not_null else ''}" for c in table.columns]
        cache = list(storage)
        ddl = []
        if table.hidden_rowid:
            ddl.append(f"CREATE SEQUENCE {q(table.rowid_sequence)}")
            storage.append(f"{q('tq_rowid')} BIGINT NOT NULL")
            cache.append(f"{q('tq_rowid')} BIGINT NOT NULL")
        if table.packed:
            packed_type = exp.DataType.build("INT128").sql(self.dialect)
            storage.append(f"{q(PACKED)} {packed_type} NOT NULL")
            cache.append(f"{q(PACKED)} {packed_type} NOT NULL")
        key = ", ".join(q(k) for k in table.key)
        ddl.append(f"CREATE TABLE {q(table.storage)} ({', '.join(storage)}, PRIMARY KEY ({key}))")
        ddl.append(f"CREATE TABLE {q(table.cache)} ({', '.join(cache)}, tq_txid BIGINT NOT NULL, tq_seq INTEGER NOT NULL, tq_deleted BOOLEAN NOT NULL)")
        return ddl + self.cache_indexes(table)

    def cache_indexes(self, table: TableDef) -> list[str]:
        return []

    def default_sql(self, column: Column) -> str:
        """A column's DEFAULT clause. tique's writes always give the cache every value, so
        it is never used to fill one; declared, it makes the engine track what the table
        depends on (a sequence it draws from cannot be dropped from under it)."""
        return f" DEFAULT {column.default.sql(self.dialect)}" if column.default is not None else ""

    def collation_sql(self, column: Column) -> str:
        """A column's COLLATE clause: storage and cache carry it, so the snapshot's columns
        compare, group and order as the application's table would."""
        return f" COLLATE {column.collation}" if column.collation is not None else ""

    def drop_ddl(self, table: TableDef) -> list[str]:
        q = lambda n: exp.to_identifier(n, quoted=True).sql(self.dialect)  # noqa: E731
        ddl = [f"DROP TABLE IF EXISTS {q(table.storage)}", f"DROP TABLE IF EXISTS {q(table.cache)}"]
        if table.hidden_rowid:
            ddl.append(f"DROP SEQUENCE IF EXISTS {q(table.rowid_sequence)}")
        return ddl

    # -- errors ------------------------------------------------------------
    # How this engine says a column or table does not exist: the named groups `column`,
    # optionally `qualifier`, and `table`. Matched, the error is said in the statement's
    # terms; the engine's own words would show tique's rewritten SQL and internal names.
    missing_column: tuple[re.Pattern[str], ...] = ()
    missing_table: tuple[re.Pattern[str], ...] = ()

    def translate(self, error: BaseException, statement: str) -> errors.Error:
        """Maps a driver exception to the tique class of the same PEP 249 name, its message
        in the application's terms."""
        if isinstance(error, errors.Error):
            return error
        target: type[errors.Error] = errors.DatabaseError
        for cls in type(error).__mro__:
            if cls.__name__ in _ERROR_NAMES and issubclass(_ERROR_NAMES[cls.__name__], errors.Error):
                target = _ERROR_NAMES[cls.__name__]
                break
        if target is errors.DatabaseError and isinstance(error, OSError):
            target = errors.OperationalError  # the engine could not be reached (PEP 249)
        target = self.refine(error, target)
        cause = self.missing_name(error, statement) or self.engine_message(error)
        translated = target(errors.describe(statement, cause))
        translated.__cause__ = error
        return translated

    def engine_message(self, error: BaseException) -> str:
        """The driver's message in the application's terms, after the driver's class name
        (DuckDB's BinderException, psycopg's UndefinedColumn): what native shows, which
        tique's PEP 249 class alone would not say."""
        return f"{type(error).__name__}: {user_terms(str(error))}"

    def missing_name(self, error: BaseException, statement: str) -> str | None:
        """"table accounts has no column 'nocol'" or "table 'acounts' does not exist" when
        the engine says so, else None."""
        text = str(error)
        for pattern in self.missing_column:
            found = pattern.search(text)
            if found:
                groups = found.groupdict()
                return _no_such_column(statement, self.dialect, groups["column"], groups.get("qualifier"))
        for pattern in self.missing_table:
            found = pattern.search(text)
            if found:
                return f"table {_physical_to_user(found.group('table'))!r} does not exist"
        return None

    def refine(self, error: BaseException, target: type[errors.Error]) -> type[errors.Error]:
        return target

    @abstractmethod
    def is_unique_violation(self, error: BaseException) -> bool: ...

    def is_transient_conflict(self, error: BaseException) -> bool:
        """An abort caused only by a concurrent transaction, worth running again."""
        return False

    @abstractmethod
    def not_null_column(self, error: BaseException) -> str | None:
        """The column a NOT NULL violation names, or None for any other error."""

    def refresh_statistics(self, raw: Any, tables: Sequence[str], vacuum: bool = False) -> None:
        """Gathers the planner statistics of physical `tables`, on engines whose planner
        needs them to pick index probes over scans (PostgreSQL); others keep none.
        `vacuum`: also reclaim deleted rows' space where the engine leaves that to a
        vacuum; the caller has no engine transaction open."""

    def try_checkpoint_latch(self, raw: Any) -> bool:
        """Exclusive right to checkpoint across processes; embedded engines have one process."""
        return True

    def release_checkpoint_latch(self, raw: Any) -> None:
        pass

    # -- schema changes and the catalog version --------------------------------
    # A schema change bumps the catalog version in its engine transaction; a transaction's
    # begin reads it in the same request as its start timestamp, and a connection reloads
    # its catalog only when it moved (tique/ddl.py).
    CATALOG_VERSION_SQL = "SELECT version FROM tq_catalog"

    def begin(self, raw: Any) -> tuple[int, int, int]:
        """A transaction id, its start timestamp and the catalog version, in one round trip."""
        txid, sts = self.oracle.begin(raw)
        return txid, sts, self.catalog_version(raw)

    def catalog_version(self, raw: Any) -> int:
        return int(self.rows(raw, self.CATALOG_VERSION_SQL, [])[0][0])

    def bump_catalog_version(self, raw: Any) -> None:
        """Inside a schema change's engine transaction: commits with it."""
        self.execute(raw, "UPDATE tq_catalog SET version = version + 1", [])

    def catalog_committing(self) -> None:
        """A schema change is about to commit (for versions kept in process memory)."""

    def catalog_committed(self) -> None:
        """A schema change committed (for versions kept in process memory)."""

    def schema_change_began(self, raw: Any) -> None:
        """The open engine transaction is about to change the schema (DDL inside a tique transaction)."""

    def schema_change_ended(self, raw: Any) -> None:
        """The engine transaction that changed the schema committed or rolled back."""

    def fresh_rows(self, raw: Any, sql: str, params: Sequence[Any]) -> list[tuple]:
        """A read of the newest committed state, even while an engine transaction is open
        on `raw` (whose snapshot may be older). Read committed engines read it on `raw`."""
        return self.rows(raw, sql, params)

    def query_columns(self, raw: Any, table: str) -> list[tuple[str, str]]:
        """(name, SQL type) of each column of the native table `table`, in order."""
        rows = self.rows(raw, "SELECT column_name, data_type FROM information_schema.columns "
                              "WHERE table_name = $1 ORDER BY ordinal_position", [table])
        return [(str(n), str(t)) for n, t in rows]

    def execute_own_insert(self, raw: Any, text: str) -> Any:
        """Runs `text`, an INSERT ... SELECT of tique's own into its tables, written as
        plain SQL without parameters (adoption, recovery from the log), compiled so that
        the statement says what it is (tique/rewrite/facts.py; MonetDB runs such an
        insert as a read, then an insert of the rows read)."""
        from tique.rewrite import facts

        tree = sqlglot.parse_one(text, read=self.dialect)
        assert isinstance(tree, exp.Insert)
        compiled = self.compile(facts.internal_insert(tree))
        return self.execute(raw, compiled.sql, compiled.values((), {}))

    # -- transaction metadata ---------------------------------------------
    def insert_abort_outcome(self, raw: Any, cts: int, txid: int | None) -> None:
        self.execute(raw, "INSERT INTO tq_outcome (cts, txid, did_commit) VALUES ($1, $2, FALSE) ON CONFLICT (cts) DO NOTHING", [cts, txid])



def split_rows(tree: exp.Insert) -> tuple[exp.Insert, exp.Tuple]:
    """(a copy of `tree` with ROWS for its tq_new VALUES rows, the first of those rows)."""
    from tique.rewrite.writes import NEW

    head = tree.copy()
    values = next(v for v in head.find_all(exp.Values) if v.alias == NEW)
    row = values.expressions[0]
    values.set("expressions", [ROWS.copy()])
    return head, row

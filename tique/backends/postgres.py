"""PostgreSQL through psycopg 3, with the oracle in server-side functions."""
from __future__ import annotations

import re

import contextlib
import dataclasses
from typing import Any, Callable, Iterator, Sequence

import psycopg
import psycopg.adapt
import psycopg.postgres
import psycopg.types.numeric
import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType

from tique.backends.base import Backend
from tique.catalog import TableDef
from tique.oracle.postgres import STATEMENT_SNAPSHOT, PostgresOracle
from tique.rewrite.params import Compiled
from tique.rewrite.templates import data_type, template_text
from tique.session import Session, Unbound, writes


DDL_LOCK_TIMEOUT_MS = 5000
_STATEMENT_SNAPSHOT = exp.Subquery(this=sqlglot.parse_one(STATEMENT_SNAPSHOT, read="postgres"))

# A folded begin (PostgresBackend.fold_begin): tq_begin() in an engine transaction of its
# own, which writes nothing (its registration is an advisory lock), so that the latch
# it holds against tq_stable is released before the statements after it run.
FOLDED_BEGIN = "SELECT o_txid, o_sts, (tq_catalog_version()) FROM tq_begin()"
# What tq_begin() leaves in the session for the statements sent with it (see Unbound).
_SESSION_VALUES = {"txid": "CAST(current_setting('tique.txid') AS BIGINT)", "sts": "CAST(current_setting('tique.sts') AS BIGINT)"}

# tique's statements are planned once per session, not per call. Under the default
# (auto), PostgreSQL estimates a snapshot read's generic plan dearer than the custom ones
# (it cannot see through the UNION ALL) and so replans every call: a TPC-C point read of
# stock took 2.4 ms that way against 0.23 ms on its generic plan, and Delivery's
# MIN(no_o_id) 2.1 ms against 1.0, nearly all of the difference planning. Their plans
# hardly depend on the values: keys, a transaction's id and timestamps. An analytical
# read, whose plan may (a date range's selectivity), is planned per call instead
# (execute(analytic=True)).
GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"
CUSTOM_PLANS = "SET plan_cache_mode = force_custom_plan"
# A lateral read's planner settings, and their undoing (PostgresBackend.execute, `probing`).
_PROBING = (("SET enable_seqscan = off", ()), ("SET enable_material = off", ()))
_UNPROBING = (("RESET enable_seqscan", ()), ("RESET enable_material", ()))

# PostgreSQL's names for the types the PEP 249 type objects (tique.NUMBER, ...) know by SQL name.
_TYPE_NAMES = {
    "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE",
    "numeric": "NUMERIC", "text": "TEXT", "varchar": "VARCHAR", "bpchar": "CHAR", "name": "VARCHAR",
    "bytea": "BYTEA", "bool": "BOOLEAN", "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ",
}


class IntAsInteger(psycopg.adapt.Dumper):
    """Binds a Python int as INTEGER when it fits, else as psycopg would (BIGINT, then
    NUMERIC). psycopg's own int dumper picks the narrowest type per value, SMALLINT below
    2**15, and a prepared statement is keyed by its text and its parameters' types: a
    TPC-C New-Order's 10-row order-line INSERT, whose item ids fall on either side of
    2**15, came in up to 2**10 type variants of one text, so it never reached psycopg's
    prepare threshold and was parsed and planned again on every call, and the variants
    pushed tique's hot statements out of psycopg's cache of prepared statements. The types
    chosen are the ones PostgreSQL gives the same integer written as a literal (INTEGER,
    then BIGINT, then NUMERIC), so a bound value means what the literal means: `SELECT ? *
    ?` with 200 and 200 is 40,000 as `SELECT 200 * 200` is, where SMALLINT parameters
    overflowed."""

    format = psycopg.pq.Format.BINARY
    _INTEGER = psycopg.postgres.adapters.get_dumper(psycopg.types.numeric.Int4, psycopg.adapt.PyFormat.BINARY)
    _ANY_INT = psycopg.postgres.adapters.get_dumper(int, psycopg.adapt.PyFormat.BINARY)

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        self._integer = self._INTEGER(psycopg.types.numeric.Int4, context)
        self._any_int = self._ANY_INT(int, context)

    def dump(self, obj: Any) -> bytes:
        raise TypeError("IntAsInteger dispatches to other dumpers (upgrade)")

    def get_key(self, obj: Any, format: psycopg.adapt.PyFormat) -> Any:
        return psycopg.types.numeric.Int4 if -2**31 <= obj < 2**31 else self._any_int.get_key(obj, format)

    def upgrade(self, obj: Any, format: psycopg.adapt.PyFormat) -> psycopg.adapt.Dumper:
        return self._integer if -2**31 <= obj < 2**31 else self._any_int.upgrade(obj, format)


# How many prepared statements psycopg keeps per session (its default is 100; it
# deallocates the least recently used beyond that). A TPC-C client's tique statements
# are about 75 texts (a multi-row INSERT and its key check come in one text per row
# count); an application with more hot statements than the cache holds would prepare and
# plan them over and over.
PREPARED_MAX = 512


@dataclasses.dataclass
class WholeCommit:
    """What PostgresBackend.commit_whole's request did: the cursors of the writes, whether
    the COMMIT of the engine transaction (writes, write-set and marker) went through, the
    marker's cursor, and the first error (a failure after the COMMIT is one of `then`)."""
    cursors: list = dataclasses.field(default_factory=list)
    committed: bool = False
    marker: Any = None
    error: psycopg.Error | None = None


def _begun(cursor: Any) -> tuple[int, int, int] | None:
    """What a folded begin returned, if it ran (the pipeline may have failed before it)."""
    try:
        row = cursor.fetchone()
    except psycopg.Error:
        return None
    return (int(row[0]), int(row[1]), int(row[2])) if row is not None else None


def _replace_markers(sql: str, replacement: Callable[[int], str | None]) -> str:
    """`sql` with each `$n` marker (found by PostgreSQL's tokens, never inside a literal,
    identifier or comment) replaced by `replacement(n)`, where that is not None."""
    tokens = Postgres().tokenize(sql + " ")  # the space: sqlglot's tokenizer fails on a text ending in '' after a `$n`
    parts, end = [], 0
    for marker, value in zip(tokens, tokens[1:]):
        if marker.token_type is TokenType.PARAMETER and value.token_type is TokenType.NUMBER and value.start == marker.end + 1:
            replaced = replacement(int(value.text))
            if replaced is not None:
                parts += [sql[end:marker.start], replaced]
                end = value.end + 1
    return "".join(parts) + sql[end:]


def _renumbered(sql: str, by: int) -> str:
    """`sql` with each `$n` marker numbered n + by, to follow `by` parameters of another statement."""
    return _replace_markers(sql, lambda n: f"${n + by}")


def _forget_prepared(conn: psycopg.Connection) -> None:
    """After a pipeline failed: psycopg counts a statement as prepared once it has queued its
    Parse, but the server skips everything after a failure in a pipeline, so psycopg may now
    believe in a prepared statement the server never made; the next run of that text would
    fail with 'prepared statement "_pg3_N" does not exist'. So psycopg forgets what it
    prepared (and deallocates it all at its next statement). psycopg forgets on its own when
    it sees ROLLBACK or DEALLOCATE ALL, but only while it still counts those texts towards
    preparing them, not once they are prepared themselves, so this uses its prepare manager.
    """
    manager = getattr(conn, "_prepared", None)
    if manager is not None and hasattr(manager, "clear"):
        manager.clear()


class PostgresBackend(Backend):
    dialect = "postgres"
    lateral_point_reads = True
    missing_column = (re.compile(r'column (?:"?(?P<qualifier>[^".\s]+)"?\.)?"?(?P<column>[^".\s]+)"? (?:of relation "[^"]+" )?does not exist'),)
    missing_table = (re.compile(r'relation "(?P<table>[^"]+)" does not exist'),)

    def __init__(self, url: str, connect_timeout: float = 10.0, **_: object) -> None:
        super().__init__()
        self.url = url
        self.connect_timeout = connect_timeout
        self.oracle = PostgresOracle(self.rows)
        self._descriptions: dict[tuple, tuple] = {}  # result shape -> PEP 249 description

    def open(self) -> Any:
        # RawCursor speaks PostgreSQL's own $n markers, so SQL text needs no % escaping;
        # psycopg prepares a statement server-side once it has run a few times.
        conn = psycopg.connect(self.url, autocommit=True, cursor_factory=psycopg.RawCursor, connect_timeout=int(self.connect_timeout))
        conn.adapters.register_dumper(int, IntAsInteger)
        conn.prepared_max = PREPARED_MAX
        session = Session(conn)
        # A prepared statement is planned once, for any values (see GENERIC_PLANS).
        with session.round_trip():
            session.conn.execute(GENERIC_PLANS)
        return session

    def open_background(self) -> Session:
        raw = self.open()
        with raw.round_trip():
            raw.conn.execute("SET synchronous_commit = off")
        return raw

    def close_raw(self, raw: Session) -> None:
        raw.conn.close()

    def execute(self, raw: Session, sql: str, params: Sequence[Any], analytic: bool = False, probing: bool = False) -> Any:
        if analytic:
            # Planned without nested loops: PostgreSQL keeps no statistics for a snapshot
            # subquery (a UNION ALL it cannot see through), so it estimates every join
            # between snapshots with default selectivities; over several joined snapshots
            # the estimates collapse to a few rows and it picks nested loops over large
            # inputs (CH-benCHmark Q8 at a tiny scale: 21 s with them, 0.03 s without).
            # Hash joins degrade gracefully when estimates are off. The setting travels
            # with the statement in one request, so the session's other statements (and
            # its prepared plans) never see it.
            # A worker limit given as a number caps the read's parallel workers the same
            # way ("auto" and None leave PostgreSQL's max_parallel_workers_per_gather).
            workers = raw.analytic_workers
            if isinstance(workers, int):
                return self.execute_all(raw, [("SET enable_nestloop = off", ()), (CUSTOM_PLANS, ()), (f"SET max_parallel_workers_per_gather = {workers}", ()),
                                              (sql, params), ("RESET enable_nestloop", ()), (GENERIC_PLANS, ()),
                                              ("RESET max_parallel_workers_per_gather", ())])[3]
            return self.execute_all(raw, [("SET enable_nestloop = off", ()), (CUSTOM_PLANS, ()), (sql, params), ("RESET enable_nestloop", ()),
                                          (GENERIC_PLANS, ())])[2]
        if probing:
            # Planned for index probes: a lateral read runs its snapshot once per row of
            # the side before it, but PostgreSQL plans that subquery as if it ran once,
            # so over a small tq_outcome (a few pages between checkpoints) it joins the
            # cache's versions by a scan of the whole log, or hashes it, on every probe,
            # and anti-joins storage with the cache through a materialized nested loop.
            # TPC-C Stock-Level's 193 probes took 2.9-3.3 ms that way and 0.9-1.0 ms
            # through the tq_outcome and key indexes. Like an analytical read's settings
            # these travel with the statement in one request; a failed request rolls
            # them back with its implicit transaction.
            return self.execute_all(raw, [*_PROBING, (sql, params), *_UNPROBING])[len(_PROBING)]
        if raw.pending_begin or raw.oracle_begin_pending or any(isinstance(v, Unbound) for v in params):
            return self.execute_all(raw, [(sql, params)])[0]
        cur = raw.conn.cursor()
        with raw.round_trip(sql):
            cur.execute(sql, list(params))
        return cur

    def execute_all(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]], *, commit: bool = False) -> list[Any]:
        """One request: psycopg's pipeline sends the statements (after a BEGIN still
        pending, and before a COMMIT when `commit`) and reads all results at one sync.
        A failing statement raises, and the pipeline skips the ones after it."""
        statements = [self.bind_unbound(sql, params) for sql, params in statements]
        texts = [sql for sql, _ in statements]
        conn = raw.conn
        if len(statements) == 1 and not (commit or raw.oracle_begin_pending or raw.pending_begin):
            # One statement alone is one request without a pipeline, which costs the
            # client a tenth of a millisecond to enter and leave (TPC-C's stock updates).
            cur = conn.cursor()
            with raw.round_trip(texts[0]):
                cur.execute(texts[0], statements[0][1])
            return [cur]
        cursors = []
        begin = None
        with raw.round_trip(next((t for t in texts if writes(t)), ""), commit=commit, ):
            try:
                with conn.pipeline():
                    if raw.oracle_begin_pending:
                        raw.oracle_begin_pending = False
                        conn.execute("BEGIN")
                        begin = conn.cursor()
                        begin.execute(FOLDED_BEGIN)
                        conn.execute("COMMIT")
                    if raw.pending_begin:
                        raw.pending_begin = False
                        # Spelled out, whatever the server's default: statements of the
                        # engine transaction must see later commits (engine_reads_later_commits).
                        conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                    for sql, params in statements:
                        cur = conn.cursor()
                        cur.execute(sql, list(params))
                        cursors.append(cur)
                    if commit:
                        raw.in_transaction = False
                        conn.execute("COMMIT")
            except psycopg.Error:
                _forget_prepared(conn)
                raise
            finally:
                if begin is not None:
                    raw.begun = _begun(begin)
                    if raw.begun is not None:
                        raw.registered[raw.begun[0]] = raw.begun[1]
        return cursors

    def commit_then(self, raw: Session, first: tuple[str, Sequence[Any]], then: tuple[str, Sequence[Any]]) -> tuple[Any, BaseException | None]:
        """One request: `first` in an engine transaction of its own, committed, then `then`
        autocommitted; the server starts `then` only once the COMMIT returned. Returns
        `first`'s cursor and how `then` failed, if it did. If `first` or its COMMIT
        failed, `then` did not run: the engine transaction is rolled back and that error
        raised."""
        conn = raw.conn
        commit = None
        with raw.round_trip(first[0], other_commits=1):
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    cur = conn.cursor()
                    cur.execute(first[0], list(first[1]))
                    commit = conn.execute("COMMIT")
                    after = conn.cursor()
                    after.execute(then[0], list(then[1]))
            except psycopg.Error as error:
                _forget_prepared(conn)
                if commit is not None and commit.statusmessage == "COMMIT":
                    return cur, error
                failure = error
            else:
                return cur, None
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with raw.round_trip():
                conn.execute("ROLLBACK")
        raise failure

    commits_whole = True

    def lock_write_set(self, txid: int) -> tuple[str, list]:
        return "SELECT tq_lock_write_set($1)", [txid]

    def taken_in_statement_timestamp(self) -> exp.Expression:
        """The commit timestamp taken by the statement's own tq_taken (take_log_and_lock)."""
        return exp.Subquery(this=exp.select(exp.column("cts", "tq_taken")).from_("tq_taken"))

    def take_log_and_lock(self, take: tuple[str, Sequence[Any]], write_set: tuple[str, Sequence[Any]]) -> tuple[str, list]:
        """One statement for a whole commit's first three steps: take the commit timestamp
        (`take`, the oracle's statement), log the write-set under it (`write_set`, the
        INSERT compiled with taken_in_statement_timestamp, which makes the take run first)
        and take the write-set's key locks from the rows it logged (tq_lock_keys, as
        tq_lock_write_set takes them, without reading the write-set back). Returns one row:
        the commit timestamp and the number of locks. Made once per pair of texts."""
        take_sql, take_params = take
        ws_sql, ws_params = write_set
        # One per write-set text (one per set of tables written, whatever the number of
        # keys), which fixes the number of its parameters: its family in plan_timing.
        key = ("take, log and lock", ws_sql, take_sql)
        text = self.shared_plans.get(key)
        if text is None:
            taken = _renumbered(take_sql, len(ws_params))
            text = (f"WITH tq_taken AS MATERIALIZED (SELECT tq_take.cts FROM ({taken}) AS tq_take(cts)), "
                    f"tq_logged AS ({ws_sql} RETURNING key_hash) "
                    "SELECT (SELECT tq_taken.cts FROM tq_taken), "
                    "tq_lock_keys(ARRAY(SELECT DISTINCT tq_logged.key_hash FROM tq_logged ORDER BY tq_logged.key_hash))")
            self.shared_plans.put(key, text)
        return text, [*ws_params, *take_params]

    def commit_whole(self, raw: Session, writes: Sequence[tuple[str, Sequence[Any]]], marker: tuple[str, Sequence[Any]],
                     then: tuple[str, Sequence[Any]]) -> "WholeCommit":
        """One request: `writes` and then `marker` inside the engine transaction open on
        `raw`, and its COMMIT; then `then`, autocommitted. The server starts each
        statement only once the one before it returned, and skips the rest of the request
        after one fails. What ran is in the result; after a failure the session is left
        outside any engine transaction."""
        conn = raw.conn
        done = WholeCommit()
        committed = None
        cursors: list[Any] = []
        with raw.round_trip(writes[0][0], commit=True, other_commits=1):
            try:
                with conn.pipeline():
                    if raw.pending_begin:  # nothing was sent in the engine transaction yet
                        raw.pending_begin = False
                        conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                    for sql, params in (self.bind_unbound(sql, params) for sql, params in writes):
                        cursors.append(conn.cursor())
                        cursors[-1].execute(sql, params)
                    done.marker = conn.cursor()
                    done.marker.execute(marker[0], list(marker[1]))
                    raw.in_transaction = False
                    committed = conn.execute("COMMIT")
                    conn.cursor().execute(then[0], list(then[1]))
            except psycopg.Error as error:
                _forget_prepared(conn)
                done.error = error
            done.cursors = cursors
            done.committed = committed is not None and committed.statusmessage == "COMMIT"
        if done.error is not None and not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with raw.round_trip():
                conn.execute("ROLLBACK")
        return done

    folds_begin = True

    def fold_begin(self, raw: Session) -> None:
        """The oracle's begin travels in front of the session's next request, in an engine
        transaction of its own (FOLDED_BEGIN), instead of a round trip of its own; that
        request's statements bind the transaction's id and start timestamp as Unbound
        values. `raw.begun` says afterwards whether, and how, it ran."""
        raw.oracle_begin_pending = True
        raw.begun = None

    def unfold_begin(self, raw: Session) -> None:
        """A folded begin that has not left yet is dropped: its transaction ended first."""
        raw.oracle_begin_pending = False

    def folded_begun(self, raw: Session) -> tuple[int, int, int] | None:
        return raw.begun

    def bind_unbound(self, sql: str, params: Sequence[Any]) -> tuple[str, list]:
        """Each `$n` marker whose value is Unbound reads the value tq_begin() left in the
        session instead (found by PostgreSQL's tokens, never inside a literal, identifier
        or comment); the markers keep their numbers, the unused ones bound to 0. Made once
        per statement and set of such markers."""
        marks = tuple((i + 1, v.name) for i, v in enumerate(params) if isinstance(v, Unbound))
        if not marks:
            return sql, list(params)
        key = ("unbound", sql, marks)
        text = self.shared_plans.get(key)
        if text is None:
            numbers = {n: _SESSION_VALUES[name] for n, name in marks}
            text = _replace_markers(sql, numbers.get)
            self.shared_plans.put(key, text)
        return text, [0 if isinstance(v, Unbound) else v for v in params]

    def affected(self, cursor: Any) -> int:
        return int(cursor.rowcount)

    def description(self, cursor: Any) -> tuple | None:
        """Type codes become SQL type names (as DuckDB reports them) instead of bare OIDs;
        worked out once per result shape, as every point read repeats its shape."""
        # Keyed by the result's raw field metadata, from which psycopg derives every
        # attribute of its description: building that description (a Column per field,
        # each attribute computed) took a quarter of the client's CPU in a New-Order.
        result = cursor.pgresult
        if result is None or not result.nfields:
            return None
        shape = tuple((result.fname(i), result.ftype(i), result.fmod(i), result.fsize(i)) for i in range(result.nfields))
        described = self._descriptions.get(shape)
        if described is None:
            types = cursor.connection.adapters.types
            rows = []
            for name, type_code, *rest in ((c.name, c.type_code, *tuple(c)[2:]) for c in cursor.description):
                info = types.get(type_code)
                code = _TYPE_NAMES.get(info.name, info.name.upper()) if info is not None else type_code
                if info is not None and info.oid != type_code:
                    code = f"{code}[]"  # the registry answers an array's OID with its element type
                rows.append((name, code, *rest))
            described = self._descriptions[shape] = tuple(rows)
        return described

    @contextlib.contextmanager
    def atomic(self, raw: Session) -> Iterator[None]:
        """Schema changes wait for the locks of open transactions (a writer's engine
        transaction holds its cache table) at most DDL_LOCK_TIMEOUT_MS, then fail:
        nothing waits forever, not even a DROP behind a writer of the same connection's
        thread."""
        with super().atomic(raw):
            self.execute(raw, f"SET LOCAL lock_timeout = {DDL_LOCK_TIMEOUT_MS}", [])
            yield

    CATALOG_VERSION_SQL = "SELECT version FROM tq_catalog WHERE id = 1"

    def begin(self, raw: Session) -> tuple[int, int, int]:
        """The version is read after the start timestamp is taken (see tq_catalog_version)."""
        return self.oracle.begin_with(raw, "tq_catalog_version()")

    def schema_change_began(self, raw: Session) -> None:
        """As in atomic(): the schema change waits for other transactions' locks a bounded time."""
        self.execute(raw, f"SET LOCAL lock_timeout = {DDL_LOCK_TIMEOUT_MS}", [])

    def query_columns(self, raw: Session, table: str) -> list[tuple[str, str]]:
        rows = self.rows(raw, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                              "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                         [exp.to_identifier(table, quoted=True).sql("postgres")])
        return [(str(n), str(t)) for n, t in rows]

    def begin_engine(self, raw: Session) -> None:
        """The BEGIN travels with the transaction's first statement (see execute_all)."""
        raw.pending_begin = True
        raw.in_transaction = True

    def commit_engine(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]] = ()) -> list[Any]:
        if raw.pending_begin and not statements:  # nothing was sent: nothing to commit
            raw.pending_begin = raw.in_transaction = False
            return []
        return self.execute_all(raw, statements, commit=True)

    def _commit_open(self, raw: Session) -> None:
        self.commit_engine(raw)

    def rollback_engine(self, raw: Session) -> None:
        raw.in_transaction = False
        if raw.pending_begin:
            raw.pending_begin = False
            return
        if raw.conn.closed:
            return
        with raw.round_trip():
            raw.conn.execute("ROLLBACK")

    def run_script(self, raw: Session, script: str) -> None:
        with self.atomic(raw), raw.round_trip():
            raw.conn.cursor().execute(script)

    def param_node(self, n: int) -> exp.Expression:
        return exp.Parameter(this=exp.Literal.number(n))

    engine_reads_later_commits = True  # engine transactions run at PostgreSQL's READ COMMITTED (execute_all)

    def statement_snapshot_expression(self) -> exp.Expression | None:
        """The clock row, read under the statement's own engine snapshot (a statement alone,
        or one of an engine transaction at READ COMMITTED: one snapshot per statement, taken
        when it starts), so every occurrence in the statement reads the same, newest value."""
        return _STATEMENT_SNAPSHOT

    def at_statement_snapshot(self, compiled: Compiled) -> Compiled | None:
        """Each `$n` marker bound to the snapshot timestamp becomes GREATEST($n, clock),
        found by PostgreSQL's tokens (never inside a literal, identifier or comment); the
        markers keep their numbers, so the values bind as before. Made once per statement."""
        if "tq_sts" not in compiled.names:
            return compiled
        key = ("at statement snapshot", compiled)
        found = self.shared_plans.get(key)
        if found is None:
            number = compiled.names.index("tq_sts") + 1
            newest = self.statement_snapshot_expression().sql("postgres")
            sql = _replace_markers(compiled.sql, lambda n: f"GREATEST(${n}, {newest})" if n == number else None)
            found = dataclasses.replace(compiled, sql=sql)
            self.shared_plans.put(key, found)
        return found

    def taken_commit_timestamp(self) -> exp.Expression | None:
        return exp.Anonymous(this="currval", expressions=[exp.Literal.string("tq_cts_seq")])

    def key_hash(self, table_name: str, keys: list[exp.Expression]) -> exp.Expression:
        parts = [exp.Literal.string("|"), exp.Literal.string(table_name), *[exp.cast(k, data_type("TEXT")) for k in keys]]
        return exp.Anonymous(this="hashtextextended", expressions=[exp.Anonymous(this="concat_ws", expressions=parts), exp.Literal.number(0)])

    def metadata_script(self) -> str:
        return template_text("postgres/metadata.sql")

    def refresh_statistics(self, raw: Session, tables: Sequence[str], vacuum: bool = False) -> None:
        """ANALYZE: without statistics the planner estimates one row for any filter on a
        table it never analyzed, and then probes a cache table by the key's leading
        columns only, re-reading every cached row of a district per storage row (TPC-C
        Stock-Level took 470 ms instead of 4 on caches 15 s full). Autovacuum analyzes a
        table a minute or more after it changed, too late for tables just loaded and for
        caches that churn every checkpoint. `vacuum` (the checkpointer, outside any engine
        transaction): VACUUM with it, since every round deletes what it moved, and
        autovacuum left up to ten times a cache's live rows dead between its passes (a
        minute of TPC-C) for every read of the cache to step over."""
        if tables:
            self.execute(raw, ("VACUUM (ANALYZE) " if vacuum else "ANALYZE ") + ", ".join(exp.to_identifier(t, quoted=True).sql(self.dialect) for t in tables), [])

    def try_checkpoint_latch(self, raw: Any) -> bool:
        return bool(self.rows(raw, "SELECT pg_try_advisory_lock(7411, 4)", [])[0][0])

    def release_checkpoint_latch(self, raw: Any) -> None:
        self.rows(raw, "SELECT pg_advisory_unlock(7411, 4)", [])

    def physical_ddl(self, table: TableDef) -> list[str]:
        return [self._deterministic_key_check(c.name, c.collation) for c in table.columns
                if c.collation is not None and c.name in table.key] + super().physical_ddl(table)

    @staticmethod
    def _deterministic_key_check(column: str, collation: str) -> str:
        """Refuses a key column whose collation is nondeterministic (CREATE COLLATION ...
        deterministic = false): write-set hashes and snapshot partitions compare keys as
        bytes, which is exact only where equal keys are equal bytes (every deterministic
        collation, the built-in ones included)."""
        literal = lambda text: "'" + text.replace("'", "''") + "'"  # noqa: E731
        message = (f"key column {column} has the nondeterministic collation {collation}, which tique tables cannot key by; "
                   f"declare the key column with a deterministic collation and collate where it is compared")
        body = (f"BEGIN IF EXISTS (SELECT 1 FROM pg_collation WHERE oid = {literal(collation)}::regcollation AND NOT collisdeterministic) "
                f"THEN RAISE EXCEPTION USING ERRCODE = 'feature_not_supported', MESSAGE = {literal(message)}; END IF; END")
        return f"DO {literal(body)}"

    def cache_indexes(self, table: TableDef) -> list[str]:
        q = lambda n: exp.to_identifier(n, quoted=True).sql(self.dialect)  # noqa: E731
        key = ", ".join(q(k) for k in table.key)
        indexes = [f"CREATE INDEX {q(table.cache + '_key')} ON {q(table.cache)} ({key})",
                   f"CREATE INDEX {q(table.cache + '_txid')} ON {q(table.cache)} (tq_txid)"]
        # A UNIQUE check looks up the values a statement wrote in both tables, as the
        # engine's own unique index would.
        for i, unique in enumerate(table.uniques):
            listed = ", ".join(q(c) for c in unique.columns)
            indexes += [f"CREATE INDEX {q(f'{physical}_u{i}')} ON {q(physical)} ({listed})" for physical in (table.storage, table.cache)]
        return indexes

    def not_null_column(self, error: BaseException) -> str | None:
        if isinstance(error, psycopg.errors.NotNullViolation):
            return error.diag.column_name or "?"
        return None

    def is_unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, psycopg.errors.UniqueViolation)

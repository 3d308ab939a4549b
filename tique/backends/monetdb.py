"""MonetDB through pymonetdb, with the oracle in C UDFs.

Per connection it keeps server-side prepared statements for rewritten statements that
repeat (like psycopg's prepare threshold) and switches the optimizer pipeline only when
a statement needs the other one: `minimal_fast` for point and commit-path statements,
`default_pipe` for analytical ones (paper, section 3.2.1).
"""
from __future__ import annotations

import contextlib
import datetime
import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import pymonetdb
from sqlglot import exp

import tique.dialects.monetdb  # noqa: F401  (registers the dialect)
from tique import errors
from tique.backends.base import Backend, split_rows, user_terms
from tique.oracle.monetdb import MonetDBOracle
from tique.rewrite import facts, faithful
from tique.rewrite.params import MARKED, ROWS, Compiled, RowTemplate, render_marked, shift_user_params
from tique.rewrite.templates import data_type, template_text
from tique.rewrite.writes import NEW
from tique.session import Counters, Session as BaseSession, step
from tique.worker_budget import WorkerBudget



class _NoConnectLog(logging.Filter):
    """pymonetdb logs a failed connect (without a newline of its own in captured output)
    and then raises; tique's exception already says it, with the password hidden."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Could not connect to ")


logging.getLogger("pymonetdb.mapi").addFilter(_NoConnectLog())

PREPARE_THRESHOLD = 2  # executions of one text before it is prepared server-side
# Whether any session but the asking connection's two ran a statement in the last %s
# seconds (MonetDBBackend._adapt_worker_limit).
_OTHER_WORK = ("SELECT count(*) FROM sys.sessions WHERE sessionid <> current_sessionid() AND sessionid <> %s "
               "AND (idle IS NULL OR idle >= localtimestamp() - CAST(%s AS INTEGER) * INTERVAL '1' SECOND)")
OLTP_PIPE, OLAP_PIPE = "minimal_fast", "default_pipe"
_DOLLAR = re.compile(r"\$(\d+)")
_TOKEN = re.compile(r"__tqp_(\w+?)__")
_FORMAT_MARK = re.compile(r"%(%|s)")  # in FormatSQL text: a doubled % or a marker
# MonetDB aborts an INSERT ... SELECT that reads a table others append to, but never a
# plain INSERT ... VALUES: tique's own INSERT ... SELECTs run as a read, then the insert.
# Such statements say so (tique/rewrite/facts.py, FormatSQL.insert_of_query).

# PEP 249 type objects (tique.NUMBER, ...) know types by SQL name; MonetDB's own names differ.
_TYPE_NAMES = {
    "int": "INTEGER", "tinyint": "TINYINT", "smallint": "SMALLINT", "bigint": "BIGINT", "hugeint": "HUGEINT",
    "oid": "BIGINT", "double": "DOUBLE", "real": "REAL", "decimal": "DECIMAL", "clob": "TEXT", "varchar": "VARCHAR",
    "char": "CHAR", "blob": "BLOB", "boolean": "BOOLEAN", "date": "DATE", "time": "TIME", "timetz": "TIME WITH TIME ZONE",
    "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMPTZ",
}
# SQLSTATE classes -> PEP 249 classes. pymonetdb raises OperationalError for nearly
# every server error, so its class alone would say little.
_SQLSTATE_CLASSES: dict[str, type[errors.Error]] = {
    "22": errors.DataError,  # data exception: conversion, division by zero, out of range
    "23": errors.IntegrityError,  # integrity constraint violation
    "42": errors.ProgrammingError,  # syntax error or access rule violation: unknown table, column, function
    "3F": errors.ProgrammingError,  # invalid schema name
    "0A": errors.NotSupportedError,  # feature not supported
}
_SQLSTATE = re.compile(r"^([0-9A-Z]{5})!")
_LABEL = re.compile(r"^%\d+$")
# Statements about the session, not its data: they run before a pending START TRANSACTION.
_SESSION_ONLY = re.compile(r"\s*(?:PREPARE|DEALLOCATE|SET\s+optimizer)\b", re.IGNORECASE)  # MonetDB's name for an unaliased expression's column


@dataclass(frozen=True)
class Naming:
    """How to learn the names MonetDB gives a read's unlabelled result columns natively
    (`%2`, `%6`: numbers it hands out while translating the query). The snapshot
    subqueries shift those numbers; the same query over plain projections of the
    storage tables does not, so EXPLAIN of it (compiled as for execution, never run)
    names them: its plan's result set lists the names (see _result_names). PREPARE
    compiles otherwise (without the simplifications that drop numbered expressions) and
    numbers some labels differently from execution."""
    text: str  # the query over the storage tables, in FormatSQL form
    names: tuple[str, ...]  # what fills its markers
    source: tuple[str, ...]  # what fills the markers of the statement it names


class InsertOfQuery(NamedTuple):
    """An INSERT of tique's own whose rows come from a query reading tables: the insert's
    table and column list as rendered, and the query, whose markers are the insert's."""
    target: str
    columns: str
    query: str


@dataclass(frozen=True)
class _InsertHead:
    target: str
    columns: str
    text: str  # INSERT INTO target (columns), and the space before the query

    def parts(self, text: str) -> InsertOfQuery:
        """The parts of `text`, a rendering of the insert, the read-then-insert needs."""
        assert text.startswith(self.text), text
        return InsertOfQuery(self.target, self.columns, text[len(self.text):])


class _PendingNaming:
    """A read's Naming, rendered when first asked for: only a read whose result has
    unlabelled columns needs it, so planning renders every other read once, not twice."""

    def __init__(self, plain: exp.Expression, source: tuple[str, ...], render: Callable[[exp.Expression, bool], Compiled]) -> None:
        self._plain: exp.Expression | None = plain  # a copy of its own, handed to the renderer
        self._source = source
        self._render = render
        self._lock = threading.Lock()  # two threads asking at once render once
        self._naming: Naming | None = None

    def rendered(self) -> Naming:
        with self._lock:
            if self._naming is None:
                assert self._plain is not None
                rendered = self._render(self._plain, True)
                self._naming, self._plain = Naming(rendered.sql, rendered.names, self._source), None
            return self._naming


class FormatSQL(str):
    """Statement text as compile() renders it: %s markers, a literal % doubled.
    Every other statement tique sends is plain text with $n markers."""
    _naming: Naming | _PendingNaming | None = None
    # Set when the statement is such an insert (the plan says so: tique/rewrite/facts.py),
    # which runs as a read, then an insert of the rows read. Other inserts (their rows
    # from VALUES or bare expressions) cannot meet the append conflict and run as they are.
    insert_of_query: InsertOfQuery | None = None
    # Such an insert of an UPDATE or DELETE: what each row read stands for (TargetRows).
    target_rows: facts.TargetRows | None = None
    # An INSERT whose rows come from no table (VALUES or bare expressions): inside an open
    # engine transaction it may travel in front of the statement's validating read.
    direct: bool = False

    @property
    def naming(self) -> Naming | None:
        """How to learn the native names of the read's unlabelled result columns (Naming)."""
        found = self._naming
        if isinstance(found, _PendingNaming):
            found = self._naming = found.rendered()
        return found


def sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE a MonetDB error message starts with (`42S02!no such table ...`)."""
    found = _SQLSTATE.match(str(error))
    return found.group(1) if found else None


class _ReplyCursor(pymonetdb.sql.cursors.Cursor):
    """pymonetdb's cursor, keeping the row count of every insert of a request of several
    statements (pymonetdb keeps only the last one's)."""
    updates: list[int]

    def _store_result(self, block: Any, *, update_existing: bool) -> None:  # type: ignore[override]
        if not update_existing:
            self.updates = [int(line[2:].split()[0]) for line in (block or "").split("\n") if line.startswith("&2 ")]
        super()._store_result(block, update_existing=update_existing)


class _CountedCursor:
    """A pymonetdb cursor whose every execute is accounted as a round trip of its session."""

    def __init__(self, session: "Session") -> None:
        self._session = session
        self._cursor = _ReplyCursor(session.conn)
        self.carried = 0  # held inserts that went out in front of the last statement sent

    def execute(self, operation: str, parameters: Any = None, *, origin: str | None = None, commit: bool = False,
                other_commits: int = 0) -> Any:
        """`origin`: the statement an EXEC runs, which says whether it writes. A
        transaction's pending START TRANSACTION travels in front of its first statement,
        in the same request (MonetDB runs a request of several statements in order and
        answers with a result for each), and so do the cache inserts the session holds
        (Session.held): the engine transaction runs them before the statement, which
        therefore reads them."""
        session = self._session
        values = list(parameters) if parameters else []
        self.carried = 0
        if not _SESSION_ONLY.match(operation):
            if session.held:
                held, session.held = session.held, []
                self.carried = len(held)
                texts = [text for text, _ in held]  # FormatSQL form: %s markers, a literal % doubled
                held_values = [v for _, vs in held for v in vs]
                if values or held_values:  # pymonetdb formats the request as a whole
                    if not values:
                        operation = operation.replace("%", "%%")
                else:
                    texts = [t.replace("%%", "%") for t in texts]
                operation = "; ".join([*texts, operation])
                values = held_values + values
            if session.pending_begin:
                session.pending_begin = False
                operation = "START TRANSACTION; " + operation
        if self.carried and session.counters.trace is not None:
            session.counters.trace.carried(self.carried)
        with session.round_trip(origin or operation, commit=commit, other_commits=other_commits):
            return self._cursor.execute(operation, values or None)

    def whole_results(self) -> None:
        """The next result comes in its first reply, however many rows it has."""
        self._cursor.replysize = -1

    def result_sets(self) -> list[list[tuple]]:
        """The rows of every query of the request just sent, in order."""
        found = [self._cursor.fetchall()] if self._cursor.description is not None else []
        while self._cursor.nextset():
            found.append(self._cursor.fetchall())
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


@dataclass(eq=False)
class Session(BaseSession):
    """One pymonetdb connection and what tique caches on it."""
    uses: dict[str, int] = field(default_factory=dict)
    # text -> (id, markers, each marker's (type, scale) as PREPARE inferred it)
    prepared: dict[str, tuple[int, int, tuple[tuple[str, int], ...]]] = field(default_factory=dict)
    pipeline: str = "default_pipe"
    session_token: int | None = None  # set by the oracle on first use
    schema_change: bool = False  # inside atomic(): statements run as text, never prepared
    # Analytical reads run on a second connection, opened on first use: MonetDB drops a
    # session's prepared statements whenever its optimizer pipeline is set, so switching
    # one session between pipelines would re-plan every point statement after each
    # analytical read. A read outside an engine transaction autocommits (the snapshot is
    # in the SQL), so which connection runs it does not change what it sees. It shares
    # the main session's counters.
    analytic: "Session | None" = None
    # Cache inserts held for the next request of the open engine transaction, as
    # (text with %s markers, values): they go out in front of its next statement or its
    # COMMIT (see _CountedCursor.execute). Only rows that cannot fail are held (see
    # _ColumnRule), so an error still surfaces at the statement that caused it.
    held: list[tuple[str, list]] = field(default_factory=list)
    catalog_version: int | None = None  # as of the transaction's begin; keys column_rules
    # The "auto" worker cap of an analytical session (MonetDBBackend._adapt_worker_limit):
    # the limit set on the server (0: none), when the engine was last looked
    # at for other work (time.monotonic()), and the main session's id, which is this
    # connection's own and never counts as other work.
    worker_limit: int = 0
    busy_checked_at: float = -math.inf
    main_session_id: int | None = None
    column_rules: dict[tuple[str, str, int | None], tuple["_ColumnRule", ...] | None] = field(default_factory=dict)

    def cursor(self) -> Any:
        return _CountedCursor(self)


_EXACT_TYPES = {"tinyint", "smallint", "int", "bigint", "hugeint", "oid", "decimal"}
_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "hugeint": 128}


def _keeps(value: Any, kind: tuple[str, int]) -> bool:
    """Whether EXEC keeps `value` exactly in the type PREPARE inferred for its marker.

    PREPARE types a marker from its context, not from a value: in `v + ?` with v a
    DECIMAL(12, 2) the marker is a DECIMAL(18, 0), and EXEC would round 0.97 to 1. Such
    a value runs in a widened variant of the statement instead (see _widen).
    """
    name, scale = kind
    if isinstance(value, int) and not isinstance(value, bool) and name in _INTEGER_BITS:
        # An integer the marker's type cannot hold (MonetDB keeps each type's least value
        # as its NULL) fails EXEC with a conversion error where the text compares it as a
        # wider number: it runs as text, as natively.
        limit = 2 ** (_INTEGER_BITS[name] - 1) - 1
        return -limit <= value <= limit
    shape = _places(value)
    return name not in _EXACT_TYPES or shape is None or shape[1] <= (scale if name == "decimal" else 0)


def _places(value: Any) -> tuple[int, int] | None:
    """(digits, places) of a number as it would be bound, trailing zeros dropped; None
    for anything else (and for infinities and NaN, which no exact type holds)."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, float)):
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        value = Decimal(repr(value))
    sign, digits, exponent = value.normalize().as_tuple()
    if not isinstance(exponent, int):
        return None
    places = -exponent if exponent < 0 else 0
    return max(len(digits), places) + (exponent if exponent > 0 else 0), places


def _widen(text: str, values: Sequence[Any], kinds: tuple[tuple[str, int], ...]) -> str | None:
    """`text` with each marker whose value PREPARE's type would round cast to a decimal
    that holds the value exactly, so the statement can still run prepared: a variant
    per scale, where inlining would compile the statement on every execution."""
    casts: dict[int, int] = {}
    for index, (value, kind) in enumerate(zip(values, kinds)):
        if _keeps(value, kind):
            continue
        shape = _places(value)
        if shape is None or shape[0] > 18:
            return None
        casts[index] = shape[1]
    position = -1

    def mark(found: re.Match[str]) -> str:
        nonlocal position
        if found.group(1) == "%":
            return found.group(0)
        position += 1
        return f"CAST(%s AS DECIMAL(18, {casts[position]}))" if position in casts else found.group(0)

    return _FORMAT_MARK.sub(mark, text)


def _dollar_to_format(sql: str, params: Sequence[Any]) -> tuple[str, list]:
    """Fixed metadata statements use $n markers; pymonetdb binds %s in text order."""
    order = [int(m) - 1 for m in _DOLLAR.findall(sql)]
    return _DOLLAR.sub("%s", sql.replace("%", "%%")), [params[i] for i in order]


class MonetDBBackend(Backend):
    dialect = "monetdb"
    missing_column = (re.compile(r"identifier '(?P<column>[^']+)' unknown"),
                      re.compile(r"no such column '(?:(?P<qualifier>[^'.]+)\.)?(?P<column>[^'.]+)'"))
    missing_table = (re.compile(r"no such table '(?P<table>[^']+)'"),)
    supports_returning = False
    adopts_by_rename = True
    commits_in_requests = True
    # The "auto" analytic worker cap (_adapt_worker_limit): how recently another session
    # must have run a statement for the engine to count as busy (MonetDB keeps whole
    # seconds), and how often an analytical session looks again.
    busy_window_s = 2
    busy_recheck_s = 1.0
    # Analytical reads count the caches they read and read the empty ones' storage alone
    # (empty_caches); a cache found holding rows is not counted again for this long.
    counts_caches = True
    nonempty_recheck_s = 1.0
    # A point read without the reader's own versions costs about a third less server CPU.
    reads_without_own_versions = True

    def __init__(self, url: str, prepare_threshold: int = PREPARE_THRESHOLD, packed_keys: bool = True, **_: object) -> None:
        super().__init__()
        self.url = url
        parts = urlsplit(url)
        self._connect_args = dict(
            hostname=parts.hostname or "127.0.0.1", port=parts.port or 50000,
            username=unquote(parts.username or "monetdb"), password=unquote(parts.password or "monetdb"),
            database=parts.path.lstrip("/") or "demo",
        )
        self.schema = (parse_qs(parts.query).get("schema") or [None])[0]
        self.prepare_threshold = prepare_threshold
        self._label_names: dict[str, tuple[str, ...]] = {}  # naming text -> native column names
        self.supports_unlogged = True
        self.packs_keys = packed_keys  # and the server has HUGEINT, probed at install
        self.oracle = MonetDBOracle(self.rows, self._recover_from_log, self.insert_abort_outcome)
        self._server_threads: int | None = None  # gdk_nr_threads, read once
        self._nonempty_seen: dict[str, float] = {}  # cache table -> when a count last found rows in it
        # The workers this process's capped analytical reads hold together (auto's share).
        self.analytic_budget = WorkerBudget()

    # -- connections -----------------------------------------------------------
    def open(self, counters: Counters | None = None) -> Session:
        session = Session(pymonetdb.connect(autocommit=True, **self._connect_args))
        if counters is not None:
            session.counters = counters
        if self.schema:
            cur = session.cursor()
            q = exp.to_identifier(self.schema, quoted=True).sql(self.dialect)
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
            cur.execute(f"SET SCHEMA {q}")
        return session

    def close_raw(self, raw: Session) -> None:
        try:
            if raw.analytic is not None:
                raw.analytic.conn.close()
        finally:
            raw.conn.close()

    def _analytic_session(self, raw: Session) -> Session:
        """The session's second connection, for analytical reads, opened on first use with
        its worker limit: MonetDB runs a query on every core by default, so one OLAP
        client would take the whole engine from the point transactions beside it."""
        if raw.analytic is None:
            analytic = self.open(raw.counters)
            analytic.worker_limit = 0  # a new session's: none
            if isinstance(raw.analytic_workers, int):  # "auto" adapts below; None: MonetDB's own
                self._set_worker_limit(analytic, raw.analytic_workers)
            analytic.analytic_queue = raw.analytic_queue
            raw.analytic = analytic
        if raw.analytic_workers == "auto":
            self._adapt_worker_limit(raw, raw.analytic)
        return raw.analytic

    def empty_caches(self, raw: Session, caches: dict[str, str]) -> frozenset[str]:
        """One request on the analytical session (where the read will run): the row count
        of each cache not seen holding rows in the last nonempty_recheck_s (a count of a
        MonetDB table reads its size, not its rows). Under a steady write load the caches
        a read names hold rows, and a read that counted them would pay the request for
        nothing: those are taken to hold rows, which only means reading them through
        their snapshots."""
        if raw.schema_change:
            return frozenset()  # inside atomic() reads run on the main session
        now = time.monotonic()
        asked = {name: cache for name, cache in caches.items()
                 if now - self._nonempty_seen.get(cache, -math.inf) >= self.nonempty_recheck_s}
        if not asked:
            return frozenset()
        counts = exp.select(*[exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(exp.Table(this=exp.to_identifier(cache, quoted=True))))
                              for cache in asked.values()])
        analytic = self._analytic_session(raw)
        with analytic.round_trip():
            cur = analytic.conn.cursor()
            cur.execute(counts.sql(self.dialect))
            row = cur.fetchone()
        empty = set()
        for (name, cache), count in zip(asked.items(), row):
            if int(count) == 0:
                empty.add(name)
            else:
                self._nonempty_seen[cache] = now
        return frozenset(empty)

    def _set_worker_limit(self, analytic: Session, limit: int) -> None:
        with analytic.round_trip():
            analytic.conn.cursor().execute(f"CALL sys.setworkerlimit({int(limit)})")
        analytic.worker_limit = limit

    def _analytic_share(self, session: Session) -> int:
        """Half the server's worker threads, at least one: what "auto" gives one analytical
        read, and what the capped analytical reads of this process hold together."""
        if self._server_threads is None:
            cur = session.conn.cursor()
            with session.round_trip():
                cur.execute("SELECT value FROM sys.env() WHERE name = 'gdk_nr_threads'")
                row = cur.fetchone()
            self._server_threads = int(row[0]) if row and str(row[0]).isdigit() else 1
        return max(1, self._server_threads // 2)

    def _adapt_worker_limit(self, raw: Session, analytic: Session) -> None:
        """The "auto" cap exists to leave point transactions their share of the engine; with
        none running it only halves the analytical read. So, at most once per
        busy_recheck_s, the analytical session looks at the server's other sessions (not
        itself, not its connection's main session): while one of them ran a statement in
        the last busy_window_s seconds (MonetDB keeps the second a session went idle, NULL
        while it runs one) the cap holds, otherwise the read gets every core (limit 0,
        MonetDB's own). A user who sees only its own sessions (MonetDB shows other users'
        to administrators) is capped only beside its own work."""
        now = time.monotonic()
        if now - analytic.busy_checked_at < self.busy_recheck_s:
            return
        analytic.busy_checked_at = now
        if raw.main_session_id is None:
            try:
                with raw.round_trip():
                    cur = raw.conn.cursor()  # not raw.cursor(): held inserts stay held
                    cur.execute("SELECT current_sessionid()")
                    raw.main_session_id = int(cur.fetchone()[0])
            except pymonetdb.Error:  # its engine transaction failed: asked again next time
                pass
        cur = analytic.conn.cursor()
        with analytic.round_trip():
            # Until the main session's id is known it counts as other work: capped, as before.
            cur.execute(_OTHER_WORK, [-1 if raw.main_session_id is None else raw.main_session_id, int(self.busy_window_s)])
            busy = bool(cur.fetchone()[0])
        wanted = self._analytic_share(analytic) if busy else 0
        if wanted != analytic.worker_limit:
            self._set_worker_limit(analytic, wanted)

    def _set_pipeline(self, raw: Session, pipeline: str) -> None:
        if raw.pipeline != pipeline:
            raw.prepared.clear()  # setting the pipeline drops them on the server
            with step(raw, "optimizer pipeline"):
                raw.cursor().execute(f"SET optimizer = '{pipeline}'")
            raw.pipeline = pipeline

    def execute(self, raw: Session, sql: str, params: Sequence[Any], analytic: bool = False, probing: bool = False) -> Any:
        if analytic and not raw.schema_change:
            # The caller sends a read here only if it needs none of the open engine
            # transaction's writes (see Connection._run).
            raw = self._analytic_session(raw)
        if not raw.in_transaction:  # setting it inside a transaction would drop the prepared statements it uses
            self._set_pipeline(raw, OLAP_PIPE if analytic else OLTP_PIPE)
        text: str
        if isinstance(sql, FormatSQL):
            text, values = sql, list(params)
        elif params:
            text, values = _dollar_to_format(sql, params)
        else:
            text, values = FormatSQL(sql.replace("%", "%%")), []
        split = _insert_of_query(sql)
        if split is not None:
            return self._insert_via_client(raw, split, values, getattr(sql, "target_rows", None))
        if analytic and raw.analytic_queue and raw.worker_limit:  # 0: the engine's own, no cap to share
            # Queueing reads share the analytic budget (tique/worker_budget.py): six OLAP
            # clients capped at one worker each would otherwise still take six threads.
            with self.analytic_budget.held(raw.worker_limit, self._analytic_share(raw)):
                cur = self._run(raw, text, values)
        else:
            cur = self._run(raw, text, values)
        if any(_LABEL.match(d[0]) for d in cur.description or ()) and (naming := getattr(sql, "naming", None)) is not None:
            # PREPARE may fail, which would abort an open engine transaction: learn the
            # names on the other session then (they do not depend on the session).
            namer = raw
            with step(raw, "column naming"):
                if raw.in_transaction:
                    namer = self._analytic_session(raw)
                cur.tq_names = self._native_names(namer, naming, values)
        return cur

    def _run(self, raw: Session, text: str, values: list, hold: bool = False, commit: bool = False, other_commits: int = 0) -> Any:
        try:
            return self._send(raw, text, values, hold, commit, other_commits)
        except pymonetdb.exceptions.Error:
            raw.prepared.clear()  # a failed statement drops every prepared statement of the session
            raise

    def _send(self, raw: Session, text: str, values: list, hold: bool = False, commit: bool = False, other_commits: int = 0) -> Any:
        """`hold`: do not send the statement, hold it for the session's next request
        (Session.held); the caller knows it cannot fail."""
        cur = raw.cursor()
        if not values:
            if hold:
                raw.held.append((text, []))
                return None
            cur.execute(text.replace("%%", "%"), commit=commit, other_commits=other_commits)  # no values: pymonetdb sends the text as it is
            return cur
        if raw.schema_change:
            if hold:
                raw.held.append((text, list(values)))
                return None
            cur.execute(text, values, commit=commit, other_commits=other_commits)
            return cur
        prepared = raw.prepared.get(text)
        if prepared is not None and not all(map(_keeps, values, prepared[2])):
            widened = _widen(text, values, prepared[2])
            if widened is not None:
                text, prepared = widened, raw.prepared.get(widened)
        if prepared is None:
            uses = raw.uses.get(text, 0) + 1
            raw.uses[text] = uses
            if uses >= self.prepare_threshold:
                prepared = self._prepare(raw, text)
        if prepared is not None and all(map(_keeps, values, prepared[2])):
            ident, markers, _ = prepared
            if hold:
                raw.held.append((f"EXEC {ident}({', '.join(['%s'] * markers)})", list(values)))
                return None
            try:
                cur.execute(f"EXEC {ident}({', '.join(['%s'] * markers)})", values, origin=text, commit=commit, other_commits=other_commits)
                return cur
            except pymonetdb.exceptions.Error:
                # e.g. a table it used was dropped; a failed statement drops all of them
                raw.prepared.clear()
                if raw.in_transaction or commit:
                    raise  # the failure aborted the engine transaction: no second try in it
                cur = raw.cursor()
        if hold:
            raw.held.append((text, list(values)))
            return None
        cur.execute(text, values, commit=commit, other_commits=other_commits)
        return cur

    def _native_names(self, raw: Session, naming: Naming, values: list) -> tuple[str, ...]:
        """The result column names the application's query gets natively (see Naming),
        learned once per statement text."""
        found = self._label_names.get(naming.text)
        if found is None:
            by_name = dict(zip(naming.source, values))
            cur = raw.cursor()
            try:
                # Values inline, as pymonetdb sends them natively (the numbering may depend on them).
                if naming.names:
                    cur.execute(f"EXPLAIN {naming.text}", [by_name[n] for n in naming.names])
                else:
                    cur.execute(f"EXPLAIN {naming.text.replace('%%', '%')}")
                found = _result_names(str(row[0]) for row in cur.fetchall())
            except pymonetdb.exceptions.Error:
                found = ()  # the engine's own labels stand
            self._label_names[naming.text] = found
        return found

    def _insert_via_client(self, raw: Session, split: InsertOfQuery, values: list, target_rows: facts.TargetRows | None) -> Any:
        target, columns, query = split
        rows, count = _rows_to_insert(self.execute(raw, FormatSQL(query), values).fetchall(), target_rows)
        if rows:
            marks = "(" + ", ".join(["%s"] * len(rows[0])) + ")"
            # Through _run, so an insert that repeats (one table, one row count) runs prepared.
            # Inside an engine transaction, rows that provably fit the target's columns wait
            # for the session's next request: nothing about them can fail later.
            hold = raw.in_transaction and self._fit(raw, target, columns, rows)
            self._run(raw, FormatSQL(f"INSERT INTO {target} {columns} VALUES {', '.join([marks] * len(rows))}"),
                      [v for row in rows for v in row], hold=hold)
        return _Inserted(count)

    def _fit(self, raw: Session, target: str, columns: str, rows: list) -> bool:
        """Whether every value of `rows` fits its column of `target` as the engine would
        store it: of the column's type and size, and not NULL where the column forbids it.
        Rows that come back from the validating read in the engine's own types always do;
        anything this cannot tell (another type, an unknown column) is sent at once."""
        if raw.schema_change:  # the columns may be changing in this very transaction
            return False
        key = (target, columns, raw.catalog_version)
        rules = raw.column_rules.get(key, ())
        if rules == ():
            names = [m.group(1) or m.group(2) for m in re.finditer(r'"([^"]+)"|(\w+)', columns)]
            with step(raw, "column rules"):
                by_name = {str(n): (str(k), int(d), int(sc), bool(nullable)) for n, k, d, sc, nullable in self.rows(
                    raw, "SELECT c.name, c.type, c.type_digits, c.type_scale, c.\"null\" FROM sys.columns AS c "
                    "JOIN sys.tables AS t ON t.id = c.table_id JOIN sys.schemas AS s ON s.id = t.schema_id "
                    "WHERE t.name = $1 AND s.name = current_schema", [target.strip('"')])}
            found = [by_name.get(n) for n in names]
            rules = None if None in found else tuple(_ColumnRule(*f) for f in found)  # type: ignore[misc]
            raw.column_rules[key] = rules
        if rules is None:
            return False
        return all(len(row) == len(rules) and all(map(_ColumnRule.admits, rules, row)) for row in rows)

    def _prepare(self, raw: Session, text: str) -> tuple[int, int] | None:
        plain = _FORMAT_MARK.sub(lambda m: "%" if m.group(1) == "%" else "?", text)
        cur = raw.cursor()
        # PREPARE answers with a row per marker; past the reply size pymonetdb fetches the
        # rest with Xexport, which it cannot parse for a PREPARE result ("length of row
        # doesn't match header": an order's 10+ lines of 10 columns). Take it whole.
        cur.whole_results()
        try:
            with step(raw, "prepare"):
                cur.execute(f"PREPARE {plain}")
        except pymonetdb.exceptions.Error:
            return None
        if cur.lastrowid is None:
            return None
        markers = sum(1 for m in _FORMAT_MARK.finditer(text) if m.group(1) == "s")
        rows = cur.fetchall()  # the result columns, then one row per marker
        kinds = tuple((str(r[0]), int(r[2])) for r in rows[len(rows) - markers:]) if markers else ()
        raw.prepared[text] = (int(cur.lastrowid), markers, kinds)
        return raw.prepared[text]

    def affected(self, cursor: Any) -> int:
        return int(cursor.rowcount)

    def begin_engine(self, raw: Session) -> None:
        """START TRANSACTION goes out with the transaction's first statement."""
        raw.pending_begin = True
        raw.in_transaction = True

    def _commit_open(self, raw: Session) -> None:
        raw.in_transaction = False
        if raw.pending_begin:  # nothing was sent: nothing to commit
            raw.pending_begin = False
            return
        _CountedCursor(raw).execute("COMMIT", commit=True)

    def commit_engine(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]] = ()) -> list[Any]:
        """The last statement's rows travel with the COMMIT in one request when it is one
        of tique's inserts (the write-set): its read first, then `INSERT … VALUES …; COMMIT`."""
        *first, last = statements if statements else [None]
        cursors = [self.execute(raw, sql, params) for sql, params in first]
        if last is None:
            self._commit_open(raw)
            return cursors
        sql, params = last
        text, values = (sql, list(params)) if isinstance(sql, FormatSQL) else _dollar_to_format(sql, params)
        split = _insert_of_query(sql)
        if split is None:
            cursors.append(self.execute(raw, sql, params))
            self._commit_open(raw)
            return cursors
        target, columns, query = split
        rows, count = _rows_to_insert(self.execute(raw, FormatSQL(query), values).fetchall(), getattr(sql, "target_rows", None))
        raw.in_transaction = False
        cur = _CountedCursor(raw)
        try:
            if rows:
                marks = "(" + ", ".join(["%s"] * len(rows[0])) + ")"
                cur.execute(f"INSERT INTO {target} {columns} VALUES {', '.join([marks] * len(rows))}; COMMIT",
                            [v for row in rows for v in row], commit=True)
            else:
                cur.execute("COMMIT", commit=True)
        except pymonetdb.exceptions.Error:
            raw.prepared.clear()
            try:  # a failed INSERT leaves the transaction aborted and open; a failed COMMIT ended it
                raw.cursor().execute("ROLLBACK")
            except pymonetdb.exceptions.Error:
                pass
            raise
        return cursors + [_Inserted(count)]

    def rollback_engine(self, raw: Session) -> None:
        raw.held.clear()
        if not raw.in_transaction:
            return
        raw.in_transaction = False
        if raw.pending_begin:
            raw.pending_begin = False
            return
        try:
            raw.cursor().execute("ROLLBACK")
        except pymonetdb.exceptions.Error:
            pass  # the server already ended it (an error aborts a MonetDB transaction)
        raw.prepared.clear()  # a failed statement dropped them on the server

    def begin(self, raw: Session) -> tuple[int, int, int]:
        began = self.oracle.begin_with(raw, self.CATALOG_VERSION_SQL)
        if began[2] != raw.catalog_version:
            raw.catalog_version = began[2]
            raw.column_rules.clear()
        return began

    def execute_all(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """One request: a write's inserts of the application's rows (which may fail, and
        then fail this statement's request) go out in front of its validating read."""
        *first, last = statements
        cursors: list[Any] = []
        held: list[int] = []  # indexes of the statements sent in front of the last one
        # Only a query answers in a request of its own, with the inserts' counts beside.
        last_is_query = re.match(r"\s*(?:SELECT|WITH)\b", str(last[0]), re.IGNORECASE) is not None
        for sql, params in first:
            text, values = (sql, list(params)) if isinstance(sql, FormatSQL) else _dollar_to_format(sql, params)
            if raw.in_transaction and last_is_query and getattr(sql, "direct", False):
                self._run(raw, text, values, hold=True)
                held.append(len(cursors))
                cursors.append(None)
            else:
                cursors.append(self.execute(raw, sql, params))
        cur = self.execute(raw, last[0], last[1])
        cursors.append(cur)
        if held:
            counts = getattr(cur, "updates", [])
            carried = getattr(cur, "carried", 0)
            # The request's inserts answer in order, the held ones last among those carried.
            mine = counts[carried - len(held):carried] if len(counts) >= carried >= len(held) else []
            for index, count in zip(held, mine if len(mine) == len(held) else [-1] * len(held)):
                cursors[index] = _Inserted(count)
        return cursors

    def request(self, raw: Session, statements: Sequence[tuple[str, Sequence[Any]]],
                commit: bool = False, other_commits: int = 0) -> tuple[list[list[tuple]], list[int]]:
        """Sends `statements` as one request (each prepared where it repeats, as any
        statement) and returns the rows of each of its queries and the row count of
        each of its inserts, in order. `commit`: the request ends the open engine
        transaction; `other_commits`: engine transactions it carries whole (a START
        TRANSACTION ... COMMIT among its statements)."""
        earlier = len(raw.held)  # held inserts of earlier statements go out first
        texts = [(sql, list(params)) if isinstance(sql, FormatSQL) else _dollar_to_format(sql, params) for sql, params in statements]
        for text, values in texts[:-1]:
            self._run(raw, FormatSQL(text), values, hold=True)
        text, values = texts[-1]
        if commit:
            raw.in_transaction = False
        cur = self._run(raw, FormatSQL(text), values, commit=commit, other_commits=other_commits)
        return cur.result_sets(), cur.updates[earlier:]

    def fresh_rows(self, raw: Session, sql: str, params: Sequence[Any]) -> list[tuple]:
        """On the session's second connection (autocommit): an open transaction reads the
        snapshot it began with."""
        if not raw.in_transaction:
            return self.rows(raw, sql, params)
        if raw.analytic is None:
            raw.analytic = self.open(raw.counters)
        return self.rows(raw.analytic, sql, params)

    def schema_change_began(self, raw: Session) -> None:
        raw.schema_change = True  # statements run as text until the engine transaction ends (see atomic)

    def schema_change_ended(self, raw: Session) -> None:
        raw.schema_change = False
        self._forget_prepared(raw)

    def query_columns(self, raw: Session, table: str) -> list[tuple[str, str]]:
        rows = self.rows(raw, "SELECT c.name, c.type, c.type_digits, c.type_scale FROM sys.columns AS c "
                              "JOIN sys.tables AS t ON t.id = c.table_id JOIN sys.schemas AS s ON s.id = t.schema_id "
                              "WHERE t.name = $1 AND s.name = current_schema ORDER BY c.number", [table])
        return [(str(name), _monetdb_type(str(kind), int(digits), int(scale))) for name, kind, digits, scale in rows]

    @contextlib.contextmanager
    def atomic(self, raw: Session) -> Iterator[None]:
        """Schema changes: statements run as text, never EXEC, since a committed schema
        change drops every prepared statement of the session."""
        raw.schema_change = True
        try:
            with super().atomic(raw):
                yield
        finally:
            raw.schema_change = False
            self._forget_prepared(raw)

    def _forget_prepared(self, raw: Session) -> None:
        """A committed schema change drops every prepared statement of the session; after
        a rollback some may survive. Drop them all, so client and server agree."""
        if raw.prepared:
            raw.prepared.clear()
            try:
                raw.cursor().execute("DEALLOCATE ALL")
            except pymonetdb.exceptions.Error:
                pass

    def run_script(self, raw: Session, script: str) -> None:
        cur = raw.cursor()
        for statement in _split(script):
            cur.execute(statement)

    # -- SQL generation ----------------------------------------------------------
    def param_node(self, n: int) -> exp.Expression:
        raise NotImplementedError("MonetDB markers are positional; see compile()")

    def compile(self, tree: exp.Expression, owned: bool = False) -> Compiled:
        """pymonetdb binds %s markers in text order, so the names follow the rendered text.
        `owned`: see Backend.compile; what is read off the tree is read before rendering."""
        tree = _name_leading_derived_tables(_type_text_values(tree))
        plain = _over_storage(tree)  # a copy of its own
        head = self._insert_head(tree) if facts.is_internal_insert_of_query(tree) else None
        direct = head is None and _direct(tree)
        compiled = self._render(tree, owned)
        if plain is not None:
            text = FormatSQL(compiled.sql)
            text._naming = _PendingNaming(plain, compiled.names, self._render)
            compiled = Compiled(text, compiled.names)
        if head is not None:
            compiled.sql.insert_of_query = head.parts(compiled.sql)  # type: ignore[attr-defined]
            compiled.sql.target_rows = facts.target_rows_of(tree)  # type: ignore[attr-defined]
        elif direct:
            compiled.sql.direct = True  # type: ignore[attr-defined]
        return compiled

    def compile_rows(self, tree: exp.Insert, width: int) -> RowTemplate:
        tree = _type_text_values(tree)
        of_query = self._insert_head(tree) if facts.is_internal_insert_of_query(tree) else None
        direct = _direct(tree)
        head, row = split_rows(tree)

        def finish(marked: str) -> Compiled:
            compiled = _format_markers(marked)
            if of_query is not None:
                compiled.sql.insert_of_query = of_query.parts(compiled.sql)  # type: ignore[attr-defined]
            else:
                compiled.sql.direct = direct  # type: ignore[attr-defined]
            return compiled

        first = render_marked(_first_row_apart(row.copy()), self.dialect)
        return _FirstRowApart(render_marked(head, self.dialect), render_marked(row, self.dialect), width, finish, first,
                              _values_are_markers(row))

    def _insert_head(self, tree: exp.Insert) -> "_InsertHead":
        """How the insert `tree` renders up to its query: its table and column list."""
        assert isinstance(tree.this, exp.Schema)
        target = faithful.to_sql(tree.this.this, self.dialect).replace("%", "%%")
        into = faithful.to_sql(tree.this, self.dialect).replace("%", "%%")
        return _InsertHead(target, into[len(target):].strip(), f"INSERT INTO {into} ")

    def _render(self, tree: exp.Expression, owned: bool = False) -> Compiled:
        try:
            return _format_markers(render_marked(tree, self.dialect, owned))
        except ValueError:  # the mark character in the statement: replace the placeholder nodes
            tree = tree.copy()
            for node in list(tree.find_all(exp.Placeholder)):
                node.replace(exp.column(f"__tqp_{node.this}__"))
            text = faithful.to_sql(tree, self.dialect).replace("%", "%%")
            names = tuple(_TOKEN.findall(text))
            return Compiled(FormatSQL(_TOKEN.sub("%s", text)), names)

    def key_hash(self, table_name: str, keys: list[exp.Expression]) -> exp.Expression:
        parts: exp.Expression = exp.Literal.string(table_name)
        for k in keys:
            parts = exp.DPipe(this=exp.DPipe(this=parts, expression=exp.Literal.string("|")), expression=exp.cast(k, data_type("TEXT")))
        return exp.Anonymous(this="tq_hash", expressions=[parts])

    def metadata_script(self) -> str:
        script = template_text("monetdb/metadata.sql")
        if not self.supports_unlogged:
            script = script.replace("CREATE UNLOGGED TABLE", "CREATE TABLE")
        return script

    def oracle_script(self) -> str:
        namespace = f"{self._connect_args['database']}.{self.schema or 'sys'}"
        return template_text("monetdb/oracle.sql").replace("TQ_NAMESPACE", namespace.replace("*/", ""))

    def install(self, raw: Session) -> None:
        """Capabilities are probed, never assumed from a version number."""
        cur = raw.cursor()
        try:
            cur.execute("CREATE UNLOGGED TABLE tq_probe_unlogged (x INT)")
            cur.execute("DROP TABLE tq_probe_unlogged")
        except pymonetdb.exceptions.Error:
            self.supports_unlogged = False
        try:
            cur.execute("SELECT CAST(1 AS HUGEINT)")  # 128-bit integers are a build option
            cur.fetchall()
        except pymonetdb.exceptions.Error:
            self.packs_keys = False
        try:
            self.run_script(raw, self.metadata_script())
            cur.execute("SELECT count(*) FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id "
                        "WHERE f.name IN ('tq_oracle', 'tq_hash') AND s.name = current_schema "
                        "AND (f.name <> 'tq_oracle' OR f.func LIKE '%%tique oracle ops: 1-16 %%')")
            if cur.fetchone()[0] < 2:  # missing, or an oracle from before its verdict op: (re)created
                self.run_script(raw, self.oracle_script())
            cur.execute("SELECT r1 FROM tq_oracle(9, 0, 0)")
            cur.fetchall()
        except pymonetdb.exceptions.Error as error:
            text = str(error)
            if "embedded_c" in text or "language c" in text.lower() or "embedded C" in text:
                raise errors.OperationalError(
                    "tique needs MonetDB's C UDFs for its timestamp oracle, and this server was not started with "
                    "embedded_c=true. Start it as `mserver5 --set embedded_c=true ...`, or with monetdbd run "
                    f"`monetdb set embedc=true <database>` and restart the database. (server said: {text.strip()})") from error
            raise

    def packed_tables(self, raw: Session) -> set[str]:
        cur = raw.cursor()
        cur.execute("SELECT t.name FROM sys.columns AS c JOIN sys.tables AS t ON t.id = c.table_id "
                    "JOIN sys.schemas AS s ON s.id = t.schema_id WHERE c.name = 'tq_pk' AND s.name = current_schema")
        return {str(r[0]) for r in cur.fetchall()}

    def drop_ddl(self, table: Any) -> list[str]:
        # MonetDB has no DROP SEQUENCE IF EXISTS; the catalog says whether there is one.
        return [d.replace("DROP SEQUENCE IF EXISTS", "DROP SEQUENCE") for d in super().drop_ddl(table)]

    def engine_message(self, error: BaseException) -> str:
        """pymonetdb's message as natively (`22012!division by zero.`): its class names are
        PEP 249's, which the tique error's own class says, so they are not repeated."""
        if _lost_result_set(error):
            return ("MonetDB answered the query this statement reads with no result set, which it does for some query "
                    "shapes (an engine defect; natively such an INSERT ... SELECT writes nothing and reports -1 rows), "
                    "so tique cannot know the rows to write; rewrite the query, for example without its ORDER BY ... "
                    "LIMIT or its outer join")
        if _mixed_case_types(error):
            return ("MonetDB cannot compute a CASE whose results have different types beside a subquery that reads "
                    "a table (an engine defect); cast each result of the CASE to one type")
        # A syntax error quotes the text the engine read: tique's rewrite, with its internal
        # names. The user's own statement follows the message (errors.describe).
        return user_terms(_QUOTED_TEXT.sub(r"\g<error> in the statement", str(error)))

    def refine(self, error: BaseException, target: type[errors.Error]) -> type[errors.Error]:
        if _lost_result_set(error) or _mixed_case_types(error):
            return errors.NotSupportedError
        text = str(error).lower()
        if "constraint" in text and "violated" in text:
            return errors.IntegrityError
        state = sqlstate(error)
        if state is not None and state[:2] in _SQLSTATE_CLASSES:
            return _SQLSTATE_CLASSES[state[:2]]
        return target

    def description(self, cursor: Any) -> tuple | None:
        """Type codes become SQL type names (as DuckDB reports them), and unaliased
        expressions get the names they would have natively (see Naming)."""
        if not getattr(cursor, "description", None):
            return None
        native = getattr(cursor, "tq_names", ())
        if len(native) != len(cursor.description):
            native = ()  # not the plan of this result: the engine's own labels stand
        described = []
        for i, d in enumerate(cursor.description):
            name = native[i] if i < len(native) and _LABEL.match(d[0]) else d[0]
            described.append((name, _TYPE_NAMES.get(d[1], str(d[1]).upper()), *tuple(d)[2:]))
        return tuple(described)

    def is_transient_conflict(self, error: BaseException) -> bool:
        return "40001" in str(error) or "concurrency conflicts" in str(error)

    def is_unique_violation(self, error: BaseException) -> bool:
        text = str(error).upper()
        return "PRIMARY KEY CONSTRAINT" in text or "UNIQUE CONSTRAINT" in text

    def not_null_column(self, error: BaseException) -> str | None:
        found = re.search(r"NOT NULL constraint violated for column [^.\s]+\.(\S+)", str(error))
        return found.group(1).strip("'\"") if found else None

    def insert_abort_outcome(self, raw: Any, cts: int, txid: int | None) -> None:
        """Callers hold the oracle's decision for cts (expired, or its owner dead)."""
        self.execute(raw, "INSERT INTO tq_outcome (cts, txid, did_commit) VALUES ($1, $2, FALSE)", [cts, txid])

    # Seen on 11.45: an engine transaction open when a DELETE of cache rows commits may
    # afterwards miss some of those rows while others append to the table, though it still
    # sees the storage rows it began with: see tique/checkpoint.py, "Older readers".
    purge_waits_for_older_readers = True
    # Seen on 11.45: a table with deleted rows answers an equality filter by a scan, not
    # through the column's hash; see tique/checkpoint.py, "Refilled".
    appends_refill_after_readers = True

    def purge_fence(self, raw: Any) -> int:
        return self.oracle.fence(raw)

    def began_before(self, raw: Any, fence: int) -> bool:
        return self.oracle.began_before(raw, fence)

    def try_checkpoint_latch(self, raw: Any) -> bool:
        return self.oracle.try_latch(raw, 60_000)

    def release_checkpoint_latch(self, raw: Any) -> None:
        self.oracle.release_latch(raw)

    def _recover_from_log(self, raw: Any) -> tuple[int, int]:
        from tique.recovery import recover_from_log

        return recover_from_log(self, raw)


_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "hugeint": 128, "oid": 63}


@dataclass(frozen=True)
class _ColumnRule:
    """A column of a table tique inserts into, as sys.columns describes it: what a held
    row's value must be so that the engine stores it without an error (see MonetDBBackend._fit)."""
    kind: str
    digits: int
    scale: int
    nullable: bool

    def admits(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        kind = self.kind
        if kind in _INT_BITS:
            limit = 2 ** (_INT_BITS[kind] - 1) - 1  # the type's lowest value is MonetDB's NULL
            return type(value) is int and -limit <= value <= limit
        if kind == "decimal":
            if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
                return False
            shape = _places(Decimal(value))
            return shape is not None and shape[1] <= self.scale and shape[0] - shape[1] <= self.digits - self.scale
        if kind in ("varchar", "char", "clob"):
            return isinstance(value, str) and (self.digits <= 0 or len(value) <= self.digits)
        if kind == "boolean":
            return type(value) is bool
        if kind == "double":
            return type(value) is float and math.isfinite(value)
        if kind == "date":
            return type(value) is datetime.date
        if kind == "timestamp":
            return type(value) is datetime.datetime and value.tzinfo is None
        return False  # other types are sent at once


class _Inserted:
    """The result of an insert sent as read-then-insert: only its row count."""
    description = None

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount


def _rows_to_insert(read: list, target_rows: facts.TargetRows | None) -> tuple[list, int]:
    """The rows an insert of tique's own inserts, from the rows its query read, and the
    count it answers: the rows, or for an UPDATE or DELETE the target rows it writes."""
    if target_rows is None:
        return read, len(read)
    return target_rows.rows(read)


_QUOTED_TEXT = re.compile(r'(?P<error>syntax error[^"\n]*?) in: ".*', re.DOTALL)


def _lost_result_set(error: BaseException) -> bool:
    """Whether pymonetdb found no result set where a query must give one: the read of one
    of tique's INSERT ... SELECTs (see _insert_via_client) met MonetDB's defect of
    answering some query shapes with none (fuzz/departures.py, monetdb-select-without-resultset)."""
    return isinstance(error, pymonetdb.exceptions.ProgrammingError) and "didn't result in a resultset" in str(error)


def _mixed_case_types(error: BaseException) -> bool:
    """Whether MonetDB failed to compute a query whose CASE mixes result types beside a
    subquery: it appends one branch's results to the other's unconverted, and its MAL
    type check rejects that (`'bat.append' undefined`), natively too (see
    tique/rewrite/monetdb_case.py)."""
    return "'bat.append' undefined" in str(error)


def _insert_of_query(sql: str) -> InsertOfQuery | None:
    """The parts of the statement `sql` if it is an insert of tique's own to run as a
    read, then an insert (compiled ones say so); None for every other statement."""
    return sql.insert_of_query if isinstance(sql, FormatSQL) else None


# sql.resultSet(tables, names, ...): bats of several columns, or one column's strings
_RESULT_SET = re.compile(r'\bsql\.resultSet\(\s*(?:X_\d+(?::[^,]*)?|"(?:[^"\\]|\\.)*":str)\s*,\s*'
                         r'(?:(?P<names>X_\d+)\b|"(?P<name>(?:[^"\\]|\\.)*)":str)')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)":str')


def _result_names(plan: Iterable[str]) -> tuple[str, ...]:
    """The result column names in an EXPLAIN plan (MAL): the second argument of the
    sql.resultSet call, a bat.pack of the names (or, for a result of one column and one
    row, the name itself). () where the plan has no such call."""
    lines = list(plan)
    for line in lines:
        found = _RESULT_SET.search(line)
        if found is None:
            continue
        if found.group("name") is not None:
            return (re.sub(r"\\(.)", r"\1", found.group("name")),)
        packed = re.compile(rf"^\s*{found.group('names')}:bat\[:str\] := bat\.pack\((?P<items>.*)\);\s*$")
        for definition in lines:
            items = packed.match(definition)
            if items is not None:
                return tuple(re.sub(r"\\(.)", r"\1", s) for s in _STRING.findall(items.group("items")))
        return ()
    return ()


def _over_storage(tree: exp.Expression) -> exp.Expression | None:
    """`tree` (a read) with each snapshot subquery (the plan marks them: tique/rewrite/facts.py)
    replaced by its storage table (or a plain projection of it): the query the
    application wrote, in shape (see Naming)."""
    if not isinstance(tree, exp.Query):
        return None
    # The storage table itself where no star could expand to its own columns (tq_rowid):
    # a projection of it is a derived table, which shifts the numbers of some labels.
    # COUNT(*)'s star counts rows and expands to no column. (The numbers are MonetDB's own
    # counters, but they follow the query's translation, which the same query over the
    # storage tables repeats: tique gives the native label, and `%2` against `%4` is a
    # wrong name, not an undefined one.)
    direct = all(isinstance(star.parent, exp.Count) for star in facts.find_outside_snapshots(tree, exp.Star))
    swaps: list[tuple[exp.Expression, exp.Expression]] = []
    for node in facts.find_outside_snapshots(tree, exp.Subquery):
        storage = facts.snapshot_of(node) or facts.storage_read_of(node)
        if storage is None:
            continue
        alias = node.args["alias"]
        if direct and not alias.columns:
            swaps.append((node, exp.Table(this=exp.to_identifier(storage, quoted=True), alias=alias.copy())))
            continue
        projection = exp.select(*[exp.column(exp.to_identifier(c, quoted=True)) for c in node.this.named_selects])
        projection = projection.from_(exp.Table(this=exp.to_identifier(storage, quoted=True)))
        swaps.append((node, exp.Subquery(this=projection, alias=alias.copy())))
    reversed_mins = [node for node in tree.find_all(exp.Paren) if facts.is_reversed_min(node)]
    if not swaps and not reversed_mins:
        return None
    # The snapshots are most of the tree: swap them out, copy what is left, swap them back.
    for node, plain_node in swaps:
        node.replace(plain_node)
    # An ungrouped MIN computed as the reverse of a MAX (rewrite/monetdb_min.py) is named
    # natively as the MIN it stands for: each becomes that MIN, innermost first (a MIN's
    # argument may hold another), over its argument as it now stands.
    for node in reversed(reversed_mins):
        written = facts.min_as_written(node)
        assert written is not None
        node.replace(written)
        swaps.append((node, written))
    try:
        return tree.copy()
    finally:
        for node, plain_node in reversed(swaps):
            plain_node.replace(node)


def _type_text_values(tree: exp.Expression) -> exp.Expression:
    """MonetDB types each column of a VALUES derived table by its first row, so a NULL
    there (or a parameter, which pymonetdb may bind as NULL) makes it a number and a
    later string fails to convert. The rewriter casts every bare value of the rows it
    builds (tq_new) to its column's type except in text columns; those get TEXT, which
    truncates nothing (the cache's VARCHAR(n) still rejects an over-long value).

    Of several rows, the first one's values are scalar subqueries (see _first_row_apart).
    Returns `tree` itself when it has no such values, else a changed copy."""
    if not any(v.alias == NEW for v in facts.find_outside_snapshots(tree, exp.Values)):
        return tree
    tree = tree.copy()
    for values in facts.find_outside_snapshots(tree, exp.Values):
        if values.alias != NEW:
            continue
        for row in values.expressions:
            for value in list(row.expressions):
                if isinstance(value, (exp.Placeholder, exp.Null)):
                    value.replace(exp.cast(value.copy(), _TEXT.copy()))
        if len(values.expressions) > 1:
            _first_row_apart(values.expressions[0])
    return tree


def _first_row_apart(row: exp.Tuple) -> exp.Tuple:
    """Each value of `row` as a scalar subquery, (SELECT CAST(? AS INT)). MonetDB gives a
    VALUES column whose rows are all constants the type of another such column holding the
    same constants: CAST(1 AS INT) beside CAST(1 AS BIGINT) or CAST(TRUE AS BOOLEAN), and
    any two columns of NULLs, come out of one type, and the insert fails with 'Append
    failed'. A column whose first row is no constant is kept apart; the first row still
    types the column. A single row needs none of it."""
    for value in list(row.expressions):
        value.replace(exp.Subquery(this=exp.Select(expressions=[value.copy()])))
    return row


_TEXT = exp.DataType.build("TEXT")


def _name_leading_derived_tables(tree: exp.Expression) -> exp.Expression:
    """MonetDB's parser rejects a parenthesised join that opens with a derived table,
    `((SELECT ...) AS t JOIN u ON ...)`, which is what a tique table leading one becomes
    (its snapshot). The derived table moves to a WITH clause of the enclosing SELECT and
    the join opens with its name instead. Returns `tree` itself when it has none, else a
    changed copy."""
    def leading(node: exp.Expression) -> bool:
        return (isinstance(node, exp.Subquery) and bool(node.args.get("joins")) and node.alias != ""
                and isinstance(node.parent, exp.Subquery) and node.parent.this is node)

    if not any(leading(n) for n in facts.find_outside_snapshots(tree, exp.Subquery)):
        return tree
    tree = tree.copy()
    for number, derived in enumerate([n for n in facts.find_outside_snapshots(tree, exp.Subquery) if leading(n)]):
        owner = derived.parent.find_ancestor(exp.Select)
        if owner is None:
            continue
        name = f"tq_lead_{number}"
        owner.with_(name, derived.this.copy(), append=True, copy=False)
        derived.replace(exp.Table(this=exp.to_identifier(name, quoted=True), alias=derived.args["alias"],
                                  joins=derived.args["joins"]))
    return tree


@dataclass(frozen=True)
class _FirstRowApart(RowTemplate):
    """Rows of one shape whose first row, of several, is `first` (see _first_row_apart).
    When each value of a row is one marker (`markers_only`), whether the rows need it is
    decided per call from the values bound (_ApartWhenAlike): keeping the first row apart
    halves MonetDB's speed on large batches, and most batches hold no alike columns."""
    first: str = ""
    markers_only: bool = False

    def expand(self, rows: int) -> Compiled:
        if rows < 2:
            return super().expand(rows)
        body = ", ".join(shift_user_params(self.row, k * self.width) if k else self.first for k in range(rows))
        apart = self.finish(self.head.replace(ROWS.name, body, 1))
        if not self.markers_only:
            return apart
        plain = super().expand(rows)
        before = len(_format_markers(self.head.split(ROWS.name, 1)[0]).names)
        per_row = len(_format_markers(self.row).names)
        assert apart.names == plain.names, "both texts take the same values"
        return _ApartWhenAlike(plain.sql, plain.names, apart.sql, before, per_row, rows)


@dataclass(frozen=True)
class _ApartWhenAlike(Compiled):
    """A multi-row insert sent plainly unless two of its VALUES columns hold alike values
    in every row (see _first_row_apart), then with its first row apart. Both texts take the
    same values in the same order; `before` markers precede the rows, `per_row` are each
    row's, one per column."""
    apart: str = ""
    before: int = 0
    per_row: int = 0
    rows: int = 0

    def bind(self, user: tuple | list, context: dict[str, int]) -> tuple[str, list]:
        values = self.values(user, context)
        columns = {tuple(_alike_key(values[self.before + k * self.per_row + j]) for k in range(self.rows))
                   for j in range(self.per_row)}
        return (self.apart if len(columns) < self.per_row else self.sql), values


def _alike_key(value: Any) -> Any:
    """What MonetDB may take for the same constant, coarsely: equal numbers of any type
    (TRUE is 1) and their text, and NULL. Coarser is safe: it only keeps rows apart."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float, Decimal)):
        try:
            return str(Decimal(value).normalize())
        except ArithmeticError:  # NaN, infinities
            return str(value)
    return str(value)


def _values_are_markers(row: exp.Tuple) -> bool:
    """Whether each value of `row` is one marker, under casts only: then the values bound
    are the VALUES constants, and _ApartWhenAlike can compare them."""
    for value in row.expressions:
        while isinstance(value, exp.Cast):
            value = value.this
        if not isinstance(value, exp.Placeholder):
            return False
    return True


def _direct(tree: exp.Expression) -> bool:
    """An INSERT whose rows come from no table (see FormatSQL.direct)."""
    return isinstance(tree, exp.Insert) and tree.expression is not None and tree.expression.find(exp.Table) is None


def _format_markers(marked: str) -> Compiled:
    """Marks become pymonetdb's %s, one per occurrence in text order; a literal % doubles."""
    names: list[str] = []

    def marker(found: re.Match[str]) -> str:
        names.append(found.group(1))
        return "%s"

    return Compiled(FormatSQL(MARKED.sub(marker, marked.replace("%", "%%"))), tuple(names))


def _monetdb_type(kind: str, digits: int, scale: int) -> str:
    """A column's SQL type from sys.columns (type, type_digits, type_scale)."""
    if kind in ("varchar", "char") and digits > 0:
        return f"{kind.upper()}({digits})"
    if kind == "decimal":
        return f"DECIMAL({digits}, {scale})"
    if kind == "clob":
        return "CLOB"
    if kind in ("timestamp", "time", "timestamptz", "timetz", "sec_interval", "month_interval", "day_interval"):
        return {"timestamptz": "TIMESTAMP WITH TIME ZONE", "timetz": "TIME WITH TIME ZONE", "sec_interval": "INTERVAL SECOND",
                "month_interval": "INTERVAL MONTH", "day_interval": "INTERVAL DAY"}.get(kind, kind.upper())
    return {"int": "INTEGER", "double": "DOUBLE", "real": "REAL", "boolean": "BOOLEAN"}.get(kind, kind.upper())


def _split(script: str) -> list[str]:
    """Splits on `;` at line ends, keeping C UDF bodies (which end in `};`) whole."""
    statements, current, depth = [], [], 0
    for line in script.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("--")):
            continue
        current.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and stripped.endswith(";"):
            statements.append("\n".join(current).rstrip().rstrip(";"))
            current = []
    if current and "".join(current).strip():
        statements.append("\n".join(current))
    return statements

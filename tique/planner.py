"""Turns one application statement into a plan of engine statements, once per text.

A plan holds compiled SQL with numbered markers; executing it only binds values.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError, UnsupportedError

from tique.backends.base import Backend
from tique.catalog import CatalogSnapshot, TableDef, constraint_names_in_schema, declared_name, normalize, table_def_from_create
from tique.column_names import name_created_columns_as_native
from tique.ddl import Index, View
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.plan_timing import TIMING
from tique.isolation import IsolationLevel, control_statement
from tique.rewrite.constraints import constraint_checks
from tique.rewrite.faithful import parser_class
from tique.read_sets import NOTHING, ReadShape, query_shape, write_shape
from tique.rewrite.own_versions import without_own_versions
from tique.rewrite.locks import lock_writes, refuse_unsupported_locks, share_shape, without_locks
from tique.rewrite.params import USER_PREFIX, Compiled, KeyCheck, Marked, RowTemplate, mark_parameters, normalize_placeholders
from tique.rewrite import passes
from tique.rewrite.reads import reads_laterally, referenced_tables, scans
from tique.rewrite.snapshot import Formulation
from tique.rewrite.templates import forget_positions
from tique.rewrite.writes import WritePlan
from tique.rewrite.writes import own_with, ranged_key, rewrite_delete, rewrite_insert, rewrite_update, undo, validation


@dataclass(frozen=True)
class NativePlan:
    """No tique table involved: the engine runs the statement as it is."""
    statement: Compiled
    params: int


@dataclass(frozen=True, eq=False)
class ReadPlan:
    """Reads tique tables at the transaction's snapshot (may write a native table).

    Its statements are made on first use, each once: the read through every table's
    snapshot (`statement`), and on DuckDB the variants that read the tables whose caches
    hold nothing from storage directly (`variant`, tique/cache_state.py). Where every
    table a read names is clean, as for analytics once the checkpointer has caught up,
    the snapshot read is never made: rewriting a query's tables into snapshots costs
    four to five times as much sqlglot as the rest of its planning."""
    params: int
    tables: tuple[str, ...]
    analytic: bool = False  # some table is read by the scan formulation
    probing: bool = False  # some table is read laterally: a nested loop of key probes (Backend.execute)
    # The statement before its tables were swapped for snapshots, for the variants that
    # read some tables' storage directly (tique/rewrite/storage_reads.py), made on first use.
    source: exp.Expression | None = None
    # Compiled statements by the set of tables read from storage directly (the empty set:
    # the snapshot read); other keys name other variants (READ COMMITTED's, connection.py).
    variants: dict[frozenset[str], Compiled] = field(default_factory=dict, compare=False, hash=False)
    reads: ReadShape = NOTHING  # what a SERIALIZABLE transaction records of it (tique/read_sets.py)
    build: Callable[[frozenset[str]], Compiled] | None = field(default=None, compare=False, hash=False, repr=False)
    # MonetDB: the read with its snapshots joining committed transactions only, and the
    # caches it so reads, for a transaction that has written none of them yet
    # (tique/rewrite/own_versions.py); made on first use.
    build_committed: Callable[[], tuple[Compiled, frozenset[str]]] | None = field(default=None, compare=False, hash=False, repr=False)
    committed: list[tuple[Compiled, frozenset[str]]] = field(default_factory=list, compare=False, hash=False, repr=False)

    @property
    def statement(self) -> Compiled:
        """The read through every table's snapshot."""
        return self.variant(frozenset())

    def variant(self, clean: frozenset[str]) -> Compiled:
        """The read with the tables in `clean` read from storage directly. Plans are
        shared by connections: two that make a variant at once make equal ones."""
        found = self.variants.get(clean)
        if found is None:
            assert self.build is not None, "a plan without a source has its statement made when planned"
            found = self.variants[clean] = self.build(clean)
        return found

    def without_own_versions(self) -> tuple[Compiled, frozenset[str]] | None:
        """The read for a transaction that has no versions in the caches it names (None
        where there is no such variant), and those caches."""
        if self.build_committed is None:
            return None
        if not self.committed:
            self.committed.append(self.build_committed())  # two threads at once append equal ones
        return self.committed[0]

    def __eq__(self, other: object) -> bool:
        """What the plan says: its statement and what it records."""
        if not isinstance(other, ReadPlan):
            return NotImplemented
        return ((self.statement, self.params, self.tables, self.analytic, self.reads)
                == (other.statement, other.params, other.tables, other.analytic, other.reads))

    def __hash__(self) -> int:
        return hash((self.params, self.tables, self.analytic))


@dataclass(frozen=True)
class LockingReadPlan:
    """SELECT ... FOR UPDATE on PostgreSQL (tique/rewrite/locks.py): the rows it reads are
    written back unchanged first, which puts their keys in the write-set, then read."""
    locks: tuple["WritePlan", ...]
    read: ReadPlan
    shared: ReadShape = NOTHING  # FOR SHARE / FOR KEY SHARE: read-set entries certified at every level

    @property
    def params(self) -> int:
        return self.read.params


# How many rows executemany sends in one insert, and how many values at most (PostgreSQL
# takes 65,535 parameters per statement; a few are tique's own).
BATCH_ROWS = 1000
BATCH_VALUES = 60_000
# The batch plans a statement keeps, counted in rows: every row count of a family of
# small ones (TPC-C's 5 to 15 order lines: 110 rows), but only a few of a bulk load's
# 1000-row batches (whose texts are large; the last batch is usually shorter). Keeping
# 8 sizes made New-Order's 11 expand again and again.
_BATCH_ROWS_KEPT = 4096


def batch_rows(plan: Plan) -> int:
    """How many rows of parameters executemany sends as one insert with `plan`; 0 when
    the statement is no one-row INSERT ... VALUES into a tique table (run row by row)."""
    if not isinstance(plan, WritePlan) or plan.rows is None:
        return 0
    return max(1, min(BATCH_ROWS, BATCH_VALUES // max(plan.params, 1)))


def batched(plan: WritePlan, rows: int) -> WritePlan:
    """The plan of `plan`'s statement with its VALUES row `rows` times, each row taking the
    next `plan.params` parameters: one insert and one key check for the whole batch."""
    found = plan.batches.get(rows)
    if found is None:
        assert plan.rows is not None
        # Only text is repeated here, no planning; timed (tique/plan_timing.py) so that
        # a row count's own engine text shows beside the plans.
        timed = ("rows expanded", plan.table, rows)
        TIMING.missed(timed, depth=1)
        validation = plan.validation
        if isinstance(validation, KeyCheck):
            width = plan.params
            keys = tuple(tuple(s + k * width if type(s) is int else s for s in validation.keys[0]) for k in range(rows))
            validation = dataclasses.replace(validation, keys=keys)
        found = dataclasses.replace(plan, inserts=(plan.rows.expand(rows),), validation=validation, params=plan.params * rows,
                                    rows=None, batches={}, reads=plan.reads.scans_only())
        if sum(list(plan.batches)) + rows > _BATCH_ROWS_KEPT:  # list(): one step under the GIL, beside other threads
            plan.batches.clear()
        plan.batches[rows] = found
        TIMING.stored(timed)
    return found


@dataclass(frozen=True)
class CreatePlan:
    table: TableDef
    if_not_exists: bool
    replace: bool = False  # CREATE OR REPLACE: drop and create in one engine transaction


@dataclass(frozen=True)
class CreateAsPlan:
    """CREATE [OR REPLACE] TABLE name AS query: a tique table with the query's rows as of
    the transaction's snapshot and the column types the engine infers for it (tique/ddl.py)."""
    name: str
    query: exp.Expression  # the query with its tique tables read through their snapshots
    params: int
    if_not_exists: bool
    replace: bool
    with_data: bool = True  # False for WITH NO DATA: the columns only
    reads: ReadShape = NOTHING  # what a SERIALIZABLE transaction records of the query (tique/read_sets.py)


@dataclass(frozen=True)
class DropPlan:
    name: str
    if_exists: bool
    cascade: bool = False  # DROP ... CASCADE: views over the table go with it


@dataclass(frozen=True)
class ObjectPlan:
    """CREATE or DROP of a view or index over tique tables (tique/ddl.py)."""
    action: str  # create | drop
    kind: str  # view | index
    name: str
    created: View | Index | None  # what CREATE makes
    if_exists: bool  # IF NOT EXISTS for CREATE, IF EXISTS for DROP
    replace: bool = False  # CREATE OR REPLACE VIEW
    check: exp.Expression | None = None  # a view's query read through snapshots: run once to validate it
    cascade: bool = False  # DROP VIEW ... CASCADE: views over the view go with it


@dataclass(frozen=True)
class ControlPlan:
    action: str  # begin | commit | rollback | set_transaction | set_session (tique/isolation.py)
    level: IsolationLevel | None = None
    read_only: bool | None = None


Plan = Union[NativePlan, ReadPlan, LockingReadPlan, WritePlan, CreatePlan, CreateAsPlan, DropPlan, ObjectPlan, ControlPlan]


def parse_one(sql: str, dialect: str) -> exp.Expression:
    """Parses exactly one statement; syntax errors name the statement and the position."""
    marked = mark_parameters(sql)
    engine = Dialect.get_or_raise(dialect)
    try:
        parsed = parser_class(dialect)(dialect=engine).parse(engine.tokenize(marked.sql), marked.sql)
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        where = ""
        if first.get("line") is not None and first.get("col") is not None:
            where = " at " + _position(marked, _offset(marked.sql, first["line"], first["col"]))
        raise ProgrammingError(describe(sql, f"syntax error{where}: {_cause(first)}")) from None
    except TokenError as error:
        raise ProgrammingError(describe(sql, f"syntax error{_token_error_position(error, marked)}")) from None
    # A semicolon ends a statement; what follows it may be nothing, or only a comment.
    trees = [t for t in parsed if t is not None and not isinstance(t, exp.Semicolon)]
    if not trees:
        raise ProgrammingError(describe(sql, "empty statement"))
    if len(trees) > 1:
        raise ProgrammingError(describe(sql, "one statement per execute(); send them one at a time"))
    return trees[0]


def _offset(text: str, line: int, col: int) -> int:
    """The offset of a 1-based line and column in `text`."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    return start + col - 1


def _position(marked: Marked, offset: int) -> str:
    """`line L, column C` of a parsed-text offset, in the application's own text."""
    original = min(marked.original_offset(offset), len(marked.original))
    text = marked.original
    line = text.count("\n", 0, original) + 1
    return f"line {line}, column {original - (text.rfind(chr(10), 0, original) + 1) + 1}"


def _cause(error: dict) -> str:
    """What the parser found wrong, in SQL terms: sqlglot's own wording names its classes
    (`Required keyword: 'expression' missing for <class ...Mul>`), so that becomes the token
    where parsing stopped."""
    description = str(error.get("description") or "")
    if description and "<class" not in description and "Invalid expression" not in description and "Required keyword" not in description:
        return description
    near = str(error.get("highlight") or "").strip()
    return f"unexpected {near!r}" if near else "unexpected end of statement"


def _token_error_position(error: TokenError, marked: Marked) -> str:
    """Where an unterminated string or identifier starts, else the end (an unterminated comment).

    sqlglot says "Missing ' from <line>:<offset>", the offset counted from the start of the statement.
    """
    found = re.search(r"Missing (.+) from \d+:(\d+)", str(error.__cause__ or ""))
    offset = min(int(found.group(2)), len(marked.sql)) if found else len(marked.sql)
    where = _position(marked, offset)
    if found:
        return f" at {where}: no closing {found.group(1)}"
    return f" at {where}: unterminated comment, string or identifier at the end of the statement"


def _target_name(tree: exp.Expression, catalog: CatalogSnapshot) -> str | None:
    return _plain_name(tree.this.find(exp.Table) if isinstance(tree.this, exp.Schema) else tree.this, catalog)


def _plain_name(table: exp.Expression | None, catalog: CatalogSnapshot) -> str | None:
    """The name an unqualified table reference names, as the catalog keeps names
    (CatalogSnapshot.resolve); qualified ones are never tique tables."""
    if not isinstance(table, exp.Table) or table.args.get("db") or not isinstance(table.this, exp.Identifier):
        return None
    return catalog.resolve(table.this)


def _dropped_tables(tree: exp.Drop) -> list[exp.Expression]:
    """The tables a DROP names: newer sqlglot keeps them all in `tables`, older ones in `this` + `expressions`."""
    tables = tree.args.get("tables")
    if tables:
        return list(tables)
    return [t for t in (tree.this, *(tree.expressions or [])) if t is not None]


def _object_plan(tree: exp.Expression, sql: str, backend: Backend, context: passes.PassContext, params: int) -> ObjectPlan | None:
    """CREATE/DROP VIEW and INDEX when they concern tique tables or tique views; None otherwise."""
    catalog = context.catalog
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "VIEW":
        name = _target_name(tree, catalog)
        query = tree.expression
        if name is None or not isinstance(query, exp.Query):
            return None
        expanded = passes.expand_views(query.copy(), context)
        if not referenced_tables(expanded, catalog) and not isinstance(catalog.object(name), View):
            return None  # a view of native tables only: the engine's own
        if params:
            raise ProgrammingError(describe(sql, "a view's query cannot have parameter markers"))
        columns = tuple(declared_name(c, backend.dialect) for c in tree.this.expressions) if isinstance(tree.this, exp.Schema) else ()
        check = passes.run(passes.QUERY_OF_DDL[1:], expanded, context)  # expand_views has run
        return ObjectPlan("create", "view", name, View(name, query.copy(), columns), bool(tree.args.get("exists")),
                          bool(tree.args.get("replace")), check)
    if isinstance(tree, exp.Create) and kind == "INDEX" and isinstance(tree.this, exp.Index):
        index = tree.this
        table_name = _plain_name(index.args.get("table"), catalog)
        table = catalog.table(table_name) if table_name else None
        if table is None:
            return None
        if tree.args.get("unique"):
            raise NotSupportedError(describe(sql, f"CREATE UNIQUE INDEX on tique table {table.name!r} is not supported: a unique index is a constraint tique does not enforce this way"))
        if not index.name:
            raise NotSupportedError(describe(sql, "name the index: CREATE INDEX name ON table (columns)"))
        parts = (index.args.get("params") or exp.IndexParameters()).args.get("columns") or []
        columns = []
        for part in parts:
            column = part.this if isinstance(part, exp.Ordered) else part
            if not isinstance(column, exp.Column) or column.table:
                raise NotSupportedError(describe(sql, f"an index on tique table {table.name!r} takes plain columns, not {part.sql(backend.dialect)!r}"))
            named = table.named(column, backend.dialect)
            if named not in table.user_columns:
                raise ProgrammingError(describe(sql, f"table {table.name} has no column {column.name!r}"))
            columns.append(named)
        if not columns:
            raise ProgrammingError(describe(sql, "an index needs at least one column"))
        name = catalog.resolve(index.this)
        return ObjectPlan("create", "index", name, Index(name, table.name, tuple(columns)), bool(tree.args.get("exists")))
    if isinstance(tree, exp.Drop) and kind in ("VIEW", "INDEX"):
        names = [_plain_name(t, catalog) for t in _dropped_tables(tree)]
        if not any(n is not None and getattr(catalog.object(n), "kind", None) == kind.lower() for n in names):
            return None
        if len(names) > 1:
            raise NotSupportedError(describe(sql, f"drop one {kind.lower()} over tique tables per statement"))
        return ObjectPlan("drop", kind.lower(), str(names[0]), None, bool(tree.args.get("exists")), cascade=bool(tree.args.get("cascade")))
    return None


def make_plan(sql: str, backend: Backend, catalog: CatalogSnapshot, formulation: Formulation, static_tables: frozenset[str]) -> Plan:
    """The plan of `sql`: a function of the statement, the backend's dialect and SQL
    generation (no connection: planning sends nothing to the engine), the catalog
    snapshot and the options (formulation, static tables)."""
    return plan_statement(sql, backend, catalog, formulation, static_tables)[0]


def plan_statement(sql: str, backend: Backend, catalog: CatalogSnapshot, formulation: Formulation,
                   static_tables: frozenset[str]) -> tuple[Plan, frozenset[str]]:
    """make_plan's plan, and the names of the tables the statement reads or writes that
    `catalog` does not know: tique tables or views another client may have created
    since the snapshot was taken, which the caller may look up and plan again with. An
    error raised while planning carries those names too (`tq_unknown`)."""
    control = control_statement(sql)  # tique's own, on every engine: before any parser
    if control is not None:
        return ControlPlan(control.action, control.level, control.read_only), frozenset()
    unknown: set[str] = set()
    try:
        return _make_plan(sql, backend, catalog, formulation, static_tables, unknown), frozenset(unknown)
    except UnsupportedError as error:
        # The generator cannot say it in the engine's SQL as written (tique/rewrite/faithful.py):
        # sending what it can say would run a statement that means something else.
        raise NotSupportedError(describe(sql, f"not supported through tique: {error}")) from None
    except (ProgrammingError, NotSupportedError) as error:
        error.tq_unknown = frozenset(unknown)  # type: ignore[attr-defined]
        raise


def _unknown_names(tree: exp.Expression, catalog: CatalogSnapshot) -> set[str]:
    """The plain names of the table references in `tree` that `catalog` does not know,
    other than CTE names and a created table's own name."""
    created = None
    if isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "TABLE":
        created = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    ctes, found = set(), set()
    for node in tree.find_all(exp.Table, exp.CTE):  # one walk
        if isinstance(node, exp.CTE):
            ctes.add(catalog.resolve(node.args["alias"].this))
        elif not (node.args.get("db") or node.args.get("catalog") or not isinstance(node.this, exp.Identifier) or node is created):
            name = catalog.resolve(node.this)
            if not catalog.names(name):
                found.add(name)
    return found - ctes


def _make_plan(sql: str, backend: Backend, catalog: CatalogSnapshot, formulation: Formulation, static_tables: frozenset[str],
               unknown: set[str]) -> Plan:
    tree = forget_positions(parse_one(sql, backend.dialect))
    try:
        params = normalize_placeholders(tree)
    except ValueError as error:
        raise ProgrammingError(describe(sql, str(error))) from None
    if any(p.this == f"{USER_PREFIX}0" for p in tree.find_all(exp.Placeholder)):
        raise ProgrammingError(describe(sql, "parameter marker $0: numeric markers count from $1"))
    unknown.update(_unknown_names(tree, catalog))
    key_hash = backend.key_hash
    context = passes.PassContext(catalog, backend.dialect, formulation, key_hash, sql, lateral=backend.lateral_point_reads)

    if isinstance(tree, exp.Update) and not tree.expressions:
        raise ProgrammingError(describe(sql, "syntax error: UPDATE without SET assignments"))
    if isinstance(tree, exp.Transaction):
        return ControlPlan("begin")
    if isinstance(tree, exp.Commit):
        return ControlPlan("commit")
    if isinstance(tree, exp.Rollback):
        return ControlPlan("rollback")

    found = _object_plan(tree, sql, backend, dataclasses.replace(context, lateral=False), params)
    if found is not None:
        return found
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "TABLE":
        name = _target_name(tree, catalog)
        temporary = any(isinstance(p, exp.TemporaryProperty) for p in (tree.args.get("properties") or exp.Properties()).expressions)
        if name is not None and normalize(name) not in static_tables and not temporary:
            replace = bool(tree.args.get("replace"))
            if replace and not backend.creates_or_replaces_tables:
                raise ProgrammingError(describe(sql, f"syntax error: {backend.dialect} has no CREATE OR REPLACE TABLE; DROP TABLE, then CREATE TABLE"))
            query = tree.expression
            if isinstance(query, exp.Query):
                if isinstance(tree.this, exp.Schema):
                    raise NotSupportedError(describe(sql, "CREATE TABLE with a column list AS SELECT is not supported for tique tables; alias the query's columns instead"))
                name_created_columns_as_native(query, sql, backend.dialect)
                no_data = any(isinstance(p, exp.WithDataProperty) and p.args.get("no") for p in (tree.args.get("properties") or exp.Properties()).expressions)
                ddl_context = dataclasses.replace(context, lateral=False)
                # What it reads (SERIALIZABLE), from the query as QUERY_OF_DDL sees it before its snapshots.
                as_written = passes.run(tuple(p for p in passes.QUERY_OF_DDL if p is not passes.replace_tables_with_snapshots),
                                        query.copy(), ddl_context)
                reads = query_shape(as_written, catalog, backend.dialect)
                read = passes.run(passes.QUERY_OF_DDL, query, ddl_context)
                return CreateAsPlan(name, read, params, bool(tree.args.get("exists")), replace, not no_data, reads)
            table = backend.new_table(table_def_from_create(tree, backend.dialect, sql, constraint_names_in_schema(catalog, backend.dialect, name)))
            return CreatePlan(table, bool(tree.args.get("exists")), replace)
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        dropped = _dropped_tables(tree)
        names = [_plain_name(t, catalog) for t in dropped]
        if any(n is not None and catalog.table(n) is not None for n in names):
            if len(dropped) > 1:
                raise NotSupportedError(describe(sql, "drop one tique table per statement"))
            return DropPlan(names[0], bool(tree.args.get("exists")), bool(tree.args.get("cascade")))

    tree = passes.run(passes.PREPARE, tree, context)
    locks = refuse_unsupported_locks(tree, backend.dialect, bool(referenced_tables(tree, catalog)), sql) if tree.find(exp.Lock) else []
    rewriters: dict[type, Callable] = {exp.Insert: rewrite_insert, exp.Update: rewrite_update, exp.Delete: rewrite_delete}
    if type(tree) in rewriters:
        name = _target_name(tree, catalog)
        table = catalog.table(name) if name else None
        if table is not None:
            own_with(tree, sql)
            reads = write_shape(tree, table, catalog, backend.dialect)  # of the statement as written
            write = rewriters[type(tree)](tree, table, catalog, formulation, key_hash, backend.dialect, sql)
            return _write_plan(tree, write, backend, params, formulation is Formulation.STORAGE, reads)

    touched = referenced_tables(tree, catalog)
    if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
        if not touched:
            return NativePlan(backend.compile(tree, owned=True), params)
        if locks:
            assert isinstance(tree, exp.Select)
            updates = [lock for lock in locks if lock.args.get("update")]
            shares = [lock for lock in locks if not lock.args.get("update")]
            writes = lock_writes(tree, updates, catalog, formulation, key_hash, sql) if updates else []
            shared = share_shape(tree, shares, catalog, backend.dialect, sql) if shares else NOTHING
            read = _make_plan_of_read(without_locks(tree), backend, context, params, touched)
            return LockingReadPlan(tuple(_write_plan(tree, w, backend, params) for w in writes), read, shared)
        return _make_plan_of_read(tree, backend, context, params, touched)
    if touched:
        kind = tree.key.upper()
        raise NotSupportedError(describe(sql, f"{kind} on tique table {touched[0][1].name!r} is not supported: tique tables change only through INSERT, UPDATE, DELETE, CREATE TABLE and DROP TABLE"))
    return NativePlan(backend.compile(tree, owned=True), params)


def _make_plan_of_read(tree: exp.Expression, backend: Backend, context: passes.PassContext, params: int,
                       touched: list) -> ReadPlan:
    names = tuple(sorted({t.name for _, t in touched}))
    # A lateral read is a nested loop of key probes, never an analytical scan (reads_by_scan).
    probing = reads_laterally(touched, context.catalog, context.formulation, context.lateral)
    analytic = not probing and scans(touched, context.formulation, context.lateral)
    # Kept where reads have variants: DuckDB's storage reads, MonetDB's analytical reads of
    # empty caches, READ COMMITTED's reads.
    storage_variants = backend.cache_state is not None or (backend.counts_caches and analytic)
    source = (tree.copy() if storage_variants or backend.reads_without_own_versions or backend.statement_snapshot_expression() is not None
              else None)
    reads = query_shape(tree, context.catalog, backend.dialect)
    if source is None:
        statement = backend.compile(passes.run(passes.READ, tree, context), owned=True)
        return ReadPlan(params, names, analytic, probing, reads=reads, variants={frozenset(): statement})

    def build(clean: frozenset[str]) -> Compiled:
        assert source is not None
        try:
            if not clean:
                return backend.compile(passes.run(passes.READ, source.copy(), context), owned=True)
            return backend.compile(passes.run(passes.STORAGE_READ, source.copy(), dataclasses.replace(context, clean=clean)), owned=True)
        except UnsupportedError as error:
            raise NotSupportedError(describe(context.statement, f"not supported through tique: {error}")) from None

    def build_committed() -> tuple[Compiled, frozenset[str]]:
        assert source is not None
        read = passes.run(passes.READ, source.copy(), context)
        caches = without_own_versions(read)
        return backend.compile(read, owned=True), caches

    plan = ReadPlan(params, names, analytic, probing, source, reads=reads, build=build,
                    build_committed=build_committed if backend.reads_without_own_versions else None)
    if not storage_variants:
        plan.variant(frozenset())  # no storage variants here: the snapshot read is what every execution runs
    return plan


def refuse_what_the_engine_rejects(tree: exp.Expression, dialect: str, sql: str) -> None:
    """See passes.refuse_engine_rejects."""
    passes.refuse_engine_rejects(tree, passes.PassContext(CatalogSnapshot(), dialect, Formulation.AUTO, _no_key_hash, sql))


def _no_key_hash(table: str, keys: list[exp.Expression]) -> exp.Expression:
    raise AssertionError("refusing needs no key hash")


def _shared(backend: Backend, key: tuple, build: Callable[[], Any]) -> Any:
    """What `build` makes, made once per backend: the parts of write plans that depend on
    a table's shape only, not on the statement."""
    found = backend.shared_plans.get(key)
    if found is None:
        found = build()
        backend.shared_plans.put(key, found)
    return found


def _key_check(backend: Backend, write: WritePlan, from_storage: bool = False) -> tuple[Compiled | None, tuple[tuple[str, str], ...]]:
    """The table's validating read and what each constraint count in it means, compiled
    once per table, whether ranged, whether the keys written have no versions in the
    cache (`from_storage`: the key check reads storage alone) and which constraints the
    write can break; an INSERT ... VALUES binds the range of its keys to it per call
    (KeyCheck). Tables without UNIQUE or CHECK constraints get the key check alone."""
    table = write.table
    checks = constraint_checks(table, write.assigned, backend.key_hash, backend.dialect) if table.uniques or table.checks else []
    if not write.checks_keys and not checks:
        return None, ()
    ranged = write.checks_keys and write.written_keys is not None
    violations = tuple((kind, message) for kind, message, _ in checks)

    def build() -> Compiled:
        query = (validation(table, backend.key_hash, backend.dialect, ranged=ranged, from_storage=from_storage)
                 if write.checks_keys else exp.select())
        assert query is not None
        for i, (_, _, count) in enumerate(checks):
            query = query.select(exp.alias_(count, f"tq_violations_{i}"), copy=False)
        return backend.compile(query, owned=True)

    check = _shared(backend, ("key check", table, ranged, write.checks_keys, violations, from_storage), build)
    if not ranged:
        return check, violations
    assert write.written_keys is not None
    ranges = tuple((low, high) for _, low, high in ranged_key(table, backend.dialect))
    return KeyCheck(check.sql, check.names, write.written_keys, ranges), violations


def _write_plan(tree: exp.Expression, write: WritePlan, backend: Backend, params: int, from_storage: bool = False,
                reads: ReadShape = NOTHING) -> WritePlan:
    table = write.table
    committed: tuple[tuple[Compiled, ...], frozenset[str]] | None = None
    if write.repeat is not None:
        rows, width = write.repeat
        assert isinstance(tree, exp.Insert) and len(write.inserts) == 1
        first = tree.expression.expressions[0]
        listed = tuple(c.sql() for c in tree.this.expressions) if isinstance(tree.this, exp.Schema) else ()
        defaults = tuple(c.default.sql() if c.default is not None else None for c in table.columns)
        # Statements that differ only in how many rows of one shape they insert share one
        # compiled template: only the rows' text is repeated for each row count.
        template = _shared(backend, ("insert rows", table, defaults, listed, first.sql()),
                           lambda: backend.compile_rows(write.inserts[0], width))
        inserts: tuple[Compiled, ...] = (template.expand(rows),)
        one_row = template if rows == 1 and width == params else None
    else:
        one_row = None
        if backend.reads_without_own_versions:
            # The inserts for a transaction that has no versions in the caches they read
            # (tique/rewrite/own_versions.py); the validating read, which must see the
            # statement's own versions, is never so narrowed.
            stripped = [i.copy() for i in write.inserts]
            caches = frozenset().union(*[without_own_versions(i) for i in stripped])
            if caches:
                committed = (tuple(backend.compile(i, owned=True) for i in stripped), caches)
        inserts = tuple(backend.compile(i, owned=True) for i in write.inserts)  # the rewriter's, read no more
    check, violations = _key_check(backend, write, from_storage)
    planned = dataclasses.replace(write, inserts=inserts, validation=check, params=params, violations=violations, rows=one_row, reads=reads,
                                  undo=_shared(backend, ("undo", table.name), lambda: backend.compile(undo(table), owned=True)))
    if committed is not None:
        planned = dataclasses.replace(planned, committed=(dataclasses.replace(planned, inserts=committed[0]), committed[1]))
    return planned

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
from tique.catalog import TableDef, normalize, table_def_from_create
from tique.column_names import name_columns_as_native, name_created_columns_as_native
from tique.ddl import Index, View
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.isolation import IsolationLevel, control_statement
from tique.rewrite.constraints import constraint_checks
from tique.rewrite.faithful import parser_class
from tique.rewrite.locks import lock_writes, refuse_unsupported_locks, without_locks
from tique.rewrite.params import USER_PREFIX, Compiled, KeyCheck, Marked, RowTemplate, mark_parameters, normalize_placeholders
from tique.rewrite.reads import Lookup, _names_cte_in_scope, reads_by_scan, referenced_tables, replace_tables
from tique.rewrite.rowid import expose_rowid
from tique.rewrite.snapshot import Formulation
from tique.rewrite.templates import forget_positions
from tique.rewrite.writes import WritePlan as Write
from tique.rewrite.writes import ranged_key, rewrite_delete, rewrite_insert, rewrite_update, undo, validation


@dataclass(frozen=True)
class NativePlan:
    """No tique table involved: the engine runs the statement as it is."""
    statement: Compiled
    params: int


@dataclass(frozen=True)
class ReadPlan:
    """Reads tique tables at the transaction's snapshot (may write a native table)."""
    statement: Compiled
    params: int
    tables: tuple[str, ...]
    analytic: bool = False  # some table is read by the scan formulation
    # The statement before its tables were swapped for snapshots, for the variants that
    # read some tables' storage directly (tique/rewrite/storage_reads.py), made on first use.
    source: exp.Expression | None = None
    variants: dict[frozenset[str], Compiled] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class LockingReadPlan:
    """SELECT ... FOR UPDATE on PostgreSQL (tique/rewrite/locks.py): the rows it reads are
    written back unchanged first, which puts their keys in the write-set, then read."""
    locks: tuple["WritePlan", ...]
    read: ReadPlan

    @property
    def params(self) -> int:
        return self.read.params


@dataclass(frozen=True)
class WritePlan:
    table: TableDef
    inserts: tuple[Compiled, ...]
    # One row of counts: (duplicate keys, existing keys) when `checks_keys`, then one
    # count per entry of `violations`, which says what a non-zero count means.
    validation: Compiled | None
    undo: Compiled
    params: int
    checks_keys: bool = False
    violations: tuple[tuple[str, str], ...] = ()  # (CHECK or UNIQUE, message)
    # A one-row INSERT ... VALUES taking all `params` in its row: the template that makes
    # the many-row insert executemany sends per batch (see batched); None for other writes.
    rows: RowTemplate | None = None
    batches: dict[int, "WritePlan"] = field(default_factory=dict, compare=False, hash=False)


# How many rows executemany sends in one insert, and how many values at most (PostgreSQL
# takes 65,535 parameters per statement; a few are tique's own).
BATCH_ROWS = 1000
BATCH_VALUES = 60_000
_BATCHES_KEPT = 8  # batch sizes whose plans a statement keeps (the last one is usually shorter)


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
        validation = plan.validation
        if isinstance(validation, KeyCheck):
            width = plan.params
            keys = tuple(tuple(s + k * width if type(s) is int else s for s in validation.keys[0]) for k in range(rows))
            validation = dataclasses.replace(validation, keys=keys)
        found = WritePlan(plan.table, (plan.rows.expand(rows),), validation, plan.undo, plan.params * rows,
                          plan.checks_keys, plan.violations)
        if len(plan.batches) >= _BATCHES_KEPT:
            plan.batches.clear()
        plan.batches[rows] = found
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
ObjectLookup = Callable[[str], "View | Index | None"]
MAX_VIEW_DEPTH = 32


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


def _target_name(tree: exp.Expression) -> str | None:
    return _plain_name(tree.this.find(exp.Table) if isinstance(tree.this, exp.Schema) else tree.this)


def _plain_name(table: exp.Expression | None) -> str | None:
    """The normalized name of an unqualified table reference (qualified ones are never tique tables)."""
    if not isinstance(table, exp.Table) or table.args.get("db"):
        return None
    return normalize(table.name)


def _dropped_tables(tree: exp.Drop) -> list[exp.Expression]:
    """The tables a DROP names: newer sqlglot keeps them all in `tables`, older ones in `this` + `expressions`."""
    tables = tree.args.get("tables")
    if tables:
        return list(tables)
    return [t for t in (tree.this, *(tree.expressions or [])) if t is not None]


def _alias_as_written(tree: exp.Expression, lookup: Lookup) -> None:
    """Gives each unaliased tique table reference its own name, exactly as written, as alias.

    The snapshot subquery replacing a reference carries its alias; spelling it as the
    application did (quoted or not) keeps names like "order" valid SQL. An INSERT's
    target is no reference and stays as it is.
    """
    target = tree.this.this if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema) else tree.this
    for ref, _ in referenced_tables(tree, lookup):
        if ref.args.get("alias") or (isinstance(tree, exp.Insert) and ref is target):
            continue
        ref.set("alias", exp.TableAlias(this=ref.this.copy()))


def _write_target(tree: exp.Expression) -> exp.Expression | None:
    if isinstance(tree, exp.Insert):
        return tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    return tree.this if isinstance(tree, (exp.Update, exp.Delete)) else None


def _expand_views(tree: exp.Expression, objects: ObjectLookup, sql: str) -> exp.Expression:
    """Each reference to a tique view becomes its query as a subquery under the reference's
    alias (or the view's name), so the statement reads the view's tables through its own
    snapshot. Views over views expand level by level."""
    target = _write_target(tree)
    for _ in range(MAX_VIEW_DEPTH):
        expanded = False
        for ref in list(tree.find_all(exp.Table)):
            if ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier) or _names_cte_in_scope(ref):
                continue
            view = objects(normalize(ref.name))
            if not isinstance(view, View):
                continue
            if ref is target:
                raise NotSupportedError(describe(sql, f"writing through view {view.name!r} is not supported; write its tables"))
            alias = ref.args.get("alias")
            name = alias.this.copy() if alias is not None and alias.this else ref.this.copy()
            columns = [c.copy() for c in alias.columns] if alias is not None and alias.columns else [exp.to_identifier(c, quoted=True) for c in view.columns]
            ref.replace(exp.Subquery(this=view.query.copy(), alias=exp.TableAlias(this=name, columns=columns)))
            expanded = True
        if not expanded:
            return tree
    raise ProgrammingError(describe(sql, f"views nest more than {MAX_VIEW_DEPTH} deep (a view that reads itself?)"))


def _object_plan(tree: exp.Expression, sql: str, backend: Backend, lookup: Lookup, objects: ObjectLookup,
                 formulation: Formulation, params: int) -> ObjectPlan | None:
    """CREATE/DROP VIEW and INDEX when they concern tique tables or tique views; None otherwise."""
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "VIEW":
        name = _target_name(tree)
        query = tree.expression
        if name is None or not isinstance(query, exp.Query):
            return None
        expanded = _expand_views(query.copy(), objects, sql)
        if not referenced_tables(expanded, lookup) and not isinstance(objects(name), View):
            return None  # a view of native tables only: the engine's own
        if params:
            raise ProgrammingError(describe(sql, "a view's query cannot have parameter markers"))
        columns = tuple(normalize(c.name) for c in tree.this.expressions) if isinstance(tree.this, exp.Schema) else ()
        _alias_as_written(expanded, lookup)
        check = replace_tables(expanded, lookup, formulation, backend.key_hash)
        return ObjectPlan("create", "view", name, View(name, query.copy(), columns), bool(tree.args.get("exists")),
                          bool(tree.args.get("replace")), check)
    if isinstance(tree, exp.Create) and kind == "INDEX" and isinstance(tree.this, exp.Index):
        index = tree.this
        table_name = _plain_name(index.args.get("table"))
        table = lookup(table_name) if table_name else None
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
            if normalize(column.name) not in table.user_columns:
                raise ProgrammingError(describe(sql, f"table {table.name} has no column {column.name!r}"))
            columns.append(normalize(column.name))
        if not columns:
            raise ProgrammingError(describe(sql, "an index needs at least one column"))
        name = normalize(index.name)
        return ObjectPlan("create", "index", name, Index(name, table.name, tuple(columns)), bool(tree.args.get("exists")))
    if isinstance(tree, exp.Drop) and kind in ("VIEW", "INDEX"):
        names = [_plain_name(t) for t in _dropped_tables(tree)]
        if not any(n is not None and getattr(objects(n), "kind", None) == kind.lower() for n in names):
            return None
        if len(names) > 1:
            raise NotSupportedError(describe(sql, f"drop one {kind.lower()} over tique tables per statement"))
        return ObjectPlan("drop", kind.lower(), str(names[0]), None, bool(tree.args.get("exists")), cascade=bool(tree.args.get("cascade")))
    return None


def make_plan(sql: str, backend: Backend, lookup: Lookup, formulation: Formulation, static_tables: frozenset[str],
              objects: ObjectLookup = lambda name: None) -> Plan:
    control = control_statement(sql)  # tique's own, on every engine: before any parser
    if control is not None:
        return ControlPlan(control.action, control.level, control.read_only)
    try:
        return _make_plan(sql, backend, lookup, formulation, static_tables, objects)
    except UnsupportedError as error:
        # The generator cannot say it in the engine's SQL as written (tique/rewrite/faithful.py):
        # sending what it can say would run a statement that means something else.
        raise NotSupportedError(describe(sql, f"not supported through tique: {error}")) from None


def _make_plan(sql: str, backend: Backend, lookup: Lookup, formulation: Formulation, static_tables: frozenset[str],
               objects: ObjectLookup) -> Plan:
    tree = forget_positions(parse_one(sql, backend.dialect))
    try:
        params = normalize_placeholders(tree)
    except ValueError as error:
        raise ProgrammingError(describe(sql, str(error))) from None
    if any(p.this == f"{USER_PREFIX}0" for p in tree.find_all(exp.Placeholder)):
        raise ProgrammingError(describe(sql, "parameter marker $0: numeric markers count from $1"))
    key_hash = backend.key_hash

    if isinstance(tree, exp.Update) and not tree.expressions:
        raise ProgrammingError(describe(sql, "syntax error: UPDATE without SET assignments"))
    if isinstance(tree, exp.Transaction):
        return ControlPlan("begin")
    if isinstance(tree, exp.Commit):
        return ControlPlan("commit")
    if isinstance(tree, exp.Rollback):
        return ControlPlan("rollback")

    found = _object_plan(tree, sql, backend, lookup, objects, formulation, params)
    if found is not None:
        return found
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "TABLE":
        name = _target_name(tree)
        temporary = any(isinstance(p, exp.TemporaryProperty) for p in (tree.args.get("properties") or exp.Properties()).expressions)
        if name is not None and name not in static_tables and not temporary:
            replace = bool(tree.args.get("replace"))
            if replace and not backend.creates_or_replaces_tables:
                raise ProgrammingError(describe(sql, f"syntax error: {backend.dialect} has no CREATE OR REPLACE TABLE; DROP TABLE, then CREATE TABLE"))
            query = tree.expression
            if isinstance(query, exp.Query):
                if isinstance(tree.this, exp.Schema):
                    raise NotSupportedError(describe(sql, "CREATE TABLE with a column list AS SELECT is not supported for tique tables; alias the query's columns instead"))
                name_created_columns_as_native(query, sql, backend.dialect)
                _expand_views(query, objects, sql)
                _alias_as_written(query, lookup)
                no_data = any(isinstance(p, exp.WithDataProperty) and p.args.get("no") for p in (tree.args.get("properties") or exp.Properties()).expressions)
                return CreateAsPlan(name, replace_tables(query, lookup, formulation, key_hash), params, bool(tree.args.get("exists")), replace, not no_data)
            table = backend.new_table(table_def_from_create(tree, backend.dialect, sql))
            return CreatePlan(table, bool(tree.args.get("exists")), replace)
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        dropped = _dropped_tables(tree)
        names = [_plain_name(t) for t in dropped]
        if any(n is not None and lookup(n) is not None for n in names):
            if len(dropped) > 1:
                raise NotSupportedError(describe(sql, "drop one tique table per statement"))
            return DropPlan(names[0], bool(tree.args.get("exists")), bool(tree.args.get("cascade")))

    if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
        tree = _expand_views(tree, objects, sql)
        _alias_as_written(tree, lookup)
        name_columns_as_native(tree, sql, backend.dialect)
        if backend.dialect == "duckdb":  # the engine with a rowid pseudo-column
            expose_rowid(tree, lookup, sql)
    refuse_what_the_engine_rejects(tree, backend.dialect, sql)
    locks = refuse_unsupported_locks(tree, backend.dialect, bool(referenced_tables(tree, lookup)), sql) if tree.find(exp.Lock) else []
    rewriters: dict[type, Callable] = {exp.Insert: rewrite_insert, exp.Update: rewrite_update, exp.Delete: rewrite_delete}
    if type(tree) in rewriters:
        name = _target_name(tree)
        table = lookup(name) if name else None
        if table is not None:
            write = rewriters[type(tree)](tree, table, lookup, formulation, key_hash, backend.dialect, sql)
            return _write_plan(tree, write, backend, params, formulation is Formulation.STORAGE)

    touched = referenced_tables(tree, lookup)
    if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
        if not touched:
            return NativePlan(backend.compile(tree), params)
        if locks:
            assert isinstance(tree, exp.Select)
            writes = lock_writes(tree, locks, lookup, formulation, key_hash, sql)
            read = _make_plan_of_read(without_locks(tree), backend, lookup, formulation, params, touched)
            return LockingReadPlan(tuple(_write_plan(tree, w, backend, params) for w in writes), read)
        return _make_plan_of_read(tree, backend, lookup, formulation, params, touched)
    if touched:
        kind = tree.key.upper()
        raise NotSupportedError(describe(sql, f"{kind} on tique table {touched[0][1].name!r} is not supported: tique tables change only through INSERT, UPDATE, DELETE, CREATE TABLE and DROP TABLE"))
    return NativePlan(backend.compile(tree), params)


def _make_plan_of_read(tree: exp.Expression, backend: Backend, lookup: Lookup, formulation: Formulation, params: int,
                       touched: list) -> ReadPlan:
    names = tuple(sorted({t.name for _, t in touched}))
    analytic = reads_by_scan(touched, lookup, formulation, backend.lateral_point_reads)
    source = tree.copy() if backend.cache_state is not None else None
    return ReadPlan(backend.compile(replace_tables(tree, lookup, formulation, backend.key_hash, lateral=backend.lateral_point_reads)),
                    params, names, analytic, source)


def refuse_what_the_engine_rejects(tree: exp.Expression, dialect: str, sql: str) -> None:
    """Syntax sqlglot reads in the engine's dialect but the engine rejects, where the
    generated SQL would mean something else: DuckDB has no SELECT ... INTO (sqlglot turns
    it into CREATE TABLE ... AS). (MonetDB's missing DELETE ... USING is left to tique,
    which gives it PostgreSQL's meaning on tique tables.)"""
    if dialect == "duckdb" and any(s.args.get("into") for s in tree.find_all(exp.Select)):
        raise ProgrammingError(describe(sql, 'syntax error at or near "INTO": DuckDB has no SELECT ... INTO; use CREATE TABLE ... AS SELECT'))


def _shared(backend: Backend, key: tuple, build: Callable[[], Any]) -> Any:
    """What `build` makes, made once per backend: the parts of write plans that depend on
    a table's shape only, not on the statement."""
    found = backend.shared_plans.get(key)
    if found is None:
        found = build()
        backend.shared_plans.put(key, found)
    return found


def _key_check(backend: Backend, write: Write, from_storage: bool = False) -> tuple[Compiled | None, tuple[tuple[str, str], ...]]:
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
        return backend.compile(query)

    check = _shared(backend, ("key check", table, ranged, write.checks_keys, violations, from_storage), build)
    if not ranged:
        return check, violations
    assert write.written_keys is not None
    ranges = tuple((low, high) for _, low, high in ranged_key(table, backend.dialect))
    return KeyCheck(check.sql, check.names, write.written_keys, ranges), violations


def _write_plan(tree: exp.Expression, write: Write, backend: Backend, params: int, from_storage: bool = False) -> WritePlan:
    table = write.table
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
        inserts = tuple(backend.compile(i) for i in write.inserts)
        one_row = None
    check, violations = _key_check(backend, write, from_storage)
    return WritePlan(table, inserts, check, _shared(backend, ("undo", table.name), lambda: backend.compile(undo(table))), params,
                     write.checks_keys, violations, one_row)

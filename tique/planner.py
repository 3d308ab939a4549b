"""Turns one application statement into a plan of engine statements, once per text.

A plan holds compiled SQL with numbered markers; executing it only binds values.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import Parser
from sqlglot.tokens import TokenType

from tique.backends.base import Backend
from tique.catalog import TableDef, normalize, table_def_from_create
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.rewrite.params import USER_PREFIX, Compiled, KeyCheck, Marked, mark_parameters, normalize_placeholders
from tique.rewrite.reads import Lookup, referenced_tables, replace_tables
from tique.rewrite.snapshot import Formulation, choose_formulation
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
class WritePlan:
    table: TableDef
    inserts: tuple[Compiled, ...]
    validation: Compiled | None
    undo: Compiled
    params: int


@dataclass(frozen=True)
class CreatePlan:
    table: TableDef
    if_not_exists: bool


@dataclass(frozen=True)
class DropPlan:
    name: str
    if_exists: bool


@dataclass(frozen=True)
class ControlPlan:
    action: str  # begin | commit | rollback


Plan = Union[NativePlan, ReadPlan, WritePlan, CreatePlan, DropPlan, ControlPlan]


@functools.lru_cache(maxsize=None)
def _parser_class(dialect: str) -> type[Parser]:
    """The dialect's parser, minus `:name` placeholders: tique takes `?` and `$n` markers
    only, and a `:` that opens a name is an array slice with no lower bound (`arr[:n]`)."""
    base = Dialect.get_or_raise(dialect).parser_class
    placeholders = {k: v for k, v in base.PLACEHOLDER_PARSERS.items() if k != TokenType.COLON}
    return type(f"Tique{base.__name__}", (base,), {"PLACEHOLDER_PARSERS": placeholders})


def parse_one(sql: str, dialect: str) -> exp.Expression:
    """Parses exactly one statement; syntax errors name the statement and the position."""
    marked = mark_parameters(sql)
    engine = Dialect.get_or_raise(dialect)
    try:
        parsed = _parser_class(dialect)(dialect=engine).parse(engine.tokenize(marked.sql), marked.sql)
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


def make_plan(sql: str, backend: Backend, lookup: Lookup, formulation: Formulation, static_tables: frozenset[str]) -> Plan:
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

    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "TABLE":
        name = _target_name(tree)
        temporary = any(isinstance(p, exp.TemporaryProperty) for p in (tree.args.get("properties") or exp.Properties()).expressions)
        if name is not None and name not in static_tables and not temporary:
            if tree.args.get("replace"):
                raise NotSupportedError(describe(sql, "CREATE OR REPLACE TABLE is not supported for tique tables; DROP it first"))
            table = backend.new_table(table_def_from_create(tree, backend.dialect, sql))
            return CreatePlan(table, bool(tree.args.get("exists")))
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        dropped = _dropped_tables(tree)
        names = [_plain_name(t) for t in dropped]
        if any(n is not None and lookup(n) is not None for n in names):
            if len(dropped) > 1:
                raise NotSupportedError(describe(sql, "drop one tique table per statement"))
            return DropPlan(names[0], bool(tree.args.get("exists")))

    if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
        _alias_as_written(tree, lookup)
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
        names = tuple(sorted({t.name for _, t in touched}))
        analytic = any((choose_formulation(t, ref) if formulation is Formulation.AUTO else formulation) is Formulation.SCAN
                       for ref, t in touched)
        source = tree.copy() if backend.cache_state is not None else None
        return ReadPlan(backend.compile(replace_tables(tree, lookup, formulation, key_hash)), params, names, analytic, source)
    if touched:
        kind = tree.key.upper()
        raise NotSupportedError(describe(sql, f"{kind} on tique table {touched[0][1].name!r} is not supported: tique tables change only through INSERT, UPDATE, DELETE, CREATE TABLE and DROP TABLE"))
    return NativePlan(backend.compile(tree), params)


def _shared(backend: Backend, key: tuple, build: Callable[[], Any]) -> Any:
    """What `build` makes, made once per backend: the parts of write plans that depend on
    a table's shape only, not on the statement."""
    found = backend.shared_plans.get(key)
    if found is None:
        found = build()
        backend.shared_plans.put(key, found)
    return found


def _key_check(backend: Backend, write: Write, from_storage: bool = False) -> Compiled | None:
    """The table's key check, compiled once per table (and whether ranged, and whether
    the keys written have no versions in the cache); an INSERT ... VALUES binds the range
    of its keys to it per call (KeyCheck)."""
    if not write.checks_keys:
        return None
    table, ranged = write.table, write.written_keys is not None
    check = _shared(backend, ("key check", table, ranged, from_storage),
                    lambda: backend.compile(validation(table, backend.key_hash, backend.dialect, ranged=ranged,
                                                       from_storage=from_storage)))
    if not ranged:
        return check
    assert write.written_keys is not None
    ranges = tuple((low, high) for _, low, high in ranged_key(table, backend.dialect))
    return KeyCheck(check.sql, check.names, write.written_keys, ranges)


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
    else:
        inserts = tuple(backend.compile(i) for i in write.inserts)
    return WritePlan(table, inserts, _key_check(backend, write, from_storage),
                     _shared(backend, ("undo", table.name), lambda: backend.compile(undo(table))), params)

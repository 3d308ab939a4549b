"""Turns one application statement into a plan of engine statements, once per text.

A plan holds compiled SQL with numbered markers; executing it only binds values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from tique.backends.base import Backend
from tique.catalog import TableDef, normalize, table_def_from_create
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.rewrite.params import Compiled, normalize_placeholders, number_qmarks
from tique.rewrite.reads import Lookup, referenced_tables, replace_tables
from tique.rewrite.snapshot import Formulation
from tique.rewrite.writes import rewrite_delete, rewrite_insert, rewrite_update


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


def parse_one(sql: str, dialect: str) -> exp.Expression:
    """Parses exactly one statement; syntax errors name the statement and the position."""
    try:
        trees = [t for t in sqlglot.parse(number_qmarks(sql, dialect), read=dialect) if t is not None]
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        cause = first.get("description") or str(error)
        raise ProgrammingError(describe(sql, f"syntax error{where}: {cause}")) from None
    except TokenError as error:
        raise ProgrammingError(describe(sql, f"syntax error: {error}")) from None
    if not trees:
        raise ProgrammingError(describe(sql, "empty statement"))
    if len(trees) > 1:
        raise ProgrammingError(describe(sql, "one statement per execute(); send them one at a time"))
    return trees[0]


def _target_name(tree: exp.Expression) -> str | None:
    table = tree.this.find(exp.Table) if isinstance(tree.this, exp.Schema) else tree.this
    if not isinstance(table, exp.Table) or table.args.get("db"):
        return None
    return normalize(table.name)


def make_plan(sql: str, backend: Backend, lookup: Lookup, formulation: Formulation, static_tables: frozenset[str]) -> Plan:
    tree = parse_one(sql, backend.dialect)
    try:
        params = normalize_placeholders(tree)
    except ValueError as error:
        raise ProgrammingError(describe(sql, str(error))) from None
    key_hash = backend.key_hash

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
            table = table_def_from_create(tree, backend.dialect, sql)
            return CreatePlan(table, bool(tree.args.get("exists")))
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        name = _target_name(tree)
        if name is not None and lookup(name) is not None:
            if len(tree.expressions or []) > 1:
                raise NotSupportedError(describe(sql, "drop one tique table per statement"))
            return DropPlan(name, bool(tree.args.get("exists")))

    rewriters: dict[type, Callable] = {exp.Insert: rewrite_insert, exp.Update: rewrite_update, exp.Delete: rewrite_delete}
    if type(tree) in rewriters:
        name = _target_name(tree)
        table = lookup(name) if name else None
        if table is not None:
            write = rewriters[type(tree)](tree, table, lookup, formulation, key_hash, backend.dialect, sql)
            return WritePlan(
                table,
                tuple(backend.compile(i) for i in write.inserts),
                backend.compile(write.validation) if write.validation is not None else None,
                backend.compile(write.undo),
                params,
            )

    touched = referenced_tables(tree, lookup)
    if isinstance(tree, (exp.Query, exp.Insert, exp.Update, exp.Delete)):
        if not touched:
            return NativePlan(backend.compile(tree), params)
        names = tuple(sorted({t.name for _, t in touched}))
        return ReadPlan(backend.compile(replace_tables(tree, lookup, formulation, key_hash)), params, names)
    if touched:
        kind = tree.key.upper()
        raise NotSupportedError(describe(sql, f"{kind} on tique table {touched[0][1].name!r} is not supported: tique tables change only through INSERT, UPDATE, DELETE, CREATE TABLE and DROP TABLE"))
    return NativePlan(backend.compile(tree), params)

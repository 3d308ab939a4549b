"""Snapshot subqueries: what a tique table reads as inside one transaction."""
from __future__ import annotations

from enum import Enum

from sqlglot import exp

from tique.catalog import TableDef
from tique.rewrite.templates import KeyHash, table_template


class Formulation(str, Enum):
    RANK = "rank"  # rank() window: point and key lookups
    SCAN = "scan"  # anti-join/union: scans and analytics
    AUTO = "auto"  # picked per table reference from the query's filters


def snapshot(table: TableDef, formulation: Formulation, key_hash: KeyHash, *, physical: bool = False) -> exp.Query:
    """The snapshot of `table` as a query. `physical` also projects the hidden row id."""
    if formulation is Formulation.AUTO:
        raise ValueError("choose a concrete formulation before building a snapshot")
    columns = table.physical_columns if physical else table.user_columns
    name = "common/snapshot_rank.sql" if formulation is Formulation.RANK else "common/snapshot_scan.sql"
    (query,) = table_template(name, table, columns, key_hash)
    assert isinstance(query, exp.Query)
    return query


def _equality_columns(where: exp.Expression | None, alias: str) -> set[str]:
    """Columns of `alias` that the WHERE clause pins to a single value by a top-level equality."""
    pinned: set[str] = set()
    if where is None:
        return pinned
    condition = where.this if isinstance(where, exp.Where) else where
    for conjunct in condition.flatten() if isinstance(condition, exp.And) else [condition]:
        if not isinstance(conjunct, exp.EQ):
            continue
        for side, other in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            if isinstance(side, exp.Column) and not other.find(exp.Column) and side.table in ("", alias):
                pinned.add(side.name.lower())
    return pinned


def formulation_for(table: TableDef, where: exp.Expression | None, alias: str) -> Formulation:
    """rank() when `where` pins the table's whole key (a point access), otherwise scan."""
    return Formulation.RANK if set(table.key) <= _equality_columns(where, alias) else Formulation.SCAN


def choose_formulation(table: TableDef, reference: exp.Table) -> Formulation:
    """The formulation for a table read inside a SELECT, from that SELECT's WHERE."""
    select = reference.find_ancestor(exp.Select)
    if select is None:
        return Formulation.SCAN
    return formulation_for(table, select.args.get("where"), reference.alias_or_name)

"""DuckDB's `rowid` pseudo-column on tique tables.

A DuckDB table answers `rowid` with a number that identifies its row for as long as the
row lives (an UPDATE keeps it). A tique table without a primary key has one of its own,
its hidden row id (catalog.ROWID), kept by every version of the row and by checkpoints:
`rowid` reads it. The numbers are not DuckDB's (which count from 0 in the order rows
were stored); what an application can rely on, one number per row that stays with it,
is the same. A table with a primary key has no row id but its key, which is what to use.
"""
from __future__ import annotations

from typing import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from tique.catalog import CatalogSnapshot, ROWID, alias_of, normalize, qualifier_of
from tique.errors import NotSupportedError, describe
from tique.rewrite.reads import names_columns_implicitly, outermost_queries, referenced_tables
from tique.rewrite.templates import quoted

PSEUDO = "rowid"


def _level_sources(scope: Scope) -> list[exp.Table] | None:
    """The tables a scope reads directly, when it is a level a column can belong to:
    a SELECT's FROM and JOIN tables (CTE references included, which are no tique
    table), an UPDATE's or DELETE's target. None for the other scopes (set operations,
    the FROM/USING relations sqlglot scopes on their own: their columns belong to the
    statement, whose target is what the engine binds an unqualified one to first)."""
    expression = scope.expression
    if isinstance(expression, exp.Select):
        return [node for node, _ in scope.selected_sources.values() if isinstance(node, exp.Table)]
    if isinstance(expression, (exp.Update, exp.Delete)):
        return [expression.this] if isinstance(expression.this, exp.Table) else []
    return None


def _levels(scope: Scope | None, statement: Scope | None) -> Iterator[Scope]:
    """`scope` and the scopes around it, innermost first, then the write's own level
    (sqlglot roots the scopes of an UPDATE's FROM and a DELETE's USING items apart)."""
    if scope is None:  # in a write's own clauses
        scope = statement
    while scope is not None:
        yield scope
        if scope.parent is None and statement is not None and scope.expression is not statement.expression:
            yield statement
        scope = scope.parent


def _owner(ref: exp.Column, scope: Scope | None, statement: Scope | None, dialect: str) -> exp.Table | None:
    """The table reference a `rowid` column of `scope` belongs to: the nearest enclosing
    level (the scope's, then its parents', then the write's) that reads a table of its
    qualifier (or, unqualified, that reads exactly one table)."""
    qualifier = qualifier_of(ref, dialect) if ref.table else None
    for level in _levels(scope, statement):
        sources = _level_sources(level)
        if sources:
            if qualifier is not None:
                named = [t for t in sources if alias_of(t, dialect) == qualifier]
                if named:
                    return named[0]
            elif len(sources) == 1:
                return sources[0]
            else:
                return None  # ambiguous: left to the engine, as natively
    return None


def _rowid_columns(tree: exp.Expression, columns: list[exp.Column]) -> list[tuple[exp.Column, Scope | None]]:
    """Each of `columns` (the columns named rowid in `tree`) with the scope it stands in
    (sqlglot's); None for a write's own clauses, which stand in no query's scope."""
    found: dict[int, tuple[exp.Column, Scope | None]] = {}
    wanted = {id(c) for c in columns}
    for root in outermost_queries(tree):
        for scope in traverse_scope(root):
            for node in scope.walk():
                if id(node) in wanted:
                    found.setdefault(id(node), (node, scope))
    return [found.get(id(c), (c, None)) for c in columns]


def _reads_every_column(ref: exp.Table) -> bool:
    """Whether the SELECT reading `ref` names its columns in a way that, with rowid
    renamed to the hidden row id, would expand to it too (a star) or to no fixed list."""
    if names_columns_implicitly(ref):
        return True
    select = ref.parent.parent
    return any(isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count) for node in select.walk())


def expose_rowid(tree: exp.Expression, catalog: CatalogSnapshot, statement: str) -> None:
    """Makes each `rowid` of a tique table name its hidden row id (in place); refuses
    where the table has none, or where the snapshot would not carry it."""
    columns = [c for c in tree.find_all(exp.Column) if isinstance(c.this, exp.Identifier) and normalize(c.name) == PSEUDO]
    if not columns:
        return
    tique_refs = {id(ref): table for ref, table in referenced_tables(tree, catalog)}
    if not tique_refs:
        return
    write = Scope(tree) if isinstance(tree, (exp.Update, exp.Delete)) else None
    for ref, scope in _rowid_columns(tree, columns):
        owner = _owner(ref, scope, write, catalog.dialect)
        table = tique_refs.get(id(owner)) if owner is not None else None
        if table is None or PSEUDO in table.user_columns:
            continue  # another table's, or the table's own column named rowid
        if not table.hidden_rowid:
            raise NotSupportedError(describe(statement, f"rowid of tique table {table.name!r}: a table with a primary key has no row id on tique; use its key ({', '.join(table.key)})"))
        reads = not isinstance(owner.parent, (exp.Update, exp.Delete))
        if reads and _reads_every_column(owner):
            raise NotSupportedError(describe(statement, f"rowid of tique table {table.name!r} together with * (or NATURAL, a column list on the alias): name the columns to select"))
        renamed = exp.Column(this=quoted(ROWID), table=ref.args.get("table"))
        if isinstance(ref.parent, exp.Select) and ref in ref.parent.expressions:
            renamed = exp.alias_(renamed, ref.this.copy())  # named as written, as natively
        ref.replace(renamed)

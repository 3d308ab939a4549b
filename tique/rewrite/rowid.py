"""DuckDB's `rowid` pseudo-column on tique tables.

A DuckDB table answers `rowid` with a number that identifies its row for as long as the
row lives (an UPDATE keeps it). A tique table without a primary key has one of its own,
its hidden row id (catalog.ROWID), kept by every version of the row and by checkpoints:
`rowid` reads it. The numbers are not DuckDB's (which count from 0 in the order rows
were stored); what an application can rely on, one number per row that stays with it,
is the same. A table with a primary key has no row id but its key, which is what to use.
"""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot, ROWID, normalize
from tique.errors import NotSupportedError, describe
from tique.rewrite.reads import referenced_tables, used_columns
from tique.rewrite.templates import quoted

PSEUDO = "rowid"


def _sources(scope: exp.Expression) -> list[exp.Table]:
    """The tables a SELECT (or the target of an UPDATE or DELETE) reads directly."""
    if isinstance(scope, (exp.Update, exp.Delete)):
        return [scope.this] if isinstance(scope.this, exp.Table) else []
    found = []
    from_clause = scope.args.get("from_") or scope.args.get("from")
    for part in ([from_clause.this] if from_clause is not None else []) + [j.this for j in scope.args.get("joins") or []]:
        if isinstance(part, exp.Table):
            found.append(part)
    return found


def _owner(ref: exp.Column) -> exp.Table | None:
    """The table reference a `rowid` column belongs to: the nearest enclosing query whose
    FROM names its qualifier (or, unqualified, that reads exactly one table)."""
    qualifier = normalize(ref.table) if ref.table else None
    scope = ref.parent
    while scope is not None:
        if isinstance(scope, (exp.Select, exp.Update, exp.Delete)):
            sources = _sources(scope)
            if qualifier is not None:
                named = [t for t in sources if normalize(t.alias_or_name) == qualifier]
                if named:
                    return named[0]
            elif len(sources) == 1:
                return sources[0]
            elif sources:
                return None  # ambiguous: left to the engine, as natively
        scope = scope.parent
    return None


def expose_rowid(tree: exp.Expression, catalog: CatalogSnapshot, statement: str) -> None:
    """Makes each `rowid` of a tique table name its hidden row id (in place); refuses
    where the table has none, or where the snapshot would not carry it."""
    tique_refs = {id(ref): table for ref, table in referenced_tables(tree, catalog)}
    if not tique_refs:
        return
    for ref in list(tree.find_all(exp.Column)):
        if normalize(ref.name) != PSEUDO or not isinstance(ref.this, exp.Identifier):
            continue
        owner = _owner(ref)
        table = tique_refs.get(id(owner)) if owner is not None else None
        if table is None or PSEUDO in table.user_columns:
            continue  # another table's, or the table's own column named rowid
        if not table.hidden_rowid:
            raise NotSupportedError(describe(statement, f"rowid of tique table {table.name!r}: a table with a primary key has no row id on tique; use its key ({', '.join(table.key)})"))
        reads = not isinstance(owner.parent, (exp.Update, exp.Delete))
        if reads and used_columns(table, owner) is None:
            raise NotSupportedError(describe(statement, f"rowid of tique table {table.name!r} together with * (or USING, NATURAL, a column list on the alias): name the columns to select"))
        renamed = exp.Column(this=quoted(ROWID), table=ref.args.get("table"))
        if isinstance(ref.parent, exp.Select) and ref in ref.parent.expressions:
            renamed = exp.alias_(renamed, ref.this.copy())  # named as written, as natively
        ref.replace(renamed)

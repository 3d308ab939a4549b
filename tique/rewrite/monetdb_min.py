"""MonetDB: an ungrouped MIN is computed as the reverse of a MAX.

MonetDB (11.45 here) answers an aggregate MIN without GROUP BY from the column's order
when the column is sorted: over values in descending order followed by NULLs (NULL sorts
lowest, so such a column counts as sorted descending) it takes the last value, the NULL,
and answers NULL although the column holds values. Natively `INSERT 3, 1, NULL; SELECT
MIN(a)` answers NULL. tique meets it more often: a snapshot's cache branch comes out of a
window sorted by the key (sql/common/snapshot_scan.sql), so `SELECT MIN(c0) FROM t` over
two cached rows (NULL, 0.0) ordered by their key as (0.0, NULL) answered NULL. MAX takes
the first value of a descending column and the last of an ascending one (NULLs first),
and a grouped MIN scans its groups: both answer right. So MIN(x) becomes an order-reversing
map of MAX of the reversed values: -MAX(-x) for numbers (MonetDB's NULL is the type's
lowest value, so no value overflows when negated), NOT MAX(NOT x) for booleans, and
d0 + -MAX(d0 - x) for dates (a DAY interval from a fixed date). A MIN of a column that holds no NULL
(NOT NULL or a key column, and no outer join in its SELECT: TPC-C's MIN(no_o_id)) stays as
written. A MIN of text or another type that may be NULL (no order-reversing map in SQL)
is refused.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.schema import MappingSchema
from sqlglot.dialects.dialect import Dialect

from tique.catalog import CatalogSnapshot, Column, TableDef, alias_of, qualifier_of, written_name
from tique.errors import NotSupportedError, describe
from tique.rewrite import facts

_NUMBERS = exp.DataType.NUMERIC_TYPES
_DAY_ZERO = "1970-01-01"


def reverse_ungrouped_min(tree: exp.Expression, catalog: CatalogSnapshot, statement: str, dialect: str) -> exp.Expression:
    """Replaces each MIN (not a window's) in a SELECT without GROUP BY by the reverse of a MAX
    of the reversed argument, by the argument's type; refuses where the type has no reverse."""
    found = [m for m in tree.find_all(exp.Min) if _ungrouped(m)]
    if not found:
        return tree
    types = _argument_types(tree, found, catalog, dialect)
    for node, kind in zip(found, types):
        if _never_null(node.this, catalog):
            continue  # no NULL to end a descending column: MonetDB's MIN is right, and stays as written
        replacement = _reversed(node, kind)
        if replacement is None:
            what = f"a {kind.sql(dialect)} value" if kind is not None else "a value whose type tique cannot tell"
            raise NotSupportedError(describe(statement, f"MIN of {what} that may be NULL, without GROUP BY, is not supported on "
                                                        "MonetDB, which can answer it NULL over some row orders; use ORDER BY ... "
                                                        "NULLS LAST LIMIT 1, or GROUP BY"))
        node.replace(replacement)
    return tree


def _ungrouped(node: exp.Min) -> bool:
    if isinstance(node.parent, exp.Window):
        return False
    select = node.find_ancestor(exp.Select)
    return select is not None and not select.args.get("group")


def _argument_types(tree: exp.Expression, found: list[exp.Min], catalog: CatalogSnapshot, dialect: str) -> list[exp.DataType | None]:
    """The type of each MIN's argument, None where sqlglot cannot tell: the statement is
    qualified and typed against the tique tables' columns on a copy, whose MINs come in
    the same order."""
    copy = tree.copy()
    mins = [m for m in copy.find_all(exp.Min) if _ungrouped(m)]
    if len(mins) != len(found):
        return [None] * len(found)
    try:
        schema = _typed_schema(catalog, dialect)
        qualify_columns(normalize_identifiers(copy, dialect=dialect), schema, expand_alias_refs=False, expand_stars=False,
                        allow_partial_qualification=True)
        annotate_types(copy, schema=schema, dialect=dialect)
    except (OptimizeError, ParseError, ValueError, KeyError):
        return [None] * len(found)
    types = []
    for node in mins:
        argument = node.this.expressions[0] if isinstance(node.this, exp.Distinct) and node.this.expressions else node.this
        kind = argument.type if argument is not None else None
        if (kind is None or kind.is_type(exp.DataType.Type.UNKNOWN)) and isinstance(argument, exp.Column):
            kind = _column_type(argument, catalog, dialect)
        types.append(None if kind is None or kind.is_type(exp.DataType.Type.UNKNOWN) else kind)
    return types


def _column_type(column: exp.Column, catalog: CatalogSnapshot, dialect: str) -> exp.DataType | None:
    """The type of `column` where sqlglot left it untyped (qualify_columns skips a HAVING
    without GROUP BY), from the tique table column it names (_table_column)."""
    found = _table_column(column, catalog)
    if found is None:
        return None
    try:
        return exp.DataType.build(found[1].type_sql, dialect=dialect)
    except (ParseError, ValueError):
        return None


def _table_column(column: exp.Column, catalog: CatalogSnapshot) -> tuple[TableDef, Column] | None:
    """The column of the one tique table, among the sources of `column`'s SELECT, that has
    a column of its name (the one its qualifier names, if any)."""
    select = column.find_ancestor(exp.Select)
    if select is None:
        return None
    sources = [select.args.get("from_") or select.args.get("from"), *(select.args.get("joins") or [])]
    found = []
    for source in sources:
        ref = source.this if source is not None else None
        if not isinstance(ref, exp.Table) or (column.table and alias_of(ref, catalog.dialect) != qualifier_of(column, catalog.dialect)):
            continue
        table = catalog.table_of(ref)
        name = written_name(table, column, catalog.dialect) if table is not None else ""
        named = [c for c in table.columns if c.name == name] if table is not None else []
        if table is not None and named:
            found.append((table, named[0]))
    return found[0] if len(found) == 1 else None


def _never_null(argument: exp.Expression, catalog: CatalogSnapshot) -> bool:
    """Whether `argument` is a column that holds no NULL in its SELECT: NOT NULL (or a key
    column) in its tique table, and no outer join of that SELECT pads it."""
    if not isinstance(argument, exp.Column):
        return False
    select = argument.find_ancestor(exp.Select)
    if select is None or any(j.side for j in select.args.get("joins") or []):
        return False
    found = _table_column(argument, catalog)
    return found is not None and (found[1].not_null or found[1].name in found[0].key)


def _typed_schema(catalog: CatalogSnapshot, dialect: str) -> MappingSchema:
    engine = Dialect.get_or_raise(dialect)
    mapping: dict[str, dict[str, str]] = {}
    for table in catalog.tables.values():
        columns = {}
        for column in table.columns:
            try:
                kind = exp.DataType.build(column.type_sql, dialect=dialect).sql(dialect)
            except (ParseError, ValueError):
                kind = "UNKNOWN"
            columns[engine.normalize_identifier(exp.to_identifier(column.name, quoted=True)).name] = kind
        mapping[table.name] = columns
    return MappingSchema(mapping, dialect=dialect, normalize=False)


def _reversed(node: exp.Min, kind: exp.DataType | None) -> exp.Expression | None:
    if kind is None:
        return None
    if kind.is_type(*_NUMBERS):
        def forth(e: exp.Expression) -> exp.Expression:
            return exp.Neg(this=exp.Paren(this=e))
        back = forth
    elif kind.is_type(exp.DataType.Type.BOOLEAN):
        def forth(e: exp.Expression) -> exp.Expression:
            return exp.Not(this=exp.Paren(this=e))
        back = forth
    elif kind.is_type(exp.DataType.Type.DATE):
        def forth(e: exp.Expression) -> exp.Expression:
            return exp.Sub(this=_day_zero(), expression=exp.Paren(this=e))  # a DAY interval on MonetDB

        # Back by adding the negated interval: MonetDB (11.45) answers a query with no
        # result set at all when a derived table's date minus an interval is compared
        # with a correlated subquery of it (`... FROM (SELECT d0 - MAX(d0 - x) AS m FROM
        # t) AS d WHERE d.m <> (SELECT MAX(c) FROM u WHERE u.c = d.m)`), natively too.
        def back(e: exp.Expression) -> exp.Expression:
            return exp.Add(this=_day_zero(), expression=exp.Cast(this=exp.Neg(this=exp.Paren(this=e)), to=exp.DataType.build("INTERVAL DAY")))
    else:
        return None
    argument = node.this
    distinct = isinstance(argument, exp.Distinct)
    if distinct:
        if len(argument.expressions) != 1:
            return None
        argument = argument.expressions[0]
    inner = forth(argument)
    return facts.reversed_min(exp.Paren(this=back(exp.Max(this=exp.Distinct(expressions=[inner]) if distinct else inner))), argument, distinct)


def _day_zero() -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(_DAY_ZERO), to=exp.DataType.build("DATE"))

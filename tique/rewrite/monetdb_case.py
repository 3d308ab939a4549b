"""CASEs holding scalar subqueries, in forms MonetDB computes right.

MonetDB (11.45) computes a CASE holding a scalar subquery whose plan holds a join (a
correlated subquery, or any subquery over a tique table, whose snapshot is an anti-join
and a window) through a union of its branches' results, and gets two things wrong:

- a row whose WHEN condition is NULL (not FALSE) takes NULL instead of the next branch:
  `CASE WHEN t.c4 LIKE '_' THEN t.c1 ELSE (SELECT COUNT(*) FROM u WHERE NOT EXISTS
  (...)) END` answers NULL for a NULL c4, natively too with a correlated subquery;
- branches of different types fail the query (`'bat.append' undefined`): the union
  appends one type's results to the other's without converting to the common type.

So on MonetDB:

- every statement's searched CASEs holding a subquery have each WHEN condition as
  COALESCE(p, FALSE), which chooses the same branch as p for every row, NULL included
  (null_safe_conditions, a PREPARE pass: tique/rewrite/passes.py);
- the read of an UPDATE's new rows computes each uncorrelated scalar subquery of its
  values that gives at most one row (an aggregate without GROUP BY, mostly) once, in a
  one-row derived table cross-joined to the target's rows (a scalar subquery's value
  does not depend on the row), the value reading its column (hoist_scalars,
  tique/rewrite/writes.py): the CASE then holds no subquery and MonetDB computes it, its
  common type and the assignment's conversion as SQL says;
- a CASE still mixing types beside a subquery fails in the engine; its error is refused
  in the user's terms (tique/backends/monetdb.py, _mixed_case_types).
"""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot
from tique.rewrite.templates import column, quoted

SCALARS = "tq_scalars"


def _sources(select: exp.Select) -> list[exp.Expression]:
    """The FROM and JOIN items of `select`, and its CTEs."""
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if isinstance(from_, exp.From) else []
    items += [j.this for j in select.args.get("joins") or []]
    with_ = select.args.get("with_") or select.args.get("with")
    items += list(with_.expressions) if isinstance(with_, exp.With) else []
    return items


def _binds(select: exp.Select, col: exp.Column, catalog: CatalogSnapshot) -> bool | None:
    """Whether a source of `select` surely binds `col`: True, False, or None where tique
    cannot tell (an unqualified column beside a relation whose columns it does not know)."""
    unknown = False
    for source in _sources(select):
        name = source.alias_or_name.lower()
        if col.table:
            if name == col.table.lower():
                return True
            continue
        table = catalog.table_of(source) if isinstance(source, exp.Table) else None
        if table is None:
            unknown = True
        elif col.name.lower() in (c.lower() for c in table.user_columns):
            return True
    return None if unknown else False


def uncorrelated(subquery: exp.Subquery, catalog: CatalogSnapshot) -> bool:
    """Whether every column `subquery` reads surely names one of its own sources: a source
    of the SELECT it stands in or of one around that inside the subquery (SQL binds a
    column to the innermost source that has it), by its qualifier or, unqualified, by
    being a column of that tique table."""
    for col in subquery.find_all(exp.Column):
        bound = False
        select = col.find_ancestor(exp.Select)
        while select is not None and not bound:
            found = _binds(select, col, catalog)
            if found is None:
                return False
            bound = found
            if select is subquery.this:
                break
            select = select.find_ancestor(exp.Select)
        if not bound:
            return False
    return True


def _scalar(node: exp.Subquery) -> bool:
    """A subquery standing for a value: not IN's, ANY's or ALL's list, nor a derived table."""
    parent = node.parent
    if isinstance(parent, (exp.In, exp.Any, exp.All, exp.From, exp.Join, exp.Lateral)):
        return False
    return not node.alias


def _one_row(query: exp.Expression) -> bool:
    """Whether `query` surely gives at most one row: an aggregate without GROUP BY, a
    SELECT without FROM, or LIMIT 1 (0). Only such a subquery is computed apart: MonetDB
    checks a scalar subquery's rows as it joins them to the rows that read it, so one of
    several rows fails an UPDATE of no row only once it is computed apart."""
    if not isinstance(query, exp.Select):
        return False
    limit = query.args.get("limit")
    if isinstance(limit, exp.Limit) and isinstance(limit.expression, exp.Literal) and limit.expression.this in ("0", "1"):
        return True
    if query.args.get("from_") is None and query.args.get("from") is None:
        return True
    if query.args.get("group"):
        return False
    return any(isinstance(node, exp.AggFunc) and node.find_ancestor(exp.Window, exp.Select) is query
               for e in query.expressions for node in e.find_all(exp.AggFunc))


def hoist_scalars(value: exp.Expression, catalog: CatalogSnapshot, hoisted: list[exp.Subquery]) -> exp.Expression:
    """`value` (the caller's copy, changed in place) with each outermost uncorrelated
    scalar subquery replaced by a column of SCALARS, appended to `hoisted` in order."""
    for node in list(value.find_all(exp.Subquery, bfs=True)):
        if not _directly_in(node, value):
            continue  # inside a query: goes with it, or stays with it
        if not _scalar(node) or not _one_row(node.this) or not uncorrelated(node, catalog):
            continue
        name = f"tq_s{len(hoisted)}"
        hoisted.append(node.copy())
        replacement = column(name, SCALARS)
        if node is value:
            return replacement
        node.replace(replacement)
    return value


def _directly_in(node: exp.Expression, value: exp.Expression) -> bool:
    """Whether no query lies between `node` and `value`, the assigned value's root."""
    if node is value:
        return True
    parent = node.parent
    while parent is not None and parent is not value:
        if isinstance(parent, (exp.Query, exp.Subquery, exp.Exists)):
            return False
        parent = parent.parent
    return parent is value


def scalars_table(hoisted: list[exp.Subquery]) -> exp.Subquery:
    """The one-row derived table computing each hoisted scalar subquery once."""
    return exp.Subquery(this=exp.select(*[exp.alias_(s, quoted(f"tq_s{i}")) for i, s in enumerate(hoisted)]),
                        alias=exp.TableAlias(this=quoted(SCALARS)))


def null_safe_conditions(value: exp.Expression) -> exp.Expression:
    """`value` (changed in place) with each WHEN condition of a searched CASE that holds a
    subquery as COALESCE(condition, FALSE): the same branch for every row."""
    for case in list(value.find_all(exp.Case)):
        if case.args.get("this") is not None:
            continue  # CASE x WHEN v: compares values, which MonetDB computes right
        if case.find(exp.Subquery, exp.Exists) is None:
            continue
        for branch in case.args.get("ifs") or []:
            condition = branch.this
            branch.set("this", exp.Coalesce(this=condition, expressions=[exp.false()]))
    return value

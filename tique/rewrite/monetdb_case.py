"""An UPDATE's values on MonetDB: CASEs holding scalar subqueries in forms MonetDB computes.

MonetDB (11.45) computes a CASE holding a scalar subquery whose plan holds a join (a
correlated subquery, or any subquery over a tique table, whose snapshot is an anti-join
and a window) through a union of its branches' results, and gets two things wrong:

- a row whose WHEN condition is NULL (not FALSE) takes NULL instead of the next branch:
  `CASE WHEN t.c4 LIKE '_' THEN t.c1 ELSE (SELECT COUNT(*) FROM u WHERE NOT EXISTS
  (...)) END` answers NULL for a NULL c4, natively too with a correlated subquery;
- branches of different types fail the query (`'bat.append' undefined`): the union
  appends one type's results to the other's without converting to the common type.

tique's read of an UPDATE's new rows computes its SET values, so it gives MonetDB:

- each uncorrelated scalar subquery of a value, computed once in a one-row derived
  table cross-joined to the target's rows (a scalar subquery's value does not depend on
  the row), the value reading its column: the CASE then holds no subquery and MonetDB
  computes it, its common type and the assignment's conversion as SQL says;
- each WHEN condition of a CASE still holding a (correlated) subquery as COALESCE(p,
  FALSE), which chooses the same branch as p for every row, NULL included;
- a CASE still mixing types beside a correlated subquery fails in the engine; its error
  is refused in the user's terms (backends/monetdb.py, _mixed_case_types).
"""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot
from tique.rewrite.templates import column, quoted

SCALARS = "tq_scalars"


def _inner_names(query: exp.Expression) -> set[str]:
    """The names a column inside `query` may qualify with, naming a source of `query`
    itself or of a query nested in it: its tables' and derived tables' aliases or names,
    and its CTEs."""
    names: set[str] = set()
    for node in query.find_all(exp.Table, exp.Subquery, exp.CTE):
        name = node.alias_or_name
        if name:
            names.add(name.lower())
    return names


def _inner_columns(query: exp.Expression, catalog: CatalogSnapshot) -> set[str] | None:
    """The columns of the tique tables `query` reads, lower case; None when it reads any
    other relation (a derived table, a CTE, a table tique does not know), whose columns
    tique cannot list here."""
    names: set[str] = set()
    for ref in query.find_all(exp.Table):
        table = catalog.table_of(ref)
        if table is None:
            return None
        names.update(c.lower() for c in table.user_columns)
    if query.find(exp.CTE) is not None or any(s.alias for s in query.find_all(exp.Subquery)):
        return None
    return names


def uncorrelated(subquery: exp.Subquery, catalog: CatalogSnapshot) -> bool:
    """Whether every column `subquery` reads surely names one of its own sources: a
    qualified column by its qualifier, an unqualified one by being a column of a tique
    table the subquery reads (SQL binds it to the innermost such source)."""
    qualifiers = _inner_names(subquery.this)
    unqualified = None
    for col in subquery.find_all(exp.Column):
        if col.table:
            if col.table.lower() not in qualifiers:
                return False
            continue
        if unqualified is None:
            unqualified = _inner_columns(subquery.this, catalog)
            if unqualified is None:
                return False
        if col.name.lower() not in unqualified:
            return False
    return True


def _scalar(node: exp.Subquery) -> bool:
    """A subquery standing for a value: not IN's, ANY's or ALL's list, nor a derived table."""
    parent = node.parent
    if isinstance(parent, (exp.In, exp.Any, exp.All, exp.From, exp.Join, exp.Lateral)):
        return False
    return not node.alias


def hoist_scalars(value: exp.Expression, catalog: CatalogSnapshot, hoisted: list[exp.Subquery]) -> exp.Expression:
    """`value` (the caller's copy, changed in place) with each outermost uncorrelated
    scalar subquery replaced by a column of SCALARS, appended to `hoisted` in order."""
    for node in list(value.find_all(exp.Subquery, bfs=True)):
        if not _directly_in(node, value):
            continue  # inside a query: goes with it, or stays with it
        if not _scalar(node) or not uncorrelated(node, catalog):
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

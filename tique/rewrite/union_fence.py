"""MonetDB: a scan snapshot joined with other relations is read through a LIMIT that no
table can reach, so that MonetDB's optimizer cannot push the join into its UNION ALL.

MonetDB (11.45 here) rewrites `join(a, union(b, c))` into `union(join(a, b), join(a, c))`
for every inner join beside a union (rel_push_join_down_union, meant for merge tables),
looking through at most one projection, and then orders each branch's joins apart. A
scan snapshot is such a union (sql/common/snapshot_scan.sql), so a query joining it with
other tables is planned as several copies of the whole join, where the tables around
it may be joined first by a cross product: CH-benCHmark's Q2 (item x supplier x nation
before stock) ran 2.8 s against 43 ms with the fence and 25-40 ms natively; Q5, Q7, Q8
and Q11 ran 1.6-6x faster with it. The rewrite skips a TOP N (LIMIT) between the join
and the union, and a LIMIT of 2^62 rows keeps every row: it changes no answer.

A TOP N also stops MonetDB from pushing the query's filters into the union's branches,
which made single-table scans slower with a fence (Q1, Q6). So only a snapshot that
stands beside other relations in an inner join is fenced, and the WHERE conjuncts that
read nothing but its own columns, with nothing that could fail or vary per evaluation,
are copied inside the fence (the query keeps them too, so the fence only has to keep
every row they keep, which it does).

The nullable side of a grouped SELECT's outer join is read through a plain projection of
its union (no LIMIT, nothing copied inside) when the statement has a set operation of its
own: MonetDB
(11.45) drops a branch of a set operation that groups an outer join by the padded side's
columns when it takes that side for empty (`SELECT MAX(a.c) FROM t AS a LEFT JOIN e AS b
ON TRUE GROUP BY b.c UNION ALL SELECT 7` over an empty `e` answers only 7, natively too).
A snapshot is such a side far more often (a union of a storage and a cache that are empty
or filtered to nothing by their statistics); read through a projection, MonetDB keeps the
padded group. Only in a grouped SELECT: any such derived table (a projection, a LIMIT) on
the padded side of an ungrouped branch makes MonetDB answer some set operations with no
result set at all (`SELECT b.c FROM n AS a LEFT JOIN (SELECT c FROM t LIMIT 5) AS b ON TRUE
UNION SELECT 19 + b.c FROM ...`, natively too), while grouped branches answer right.
"""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot, alias_of, normalize, qualifier_of
from tique.rewrite import facts

# More rows than any table can hold: the fence keeps them all.
NO_LIMIT = 2 ** 62
FENCED = "tq_fenced"

# What a copied conjunct may contain: comparisons and boolean logic over columns,
# parameters and constants. Nothing that can raise on a row the query itself never
# evaluates (division, a cast of a column, arithmetic that may overflow), and nothing
# whose value may differ between evaluations.
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Between, exp.In, exp.Is)
_LOGIC = (exp.And, exp.Or, exp.Not, exp.Paren)
_VALUES = (exp.Literal, exp.Placeholder, exp.Null, exp.Boolean)


def fence_joined_snapshots(tree: exp.Expression, catalog: CatalogSnapshot) -> exp.Expression:
    """Wraps each scan snapshot (a UNION ALL marked by facts.snapshot) that shares an
    inner join with other relations in `SELECT its columns FROM (snapshot) AS tq_fenced
    [WHERE its own conjuncts] LIMIT 2^62`, keeping the snapshot's alias."""
    snapshots = [s for s in facts.find_outside_snapshots(tree, exp.Subquery) if facts.snapshot_of(s) is not None]
    if snapshots and _has_own_set_operation(tree):
        for subquery in snapshots:
            if isinstance(subquery.this, exp.Union) and _padded_in_grouped_outer_join(subquery):
                _fence(subquery, [], limit=False)
    for subquery in snapshots:
        select = _inner_join_select(subquery)
        if select is None or not isinstance(subquery.this, exp.Union):
            continue
        storage = facts.snapshot_of(subquery)
        table = next((t for t in catalog.tables.values() if t.storage == storage), None)
        columns = set(table.user_columns) if table is not None else None
        _fence(subquery, _own_conjuncts(select, alias_of(subquery, catalog.dialect), columns, catalog.dialect))
    return tree


def _fence(subquery: exp.Subquery, own: list[exp.Expression], limit: bool = True) -> None:
    """`subquery`'s union read through the fence, `own` (conjuncts on its columns) inside;
    without `limit`, through a plain projection of it."""
    # The snapshot's own column names, not a star: whatever reads the snapshot's
    # columns off this node (MonetDB's native names, backends/monetdb.py) sees them.
    names = [exp.column(exp.to_identifier(name, quoted=True)) for name in subquery.this.named_selects]
    fence = exp.select(*names).from_(exp.Subquery(this=subquery.this, alias=exp.TableAlias(this=exp.to_identifier(FENCED))), copy=False)
    if own:
        fence = fence.where(*own, copy=False)
    if limit:
        fence = fence.limit(exp.Literal.number(NO_LIMIT), copy=False)
    subquery.set("this", fence)


def _has_own_set_operation(tree: exp.Expression) -> bool:
    """Whether `tree` holds a set operation that is not a snapshot's own union."""
    for operation in tree.find_all(exp.SetOperation):
        holder = operation.parent
        if not (isinstance(holder, exp.Subquery) and facts.snapshot_of(holder) is not None):
            return True
    return False


def _padded_in_grouped_outer_join(subquery: exp.Subquery) -> bool:
    """Whether `subquery` is a side an outer join of a grouped SELECT pads with NULLs: the
    right of a LEFT join, a source before a RIGHT join, either side of a FULL join."""
    holder = subquery.parent
    if not isinstance(holder, (exp.From, exp.Join)) or not isinstance(holder.parent, exp.Select):
        return False
    if not holder.parent.args.get("group"):
        return False
    joins = holder.parent.args.get("joins") or []
    sides = [(j.side or "").upper() for j in joins]
    if isinstance(holder, exp.Join):
        index = next(i for i, j in enumerate(joins) if j is holder)
        return sides[index] in ("LEFT", "FULL") or any(s in ("RIGHT", "FULL") for s in sides[index + 1:])
    return any(s in ("RIGHT", "FULL") for s in sides)


def _inner_join_select(subquery: exp.Subquery) -> exp.Select | None:
    """The SELECT whose FROM or inner join holds `subquery` beside other relations;
    None when it stands alone or some join of that SELECT is outer, lateral or a set
    join (a filter copied into the nullable side of an outer join could change it)."""
    holder = subquery.parent
    if not isinstance(holder, (exp.From, exp.Join)) or not isinstance(holder.parent, exp.Select):
        return None
    select = holder.parent
    joins = select.args.get("joins") or []
    if not joins or select.args.get("laterals"):
        return None
    for join in joins:
        if join.args.get("side") or join.args.get("method") or (join.args.get("kind") or "").upper() not in ("", "INNER", "CROSS"):
            return None
        if not isinstance(join.this, (exp.Table, exp.Subquery)):
            return None
    return select


def _own_conjuncts(select: exp.Select, alias: str, columns: set[str] | None, dialect: str) -> list[exp.Expression]:
    """Copies of the WHERE conjuncts of `select` that read only columns of the source
    named `alias`: names among `columns`, the table's own, qualified by the alias or not
    at all (an unqualified name the table has binds to it, or is ambiguous, which the
    query's own copy still reports), unqualified for use inside the fence."""
    where = select.args.get("where")
    if where is None:
        return []
    condition = where.this
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    kept = []
    for conjunct in conjuncts:
        if not _safe(conjunct):
            continue
        refs = list(conjunct.find_all(exp.Column))
        if not refs:
            continue
        if all(_is_own(c, alias, columns, dialect) for c in refs):
            copy = conjunct.copy()
            for column in copy.find_all(exp.Column):
                column.set("table", None)
            kept.append(copy)
    return kept


def _is_own(column: exp.Column, alias: str, columns: set[str] | None, dialect: str) -> bool:
    if column.args.get("db") or column.args.get("catalog") or not isinstance(column.this, exp.Identifier):
        return False
    if columns is None or normalize(column.name) not in columns:
        return False  # not the table's: the query's own copy reports it, in its terms
    return not column.table or qualifier_of(column, dialect) == alias  # "MixedT" and mixedt are two tables


def _safe(conjunct: exp.Expression) -> bool:
    for node in conjunct.walk():
        if isinstance(node, (exp.Column, exp.Identifier)) or isinstance(node, _COMPARISONS + _LOGIC + _VALUES):
            if isinstance(node, exp.In) and (node.args.get("query") or node.args.get("unnest") or node.args.get("field")):
                return False
            continue
        if isinstance(node, (exp.Cast, exp.Neg)) and node.this.find(exp.Column) is None:
            continue
        if isinstance(node, exp.DataType) or isinstance(node, exp.DataTypeParam):
            continue
        return False
    return True

"""What the generator produces, as switches, and the named classes it leaves out for now.

A class is excluded when tique is known to get it wrong and the fix is elsewhere: the
generator turns the matching switch off (or rejects matching statements) so that the
default run stays green and finds the *next* class. Every entry names its bug; remove the
entry once the bug is fixed, and the fuzzer covers the class again.

Where the native engine, not tique, departs from SQL, nothing is left out: the run compares
tique with SQL's meaning there instead (fuzz/departures.py).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable

from sqlglot import exp


@dataclass(frozen=True)
class Features:
    """Constructs the generator may use."""
    joins: bool = True
    subqueries: bool = True
    correlated: bool = True
    aggregates: bool = True
    windows: bool = True
    order_dependent_windows: bool = True  # ROW_NUMBER: undefined under ties, caught by the reordered copy and by RANK (fuzz/runner.py)
    set_operations: bool = True
    order_limit: bool = True
    distinct: bool = True
    derived_tables: bool = True
    ctes: bool = True
    params: bool = True
    tlp: bool = True
    norec: bool = True
    insert_select: bool = True
    update_from: bool = True
    delete_using: bool = True
    explicit_nulls_order: bool = True  # ORDER BY ... NULLS FIRST/LAST spelled out (in windows too)
    unaliased_columns: bool = True  # output columns the engine names


@dataclass(frozen=True)
class Exclusion:
    name: str
    bug: str
    status: str  # "being fixed" (another branch), "open" (found here, not fixed yet), or "engine" (the native engine's)
    switch: str | None = None  # a Features field turned off
    rejects: Callable[[exp.Expression], bool] | None = None  # statements matching are regenerated
    engines: frozenset[str] | None = None  # where it applies; None: every engine


def _except_all_of_a_full_join(tree: exp.Expression) -> bool:
    return (any(not e.args.get("distinct") for e in tree.find_all(exp.Except))
            and any(j.side == "FULL" for j in tree.find_all(exp.Join)))


def _aggregate_of_null(tree: exp.Expression) -> bool:
    """An aggregate of NULL, or of a derived column (a CTE's, a derived table's) that is NULL."""
    nulls = {a.alias for a in tree.find_all(exp.Alias) if isinstance(a.this, exp.Null)}
    return any(isinstance(a.this, exp.Null) or any(c.name in nulls for c in a.find_all(exp.Column))
               for a in tree.find_all(exp.AggFunc) if not isinstance(a.parent, exp.Window))


def _grouped_outer_join_in_a_set_operation(tree: exp.Expression) -> bool:
    return tree.find(exp.SetOperation) is not None and any(
        s.args.get("group") and any(j.side in ("LEFT", "RIGHT", "FULL") for j in s.args.get("joins") or ())
        for s in tree.find_all(exp.Select))


def _case_of_a_subquery_aggregate(tree: exp.Expression) -> bool:
    return any(sub.find(exp.AggFunc) is not None for case in tree.find_all(exp.Case) for sub in case.find_all(exp.Subquery))


def _min_aggregate(tree: exp.Expression) -> bool:
    return any(not isinstance(m.parent, exp.Window) for m in tree.find_all(exp.Min))


EXCLUSIONS: tuple[Exclusion, ...] = (
    Exclusion("monetdb-min-of-snapshots",
              "MonetDB's MIN can be NULL although its column holds values (natively over a FULL JOIN's padded "
              "column: fuzz/departures.py, monetdb-min-over-full-join). Through tique, whose tables are read as "
              "snapshots (a UNION ALL of storage and cache), it meets it more often: SELECT MIN(a.c3 + b.c0) FROM t0 "
              "AS a LEFT JOIN t0 AS b ON b.c1 = a.c0 is 2.5 natively and NULL through tique, and SELECT MIN(-s.c0) "
              "FROM t0 AS s (one table, no join; case seed 9494028566) -0.0 natively and NULL through tique. Until "
              "tique's reads avoid it, no MIN (but in a window) is generated for MonetDB",
              "open", rejects=_min_aggregate, engines=frozenset({"monetdb"})),
    Exclusion("monetdb-case-of-subquery-aggregate-over-no-rows",
              "MonetDB (11.45) answers SELECT t.c0, CASE WHEN t.c1 > t.c1 THEN t.c2 ELSE (SELECT COUNT(DISTINCT NULL >= -3 "
              "AND NOT FALSE IS NULL) FROM t AS s WHERE s.c0 = t.c2) END FROM t WHERE t.c1 BETWEEN NULL AND -2 over an "
              "empty t with one row of NULLs. tique runs a MonetDB UPDATE as a read of the new rows, then an insert of "
              "them (tique/backends/monetdb.py, _insert_via_client), so the UPDATE with that SET and WHERE inserts the "
              "row and fails ('NULL in a NOT NULL column') where native MonetDB updates no row; until the write path "
              "is proof against it, no CASE holding an aggregate subquery is generated for MonetDB",
              "open", rejects=_case_of_a_subquery_aggregate, engines=frozenset({"monetdb"})),
    Exclusion("monetdb-set-operation-loses-outer-join-null-group",
              "tique reads a table as its snapshot, a UNION ALL of storage and cache; MonetDB (11.45) loses the group "
              "whose key an outer join padded with NULL when that UNION ALL is the padded side and the grouped query "
              "is a branch of a set operation: SELECT MIN(a.c) FROM t AS a LEFT JOIN (SELECT c FROM t UNION ALL "
              "SELECT c FROM e) AS b ON b.c = 8 GROUP BY b.c UNION ALL SELECT 7 gives only 7 (over t = {1.5}); "
              "natively (b a plain table) MonetDB answers both rows, through tique it loses one. Until the "
              "snapshot's shape avoids it, no grouped outer join in a set operation is generated for MonetDB",
              "open", rejects=_grouped_outer_join_in_a_set_operation, engines=frozenset({"monetdb"})),
    Exclusion("monetdb-crashes-on-aggregate-of-null",
              "native MonetDB (11.45) crashes (the server process dies) on SELECT MIN(NULL) AS m FROM t ORDER BY m, "
              "on a grouped MAX((SELECT MIN(NULL) FROM t WHERE t.c)) over a derived table, and on WITH w AS (SELECT NULL "
              "AS n FROM t) SELECT MIN(w.n) FROM w (the fuzzer met all three): "
              "there is no native answer to compare tique's with",
              "engine", rejects=_aggregate_of_null, engines=frozenset({"monetdb"})),
    Exclusion("monetdb-hangs-on-except-all-of-full-joins",
              "native MonetDB (11.45) never answers, one core busy and no query timeout honoured, "
              "a query such as SELECT a.x, b.y FROM b FULL JOIN a ON ... EXCEPT ALL SELECT a.x, b.y FROM b FULL JOIN a "
              "ON ... WHERE ... ORDER BY 2, 1 LIMIT 1 over an empty `a`, or SELECT DISTINCT ... FROM t CROSS JOIN t "
              "EXCEPT ALL SELECT ... FROM t FULL JOIN t ON ... (the fuzzer met both): there is no native answer to "
              "compare tique's with, so no EXCEPT ALL with a FULL JOIN is generated for MonetDB",
              "engine", rejects=_except_all_of_a_full_join, engines=frozenset({"monetdb"})),
)


def default_features(*, include_excluded: bool = False) -> Features:
    features = Features()
    if include_excluded:
        return features
    return replace(features, **{e.switch: False for e in EXCLUSIONS if e.switch})


def rejected(tree: exp.Expression, *, include_excluded: bool = False, engine: str | None = None) -> Exclusion | None:
    """The exclusion a generated statement falls under on `engine`, if any. An engine's own
    defect (status "engine") is never generated for it: nothing could be compared."""
    for exclusion in EXCLUSIONS:
        if include_excluded and exclusion.status != "engine":
            continue
        if exclusion.engines is not None and engine not in exclusion.engines:
            continue
        if exclusion.rejects is not None and exclusion.rejects(tree):
            return exclusion
    return None


def feature_names() -> list[str]:
    return [f.name for f in fields(Features)]

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


def _except_all_of_a_constant_column(tree: exp.Expression) -> bool:
    """An EXCEPT ALL one of whose SELECTs has an output column that reads no column and
    aggregates nothing (a constant: TRUE, CAST('2023-12-22' AS DATE), a parameter)."""
    def constant_column(select: exp.Expression) -> bool:
        return isinstance(select, exp.Select) and any(
            item.find(exp.Column) is None and item.find(exp.AggFunc) is None and not isinstance(item.unalias(), exp.Star)
            for item in select.expressions)

    return any(constant_column(side) for e in tree.find_all(exp.Except) if not e.args.get("distinct")
               for side in (e.this, e.expression))


def _aggregate_of_null(tree: exp.Expression) -> bool:
    """An aggregate of NULL, or of a derived column (a CTE's, a derived table's) that is NULL."""
    nulls = {a.alias for a in tree.find_all(exp.Alias) if isinstance(a.this, exp.Null)}
    return any(isinstance(a.this, exp.Null) or any(c.name in nulls for c in a.find_all(exp.Column))
               for a in tree.find_all(exp.AggFunc) if not isinstance(a.parent, exp.Window))


EXCLUSIONS: tuple[Exclusion, ...] = (
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
    Exclusion("monetdb-except-all-of-a-constant-column",
              "native MonetDB (11.45) answers an EXCEPT ALL whose SELECTs give a constant column at random: over one "
              "table of 7 rows, SELECT 1 AS a, c1 FROM t0 EXCEPT ALL SELECT 1, c1 FROM t0 WHERE c0 > 0 answered 5 rows, "
              "no row, and never (one core busy, no timeout honoured) in six runs on one server; without the constant "
              "column it answers alike every time. The fuzzer met the hang (case seed 31029093303: SELECT TRUE, "
              "CAST(... AS DATE), ... FROM t0 JOIN t0 ... EXCEPT ALL SELECT DISTINCT COUNT(*) < 1, ...): there is no "
              "native answer to compare tique's with",
              "engine", rejects=_except_all_of_a_constant_column, engines=frozenset({"monetdb"})),
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

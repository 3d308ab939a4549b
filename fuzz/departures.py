"""Where a native engine departs from SQL, so that its own answer is no oracle for tique.

tique gives a statement its standard meaning (PostgreSQL's), and where an engine's native
behaviour violates SQL the two differ without tique being wrong. Such a statement is not
skipped: the run compares tique with the standard meaning instead, which is either
- the native answer to an equivalent statement that the engine runs by the standard (a
  departure raising an engine-only error: `standard` builds that statement), or
- an error, where the native statement left the tables violating a constraint the
  statement must have failed on (a duplicate key, found by a query afterwards).
Each such statement is counted per departure and reported beside the comparisons.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from fuzz.schema import Table


@dataclass(frozen=True)
class Departure:
    name: str
    engines: frozenset[str]
    why: str
    error: re.Pattern[str]  # the native error the departure raises
    standard: Callable[[exp.Expression], exp.Expression | None]  # an equivalent the engine runs by the standard


def _update_from_as_exists(tree: exp.Expression) -> exp.Expression | None:
    """UPDATE t SET ... FROM s WHERE p  ->  UPDATE t SET ... WHERE EXISTS (SELECT 1 FROM s WHERE p):
    each target row some source row matches is updated once. Equivalent only where the new
    values come from the target row alone, as the generator makes them (fuzz/generate.py)."""
    if not isinstance(tree, exp.Update) or tree.args.get("from_") is None:
        return None
    source_aliases = {t.alias_or_name for t in tree.args["from_"].find_all(exp.Table)}
    if any(c.table in source_aliases for e in tree.expressions for c in e.expression.find_all(exp.Column)):
        return None
    standard = tree.copy()
    probe = exp.select("1").from_(standard.args["from_"].this.pop())
    where = standard.args.get("where")
    if where is not None:
        probe.set("where", exp.Where(this=where.this.pop()))
    standard.set("from_", None)
    standard.set("where", exp.Where(this=exp.Exists(this=probe)))
    return standard


def _insert_select_with_distinct_names(tree: exp.Expression) -> exp.Expression | None:
    """INSERT ... SELECT a, a  ->  INSERT ... SELECT a AS tq_0, a AS tq_1: an INSERT takes its
    source's columns by position, whatever their names."""
    if not isinstance(tree, exp.Insert) or not isinstance(tree.expression, exp.Select):
        return None
    standard = tree.copy()
    select = standard.expression
    select.set("expressions", [exp.alias_(e.unalias(), f"tq_{i}") for i, e in enumerate(select.expressions)])
    return standard


def _no_standard_statement(tree: exp.Expression) -> exp.Expression | None:
    return None


DEPARTURES: tuple[Departure, ...] = (
    Departure("monetdb-update-from-several-matches", frozenset({"monetdb"}),
              "MonetDB refuses an UPDATE ... FROM where several source rows match one target row "
              "('more than one match'); SQL (PostgreSQL) updates that row once",
              re.compile(r"more than one match"), _update_from_as_exists),
    Departure("monetdb-insert-select-repeated-names", frozenset({"monetdb"}),
              "MonetDB refuses an INSERT ... SELECT whose select list repeats a column name "
              "('duplicate column names in subquery column list'); SQL takes the columns by position",
              re.compile(r"duplicate column names in subquery column list"), _insert_select_with_distinct_names),
    # No equivalent statement is known (without the ORDER BY and LIMIT the query answers, but
    # then not the same question): counted as not compared, never a silent skip.
    Departure("monetdb-select-without-resultset", frozenset({"monetdb"}),
              "MonetDB answers some ordered, limited SELECTs over a FULL JOIN with no result set at all "
              "(SELECT x AS o FROM (SELECT TRUE FROM t AS a FULL JOIN t AS b ON TRUE WHERE a.c = 3) AS d "
              "ORDER BY o LIMIT 5 over an empty t: 'query didn't result in a resultset')",
              re.compile(r"didn't result in a resultset"), _no_standard_statement),
)

# A write the engine accepts although it leaves a duplicate key; SQL (PostgreSQL, DuckDB,
# tique) fails the statement. MonetDB checks keys row by row during an UPDATE, so two rows
# that swap into one key both pass.
DUPLICATE_KEY = "monetdb-update-duplicate-key"
DUPLICATE_KEY_ENGINES = frozenset({"monetdb"})


def departure_of(engine: str, error: str) -> Departure | None:
    """The departure a native error on `engine` belongs to, if any."""
    for departure in DEPARTURES:
        if engine in departure.engines and departure.error.search(error):
            return departure
    return None


def duplicate_key_queries(table: Table) -> list[str]:
    """Queries counting the key values (primary key, then each UNIQUE) held by more than one
    row of `table`; each must give 0 after any statement that succeeded."""
    queries = []
    for columns, nulls_exempt in [(table.key, False)] * bool(table.key) + [(u, True) for u in table.uniques]:
        listed = ", ".join(columns)
        where = " WHERE " + " AND ".join(f"{c} IS NOT NULL" for c in columns) if nulls_exempt else ""
        queries.append(f"SELECT COUNT(*) FROM (SELECT {listed} FROM {table.name}{where} "
                       f"GROUP BY {listed} HAVING COUNT(*) > 1) AS tq_duplicates")
    return queries

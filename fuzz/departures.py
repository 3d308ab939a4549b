"""Where a native engine departs from SQL, so that its own answer is no oracle for tique.

tique gives a statement its standard meaning (PostgreSQL's), and where an engine's native
behaviour violates SQL the two differ without tique being wrong. Such a statement is not
skipped: the run compares tique with the standard meaning instead, which is either
- the native answer to an equivalent statement that the engine runs by the standard (a
  departure raising an engine-only error: `standard` builds that statement), or
- an error, where the native statement left the tables violating a constraint the
  statement must have failed on (a duplicate key, found by a query afterwards), or where
  it assigned NULL to a NOT NULL column (the values read beforehand by a query), or
- for an UPDATE, the outcome computed from the old rows and new values a query reads
  (`computed`: update_computation), where MonetDB's UPDATE itself cannot be trusted.
Where the native engine gives a wrong answer without an error (a silent departure), the
run detects the statement by its shape, runs the equivalent statement as well, and where the
two native answers differ takes the equivalent's as SQL's meaning (`standard` builds it;
the departure is counted only where they differ, or wherever the shape matches where the
native statement may look right and still leave the tables wrong: `counted_always`). A silent departure for which no
equivalent is known (`suspect`) leaves the native answer as the reference, and a difference
from tique there is counted as not compared instead of reported.
Each such statement is counted per departure and reported beside the comparisons.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from fuzz.schema import Schema, Table


@dataclass(frozen=True)
class Departure:
    name: str
    engines: frozenset[str]
    why: str
    error: re.Pattern[str] | None  # the native error the departure raises; None: a silent one
    standard: Callable[[exp.Expression, Schema], exp.Expression | None]  # an equivalent the engine runs by the standard
    suspect: Callable[[exp.Expression], bool] | None = None  # silent, no equivalent known: where the native answer may be wrong
    # silent, and counted wherever the shape matches: the native answer may look right and
    # still leave the tables reading otherwise afterwards
    counted_always: bool = False
    # silent: SQL's meaning is computed from what a query reads (update_computation) where
    # the statement allows it, rather than taken from the engine's run of `standard`
    computed: bool = False


def _update_from_as_exists(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
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


def _insert_select_with_distinct_names(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """INSERT ... SELECT a, a  ->  INSERT ... SELECT a AS tq_0, a AS tq_1: an INSERT takes its
    source's columns by position, whatever their names."""
    if not isinstance(tree, exp.Insert) or not isinstance(tree.expression, exp.Select):
        return None
    standard = tree.copy()
    select = standard.expression
    select.set("expressions", [exp.alias_(e.unalias(), f"tq_{i}") for i, e in enumerate(select.expressions)])
    return standard


def _no_standard_statement(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    return None


def _assignments_read_old_values(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """UPDATE t SET c0 = t.c1, c1 = t.c0  ->  ... c1 = COALESCE(t.c0, t.c0): every value
    an assignment computes reads the row as it was before the UPDATE (SQL), also where it
    reads a column another assignment of the statement sets. MonetDB reads the new value
    of such a column in some shapes (a bare column; c1 = (t.c0 || t.c1) after c0 =
    LOWER(...)), but not once the reference is wrapped."""
    if not isinstance(tree, exp.Update):
        return None
    target = tree.this.alias_or_name
    standard = tree.copy()
    changed = False
    for assignment in standard.expressions:
        others = {e.this.name for e in standard.expressions if e is not assignment}
        for column in list(assignment.expression.find_all(exp.Column)):
            if column.table in ("", target) and column.name in others:
                column.replace(exp.Coalesce(this=column.copy(), expressions=[column.copy()]))
                changed = True
    # Two assignments of one expression to columns of a keyed table meet another defect:
    # SET c1 = COALESCE(t.c2, t.c2), c2 = COALESCE(t.c2, t.c2) gives c2 the old c1 (the fuzzer
    # met it on the wrapped form of SET c1 = t.c2, c2 = COALESCE(t.c2, t.c2)); each repeat
    # is wrapped once more, which keeps its value and makes it an expression of its own.
    seen: set[str] = set()
    for assignment in standard.expressions:
        value = assignment.expression
        while value.sql() in seen:
            value = exp.Coalesce(this=value.copy(), expressions=[value.copy()])
        if value is not assignment.expression:
            assignment.set("expression", value)
        seen.add(value.sql())
    return standard if changed else None


def _is_null_of_aggregates_kept(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """x IS NULL  ->  COALESCE(x IS NULL, FALSE) in a statement with an aggregate. MonetDB
    takes an aggregate of a NOT NULL column for never NULL and folds `IS NULL` of it (or of
    a derived column holding it) to FALSE, although the aggregate of no rows is NULL: WITH w
    AS (SELECT SUM(k) < 5 AS o FROM t WHERE <no row>) SELECT o FROM w WHERE o IS NULL
    drops the one row SQL returns."""
    if not any(not isinstance(a.parent, exp.Window) for a in tree.find_all(exp.AggFunc)):
        return None
    standard = tree.copy()
    # Only a test that can read an aggregate: one of an aggregate, or of a derived table's
    # column (which may hold one). Elsewhere the rewrite changes nothing by SQL, and MonetDB
    # misanswers the rewritten form itself: `NOT EXISTS (...) OR COALESCE(1 IS NULL, FALSE)`
    # (as `... OR FALSE`) over a FULL JOIN drops the row `... OR 1 IS NULL` keeps (fuzz case
    # seed 34043102494).
    tables = {t.alias_or_name for t in standard.find_all(exp.Table) if t.name in {s.name for s in schema.tables}}
    tests = [i for i in standard.find_all(exp.Is) if isinstance(i.expression, exp.Null) and (
        any(not isinstance(a.parent, exp.Window) for a in i.this.find_all(exp.AggFunc))
        or any(c.table not in tables for c in i.this.find_all(exp.Column)))]
    if not tests:
        return None
    for test in tests:
        test.replace(exp.Coalesce(this=test.copy(), expressions=[exp.false()]))
    return standard


def _column_types(tree: exp.Expression, schema: Schema) -> dict[tuple[str, str], str]:
    """(table alias or name, column) -> the column's type, for the schema's tables the
    statement references."""
    tables = {t.name: t for t in schema.tables}
    types: dict[tuple[str, str], str] = {}
    for ref in tree.find_all(exp.Table):
        table = tables.get(ref.name)
        if table is not None:
            for column in table.columns:
                types[(ref.alias_or_name, column.name)] = column.type
    return types


def _compared_doubles_normalized(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """d  ->  CASE WHEN d = 0 THEN 0 ELSE d END for each DOUBLE column compared in a
    condition: that is 0.0 for -0.0, and SQL takes -0.0 = 0.0 (IEEE). MonetDB's join over
    stored doubles matches them bit by bit, so -0.0 misses 0.0: t0 AS a FULL JOIN t0 AS b ON
    a.c0 = b.c0 pairs too few rows. (d + 0 does not do: MonetDB folds it to d where it
    compares a BIGINT with the DOUBLE, s.c2 = t.c0 in a correlated subquery, fuzz case seed
    34043102496; a scalar d = 0 holds for -0.0.)"""
    types = _column_types(tree, schema)
    standard = tree.copy()
    changed = False
    for column in list(standard.find_all(exp.Column)):
        if types.get((column.table, column.name)) != "DOUBLE":
            continue
        if not isinstance(column.parent, (exp.EQ, exp.NEQ, exp.In)):
            continue
        if isinstance(standard, exp.Update) and any(column.parent is a for a in standard.expressions):
            continue  # an assignment, not a comparison
        column.replace(exp.Case(ifs=[exp.If(this=exp.EQ(this=column.copy(), expression=exp.Literal.number(0)),
                                            true=exp.Literal.number(0))], default=column.copy()))
        changed = True
    return standard if changed else None




def _ungrouped_min_reversed(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """Each MIN (no window) of a SELECT without GROUP BY whose family the generator recorded
    (fuzz/generate.py) as the reverse of a MAX of the reversed values: -MAX(-x) for
    numbers, DATE d0 - MAX(d0 - x) for dates. A MIN of text has no such reverse and stays."""
    standard = tree.copy()
    changed = False
    for node in list(standard.find_all(exp.Min)):
        select = node.find_ancestor(exp.Select)
        if isinstance(node.parent, exp.Window) or select is None or select.args.get("group"):
            continue
        family = node.meta.get("family")
        if family == "num":
            def forth(e: exp.Expression) -> exp.Expression:
                return exp.Neg(this=exp.Paren(this=e))
        elif family == "date":
            def forth(e: exp.Expression) -> exp.Expression:
                return exp.Sub(this=exp.Cast(this=exp.Literal.string("1970-01-01"), to=exp.DataType.build("DATE")), expression=exp.Paren(this=e))
        else:
            continue
        node.replace(exp.Paren(this=forth(exp.Max(this=forth(node.this.copy())))))
        changed = True
    return standard if changed else None


def _padded_tables_as_projections(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """In a statement with a set operation, each table an outer join of a grouped SELECT
    pads with NULLs read as `(SELECT * FROM table)`: MonetDB then keeps the padded group
    (tique/rewrite/union_fence.py reads its snapshots so)."""
    if tree.find(exp.SetOperation) is None:
        return None
    standard = tree.copy()
    changed = False
    for select in list(standard.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        if not select.args.get("group") or not joins:
            continue
        sides = [(j.side or "").upper() for j in joins]
        sources = [select.args.get("from_")] + joins
        for index, source in enumerate(sources):
            # the FROM is padded by a later RIGHT or FULL join; a join's own table by its
            # own LEFT or FULL, or by a later RIGHT or FULL join
            padded = (sides[index - 1] in ("LEFT", "FULL") if index else False) or any(s in ("RIGHT", "FULL") for s in sides[index:])
            ref = source.this if source is not None else None
            if not padded or not isinstance(ref, exp.Table):
                continue
            alias = ref.alias_or_name
            plain = exp.Table(this=ref.this.copy())
            ref.replace(exp.Subquery(this=exp.select("*").from_(plain), alias=exp.TableAlias(this=exp.to_identifier(alias))))
            changed = True
    return standard if changed else None


def _extremes_of_no_rows_counted(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """MAX(x) / MIN(x) of a SELECT without GROUP BY  ->  CASE WHEN COUNT(*) > 0 THEN MAX(x) END:
    over no rows SQL's MAX is NULL, and a comparison with it NULL. MonetDB compares such an
    aggregate in a WHERE as if some row were there: MAX('abc') as 'abc' (WHERE 'z%' <>
    (SELECT MAX('abc') FROM t AS s WHERE s.c0 IN (2, 0, 41)) holds over no match), and
    DATE '2023-12-13' < (SELECT MAX(s.c1) FROM t AS s WHERE s.c0 = <no row> AND s.c1 <=
    DATE '2024-01-03') holds (in a select list it says NULL). Counted, the rows decide."""
    standard = tree.copy()
    extremes = [node for node in standard.find_all(exp.Max, exp.Min) if not isinstance(node.parent, exp.Window)
                and (select := node.find_ancestor(exp.Select)) is not None and not select.args.get("group")]
    if not extremes:
        return None
    for node in reversed(extremes):  # the innermost first: an outer one takes the rewritten inner one
        node.replace(exp.Case(ifs=[exp.If(this=exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                                          true=node.copy())]))
    return standard


def _case_conditions_null_safe(tree: exp.Expression, schema: Schema) -> exp.Expression | None:
    """WHEN p  ->  WHEN COALESCE(p, FALSE) in each searched CASE holding a subquery: the same
    branch for every row by SQL. MonetDB takes NULL for the whole CASE where p is NULL and
    the CASE holds a subquery it computes through a join (a correlated one: SELECT CASE
    WHEN t.s LIKE '_' THEN t.m ELSE (SELECT MAX(u.m) FROM t AS u WHERE u.k = t.k) END
    answers NULL for a NULL s); given a condition that is never NULL it answers right."""
    standard = tree.copy()
    changed = False
    for case in list(standard.find_all(exp.Case)):
        if case.args.get("this") is not None or case.find(exp.Subquery, exp.Exists) is None:
            continue
        for branch in case.args.get("ifs") or []:
            branch.set("this", exp.Coalesce(this=branch.this, expressions=[exp.false()]))
            changed = True
    return standard if changed else None


DEPARTURES: tuple[Departure, ...] = (
    Departure("monetdb-update-from-several-matches", frozenset({"monetdb"}),
              "MonetDB refuses an UPDATE ... FROM where several source rows match one target row "
              "('more than one match'); SQL (PostgreSQL) updates that row once",
              re.compile(r"more than one match"), _update_from_as_exists),
    # SQL's outcome is computed from the rows a query reads (update_computation), which says
    # whether the UPDATE leaves a duplicate key: an UPDATE that really does fails there too.
    Departure("monetdb-update-false-key-violation", frozenset({"monetdb"}),
              "MonetDB fails an UPDATE of some rows of a table that rows were deleted from with a key violation "
              "although no two rows end with one key (after DELETE FROM t0 WHERE c2 = 0, UPDATE t0 SET c0 = t0.c0 "
              "WHERE t0.c2 = 1 says 'PRIMARY KEY constraint violated'; the same UPDATE of every row passes); "
              "SQL writes the rows",
              re.compile(r"UPDATE: (PRIMARY KEY|UNIQUE) constraint '[^']*' violated"), _no_standard_statement, computed=True),
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
    # silent: MonetDB answers without an error, but not by the standard
    Departure("monetdb-update-reads-assigned-column", frozenset({"monetdb"}),
              "MonetDB's UPDATE t SET c0 = t.c1, c1 = t.c0 gives c1 the new c0 (both columns end equal), and "
              "SET c0 = LOWER(t.c0 || t.c0), c1 = t.c0 || t.c1 reads the new c0 for c1; SQL computes every new value "
              "from the row as it was. Inside a transaction the swap reads right, but a later UPDATE t SET c0 = t.c3 "
              "reads c3 as before the swap: every UPDATE of the shape is counted",
              None, _assignments_read_old_values, counted_always=True, computed=True),
    Departure("monetdb-is-null-of-aggregate-folded", frozenset({"monetdb"}),
              "MonetDB folds `IS NULL` of an aggregate of a NOT NULL column to FALSE, although the aggregate "
              "of no rows is NULL (a WITH of SUM(k) < 5 over no rows, filtered on IS NULL, loses its one row)",
              None, _is_null_of_aggregates_kept),
    Departure("monetdb-join-negative-zero", frozenset({"monetdb"}),
              "MonetDB's join over stored DOUBLEs matches -0.0 and 0.0 as different values; SQL (IEEE) "
              "takes them as equal",
              None, _compared_doubles_normalized),
    Departure("monetdb-set-operation-loses-outer-join-null-group", frozenset({"monetdb"}),
              "MonetDB drops the group an outer join padded with NULL from a branch of a set operation when it takes "
              "the padded table for empty (SELECT MAX(a.c) FROM t AS a LEFT JOIN e AS b ON TRUE GROUP BY b.c UNION ALL "
              "SELECT 7 over an empty e gives only 7); read through a projection, the table keeps it",
              None, _padded_tables_as_projections),
    Departure("monetdb-case-of-subquery-null-condition", frozenset({"monetdb"}),
              "MonetDB answers NULL for a CASE holding a correlated subquery where a WHEN condition is NULL, "
              "instead of the next branch (SELECT CASE WHEN t.s LIKE '_' THEN t.m ELSE (SELECT MAX(u.m) FROM t AS u "
              "WHERE u.k = t.k) END for a NULL s); WHEN COALESCE(p, FALSE) chooses as SQL does",
              None, _case_conditions_null_safe),
    Departure("monetdb-ungrouped-min-of-descending-values", frozenset({"monetdb"}),
              "MonetDB's MIN without GROUP BY answers NULL over values in descending order followed by NULLs "
              "(INSERT 3, 1, NULL; SELECT MIN(a) gives NULL, SQL 1): it takes the last value of a column sorted "
              "descending. A FULL JOIN's padding meets it too (SELECT MIN(a.c) FROM t AS a FULL JOIN t AS b ON FALSE "
              "over one row). The reverse of MAX of the reversed values is SQL's MIN",
              None, _ungrouped_min_reversed),
    Departure("monetdb-extreme-of-no-rows-compared", frozenset({"monetdb"}),
              "MonetDB compares an ungrouped MAX (MIN) over no rows in a WHERE as if rows were there, although it is "
              "NULL: UPDATE t SET c = 60 WHERE 'z%' <> (SELECT MAX('abc') FROM t AS s WHERE s.c0 IN (2, 0, 41)) writes a "
              "row SQL leaves alone, and SELECT TRUE FROM t1 WHERE DATE '2023-12-13' < (SELECT MAX(s.c1) FROM t0 AS s "
              "WHERE s.c0 = <no row> AND s.c1 <= DATE '2024-01-03') answers a row; CASE WHEN COUNT(*) > 0 THEN MAX(...) "
              "END is SQL's MAX there",
              None, _extremes_of_no_rows_counted),
)

# A write MonetDB reports as -1 rows: an INSERT ... SELECT whose SELECT gives no result set
# (see monetdb-select-without-resultset); what it wrote is not known, so it is not compared.
NO_RESULT_SET = "monetdb-select-without-resultset"

# A write the engine accepts although it leaves a duplicate key; SQL (PostgreSQL, DuckDB,
# tique) fails the statement. MonetDB checks keys row by row during an UPDATE, so two rows
# that swap into one key both pass.
DUPLICATE_KEY = "monetdb-update-duplicate-key"
DUPLICATE_KEY_ENGINES = frozenset({"monetdb"})

# An UPDATE the engine accepts although it assigns NULL to a NOT NULL column; SQL fails the
# statement. MonetDB reports the row written and leaves the old value (UPDATE t SET c =
# CASE WHEN TRUE THEN (SELECT MAX(s.c1) FROM t AS s WHERE <no row>) END with c NOT NULL),
# so the table afterwards does not show it: the values the UPDATE assigns are read
# beforehand by a query (null_assignment_probe).
NULL_INTO_NOT_NULL = "monetdb-update-accepts-null-into-not-null"
NULL_INTO_NOT_NULL_ENGINES = frozenset({"monetdb"})


# An UPDATE assigning a value a subquery computes, which MonetDB may write back unchanged
# while it counts the row: UPDATE t0 SET c3 = CASE WHEN TRUE THEN (SELECT MAX(s.c3) FROM t0
# AS s WHERE s.c0 = t0.c1) ELSE t0.c3 END over no match keeps 'a' where SQL writes NULL (fuzz
# case seed 34033102453; into a NOT NULL column this is NULL_INTO_NOT_NULL). SQL's outcome is
# computed from the values a query reads (update_computation) and counted where the native
# tables differ from it.
UPDATE_KEEPS_SUBQUERY_VALUE = "monetdb-update-keeps-old-value-for-subquery"
UPDATE_KEEPS_SUBQUERY_VALUE_ENGINES = frozenset({"monetdb"})


def subquery_update_computation(tree: exp.Expression, schema: Schema) -> UpdateComputation | None:
    """For an UPDATE one of whose assignments holds a subquery, the query its outcome by SQL
    is computed from (update_computation), where one can be made."""
    if not isinstance(tree, exp.Update) or not any(a.expression.find(exp.Subquery) for a in tree.expressions):
        return None
    return update_computation(tree, schema)


def null_assignment_probe(tree: exp.Expression, schema: Schema) -> exp.Select | None:
    """For an UPDATE that assigns NOT NULL (or key) columns, the query giving, for each row it
    updates, the values it assigns them: UPDATE t SET c = e FROM s WHERE p  ->  SELECT e
    FROM t CROSS JOIN s WHERE p. A NULL among them means SQL fails the UPDATE. The values
    are read in a select list, where the engine computes them as SQL does (a comparison
    such as `e IS NULL` could meet monetdb-is-null-of-aggregate-folded)."""
    if not isinstance(tree, exp.Update) or not isinstance(tree.this, exp.Table):
        return None
    table = next((t for t in schema.tables if t.name == tree.this.name), None)
    if table is None:
        return None
    required = {c.name for c in table.columns if c.not_null} | set(table.key)
    values = [a.expression.copy() for a in tree.expressions if a.this.name in required]
    if not values:
        return None
    probe = exp.select(*(exp.alias_(v, f"tq_{i}") for i, v in enumerate(values))).from_(tree.this.copy())
    source = tree.args.get("from_")
    if source is not None:
        probe = probe.join(source.this.copy(), join_type="CROSS")
    where = tree.args.get("where")
    if where is not None:
        probe.set("where", where.copy())
    return probe


def departure_of(engine: str, error: str) -> Departure | None:
    """The departure a native error on `engine` belongs to, if any."""
    for departure in DEPARTURES:
        if engine in departure.engines and departure.error is not None and departure.error.search(error):
            return departure
    return None


def silent_departures(engine: str) -> list[Departure]:
    """The departures on `engine` that give a wrong answer without an error."""
    return [d for d in DEPARTURES if engine in d.engines and d.error is None]


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


@dataclass(frozen=True)
class UpdateComputation:
    """An UPDATE's outcome by SQL, computed from a query instead of the engine's UPDATE: MonetDB's
    UPDATE that assigns several columns departs in more ways than one equivalent statement
    avoids (monetdb-update-reads-assigned-column; with a WHERE reading an assigned column
    of a keyed table, SET c1 = COALESCE(t.c2, t.c2), c2 = UPPER(COALESCE(t.c2, t.c2)) gives
    c2 UPPER of the old c1), while a select list computes the values as SQL does.
    `query` reads, for each row the UPDATE writes, the row as it was, then each assigned
    value cast to its column's type (as the UPDATE stores it); `table` is the target."""
    query: exp.Select
    table: Table
    assigned: tuple[str, ...]  # the columns assigned, in the order of the query's values


def update_computation(tree: exp.Expression, schema: Schema) -> UpdateComputation | None:
    """For an UPDATE without FROM of a table without CHECKs and collations (whose effect a
    computation here would have to repeat), the query its outcome is computed from."""
    if not isinstance(tree, exp.Update) or tree.args.get("from_") is not None or not isinstance(tree.this, exp.Table):
        return None
    table = next((t for t in schema.tables if t.name == tree.this.name), None)
    if table is None or table.checks or any(c.collation for c in table.columns):
        return None
    alias = tree.this.alias_or_name
    names = [a.this.name for a in tree.expressions]
    if len(set(names)) != len(names):
        return None
    values = [exp.alias_(exp.Cast(this=a.expression.copy(), to=exp.DataType.build(table.column(a.this.name).type, dialect="duckdb")),
                         f"tq_new_{i}") for i, a in enumerate(tree.expressions)]
    old = [exp.column(c.name, table=alias) for c in table.columns]
    query = exp.select(*old, *values).from_(tree.this.copy())
    where = tree.args.get("where")
    if where is not None:
        query.set("where", where.copy())
    return UpdateComputation(query, table, tuple(names))

"""Result equivalence: every CH-benCHmark query must return the same rows on a native
system and on a tique system over the same data.

Rows are compared in order where the query's ORDER BY fixes the order of every row,
and as multisets otherwise. Floating-point and decimal values compare with a relative
tolerance: the same aggregate may be summed in a different order under another plan.
Everything else compares exactly.

Two ways to get "the same data":
- `load_identically`: the same generator, seed and load timestamp for every system,
  and then the same writes (`compare_systems` afterwards);
- `compare_with_storage`: the queries through tique, then a checkpoint (which moves the
  snapshot into tique's storage tables and empties the caches), then the same queries
  natively over the storage tables. The native side reads plain tables and involves
  none of tique's read rewriting, so it checks the rewritten reads against the engine's
  own evaluation of the data they should see, after any workload, deterministic or not.
"""
from __future__ import annotations

import datetime
import math
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

import sqlglot
from sqlglot import exp

from bench.chbench.queries import QUERIES, Query
from bench.chbench.run import analyze, run_query
from bench.chbench.tables import table_loads
from bench.tpcc.loader import Generator, Scale
from drivers import System

REL_TOL = 1e-9
ABS_TOL = 1e-9
# The load timestamp every identically loaded system gets (the generator's default is
# the wall clock, which two loads would not share).
LOAD_TIME = datetime.datetime(2024, 1, 1, 12, 0, 0)


@dataclass
class Comparison:
    query: str
    left_rows: int | None
    right_rows: int | None
    difference: str | None  # None: equal

    @property
    def equal(self) -> bool:
        return self.difference is None


def _inexact(value: Any) -> bool:
    return isinstance(value, (float, Decimal))


def values_equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _inexact(a) or _inexact(b):
        if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
            return False
        try:
            return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def rows_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))


def _exact_part(row: Sequence[Any]) -> tuple:
    """The row with its inexact values blanked, in a form that sorts across types."""
    return tuple(("", "") if v is None or _inexact(v) else (type(v).__name__, v) for v in row)


def _inexact_part(row: Sequence[Any]) -> tuple:
    return tuple(float(v) if _inexact(v) else -math.inf for v in row)


def compare_rows(left: Sequence[Sequence[Any]], right: Sequence[Sequence[Any]], ordered: bool) -> str | None:
    """None when equal, else the first difference found."""
    if len(left) != len(right):
        return f"{len(left)} rows vs {len(right)} rows"
    if ordered:
        for i, (a, b) in enumerate(zip(left, right)):
            if not rows_equal(a, b):
                return f"row {i + 1}: {tuple(a)!r} vs {tuple(b)!r}"
        return None
    # As multisets: rows group by their exact values; within a group, rows pair up in
    # the order of their inexact values.
    groups: dict[tuple, list[list[Sequence[Any]]]] = defaultdict(lambda: [[], []])
    for side, rows in enumerate((left, right)):
        for row in rows:
            groups[_exact_part(row)][side].append(row)
    for key in sorted(groups):
        a_rows, b_rows = groups[key]
        if len(a_rows) != len(b_rows):
            sample = (a_rows or b_rows)[0]
            return f"{len(a_rows)} vs {len(b_rows)} rows like {tuple(sample)!r}"
        for a, b in zip(sorted(a_rows, key=_inexact_part), sorted(b_rows, key=_inexact_part)):
            if not rows_equal(a, b):
                return f"{tuple(a)!r} vs {tuple(b)!r}"
    return None


def run_all(conn: Any, queries: Sequence[Query] = QUERIES, commit: bool = True) -> dict[str, tuple[list[str], list[tuple]] | str]:
    """Each query's (column names, rows), or its error as text. Without `commit` all run
    inside the transaction the connection has open (and see its writes)."""
    out: dict[str, tuple[list[str], list[tuple]] | str] = {}
    for query in queries:
        try:
            _, rows, columns = run_query(conn, query, commit)
            out[query.name] = ([c.lower() for c in columns], rows)
        except Exception as error:  # noqa: BLE001 - a failing query is a difference to report
            out[query.name] = f"{type(error).__name__}: {error}"[:500]
    return out


def compare_outputs(left: dict[str, Any], right: dict[str, Any], queries: Sequence[Query] = QUERIES) -> list[Comparison]:
    comparisons = []
    for query in queries:
        a, b = left[query.name], right[query.name]
        if isinstance(a, str) or isinstance(b, str):
            comparisons.append(Comparison(query.name, None if isinstance(a, str) else len(a[1]),
                                          None if isinstance(b, str) else len(b[1]),
                                          f"error: {a if isinstance(a, str) else b}"))
            continue
        (a_columns, a_rows), (b_columns, b_rows) = a, b
        difference = None if a_columns == b_columns else f"columns {a_columns} vs {b_columns}"
        difference = difference or compare_rows(a_rows, b_rows, query.total_order)
        comparisons.append(Comparison(query.name, len(a_rows), len(b_rows), difference))
    return comparisons


def compare_systems(left: System, right: System, queries: Sequence[Query] = QUERIES) -> list[Comparison]:
    """Runs every query on both systems (which must hold the same data) and compares."""
    outputs = []
    for system in (left, right):
        conn = system.connect()
        try:
            outputs.append(run_all(conn, queries))
        finally:
            conn.close()
    return compare_outputs(outputs[0], outputs[1], queries)


def load_identically(systems: Sequence[System], warehouses: int, scale: Scale, seed: int = 1,
                     load_time: datetime.datetime = LOAD_TIME) -> None:
    """The TPC-C tables and the extra tables, row for row the same on every system."""
    for system in systems:
        system.load(Generator(warehouses, scale, seed, now=load_time).table_loads() + table_loads(seed))
        analyze(system)


# -- tique's reads against the engine's own reading of the checkpointed snapshot -------

def storage_sql(query: Query, dialect: str, storage: dict[str, str]) -> str:
    """The query with each table reference renamed to its storage table (keeping the name
    it is referred to by as alias); CTE names are left alone."""
    tree = sqlglot.parse_one(query.sql, read=dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for ref in list(tree.find_all(exp.Table)):
        name = ref.name.lower()
        if name in storage and name not in ctes:
            if not ref.args.get("alias"):
                ref.set("alias", exp.TableAlias(this=exp.to_identifier(ref.name)))
            ref.set("this", exp.to_identifier(storage[name], quoted=True))
    return tree.sql(dialect=dialect)


def compare_with_storage(system: System, queries: Sequence[Query] = QUERIES) -> list[Comparison]:
    """Runs the queries through tique (caches as the workload left them), checkpoints,
    and runs them natively over the storage tables. Needs a quiet database: nothing may
    commit in between (the caches must be empty after the checkpoint, or this raises)."""
    import tique
    from tique.checkpoint import checkpoint

    if not system.through_tique:
        raise ValueError(f"{system.name}: compare_with_storage needs a tique system")
    conn = system.connect()
    try:
        through_tique = run_all(conn, queries)
        storage = {name: table.storage for name, table in conn.tables.items()}
        dialect = conn.backend.dialect
    finally:
        conn.close()
    admin = tique.connect(system.engine.tique_url, autocommit=True)
    try:
        checkpoint(admin)
        left_in_caches = {t.name: admin.backend.rows(admin._raw, f'SELECT count(*) FROM "{t.cache}"', [])[0][0]
                          for t in admin.tables.values()}
    finally:
        admin.close()
    if any(left_in_caches.values()):
        raise RuntimeError(f"versions left in the caches after a checkpoint (was something still running?): {left_in_caches}")
    analyze(system)
    raw = system.engine.native_connect()
    try:
        renamed = [Query(q.number, storage_sql(q, dialect, storage), q.total_order) for q in queries]
        native = run_all(raw, renamed)
    finally:
        raw.close()
    return compare_outputs(through_tique, native, queries)


def report(comparisons: Sequence[Comparison], left: str, right: str) -> str:
    lines = [f"{'query':<6}{left:>16}{right:>16}  verdict"]
    for c in comparisons:
        lines.append(f"{c.query:<6}{c.left_rows if c.left_rows is not None else '-':>16}"
                     f"{c.right_rows if c.right_rows is not None else '-':>16}  {'equal' if c.equal else c.difference}")
    return "\n".join(lines)

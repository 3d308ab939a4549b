"""Micro-benchmark of planning on a cold plan cache: how long parsing and rewriting takes
per distinct statement text, as a fresh process pays it on its first TPC-C transactions
and CH-benCHmark queries. No engine runs: each dialect's backend only plans, against the
TPC-C and CH-benCHmark tables as the engine would store them. Printed, never asserted."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from tique import catalog
from tique.backends.base import Backend
from tique.catalog import CatalogSnapshot, TableDef, table_def_from_create
from tique.planner import ReadPlan, make_plan, parse_one
from tique.rewrite import templates
from tique.rewrite.snapshot import Formulation

DIALECTS = ("duckdb", "postgres", "monetdb")


@dataclass
class Timing:
    dialect: str
    workload: str
    texts: int
    total_ms: float
    slowest_ms: float
    slowest: str

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.texts if self.texts else 0.0


def tpcc_texts() -> list[str]:
    """Every distinct statement text the TPC-C transactions send (one per order-line count)."""
    from bench.tpcc import transactions as t

    texts: list[str] = []
    for name in sorted(vars(t)):
        value = getattr(t, name)
        if not name.isupper() or name.startswith("_"):
            continue
        if isinstance(value, str) and value.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE")):
            texts.append(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, str) for v in value) and value[0].startswith("SELECT"):
            texts.extend(value)
        elif isinstance(value, dict):
            texts.extend(v for v in value.values() if isinstance(v, str))
    return list(dict.fromkeys(texts))


def chbench_texts() -> list[str]:
    from bench.chbench.queries import QUERIES

    return [q.sql for q in QUERIES]


def _backend(dialect: str) -> Backend:
    """A backend that only plans: nothing here opens a connection but DuckDB's in-memory database."""
    if dialect == "duckdb":
        from tique.backends.duckdb import DuckDBBackend
        return DuckDBBackend("duckdb:///:memory:")
    if dialect == "postgres":
        from tique.backends.postgres import PostgresBackend
        return PostgresBackend("postgresql://planning@127.0.0.1/planning")
    from tique.backends.monetdb import MonetDBBackend
    return MonetDBBackend("monetdb://planning@127.0.0.1/planning")


def _tables(backend: Backend) -> dict[str, TableDef]:
    from bench.chbench.tables import CREATE
    from bench.tpcc.schema import TABLES

    found = {}
    for ddl in (*TABLES.values(), *CREATE.values()):
        table = backend.new_table(table_def_from_create(parse_one(ddl, backend.dialect), backend.dialect, ddl))
        found[table.name] = table
    return found


def cold() -> None:
    """Forgets what planning keeps per process, as a fresh process starts."""
    for cached in (templates._parsed, templates._column_lists, templates._table_expanded, templates.data_type, templates.template_text,
                   catalog._type_kind):
        cached.cache_clear()


def measure(dialect: str, workloads: dict[str, list[str]], clock: Callable[[], float] = time.perf_counter) -> list[Timing]:
    cold()
    backend = _backend(dialect)
    try:
        tables = CatalogSnapshot.of(_tables(backend))
        timings = []
        for workload, texts in workloads.items():
            total, slowest, slowest_text = 0.0, 0.0, ""
            for sql in texts:
                started = clock()
                plan = make_plan(sql, backend, tables, Formulation.AUTO, frozenset())
                if isinstance(plan, ReadPlan):
                    # Made on first use on DuckDB (tique/planner.py): a first execution over
                    # caches holding rows pays for it, so it counts here on every dialect.
                    plan.statement
                took = clock() - started
                total += took
                if took > slowest:
                    slowest, slowest_text = took, sql
            timings.append(Timing(dialect, workload, len(texts), total * 1e3, slowest * 1e3, slowest_text))
        return timings
    finally:
        backend.close()


def report(timings: list[Timing]) -> str:
    lines = [f"{'dialect':<9} {'workload':<9} {'texts':>5} {'ms/text':>8} {'total ms':>9} {'slowest ms':>10}  slowest text"]
    for t in timings:
        lines.append(f"{t.dialect:<9} {t.workload:<9} {t.texts:>5} {t.mean_ms:>8.2f} {t.total_ms:>9.1f} {t.slowest_ms:>10.1f}  {t.slowest[:60]}")
    return "\n".join(lines)


def run(dialects: tuple[str, ...] = DIALECTS, clock: Callable[[], float] = time.perf_counter) -> str:
    workloads = {"tpcc": tpcc_texts(), "chbench": chbench_texts()}
    timings = [t for d in dialects for t in measure(d, workloads, clock)]
    return report(timings)

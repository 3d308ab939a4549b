"""CH-benCHmark runs: the 22 queries, each run R times in a row, after an OLTP (TPC-C)
run has left its writes in tique's caches (paper, section 4.3.2); median per query and
the total of the medians.

Each query runs in a transaction of its own on one connection (for tique systems: one
snapshot per query, as an analytical client gets), and its time is from execute() to
the last row fetched.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from bench.chbench.queries import QUERIES, Query
from bench.chbench.tables import SUPPLIERS, TABLE_NAMES, table_loads
from bench.results import Result, finish, table
from bench.tpcc.loader import FULL, Loaded, Scale, load as load_tpcc, print_report
from drivers import System, system_for


@dataclass
class QueryTimes:
    """One query's repetitions: seconds per run, the rows it returned, and the error that
    stopped it (then no further repetitions are tried)."""

    name: str
    seconds: list[float] = field(default_factory=list)
    rows: int | None = None
    error: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.seconds) if self.seconds else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {"median_s": self.median, "mean_s": self.mean, "min_s": min(self.seconds, default=float("nan")),
                "max_s": max(self.seconds, default=float("nan")), "runs_s": self.seconds, "rows": self.rows,
                "error": self.error}


def total_of_medians(times: Sequence[QueryTimes]) -> float:
    """The sum of the per-query medians; NaN when some query has no successful run."""
    return sum(t.median for t in times)


# -- loading ----------------------------------------------------------------------------

def has_table(system: System, name: str) -> bool:
    conn = system.connect()
    try:
        cur = conn.cursor()
        try:
            cur.execute(f"SELECT count(*) FROM {name}")
            cur.fetchall()
            return True
        except Exception:  # no such table
            return False
        finally:
            try:
                conn.rollback()
            except Exception:  # the failed statement already ended the transaction
                pass
    finally:
        conn.close()


def load_extra_tables(system: System, seed: int = 1, suppliers: int = SUPPLIERS) -> int:
    """Creates and fills region, nation and supplier unless the database has them (a
    database loaded once and reused); returns the rows loaded."""
    if has_table(system, "supplier"):
        if system.through_tique:
            _adopt_native(system)
        return 0
    return system.load(table_loads(seed, suppliers))


def _adopt_native(system: System) -> None:
    """A database loaded natively and reused through tique: its extra tables become tique tables."""
    import tique
    from tique.adopt import adopt

    conn = tique.connect(system.engine.tique_url, autocommit=True)
    try:
        missing = [n for n in TABLE_NAMES if n not in conn.tables]
        if missing:
            adopt(conn, missing)
    finally:
        conn.close()


def analyze(system: System) -> None:
    """Refreshes the optimizer statistics on PostgreSQL, the one engine here that plans
    by collected statistics and has none for freshly bulk-loaded tables (without them a
    9-way join may be planned as if every table held a few hundred rows). Runs natively,
    so native and tique systems get the same maintenance."""
    if system.engine.name != "postgres":
        return
    raw = system.engine.native_connect()
    try:
        raw.cursor().execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()


def prepare(system: System, warehouses: int, scale: Scale = FULL, seed: int = 1, progress: bool = True,
            console: Any = None) -> Loaded:
    """TPC-C (loaded, or reused when the database holds the same load) plus the extra tables."""
    loaded, report = load_tpcc(system, warehouses, scale, seed=seed, progress=progress, console=console)
    if not report.reused:
        print_report(report, system.name, console=console)
    load_extra_tables(system, seed)
    analyze(system)
    return loaded


# -- running ----------------------------------------------------------------------------

def run_query(conn: Any, query: Query, commit: bool = True) -> tuple[float, list[tuple], list[str]]:
    """Runs one query in its own transaction (or, without `commit`, in the transaction
    already open): seconds, rows, column names."""
    cur = conn.cursor()
    began = time.perf_counter()
    try:
        cur.execute(query.sql)
        rows = cur.fetchall()
    except BaseException:
        try:
            conn.rollback()
        except Exception:  # the error already ended the transaction
            pass
        raise
    elapsed = time.perf_counter() - began
    columns = [d[0] for d in cur.description or ()]
    if commit:
        conn.commit()
    return elapsed, rows, columns


def set_query_timeout(conn: Any, system: System, seconds: float | None) -> None:
    """PostgreSQL only (statement_timeout): the engine where a query may take far longer
    than its peers; it is a session setting, so the native statement goes through tique
    unchanged."""
    if seconds and system.engine.name == "postgres":
        cur = conn.cursor()
        cur.execute(f"SET statement_timeout = {int(seconds * 1000)}")
        conn.commit()


def time_queries(system: System, repetitions: int = 5, queries: Sequence[Query] = QUERIES,
                 timeout: float | None = None, on_query: Callable[[QueryTimes], None] | None = None) -> list[QueryTimes]:
    """Each query `repetitions` times in a row (the paper runs each query individually,
    sequentially), on one connection."""
    conn = system.connect()
    try:
        set_query_timeout(conn, system, timeout)
        out = []
        for query in queries:
            times = QueryTimes(query.name)
            for _ in range(repetitions):
                try:
                    elapsed, rows, _ = run_query(conn, query)
                except Exception as error:  # noqa: BLE001 - reported per query
                    times.error = f"{type(error).__name__}: {error}"[:500]
                    break
                times.seconds.append(elapsed)
                times.rows = len(rows)
            out.append(times)
            if on_query is not None:
                on_query(times)
        return out
    finally:
        conn.close()


def cache_rows(system: System) -> dict[str, int] | None:
    """Rows in each tique cache table (read natively): how much of the data the snapshot
    reads had to merge from the caches. None for native systems."""
    if not system.through_tique:
        return None
    import tique

    conn = tique.connect(system.engine.tique_url)
    try:
        tables = sorted(conn.tables.values(), key=lambda t: t.name)
        counts = {}
        for t in tables:
            (count,) = conn.backend.rows(conn._raw, f'SELECT count(*) FROM "{t.cache}"', [])[0]
            counts[t.name] = int(count)
        return counts
    finally:
        conn.close()


def oltp_warmup(system: System, loaded: Loaded, seconds: float, clients: int, seed: int = 42) -> dict[str, Any] | None:
    """Runs TPC-C for `seconds` with `clients` clients, which leaves its writes in tique's caches."""
    if seconds <= 0:
        return None
    from bench.tpcc.run import run as run_tpcc

    tpcc = run_tpcc(system, loaded, clients, seconds, warmup=0.0, seed=seed)
    m = tpcc.metrics()
    return {"seconds": seconds, "clients": clients, "commits": m["commits"], "aborts": m["aborts"],
            "errors": m["errors"], "txn_per_s": m["txn_per_s"], "tpmC": m["tpmC"], "error_samples": m["error_samples"]}


def benchmark(system_name: str, warehouses: int = 1, repetitions: int = 5, oltp_seconds: float = 30.0,
              oltp_clients: int = 1, url: str | None = None, out: str | None = None, scale: Scale = FULL,
              seed: int = 1, checkpoint_ms: int | None = None, query_timeout: float | None = None,
              system: System | None = None, console: Any = None, progress: bool = True) -> Result:
    """Loads (or reuses), runs TPC-C for `oltp_seconds`, times the 22 queries, writes
    `out` and prints a table. Without `checkpoint_ms` no checkpointer runs, so every
    write of the OLTP run is still in the caches when the queries read."""
    from bench.console import report_console

    console = console or report_console()
    with system_for(system_name, system, url, checkpoint_ms) as system:
        loaded = prepare(system, warehouses, scale, progress=progress, console=console)
        oltp = oltp_warmup(system, loaded, oltp_seconds, oltp_clients)
        analyze(system)
        caches = cache_rows(system)
        result = Result("chbench", system.name, system.version(), {
            "warehouses": warehouses, "repetitions": repetitions, "oltp_seconds": oltp_seconds,
            "oltp_clients": oltp_clients, "scale": asdict(loaded.scale), "full_scale": loaded.scale == FULL,
            "seed": seed, "checkpoint_ms": checkpoint_ms, "query_timeout_s": query_timeout,
            "tique_options": dict(system.tique_options) if system.through_tique else None})

        def shown(t: QueryTimes) -> None:
            if progress:
                status = t.error or f"{t.median * 1000:,.1f} ms median of {len(t.seconds)}, {t.rows} rows"
                console.print(f"  {system.name} {t.name}: {status}")

        times = time_queries(system, repetitions, timeout=query_timeout, on_query=shown)
        # And after them: whether the checkpointer emptied the caches while the queries ran
        # (a table whose cache is known empty is read from storage alone on DuckDB).
        result.metrics = {"queries": {t.name: t.as_dict() for t in times}, "total_median_s": total_of_medians(times),
                          "total_mean_s": sum(t.mean for t in times), "failed": [t.name for t in times if t.error],
                          "oltp_warmup": oltp, "cache_rows": caches, "cache_rows_after": cache_rows(system)}
        return finish(result, out, show, console)


def show(result: Result, console: Any = None) -> None:
    m, p = result.metrics, result.parameters
    rows = []
    for name, q in m["queries"].items():
        rows.append([name, q["rows"], q["median_s"] * 1000, q["min_s"] * 1000, q["max_s"] * 1000, q["error"] or ""])
    title = (f"CH-benCHmark {result.system}: W={p['warehouses']}, {p['repetitions']} repetition(s), "
             f"after {p['oltp_seconds']:g} s of TPC-C")
    table(title, ["query", "rows", "median ms", "min ms", "max ms", "error"], rows, console)
    from bench.console import report_console

    console = console or report_console()
    caches = m.get("cache_rows")
    after = m.get("cache_rows_after")
    cached = f"; rows in tique's caches: {sum(caches.values()):,}" if caches else ""
    cached += f" before the queries, {sum(after.values()):,} after" if caches and after is not None else ""
    console.print(f"total of medians: {m['total_median_s']:.3f} s{cached}")
    if m["failed"]:
        console.print(f"FAILED: {', '.join(m['failed'])}")

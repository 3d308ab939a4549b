"""TPC-C runs: C closed-loop clients with no think time, a warm-up, then a measured
duration; per-type throughput, abort rate and latency; then the consistency check.

Clients are threads of this process, each with its own connection. The client side of
a transaction is a few microseconds of Python between statements; the rest is waiting
on the engine (which releases the GIL: the DuckDB library, or a socket to PostgreSQL or
MonetDB). Threads also keep every tique-duckdb connection on the one in-process oracle
their database shares, which separate processes could not.

An aborted transaction (serialization or write-write conflict, `system.is_abort`) is
counted as aborted and NOT retried: the client goes on with a new transaction and new
inputs, as py-tpcc (the paper's driver) does. So the abort rate is the fraction of
attempts that aborted. A New-Order's by-design rollback (1%, an unused item) is a
rollback, not an abort.
"""
from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from bench.results import Result, finish, table
from tique.errors import redact
from tique.isolation import IsolationLevel, parse_level
from tique.plan_timing import TIMING, report as planning_report, summary as planning_summary
from bench.tpcc.consistency import check, verdict
from bench.tpcc.loader import FULL, Loaded, Scale, load, print_report
from bench.tpcc.rand import Constants
from bench.tpcc.transactions import KINDS, MIX, UserRollback, Workload, executor
from drivers import system_for

ERROR_SAMPLES = 5
SHORT_KINDS = {"new_order": "NewOrd", "payment": "Paym", "order_status": "OrdSt", "delivery": "Deliv", "stock_level": "StkLv"}


@dataclass
class KindStats:
    commits: int = 0
    rollbacks: int = 0  # New-Order's user rollbacks
    aborts: int = 0
    errors: int = 0  # neither committed nor an abort: a failure the run reports
    latencies: list[float] = field(default_factory=list)  # seconds, of completed transactions
    skipped: int = 0  # Delivery: districts without an undelivered order
    # tique's priority mode re-executes a transaction that lost certification inside
    # commit(); each re-execution is counted here, never as an abort of its own.
    priority_retries: int = 0
    # What the completed transactions cost (Counters of tique/session.py, read the same
    # way off tique and native connections), and the client thread's CPU time.
    round_trips: int = 0
    engine_commits: int = 0
    engine_ns: int = 0
    client_cpu_s: float = 0.0
    costed: int = 0  # completed transactions whose cost is counted

    def add_cost(self, cost: Any, cpu_s: float) -> None:
        self.round_trips += cost.round_trips
        self.engine_commits += cost.engine_commits
        self.engine_ns += cost.engine_ns
        self.client_cpu_s += cpu_s
        self.costed += 1

    def cost(self) -> dict[str, float]:
        """Per completed transaction: round trips, engine commits, engine ms (wall time
        waiting on the engine), client CPU ms (for embedded DuckDB the engine runs in the
        client thread, so its CPU is in both)."""
        n = self.costed
        if not n:
            return {}
        return {"round_trips": self.round_trips / n, "engine_commits": self.engine_commits / n,
                "engine_ms": self.engine_ns / n / 1e6, "client_cpu_ms": self.client_cpu_s / n * 1e3}

    def merge(self, other: "KindStats") -> None:
        self.round_trips += other.round_trips
        self.engine_commits += other.engine_commits
        self.engine_ns += other.engine_ns
        self.client_cpu_s += other.client_cpu_s
        self.costed += other.costed
        self.commits += other.commits
        self.rollbacks += other.rollbacks
        self.aborts += other.aborts
        self.errors += other.errors
        self.latencies.extend(other.latencies)
        self.skipped += other.skipped
        self.priority_retries += other.priority_retries

    @property
    def completed(self) -> int:
        return self.commits + self.rollbacks

    @property
    def abort_rate(self) -> float:
        attempts = self.completed + self.aborts + self.errors
        return self.aborts / attempts if attempts else 0.0

    def percentile_ms(self, p: float) -> float:
        return float(np.percentile(self.latencies, p) * 1000) if self.latencies else float("nan")


@dataclass
class TpccRun:
    system: str
    warehouses: int
    clients: int
    seconds: float  # the measured window
    warmup: float
    contention: int | None
    per_kind: dict[str, KindStats] = field(default_factory=lambda: {k: KindStats() for k in KINDS})
    error_samples: list[str] = field(default_factory=list)
    stuck_clients: int = 0
    intervals: list[dict[str, Any]] = field(default_factory=list)  # with report_every: see run()

    @property
    def tpmc(self) -> float:
        """New-Orders per minute: committed ones plus the by-design rollbacks, which the
        specification counts as completed business transactions."""
        return self.per_kind["new_order"].completed / self.seconds * 60 if self.seconds else 0.0

    @property
    def total(self) -> KindStats:
        total = KindStats()
        for stats in self.per_kind.values():
            total.merge(stats)
        return total

    def metrics(self) -> dict[str, Any]:
        total = self.total
        return {
            "measured_seconds": round(self.seconds, 3),
            "tpmC": self.tpmc,
            "txn_per_s": total.completed / self.seconds if self.seconds else 0.0,
            "commits": total.commits, "rollbacks": total.rollbacks, "aborts": total.aborts, "errors": total.errors,
            "abort_rate": total.abort_rate,
            "priority_retries": total.priority_retries,
            "priority_retries_per_txn": total.priority_retries / total.completed if total.completed else 0.0,
            "per_transaction": total.cost(),
            "transactions": {kind: {"commits": s.commits, "rollbacks": s.rollbacks, "aborts": s.aborts,
                                    "errors": s.errors, "abort_rate": s.abort_rate, "priority_retries": s.priority_retries,
                                    "per_s": s.completed / self.seconds if self.seconds else 0.0,
                                    "p50_ms": s.percentile_ms(50), "p95_ms": s.percentile_ms(95),
                                    "p99_ms": s.percentile_ms(99), "per_transaction": s.cost(),
                                    **({"skipped_districts": s.skipped} if kind == "delivery" else {})}
                             for kind, s in self.per_kind.items()},
            "error_samples": self.error_samples,
            "stuck_clients": self.stuck_clients,
            **({"intervals": self.intervals} if self.intervals else {}),
        }


def run(system: Any, loaded: Loaded, clients: int, duration: float, warmup: float = 5.0,
        contention: int | None = None, seed: int = 42, mix: Sequence[int] = MIX, isolation: str | None = None,
        report_every: float | None = None, sampler: Any = None, priority: bool = False) -> TpccRun:
    """Runs the standard mix on `system` (loaded as `loaded` says) and returns what the
    transactions that finished inside the measured window did. `isolation`: tique's level
    for the clients' transactions (None: tique's default, SNAPSHOT); `priority`: tique's
    priority mode on every client. With `report_every`, it also records every that many
    seconds of the window the transactions completed in it and, from `sampler`
    (bench/tpcc/intervals.py), the sizes of tique's tables."""
    if clients < 1 or duration <= 0 or warmup < 0:
        raise ValueError("need clients >= 1, duration > 0 and warmup >= 0")
    options = isolation_options(system, isolation)
    if priority:
        if not system.through_tique:
            raise ValueError(f"priority mode is tique's; {system.name} has none")
        options["priority"] = True
    if contention is not None and not 1 <= contention <= loaded.warehouses:
        raise ValueError(f"--contention must be between 1 and the {loaded.warehouses} warehouses")
    constants = Constants.for_run(loaded.c_last_load, random.Random(seed))
    result = TpccRun(system.name, loaded.warehouses, clients, duration, warmup, contention)
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)  # every client connected (or failed to)
    go = threading.Event()
    window = [0.0, 0.0]  # the measured window [start, end), set before `go`
    completed = [0]  # transactions completed (committed or rolled back) in the window so far

    def client(index: int) -> None:
        stats = {k: KindStats() for k in KINDS}
        errors: list[str] = []
        conn = None
        try:
            conn = system.connect(**options)
        except Exception as error:  # noqa: BLE001 - reported with the results
            errors.append(f"connect: {type(error).__name__}: {error}"[:500])
        execute = executor(conn) if conn is not None else None
        rng = random.Random(seed * 1000 + index)
        workload = Workload(loaded.warehouses, loaded.scale, constants, contention, mix)
        _quietly(lambda: ready.wait(timeout=120))
        go.wait(timeout=120)
        try:
            while execute is not None and time.perf_counter() < window[1]:
                kind = workload.choose(rng)
                counted = getattr(conn, "counters", None)
                retried_before = getattr(conn, "priority_retries", 0)
                cpu_began = time.thread_time()
                began = time.perf_counter()
                outcome = None
                try:
                    outcome = workload.run(kind, execute, rng)
                    conn.commit()
                    status = "commit"
                except UserRollback:
                    conn.rollback()
                    status = "rollback"
                except Exception as error:  # noqa: BLE001 - classified right below
                    _quietly(conn.rollback)
                    if system.is_abort(error):
                        status = "abort"
                    else:
                        status = "error"
                        if len(errors) < ERROR_SAMPLES:
                            errors.append(f"{kind}: {type(error).__name__}: {error}"[:500])
                finished = time.perf_counter()
                if not window[0] <= finished < window[1]:
                    continue  # warm-up, or past the end
                s = stats[kind]
                s.priority_retries += getattr(conn, "priority_retries", 0) - retried_before
                if status == "commit":
                    s.commits += 1
                    s.skipped += outcome.skipped if outcome else 0
                elif status == "rollback":
                    s.rollbacks += 1
                elif status == "abort":
                    s.aborts += 1
                else:
                    s.errors += 1
                if status in ("commit", "rollback"):
                    with lock:
                        completed[0] += 1
                    s.latencies.append(finished - began)
                    if counted is not None:
                        s.add_cost(conn.counters - counted, time.thread_time() - cpu_began)
        finally:
            if conn is not None:
                _quietly(conn.close)
            with lock:
                for kind, s in stats.items():
                    result.per_kind[kind].merge(s)
                result.error_samples.extend(errors[: max(0, ERROR_SAMPLES - len(result.error_samples))])

    threads = [threading.Thread(target=client, args=(i,), name=f"tpcc-client-{i}", daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    _quietly(lambda: ready.wait(timeout=120))
    window[0] = time.perf_counter() + warmup
    window[1] = window[0] + duration
    go.set()
    if report_every:
        _report_intervals(result, window, completed, lock, report_every, sampler)
    deadline = window[1] + 120  # a transaction still running two minutes after the end is stuck
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.perf_counter()))
    result.stuck_clients = sum(t.is_alive() for t in threads)
    return result


def _report_intervals(result: TpccRun, window: list[float], completed: list[int], lock: threading.Lock,
                      every: float, sampler: Any) -> None:
    """Until the window ends: every `every` seconds of it, the throughput since the last
    interval and a sample of the table sizes, appended to `result.intervals` and printed."""
    time.sleep(max(0.0, window[0] - time.perf_counter()))
    began, last_count = window[0], 0
    while began < window[1] - 1e-3:
        end = min(began + every, window[1])
        time.sleep(max(0.0, end - time.perf_counter()))
        with lock:
            count = completed[0]
        seconds = time.perf_counter() - began
        interval: dict[str, Any] = {"end_s": round(end - window[0], 3), "seconds": round(seconds, 3),
                                    "completed": count - last_count, "txn_per_s": (count - last_count) / seconds,
                                    # on a shared machine, what the interval's throughput is read against
                                    "load_1m": round(os.getloadavg()[0], 2)}
        if sampler is not None:
            try:
                interval.update(sampler.sample())
            except Exception as error:  # noqa: BLE001 - a failed sample is reported, the run goes on
                interval["sample_error"] = str(error)[:200]
        result.intervals.append(interval)
        sizes = interval.get("rows") or {}
        busy = (interval.get("checkpointer") or {}).get("busy_s")
        print(f"[{interval['end_s']:7.0f} s] {interval['txn_per_s']:7.1f} txn/s"
              + (f"  checkpointer busy {busy:.1f} s in all" if busy is not None else "")
              + ("  rows: " + " ".join(f"{t}={c}" for t, c in sizes.items() if c) if sizes else ""), flush=True)
        began, last_count = time.perf_counter(), count


def _quietly(action: Any) -> None:
    try:
        action()
    except Exception:  # the transaction or connection is already gone
        pass


def benchmark(system_name: str, warehouses: int = 1, clients: int = 1, duration: float = 30.0, warmup: float = 5.0,
              contention: int | None = None, url: str | None = None, out: str | None = None, scale: Scale = FULL,
              checkpoint_ms: int | None = 1000, seed: int = 42, system: Any = None, console: Any = None,
              progress: bool = True, mix: Sequence[int] = MIX, isolation: str | None = None,
              report_every: float | None = None, priority: bool = False) -> Result:
    """Loads (or reuses the load at `url`), runs, checks consistency, writes `out` and
    prints a table. `system` may be an open system (the caller closes it); otherwise one
    is opened on `url`, or on a fresh database that is removed afterwards."""
    from bench.console import report_console

    console = console or report_console()
    if isolation is not None and not (system.through_tique if system is not None else system_name.startswith("tique-")):
        _native_level(system_name, isolation)  # refused before anything is loaded
    with system_for(system_name, system, url, checkpoint_ms) as system:
        loaded, report = load(system, warehouses, scale, progress=progress, console=console)
        if report.reused:
            console.print(f"{system.name}: reusing the TPC-C load of {loaded.warehouses} warehouse(s) already there")
        else:
            print_report(report, system.name, console=console)
        result = Result("tpcc", system.name, system.version(), {
            "warehouses": warehouses, "clients": clients, "duration_s": duration, "warmup_s": warmup,
            "contention": contention, "scale": asdict(loaded.scale), "full_scale": loaded.scale == FULL,
            "url": _redacted(url), "seed": seed, "think_time": 0, "clients_are": "threads", "aborts_retried": False,
            "tique_options": dict(system.tique_options) if system.through_tique else None,
            "mix": dict(zip(KINDS, mix)), "isolation": isolation_name(system, isolation), "report_every_s": report_every, "priority": priority})
        sampler = None
        if report_every and system.through_tique:
            from bench.tpcc.intervals import TableSampler

            sampler = TableSampler(system)
        planned_from = TIMING.mark()  # what the run itself plans, warm-up included: a fresh process's cold start
        try:
            tpcc = run(system, loaded, clients, duration, warmup, contention, seed, mix, isolation, report_every, sampler, priority)
        finally:
            if sampler is not None:
                sampler.close()
        metrics = tpcc.metrics()
        if system.through_tique:
            metrics["planning"] = planning_summary(TIMING.since(planned_from))
        metrics["load"] = {"reused": report.reused, "rows": report.rows, "seconds": report.seconds,
                           "rows_per_s": report.rows_per_second,
                           "tables": {n: {"rows": r, "seconds": s} for n, (r, s) in report.per_table.items()}}
        result.metrics = metrics
        result.consistency = verdict(check(system))
        return finish(result, out, show, console)


# The levels a native system runs at when asked: tique's level -> the engine's own name for
# it. native-postgres has all three (SERIALIZABLE is its SSI); DuckDB and MonetDB have only
# snapshot isolation, so they refuse the others rather than run at a level nobody asked for.
NATIVE_LEVELS: dict[str, dict[IsolationLevel, str]] = {
    "native-postgres": {IsolationLevel.READ_COMMITTED: "READ COMMITTED", IsolationLevel.SNAPSHOT: "REPEATABLE READ",
                        IsolationLevel.SERIALIZABLE: "SERIALIZABLE"},
    "native-duckdb": {IsolationLevel.SNAPSHOT: "snapshot isolation"},
    "native-monetdb": {IsolationLevel.SNAPSHOT: "snapshot isolation"},
}


def isolation_options(system: Any, isolation: str | None) -> dict[str, Any]:
    """The connect options of a client at `isolation`. A native system runs at its engine's
    own level of that name and refuses a level its engine does not have."""
    if isolation is None:
        return {}
    if not system.through_tique:
        _native_level(system.name, isolation)
    return {"isolation_level": isolation}


def _native_level(name: str, isolation: str) -> str:
    levels = NATIVE_LEVELS.get(name, {})
    level = parse_level(isolation)
    if level not in levels:
        has = ", ".join(l.value for l in levels) or "none of tique's"
        raise ValueError(f"--isolation {isolation}: {name} has no {level.value} level of its own "
                         f"(its engine offers {has}); run tique-{name.split('-', 1)[1]} for {level.value}")
    return levels[level]


def isolation_name(system: Any, isolation: str | None) -> str:
    """The level the clients ran at, as recorded in the result."""
    if not system.through_tique:
        level = _native_level(system.name, isolation or IsolationLevel.SNAPSHOT.value)
        return f"engine's own {level}" if level != "snapshot isolation" else "engine's own (snapshot isolation)"
    return parse_level(isolation or IsolationLevel.SNAPSHOT).value


def _redacted(url: str | None) -> str | None:
    """The URL without its password (a percent-encoded one too)."""
    return None if url is None else redact(url)


def show(result: Result, console: Any = None) -> None:
    from bench.console import report_console

    m, p = result.metrics, result.parameters
    rows = []
    for kind, s in m["transactions"].items():
        cost = s.get("per_transaction") or {}
        rows.append([SHORT_KINDS[kind], s["commits"] + s["rollbacks"], round(s["abort_rate"] * 100, 1), s.get("priority_retries", 0),
                     round(s["per_s"], 1), round(s["p99_ms"], 1),
                     *(round(cost[k], 1) if k in cost else "-" for k in ("round_trips", "engine_commits", "engine_ms", "client_cpu_ms"))])
    title = (f"TPC-C {result.system} at {p.get('isolation', '?')}: W={p['warehouses']}, {p['clients']} client(s), {p['duration_s']:g} s"
             + (f", 99% on {p['contention']} warehouse(s)" if p.get("contention") else ""))
    table(title, ["type", "done", "abort%", "prio retries", "/s", "p99ms", "trips", "commits", "eng ms", "cpu ms"], rows, console)
    console = console or report_console()
    console.print("per completed transaction: round trips, engine commits, ms waiting on the engine, client CPU ms"
                  " (embedded DuckDB runs in the client thread: its CPU is in both)")
    verdict_text = "not checked"
    if result.consistency is not None:
        failed = [f"{c['number']} ({c['violations']} {c['unit']})" for c in result.consistency["conditions"] if not c["holds"]]
        checked = ", ".join(str(c["number"]) for c in result.consistency["conditions"])
        verdict_text = f"conditions {checked} all hold" if not failed else f"VIOLATED: {', '.join(failed)}"
    console.print(f"tpmC {m['tpmC']:,.0f}  txn/s {m['txn_per_s']:,.1f}  abort rate {m['abort_rate']:.1%}  "
                  f"priority retries {m.get('priority_retries', 0)} (not aborts)  "
                  f"errors {m['errors']}  (done = commits + {m['rollbacks']} New-Order user rollbacks)")
    console.print(f"consistency: {verdict_text}")
    if m.get("planning"):
        console.print(planning_report(m["planning"]))
    for sample in m["error_samples"]:
        console.print(f"  error: {sample}")
    if m.get("intervals"):
        from bench.tpcc.intervals import interval_rows

        table(f"{result.system}: per interval (rows: sampled at the interval's end)", *interval_rows(m["intervals"]), console)
    if m["stuck_clients"]:
        console.print(f"  {m['stuck_clients']} client(s) still inside a transaction two minutes after the end")

"""HTAP: N TPC-C clients and M CH-benCHmark clients at once on one system (paper,
section 4.3.3). Reports OLTP throughput and the OLAP clients' per-query and total times,
for one point or for the paper's sweeps: fixed OLTP with varying OLAP clients, fixed
OLAP with varying OLTP clients, and both scaled together.

Clients are threads of this process, each with its own connection. A client spends
almost all its time waiting on the engine (DuckDB's library and the socket reads of the
PostgreSQL and MonetDB drivers release the GIL), so threads load the engine as processes
would; and every tique-duckdb connection must live in the one process that has the
database file open, sharing its in-process oracle, which processes could not.

OLAP clients loop over the 22 queries, client i starting at query 1 + i * 22 / M so
that concurrent clients run different queries; each query is its own transaction. A
query started before the end of the run is let finish and counted.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from bench.chbench.queries import QUERIES, Query
from bench.chbench.run import analyze, prepare, run_query, set_query_timeout
from bench.results import Result, finish, table
from bench.tpcc.loader import FULL, Loaded, Scale
from drivers import System, system_for

SWEEPS = ("olap", "oltp", "both")


@dataclass
class OlapStats:
    runs: dict[str, list[float]] = field(default_factory=dict)  # query -> seconds of each completed run
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0  # from the start until the last OLAP client finished

    @property
    def completed(self) -> int:
        return sum(len(v) for v in self.runs.values())

    @property
    def rounds(self) -> int:
        """Complete passes over the 22 queries: the fewest runs of any query."""
        return min((len(self.runs.get(q.name, ())) for q in QUERIES), default=0)

    def median(self, name: str) -> float:
        runs = self.runs.get(name)
        return statistics.median(runs) if runs else float("nan")

    @property
    def total_median(self) -> float:
        """Sum of the per-query medians: the time one pass over the 22 queries takes
        under this load (NaN until every query has completed once)."""
        return sum(self.median(q.name) for q in QUERIES)


@dataclass
class HtapPoint:
    system: str
    oltp_clients: int
    olap_clients: int
    duration: float
    oltp: dict[str, Any] | None = None
    olap: OlapStats = field(default_factory=OlapStats)
    # The machine's 1-minute load average as the point began and as it ended: other work
    # on a shared machine skews a point, and this says how much there was beside it.
    load: tuple[float, float] | None = None

    def metrics(self) -> dict[str, Any]:
        olap = self.olap
        return {
            "oltp_clients": self.oltp_clients, "olap_clients": self.olap_clients, "duration_s": self.duration,
            "load_average": list(self.load) if self.load else None, "oltp": self.oltp,
            "olap": {"queries_completed": olap.completed, "rounds": olap.rounds, "seconds": olap.seconds,
                     "queries_per_s": olap.completed / olap.seconds if olap.seconds else 0.0,
                     "total_median_s": olap.total_median if olap.completed else None,
                     "queries": {q.name: {"median_s": olap.median(q.name), "runs_s": olap.runs.get(q.name, [])}
                                 for q in QUERIES},
                     "error_samples": olap.errors[:5]},
        }


def _olap_client(system: System, index: int, clients: int, deadline: float, stats: OlapStats, lock: threading.Lock,
                 queries: Sequence[Query], timeout: float | None, options: dict[str, Any]) -> None:
    runs: dict[str, list[float]] = {}
    errors: list[str] = []
    try:
        conn = system.connect(**options)
    except Exception as error:  # noqa: BLE001 - reported with the results
        with lock:
            stats.errors.append(f"connect: {type(error).__name__}: {error}"[:500])
        return
    try:
        set_query_timeout(conn, system, timeout)
        position = index * len(queries) // max(1, clients)
        while time.perf_counter() < deadline:
            query = queries[position % len(queries)]
            position += 1
            try:
                elapsed, _, _ = run_query(conn, query)
                runs.setdefault(query.name, []).append(elapsed)
            except Exception as error:  # noqa: BLE001 - reported with the results
                errors.append(f"{query.name}: {type(error).__name__}: {error}"[:500])
    finally:
        try:
            conn.close()
        except Exception:  # already gone
            pass
        with lock:
            for name, seconds in runs.items():
                stats.runs.setdefault(name, []).extend(seconds)
            stats.errors.extend(errors)


def run_point(system: System, loaded: Loaded, oltp_clients: int, olap_clients: int, duration: float,
              queries: Sequence[Query] = QUERIES, query_timeout: float | None = None, seed: int = 42,
              olap_options: dict[str, Any] | None = None) -> HtapPoint:
    """OLTP and OLAP clients together for `duration` seconds. `olap_options`: tique
    connect options of the OLAP clients alone (analytic_queue)."""
    from bench.tpcc.run import run as run_tpcc

    point = HtapPoint(system.name, oltp_clients, olap_clients, duration)
    oltp_result: list[Any] = []
    oltp_error: list[BaseException] = []

    def oltp() -> None:
        try:
            oltp_result.append(run_tpcc(system, loaded, oltp_clients, duration, warmup=0.0, seed=seed))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            oltp_error.append(error)

    load_before = _load_1min()
    began = time.perf_counter()
    deadline = began + duration
    lock = threading.Lock()
    threads = [threading.Thread(target=oltp, name="htap-oltp", daemon=True)] if oltp_clients else []
    threads += [threading.Thread(target=_olap_client, name=f"htap-olap-{i}", daemon=True,
                                 args=(system, i, olap_clients, deadline, point.olap, lock, queries, query_timeout,
                                       dict(olap_options or {})))
                for i in range(olap_clients)]
    for t in threads:
        t.start()
    # A query started just before the deadline runs to its end; past the timeout (or ten
    # minutes without one) a client counts as stuck and is left behind.
    limit = deadline + (query_timeout or 600) + 120
    for t in threads:
        t.join(timeout=max(0.0, limit - time.perf_counter()))
    point.olap.seconds = time.perf_counter() - began if olap_clients else 0.0
    load_after = _load_1min()
    if load_before is not None and load_after is not None:
        point.load = (load_before, load_after)
    if oltp_error:
        raise oltp_error[0]
    if oltp_result:
        m = oltp_result[0].metrics()
        point.oltp = {"txn_per_s": m["txn_per_s"], "tpmC": m["tpmC"], "commits": m["commits"], "aborts": m["aborts"],
                      "abort_rate": m["abort_rate"], "errors": m["errors"], "error_samples": m["error_samples"],
                      "stuck_clients": m["stuck_clients"]}
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        point.olap.errors.append(f"still running after the time limit: {', '.join(stuck)}")
    return point


def _load_1min() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def sweep_points(sweep: str | None, oltp_clients: int, olap_clients: int, counts: Sequence[int]) -> list[tuple[int, int]]:
    """(OLTP clients, OLAP clients) per point: `olap` varies OLAP over `counts` with OLTP
    fixed, `oltp` the reverse, `both` sets both to each count; None is the one point."""
    if sweep is None:
        return [(oltp_clients, olap_clients)]
    if sweep not in SWEEPS:
        raise ValueError(f"unknown sweep {sweep!r}; choose one of {', '.join(SWEEPS)}")
    if not counts:
        raise ValueError("a sweep needs client counts (--counts)")
    if sweep == "olap":
        return [(oltp_clients, c) for c in counts]
    if sweep == "oltp":
        return [(c, olap_clients) for c in counts]
    return [(c, c) for c in counts]


def run_order(points: Sequence[tuple[int, int]], settings: Sequence[Any], paired: bool) -> list[tuple[Any, int, int]]:
    """(setting, OLTP clients, OLAP clients) in the order they run. Unpaired: every point
    once per setting, setting by setting. Paired: point by point, each setting in turn,
    and every point with OLAP clients right after a baseline of its own (the same OLTP
    clients alone, same setting), so that a point and what it is compared with run
    minutes, not a whole sweep, apart on a machine whose load drifts."""
    if not paired:
        return [(w, o, a) for w in settings for o, a in points]
    order: list[tuple[Any, int, int]] = []
    for oltp, olap in points:
        if olap and oltp:
            for w in settings:
                order += [(w, oltp, 0), (w, oltp, olap)]
        elif not (olap == 0 and any(o == oltp and a for o, a in points)):  # else it runs beside each loaded point
            order += [(w, oltp, olap) for w in settings]
    return order


def oltp_loss(points: Sequence[dict[str, Any]]) -> list[float | None]:
    """Per point, the share of OLTP throughput its OLAP clients cost: against the nearest
    earlier point of the same setting and OLTP clients without OLAP clients (None where
    there is none, or for a baseline itself)."""
    losses: list[float | None] = []
    for i, point in enumerate(points):
        loss = None
        if point["olap_clients"] and point["oltp"]:
            for base in reversed(points[:i]):
                if (base["olap_clients"] == 0 and base["oltp_clients"] == point["oltp_clients"]
                        and base.get("analytic_workers") == point.get("analytic_workers") and base["oltp"]):
                    if base["oltp"]["txn_per_s"]:
                        loss = 1 - point["oltp"]["txn_per_s"] / base["oltp"]["txn_per_s"]
                    break
        losses.append(loss)
    return losses


def benchmark(system_name: str, warehouses: int = 1, oltp_clients: int = 1, olap_clients: int = 1,
              duration: float = 60.0, sweep: str | None = None, counts: Sequence[int] = (), url: str | None = None,
              out: str | None = None, scale: Scale = FULL, seed: int = 1, checkpoint_ms: int | None = 1000,
              query_timeout: float | None = None, system: System | None = None, console: Any = None,
              progress: bool = True, analytic_workers: Sequence[int | str | None] = ("auto",),
              analytic_queue: bool = False, paired: bool = False) -> Result:
    """Loads (or reuses), then runs each point of the sweep (or the one point) in turn on
    the same database; writes `out` and prints a table. A tique system runs the points
    once per `analytic_workers` value (the connect option capping the engine workers of
    an analytical read): the trade-off between OLTP kept and OLAP slowed, side by side.
    `analytic_queue`: the OLAP clients (only) connect with that option, their capped
    reads taking turns within the analytic budget. `paired`: see run_order."""
    from bench.console import report_console

    console = console or report_console()
    points_wanted = sweep_points(sweep, oltp_clients, olap_clients, counts)
    if any(o < 0 or a < 0 or o + a == 0 for o, a in points_wanted):
        raise ValueError("every point needs at least one client and no negative counts")
    with system_for(system_name, system, url, checkpoint_ms) as system:
        loaded = prepare(system, warehouses, scale, seed=seed, progress=progress, console=console)
        result = Result("htap", system.name, system.version(), {
            "warehouses": warehouses, "oltp_clients": oltp_clients, "olap_clients": olap_clients,
            "duration_s": duration, "sweep": sweep, "counts": list(counts), "scale": asdict(loaded.scale),
            "full_scale": loaded.scale == FULL, "seed": seed, "checkpoint_ms": checkpoint_ms,
            "query_timeout_s": query_timeout, "clients_are": "threads", "analytic_workers": list(analytic_workers),
            "tique_options": dict(system.tique_options) if system.through_tique else None,
            "olap_analytic_queue": analytic_queue if system.through_tique else None, "paired": paired})
        olap_options = {"analytic_queue": True} if analytic_queue and system.through_tique else {}
        points = []
        settings = list(analytic_workers) if system.through_tique else [None]
        for workers, oltp, olap in run_order(points_wanted, settings, paired):
            n = points_wanted.index((oltp, olap)) if (oltp, olap) in points_wanted else 0
            if system.through_tique:
                system.tique_options["analytic_workers"] = workers
            if progress:
                console.print(f"{system.name}: {oltp} OLTP + {olap} OLAP client(s) for {duration:g} s"
                              + (f", analytic_workers={workers}" if system.through_tique else ""))
            analyze(system)
            point = run_point(system, loaded, oltp, olap, duration, query_timeout=query_timeout, seed=42 + n,
                              olap_options=olap_options)
            points.append({**point.metrics(), "analytic_workers": workers if system.through_tique else None})
        for point, loss in zip(points, oltp_loss(points)):
            point["oltp_loss"] = loss
        result.metrics = {"points": points}
        return finish(result, out, show, console)


def show(result: Result, console: Any = None) -> None:
    p = result.parameters
    rows = []
    for point in result.metrics["points"]:
        oltp, olap = point["oltp"] or {}, point["olap"]
        workers = point.get("analytic_workers")
        workers = workers if workers is not None else ("none" if result.system.startswith("tique-") else "-")
        loss = point.get("oltp_loss")
        rows.append([point["oltp_clients"], point["olap_clients"], workers, oltp.get("txn_per_s"),
                     round(loss * 100, 1) if loss is not None else None, oltp.get("tpmC"),
                     round(oltp["abort_rate"] * 100, 1) if oltp else None, olap["queries_completed"], olap["rounds"],
                     olap["total_median_s"], "/".join(f"{x:g}" for x in point.get("load_average") or ()) or None])
    title = f"HTAP {result.system}: W={p['warehouses']}, {p['duration_s']:g} s per point" + (
        f", sweep {p['sweep']}" if p["sweep"] else "") + (", OLAP clients queue for the analytic budget" if p.get("olap_analytic_queue") else "") + (
        ", each loaded point beside its baseline" if p.get("paired") else "")
    table(title, ["OLTP", "OLAP", "workers", "txn/s", "loss%", "tpmC", "abort%", "queries", "rounds", "22-query total s", "load 1m begin/end"], rows, console)
    from bench.console import report_console

    console = console or report_console()
    for point in result.metrics["points"]:
        for sample in (point["oltp"] or {}).get("error_samples", []) + point["olap"]["error_samples"]:
            console.print(f"  error ({point['oltp_clients']}+{point['olap_clients']}): {sample}")

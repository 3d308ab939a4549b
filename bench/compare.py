"""`tique bench compare`: several systems through the same benchmarks in one run, on the
same machine, with ratios side by side and the paper's ratios beside them.

Each system gets its own database. The PostgreSQL systems share one throwaway cluster,
and the MonetDB systems share one server (a schema each), so they compete for the same
machine in the same way. Systems run one after another, never at once.
"""
from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from bench.analysis import paper
from bench.results import now, write
from bench.tpcc.loader import FULL, TINY, Scale
from drivers import System, open_system

@functools.cache
def _paper_tpcc_throughput() -> dict[tuple[str, int], float]:
    """The paper's uncontended TPC-C transactions/s by (system, clients), from its published results."""
    return {(r["system"], r["clients"]): r["throughput"] for r in paper.tpcc_rows() if not r["contention_run"]}


@functools.cache
def _paper_chbench_total_s() -> dict[str, float]:
    """The paper's CH-benCHmark totals by system: the sum of its 22 query times."""
    totals: dict[str, float] = {}
    for r in paper.chbench_rows():
        totals[r["system"]] = totals.get(r["system"], 0.0) + r["seconds"]
    return totals


# A tenth of the specification's items and customers: the default of the README's
# two-minute run. Not a TPC-C result; `full` is.
SMALL = Scale(items=10_000, customers=300, orders=300)
SCALES = {"full": FULL, "small": SMALL, "tiny": TINY}


@dataclass
class CompareConfig:
    systems: Sequence[str] = ("native-duckdb", "tique-duckdb")
    warehouses: int = 1
    clients: Sequence[int] = (1, 4)
    tpcc_seconds: float = 10.0
    warmup_seconds: float = 2.0
    # The paper runs each query five times in a row and sums the per-query means (section
    # 4.3.2, figure 9a): the first run plans the query (tique: its rewrite, and the engine
    # plans a larger statement), the others show what an analytical client meets.
    chbench_repetitions: int = 5
    chbench_oltp_seconds: float = 5.0
    htap: tuple[int, int, float] | None = None  # (OLTP clients, OLAP clients, seconds)
    scale: Scale = FULL
    checkpoint_ms: int = 1000
    out_dir: Path = Path("results")
    urls: dict[str, str] = field(default_factory=dict)  # system -> existing database


class SharedServers:
    """One PostgreSQL cluster and one MonetDB server for every system that needs them."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.monetdb: Any = None
        self.scratch = Path(tempfile.mkdtemp(prefix="tique-compare-"))

    def url_for(self, system: str) -> str | None:
        engine = system.split("-", 1)[1]
        if engine == "postgres":
            if self.cluster is None:
                from drivers.pg_cluster import ThrowawayCluster
                from drivers.postgres_engine import cluster_settings

                self.cluster = ThrowawayCluster(settings=cluster_settings())
            return self.cluster.create_database(system.replace("-", "_"))
        if engine == "monetdb":
            import os

            base = os.environ.get("TIQUE_MONETDB_URL")
            if base is None:
                if self.monetdb is None:
                    from drivers.monetdb_server import MonetDBServer

                    self.monetdb = MonetDBServer()
                base = self.monetdb.url
            return f"{base}{'&' if '?' in base else '?'}schema={system.replace('-', '_')}"
        return None

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self.monetdb is not None:
            self.monetdb.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _open(name: str, config: CompareConfig, servers: SharedServers) -> System:
    options: dict[str, Any] = {"checkpoint_interval_ms": config.checkpoint_ms} if name.startswith("tique-") else {}
    url = config.urls.get(name) or servers.url_for(name)
    return open_system(name, url=url, workdir=servers.scratch / name, **options)


def run_system(name: str, config: CompareConfig, servers: SharedServers, console: Any) -> dict[str, Any]:
    from bench.chbench import htap as htap_bench
    from bench.chbench import run as chbench
    from bench.tpcc import run as tpcc

    out = config.out_dir
    system = _open(name, config, servers)
    summary: dict[str, Any] = {"system": name, "version": system.version(), "tpcc": {}, "consistent": True}
    try:
        for clients in config.clients:
            console.print(f"[bold]{name}[/bold]: TPC-C, {clients} client(s), {config.tpcc_seconds:g} s")
            result = tpcc.benchmark(name, config.warehouses, clients, config.tpcc_seconds, config.warmup_seconds,
                                    system=system, scale=config.scale, out=str(out / f"tpcc-{name}-c{clients}.json"),
                                    console=console, progress=False)
            m = result.metrics
            summary["tpcc"][clients] = {"txn_per_s": m.get("txn_per_s"), "tpmc": m.get("tpmC"),
                                        "abort_rate": m.get("abort_rate")}
            summary["consistent"] = summary["consistent"] and bool((result.consistency or {}).get("all_hold"))
        console.print(f"[bold]{name}[/bold]: CH-benCHmark, {config.chbench_repetitions} repetition(s)")
        ch = chbench.benchmark(name, config.warehouses, config.chbench_repetitions, config.chbench_oltp_seconds,
                               system=system, scale=config.scale, out=str(out / f"chbench-{name}.json"),
                               console=console, progress=False)
        summary["chbench_total_s"] = ch.metrics["total_mean_s"]  # as the paper's (CompareConfig.chbench_repetitions)
        summary["chbench_first_run_total_s"] = sum(q["runs_s"][0] for q in ch.metrics["queries"].values() if q["runs_s"])
        summary["chbench_failed"] = ch.metrics["failed"]
        if config.htap is not None:
            oltp, olap, seconds = config.htap
            # With OLAP clients, the same OLTP clients alone first: the OLTP throughput the
            # queries cost is the paper's HTAP measure (figure 10a).
            counts = [0, olap] if olap and oltp else [olap]
            console.print(f"[bold]{name}[/bold]: HTAP, {oltp} OLTP + {' then '.join(map(str, counts))} OLAP clients, {seconds:g} s each")
            hp = htap_bench.benchmark(name, config.warehouses, oltp, olap, seconds, sweep="olap", counts=counts, system=system,
                                      scale=config.scale, out=str(out / f"htap-{name}.json"), console=console, progress=False)
            summary["htap"] = hp.metrics["points"][-1]
            if len(counts) == 2:
                summary["htap_oltp_alone"] = hp.metrics["points"][0]
    finally:
        system.close()
    return summary


def _baseline(name: str, names: Sequence[str]) -> str | None:
    """tique-X is compared with native-X; native systems with native-monetdb when present."""
    engine = name.split("-", 1)[1]
    if name.startswith("tique-") and f"native-{engine}" in names:
        return f"native-{engine}"
    return None


def _ratio(a: Any, b: Any) -> float | None:
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def _paper_tpcc_ratio(name: str, base: str, clients: int) -> float | None:
    throughput = _paper_tpcc_throughput()
    return _ratio(throughput.get((name, clients)), throughput.get((base, clients)))


def report(summaries: list[dict[str, Any]], config: CompareConfig, console: Any) -> list[list[Any]]:
    names = [s["system"] for s in summaries]
    by_name = {s["system"]: s for s in summaries}
    rows: list[list[Any]] = []
    for clients in config.clients:
        for s in summaries:
            t = s["tpcc"].get(clients, {})
            base = _baseline(s["system"], names)
            ratio = _ratio(t.get("txn_per_s"), by_name[base]["tpcc"].get(clients, {}).get("txn_per_s")) if base else None
            rows.append([f"TPC-C txn/s, {clients} client(s)", s["system"], t.get("txn_per_s"),
                         None if t.get("abort_rate") is None else t["abort_rate"] * 100,
                         f"{ratio:.2f}x" if ratio else "", _fmt_paper(_paper_tpcc_ratio(s["system"], base, clients) if base else None)])
            # New-Orders per minute: what a native engine that aborts most New-Orders loses
            # shows here, while the read-only transactions it never aborts fill txn/s.
            tpmc = _ratio(t.get("tpmc"), by_name[base]["tpcc"].get(clients, {}).get("tpmc")) if base else None
            rows.append([f"TPC-C tpmC, {clients} client(s)", s["system"], t.get("tpmc"), None,
                         f"{tpmc:.2f}x" if tpmc else "", ""])
    for s in summaries:
        base = _baseline(s["system"], names)
        ratio = _ratio(s.get("chbench_total_s"), by_name[base].get("chbench_total_s")) if base else None
        paper_ratio = _ratio(_paper_chbench_total_s().get(s["system"]), _paper_chbench_total_s().get(base or "")) if base else None
        failed = f" ({len(s['chbench_failed'])} failed)" if s.get("chbench_failed") else ""
        rows.append([f"CH-benCHmark total s{failed}", s["system"], s.get("chbench_total_s"), None,
                     f"{ratio:.2f}x" if ratio else "", _fmt_paper(paper_ratio)])
        # Beside it, each query's first run alone: what a fresh process meets (tique plans each text then).
        first = _ratio(s.get("chbench_first_run_total_s"), by_name[base].get("chbench_first_run_total_s")) if base else None
        rows.append([f"CH-benCHmark first runs s{failed}", s["system"], s.get("chbench_first_run_total_s"), None,
                     f"{first:.2f}x" if first else "", ""])
    for s in summaries:
        point = s.get("htap")
        if point:
            oltp = point.get("oltp") or {}
            rows.append([f"HTAP OLTP txn/s ({point.get('oltp_clients')} OLTP + {point.get('olap_clients')} OLAP)", s["system"],
                         oltp.get("txn_per_s"), None, "", ""])
            rows.append([f"HTAP OLAP queries/s ({point.get('oltp_clients')} OLTP + {point.get('olap_clients')} OLAP)", s["system"],
                         (point.get("olap") or {}).get("queries_per_s"), None, "", ""])
            alone = (s.get("htap_oltp_alone") or {}).get("oltp") or {}
            loss = _loss(alone.get("txn_per_s"), oltp.get("txn_per_s"))
            if loss is not None:
                paper_loss = _paper_htap_loss(s["system"], point.get("oltp_clients"), point.get("olap_clients"))
                rows.append([f"HTAP OLTP lost to {point.get('olap_clients')} OLAP client(s), %", s["system"], loss, None, "",
                             "" if paper_loss is None else f"{paper_loss:.0f}%"])
    title = (f"tique bench compare: {config.warehouses} W, TPC-C {config.tpcc_seconds:g} s per point"
             f"{'' if config.scale == FULL else ', reduced scale'}")
    console.print(matrix(rows, names, title))
    console.print("÷: a tique system's value over the native system of the same engine (CH-benCHmark: time, "
                  "lower is better)")
    paper_notes = [f"{r[1]} {r[0]} {r[5]}" for r in rows if r[5]]
    if paper_notes:
        console.print("the same ratio in the TiQuE paper (512 warehouses, 32 vCPUs): " + "; ".join(paper_notes))
    for s in summaries:
        if not s["consistent"]:
            console.print(f"[red]{s['system']}: a TPC-C consistency condition failed[/red]")
    return rows


def _loss(alone: Any, shared: Any) -> float | None:
    """How much OLTP throughput, in percent, the OLAP clients took away."""
    ratio = _ratio(shared, alone)
    return None if ratio is None else (1 - ratio) * 100


@functools.cache
def _paper_htap_oltp() -> dict[tuple[str, int, int], float]:
    """The paper's OLTP transactions/s by (system, OLTP clients, OLAP clients), figure 10a."""
    return {(r["system"], r["oltp_clients"], r["olap_clients"]): r["oltp_txs"]
            for r in paper.htap_rows() if r["sweep"] == "olap" and r["oltp_txs"] is not None}


def _paper_htap_loss(name: str, oltp: Any, olap: Any) -> float | None:
    published = _paper_htap_oltp()
    return _loss(published.get((name, oltp, 0)), published.get((name, oltp, olap)))


# A metric's short name in the terminal matrix, so that six systems fit 100 columns.
_SHORT = (("TPC-C txn/s, ", "txn/s, "), ("TPC-C tpmC, ", "tpmC, "), (" client(s)", " cl"),
          ("CH-benCHmark ", "CH "), ("HTAP OLTP lost to ", "HTAP OLTP lost, "), (" OLAP client(s), %", " OLAP %"))


def matrix(rows: Sequence[Sequence[Any]], names: Sequence[str], title: str) -> Any:
    """report's rows as one compact matrix: a row per metric (abort rates as rows of their
    own), a column per system, and after each tique column its ratio over native."""
    from rich import box
    from rich.table import Table

    metrics: dict[str, dict[str, Any]] = {}
    for benchmark, system, value, abort, ratio, _ in rows:
        label = benchmark
        for long, short in _SHORT:
            label = label.replace(long, short)
        metrics.setdefault(label, {})[system] = value
        metrics[label][f"÷ {system}"] = ratio
        if abort is not None:
            aborts = label.replace("txn/s", "abort %")
            metrics.setdefault(aborts, {})[system] = abort
    view = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    view.add_column("metric", no_wrap=True)
    for name in names:
        kind, _, engine = name.partition("-")
        view.add_column(f"{kind}\n{engine.replace('postgres', 'pg')}", justify="right", no_wrap=True)
        if any(row[1] == name and row[4] for row in rows):
            view.add_column("÷", justify="right", no_wrap=True)
    for label, values in metrics.items():
        cells = [label]
        for name in names:
            value = values.get(name)
            cells.append(_compact(value))
            if any(row[1] == name and row[4] for row in rows):
                cells.append(values.get(f"÷ {name}") or "")
        view.add_row(*cells)
    return view


def _compact(value: Any) -> str:
    """A number in at most 7 characters: no decimals from 100 up, two below 10 (CH-benCHmark
    totals of a fraction of a second)."""
    from bench.results import _cell

    if isinstance(value, float) and value == value and abs(value) >= 100:
        return f"{value:,.0f}"
    if isinstance(value, float) and value == value and abs(value) < 10:
        return f"{value:.2f}"
    return _cell(value)


def _fmt_paper(value: float | None) -> str:
    return f"{value:.2f}x" if value else ""


def chart(summaries: list[dict[str, Any]], config: CompareConfig, path: Path) -> Path:
    """TPC-C throughput by clients and CH-benCHmark total time, one bar per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(summaries))
    for i, s in enumerate(summaries):
        xs = [c + (i - (len(summaries) - 1) / 2) * width for c in range(len(config.clients))]
        left.bar(xs, [s["tpcc"].get(c, {}).get("txn_per_s") or 0 for c in config.clients], width, label=s["system"])
    left.set_xticks(range(len(config.clients)), [str(c) for c in config.clients])
    left.set_xlabel("clients")
    left.set_ylabel("TPC-C transactions/s")
    left.legend()
    right.bar([s["system"] for s in summaries], [s.get("chbench_total_s") or 0 for s in summaries],
              color=[f"C{i}" for i in range(len(summaries))])
    right.set_ylabel("CH-benCHmark: sum of 22 query medians, s")
    right.tick_params(axis="x", rotation=20)
    fig.suptitle(f"tique vs native, {config.warehouses} warehouse(s), same machine, same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compare(config: CompareConfig, console: Any = None) -> dict[str, Any]:
    from bench.console import report_console

    console = console or report_console()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    started = now()
    servers = SharedServers()
    try:
        summaries = [run_system(name, config, servers, console) for name in config.systems]
    finally:
        servers.close()
    rows = report(summaries, config, console)
    document = {"benchmark": "compare", "started_at": started, "finished_at": now(),
                "parameters": {"systems": list(config.systems), "warehouses": config.warehouses,
                               "clients": list(config.clients), "tpcc_seconds": config.tpcc_seconds,
                               "chbench_repetitions": config.chbench_repetitions, "htap": config.htap,
                               "full_scale": config.scale == FULL},
                "systems": summaries, "table": rows}
    write(document, config.out_dir / "compare.json")
    png = chart(summaries, config, config.out_dir / "compare.png")
    console.print(f"results: {config.out_dir}/ (one JSON per run, compare.json) and chart {png}")
    return document

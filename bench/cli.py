"""The benchmark commands of `tique`: `tique demo` and `tique bench ...`.

tique's command line finds this module (tique/cli.py, PARTS) and calls `register`; it
needs the `bench` extra (rich, numpy, ...), which the driver alone does not install.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from bench.console import report_console
from rich.table import Table

from drivers import SYSTEMS


def _tpcc_data_arguments(parser: argparse.ArgumentParser, systems: Sequence[str]) -> None:
    """What every benchmark over TPC-C data asks first: the system and the database."""
    parser.add_argument("--system", required=True, choices=systems)
    parser.add_argument("--url", help="database to load into, or to reuse when it already holds this load (default: a fresh one)")
    parser.add_argument("--warehouses", type=int, default=1)


def _demo(args: argparse.Namespace) -> int:
    from bench.bank import run_native, run_tique

    console = report_console()
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="tique-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    native_path = str(workdir / "native.db")
    tique_url = f"duckdb:///{workdir / 'tique.db'}"
    console.print(f"bank transfers: {args.threads} threads x {args.seconds:g}s on DuckDB, {args.accounts} accounts")
    native = run_native(native_path, args.threads, args.seconds, args.accounts)
    tq = run_tique(tique_url, args.threads, args.seconds, args.accounts)
    table = Table(title="tique vs native DuckDB (same machine, same run)")
    for col in ("system", "commits", "aborts", "commits/s", "abort rate", "money conserved"):
        table.add_column(col)
    for r in (native, tq):
        table.add_row(r.system, str(r.commits), str(r.aborts), f"{r.throughput:.0f}", f"{r.abort_rate:.1%}", "yes" if r.conserved else "NO")
    console.print(table)
    ratio = tq.throughput / native.throughput if native.throughput else float("inf")
    console.print(f"tique/native throughput: {ratio:.2f}x")
    return 0 if native.conserved and tq.conserved else 1



def _bench_planning(args: argparse.Namespace) -> int:
    import time

    from bench.planning import run

    print(run(tuple(args.dialects), time.process_time if args.cpu else time.perf_counter))
    return 0


def _bench_longtx(args: argparse.Namespace) -> int:
    from bench import longtx
    from bench.results import Result, now, table, write
    from drivers import open_system

    from bench.tpcc.run import isolation_options

    system = open_system(args.system, url=args.url)
    rows, results = [], []
    try:
        isolation_options(system, args.isolation)  # a level the system lacks is refused before the load
        longtx.load(system, args.rows)
        modes = [False, True] if args.priority == "both" else [args.priority == "on"]
        for clients in args.clients:
            for priority in modes:
                if priority and not system.through_tique:
                    continue
                outcome = longtx.run(system, clients, args.duration, priority, rows=args.rows,
                                     regular_ops=args.regular_ops, long_ops=args.long_ops, isolation=args.isolation)
                metrics = outcome.metrics()
                results.append(Result("longtx", system.name, system.version(),
                                      {"clients": clients, "duration": args.duration, "rows": args.rows,
                                       "regular_ops": args.regular_ops, "long_ops": args.long_ops, "priority": outcome.priority,
                                       "isolation": outcome.isolation},
                                      metrics, finished_at=now()).as_dict())
                rows.append([clients, "on" if outcome.priority else "off", metrics["regular_commits"], metrics["regular_abort_rate"] * 100,
                             metrics["long_commits"], metrics["long_abort_rate"] * 100, metrics["long_priority_retries"],
                             metrics["long_most_aborts"],
                             (metrics["long_rt"] or float("nan")) * 1000, metrics["txs"]])
    finally:
        system.close()
    table(f"{args.system} at {args.isolation or 'snapshot'}: long transactions ({args.long_ops}-op long client, {args.regular_ops}-op others), {args.duration:g}s each",
          ["clients", "priority", "short commits", "short abort %", "long commits", "long abort %",
           "long priority retries", "most aborts of one long txn",
           "long rt ms", "txn/s"], rows)
    if args.out:
        write({"benchmark": "longtx", "runs": results}, args.out)
    return 0


def _bench_compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bench.compare import SCALES, CompareConfig, compare

    urls = dict(item.split("=", 1) for item in args.url or [])
    config = CompareConfig(systems=args.systems, warehouses=args.warehouses, clients=args.clients,
                           tpcc_seconds=args.tpcc_seconds, warmup_seconds=args.warmup,
                           chbench_repetitions=args.chbench_repetitions, chbench_oltp_seconds=args.chbench_oltp_seconds,
                           htap=(args.htap[0], args.htap[1], float(args.htap[2])) if args.htap else None,
                           scale=SCALES[args.scale], out_dir=Path(args.out_dir), urls=urls)
    document = compare(config)
    return 0 if all(s["consistent"] for s in document["systems"]) else 1


def _bench_contention(args: argparse.Namespace) -> int:
    """TPC-C with 99% of transactions on K warehouses, for each K, on one load (paper 4.3.1)."""
    from bench.results import table, write
    from bench.tpcc.loader import FULL, TINY
    from bench.tpcc.run import benchmark
    from drivers import open_system

    options = {"checkpoint_interval_ms": args.checkpoint_ms} if args.system.startswith("tique-") and args.checkpoint_ms else {}
    system = open_system(args.system, url=args.url, **options)
    runs, rows, healthy = [], [], True
    try:
        for k in args.ks:
            result = benchmark(args.system, warehouses=args.warehouses, clients=args.clients, duration=args.duration,
                               warmup=args.warmup, contention=k, system=system, scale=TINY if args.tiny else FULL, progress=False)
            runs.append(result.as_dict())
            holds = bool((result.consistency or {}).get("all_hold"))
            healthy = healthy and holds
            rows.append([k, result.metrics["txn_per_s"], result.metrics["abort_rate"] * 100, holds])
    finally:
        system.close()
    table(f"{args.system}: contention, {args.warehouses} warehouse(s), {args.clients} client(s)",
          ["K warehouses", "txn/s", "abort %", "consistent"], rows)
    if args.out:
        write({"benchmark": "contention", "runs": runs}, args.out)
    return 0 if healthy else 1


def _bench_packed(args: argparse.Namespace) -> int:
    from bench.packed import compare, report

    results = compare(args.monetdb, warehouses=args.warehouses, items=args.items, repeats=args.repeats)
    print(report(results, args.warehouses * 10 * args.items))
    return 0


def _isolation_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--isolation", choices=("read-committed", "snapshot", "serializable"),
                        help="isolation level of the measured transactions (default: snapshot); native-postgres "
                             "runs at PostgreSQL's own level of that name (snapshot: REPEATABLE READ), native DuckDB "
                             "and MonetDB have snapshot isolation only and refuse the others")


def _bench_keys(args: argparse.Namespace) -> int:
    from bench.keys import native_monetdb, report, save, tique_system

    rows = []
    level = {"isolation_level": args.isolation} if args.isolation else {}
    for clients in args.clients:
        if args.monetdb:
            rows.append(native_monetdb(args.monetdb, clients, args.seconds))
            rows.append(tique_system(args.monetdb, clients, args.seconds, "tique-monetdb", commit_timeout=args.commit_timeout,
                                     checkpoint_interval_ms=args.checkpoint_ms, **level))
        if args.duckdb:
            rows.append(tique_system(args.duckdb, clients, args.seconds, "tique-duckdb", commit_timeout=args.commit_timeout,
                                     checkpoint_interval_ms=args.checkpoint_ms, **level))
        print(report(rows), flush=True)
    if args.out:
        save(rows, args.out, vars(args))
    return 0


def _bench_tpcc(args: argparse.Namespace) -> int:
    from bench.tpcc.loader import FULL, TINY
    from bench.tpcc.run import benchmark

    result = benchmark(args.system, warehouses=args.warehouses, clients=args.clients, duration=args.duration,
                       warmup=args.warmup, contention=args.contention, url=args.url, out=args.out,
                       scale=TINY if args.tiny else FULL, checkpoint_ms=args.checkpoint_ms or None, seed=args.seed,
                       isolation=args.isolation, report_every=args.report_every, priority=args.priority)
    healthy = (result.consistency or {}).get("all_hold", False) and not result.metrics["errors"]
    return 0 if healthy else 1


def _bench_chbench(args: argparse.Namespace) -> int:
    from bench.chbench.run import benchmark
    from bench.tpcc.loader import FULL, TINY

    result = benchmark(args.system, warehouses=args.warehouses, repetitions=args.repetitions,
                       oltp_seconds=args.oltp_seconds, oltp_clients=args.oltp_clients, url=args.url, out=args.out,
                       scale=TINY if args.tiny else FULL, checkpoint_ms=args.checkpoint_ms or None,
                       query_timeout=args.query_timeout)
    return 0 if not result.metrics["failed"] else 1


def _workers(text: str) -> int | str | None:
    """An --analytic-workers value: a positive number, auto or none."""
    if text.lower() in ("auto", "none"):
        return None if text.lower() == "none" else "auto"
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no worker count: give a positive number, auto or none")
    return int(text)


def _bench_htap(args: argparse.Namespace) -> int:
    from bench.chbench.htap import benchmark
    from bench.tpcc.loader import FULL, TINY

    result = benchmark(args.system, warehouses=args.warehouses, oltp_clients=args.oltp_clients,
                       olap_clients=args.olap_clients, duration=args.duration, sweep=args.sweep, counts=args.counts or (),
                       url=args.url, out=args.out, scale=TINY if args.tiny else FULL,
                       checkpoint_ms=args.checkpoint_ms or None, query_timeout=args.query_timeout,
                       analytic_workers=args.analytic_workers, analytic_queue=args.analytic_queue, paired=args.paired)
    failed = any((p["oltp"] or {}).get("errors") or p["olap"]["error_samples"] for p in result.metrics["points"])
    return 1 if failed else 0




def _bench_trace(args: argparse.Namespace) -> int:
    from bench.compare import SCALES
    from bench.trace import benchmark

    urls = dict(item.split("=", 1) for item in args.url or [])
    result = benchmark(args.engine, [kind.replace("-", "_") for kind in args.kind], args.transactions, args.warmup, SCALES[args.scale],
                       args.checkpoint_ms or None, urls, args.out, warehouses=args.warehouses)
    return 1 if any(s["errors"] for trace in result.metrics["traces"] for s in trace["systems"].values()) else 0


def _bench_executemany(args: argparse.Namespace) -> int:
    from bench.executemany import report, run
    from drivers import open_system

    urls = dict(item.split("=", 1) for item in args.url or [])
    outcomes = []
    for name in args.systems:
        system = open_system(name, url=urls.get(name))
        try:
            outcomes.append(run(system, args.rows, args.batch))
        finally:
            system.close()
    print(report(outcomes), flush=True)
    return 0


def _with_bench_options(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Applies the options of `tique bench` itself before a benchmark runs."""

    def run(args: argparse.Namespace) -> int:
        if getattr(args, "postgres_fast", False):
            from drivers.postgres_engine import set_durable

            set_durable(False)
        return func(args)

    return run


def register(sub: Any) -> None:
    """Adds `demo` and `bench` to tique's subcommands. Help strings go through
    %-formatting: a literal % is %%."""
    demo = sub.add_parser("demo", help="concurrent bank transfers: tique vs native DuckDB, side by side")
    demo.add_argument("--threads", type=int, default=4)
    demo.add_argument("--seconds", type=float, default=10.0)
    demo.add_argument("--accounts", type=int, default=1000)
    demo.add_argument("--dir", help="where to put the two database files (default: a temp dir)")
    demo.set_defaults(func=_demo)

    bench = sub.add_parser("bench", help="benchmarks: tique against native engines, printed side by side")
    bench.add_argument("--postgres-fast", action="store_true",
                       help="throwaway PostgreSQL clusters with fsync off (default: durable, fsync on, as users run it)")
    bench_sub = bench.add_subparsers(dest="benchmark", required=True)
    keys = bench_sub.add_parser("keys", help="transactions that read and update 2 random keys of a 10,000-row table")
    keys.add_argument("--monetdb", metavar="URL", help="monetdb://user:pw@host:port/db: native MonetDB vs tique-monetdb")
    keys.add_argument("--duckdb", metavar="URL", help="also tique on this DuckDB URL")
    keys.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    keys.add_argument("--seconds", type=float, default=10.0)
    keys.add_argument("--commit-timeout", type=float, default=10.0)
    keys.add_argument("--checkpoint-ms", type=int, default=200, help="background checkpointer interval for tique runs")
    keys.add_argument("--out", metavar="RESULT.json", help="write the results as JSON")
    _isolation_argument(keys)
    keys.set_defaults(func=_bench_keys)
    _SYSTEMS = SYSTEMS

    tpcc = bench_sub.add_parser("tpcc", help="TPC-C: the five transactions, standard mix, no think time; consistency checked after")
    _tpcc_data_arguments(tpcc, _SYSTEMS)
    tpcc.add_argument("--clients", type=int, default=1)
    tpcc.add_argument("--duration", type=float, default=30.0, metavar="SECONDS", help="measured seconds")
    tpcc.add_argument("--warmup", type=float, default=5.0, metavar="SECONDS")
    tpcc.add_argument("--contention", type=int, metavar="K", help="99%% of transactions on warehouses 1..K")
    tpcc.add_argument("--out", metavar="RESULT.json", help="write the result as JSON")
    tpcc.add_argument("--checkpoint-ms", type=int, default=1000, help="tique systems: background checkpointer interval (0: none)")
    tpcc.add_argument("--seed", type=int, default=42)
    _isolation_argument(tpcc)
    tpcc.add_argument("--report-every", type=float, metavar="SECONDS",
                      help="print and record (in --out) txn/s per interval and, for tique, the row counts of its caches and logs")
    tpcc.add_argument("--priority", action="store_true",
                      help="tique systems: priority mode on every client (its re-executions are counted apart from aborts)")
    tpcc.add_argument("--tiny", action="store_true", help="reduced cardinalities for smoke tests (not a TPC-C result)")
    tpcc.set_defaults(func=_bench_tpcc)
    chb = bench_sub.add_parser("chbench", help="CH-benCHmark: the 22 analytical queries over TPC-C data, after an OLTP run")
    _tpcc_data_arguments(chb, _SYSTEMS)
    chb.add_argument("--repetitions", type=int, default=5, help="runs of each query; the median is reported")
    chb.add_argument("--oltp-seconds", type=float, default=30.0, metavar="SECONDS",
                     help="TPC-C before the queries, to fill tique's caches (0: none)")
    chb.add_argument("--oltp-clients", type=int, default=1)
    chb.add_argument("--checkpoint-ms", type=int, default=0,
                     help="tique systems: background checkpointer interval (default 0: none, the caches keep every OLTP write)")
    chb.add_argument("--query-timeout", type=float, metavar="SECONDS", help="PostgreSQL: cancel a query after this long")
    chb.add_argument("--out", metavar="RESULT.json", help="write the result as JSON")
    chb.add_argument("--tiny", action="store_true", help="reduced TPC-C cardinalities for smoke tests (not a result)")
    chb.set_defaults(func=_bench_chbench)
    htap = bench_sub.add_parser("htap", help="TPC-C and CH-benCHmark clients at once: OLTP throughput and OLAP times")
    _tpcc_data_arguments(htap, _SYSTEMS)
    htap.add_argument("--oltp-clients", type=int, default=1)
    htap.add_argument("--olap-clients", type=int, default=1)
    htap.add_argument("--duration", type=float, default=60.0, metavar="SECONDS", help="per point")
    htap.add_argument("--sweep", choices=("olap", "oltp", "both"),
                      help="olap: vary OLAP clients over --counts (OLTP fixed); oltp: the reverse; both: scale both")
    htap.add_argument("--counts", type=int, nargs="+", metavar="N", help="client counts of the sweep, e.g. 0 1 2 4 6")
    htap.add_argument("--checkpoint-ms", type=int, default=1000, help="tique systems: background checkpointer interval (0: none)")
    htap.add_argument("--analytic-workers", type=_workers, nargs="+", default=["auto"], metavar="N|auto|none",
                      help="tique systems: run the points once per cap on an analytical read's engine workers "
                           "(the analytic_workers connect option; none: the engine's own), e.g. none auto 1")
    htap.add_argument("--analytic-queue", action="store_true",
                      help="tique systems: the OLAP clients connect with analytic_queue (their capped reads take turns "
                           "within half the server's workers; MonetDB)")
    htap.add_argument("--paired", action="store_true",
                      help="run point by point, each cap in turn, every point with OLAP clients right after a baseline "
                           "of its own (its OLTP clients alone): loss%% compares runs minutes apart on a loaded machine")
    htap.add_argument("--query-timeout", type=float, metavar="SECONDS", help="PostgreSQL: cancel a query after this long")
    htap.add_argument("--out", metavar="RESULT.json", help="write the result as JSON")
    htap.add_argument("--tiny", action="store_true", help="reduced TPC-C cardinalities for smoke tests (not a result)")
    htap.set_defaults(func=_bench_htap)
    cmp = bench_sub.add_parser("compare", help="several systems through TPC-C and CH-benCHmark (and an HTAP point) in one run, ratios side by side")
    cmp.add_argument("--systems", nargs="+", default=["native-duckdb", "tique-duckdb"])
    cmp.add_argument("--warehouses", type=int, default=1)
    cmp.add_argument("--clients", type=int, nargs="+", default=[1, 4], help="TPC-C client counts")
    cmp.add_argument("--tpcc-seconds", type=float, default=10.0, help="measured seconds per TPC-C point")
    cmp.add_argument("--warmup", type=float, default=2.0)
    cmp.add_argument("--chbench-repetitions", type=int, default=5,
                     help="runs of each query in a row; the total is the sum of their means, as the paper's (section 4.3.2)")
    cmp.add_argument("--chbench-oltp-seconds", type=float, default=5.0, help="TPC-C run that fills tique's caches before the queries")
    cmp.add_argument("--htap", nargs=3, metavar=("OLTP", "OLAP", "SECONDS"), type=int, help="also one HTAP point, run after the same OLTP clients alone (the OLTP lost to OLAP is reported)")
    cmp.add_argument("--scale", choices=["full", "small", "tiny"], default="small",
                     help="TPC-C cardinalities: full (the specification), small (1/10 items and customers; default, ~2 min), tiny (tests)")
    cmp.add_argument("--url", action="append", metavar="SYSTEM=URL", help="use an existing database for a system")
    cmp.add_argument("--out-dir", default="results", help="JSON results, compare.json and compare.png go here")
    cmp.set_defaults(func=_bench_compare)
    ct = bench_sub.add_parser("contention", help="TPC-C with 99%% of transactions on K warehouses, for each K (paper 4.3.1)")
    ct.add_argument("--system", required=True)
    ct.add_argument("--url", help="an existing database (default: a fresh one)")
    ct.add_argument("--warehouses", type=int, default=4)
    ct.add_argument("--clients", type=int, default=4)
    ct.add_argument("--ks", type=int, nargs="+", default=[4, 2, 1], metavar="K")
    ct.add_argument("--duration", type=float, default=30.0)
    ct.add_argument("--warmup", type=float, default=5.0)
    ct.add_argument("--checkpoint-ms", type=int, default=1000)
    ct.add_argument("--tiny", action="store_true", help="reduced cardinalities for smoke tests (not a TPC-C result)")
    ct.add_argument("--out", help="write the JSON results here")
    ct.set_defaults(func=_bench_contention)
    lt = bench_sub.add_parser("longtx", help="n-1 short read-write clients and one 100x longer one, with and without priority mode")
    lt.add_argument("--system", required=True)
    lt.add_argument("--url", help="an existing database (default: a fresh one)")
    lt.add_argument("--clients", type=int, nargs="+", default=[4], help="client counts, each including the long client")
    lt.add_argument("--duration", type=float, default=30.0)
    lt.add_argument("--rows", type=int, default=10_000)
    lt.add_argument("--regular-ops", type=int, default=10)
    lt.add_argument("--long-ops", type=int, default=1000)
    lt.add_argument("--priority", choices=["on", "off", "both"], default="both", help="priority mode on the long client (tique only)")
    lt.add_argument("--out", help="write the JSON results here")
    _isolation_argument(lt)
    lt.set_defaults(func=_bench_longtx)
    planning = bench_sub.add_parser("planning", help="ms of parsing and rewriting per distinct statement text on a cold plan cache (TPC-C, CH-benCHmark), per dialect; no engine runs")
    planning.add_argument("--dialects", nargs="+", default=["duckdb", "postgres", "monetdb"], choices=["duckdb", "postgres", "monetdb"])
    planning.add_argument("--cpu", action="store_true", help="time on the process's CPU clock, which a loaded machine inflates less than wall time")
    planning.set_defaults(func=_bench_planning)

    packed = bench_sub.add_parser("packed", help="MonetDB: a 3-column key table with and without tique's packed key column")
    packed.add_argument("--monetdb", metavar="URL", required=True, help="monetdb://user:pw@host:port/db")
    packed.add_argument("--warehouses", type=int, default=10)
    packed.add_argument("--items", type=int, default=10_000, help="rows per (warehouse, district); 10 districts")
    packed.add_argument("--repeats", type=int, default=1000)
    packed.set_defaults(func=_bench_packed)
    tr = bench_sub.add_parser("trace", help="one kind of transaction, step by step: round trips, engine ms and client CPU "
                                            "of each statement and each tique protocol step, native beside tique (1 client)")
    tr.add_argument("--engine", required=True, choices=["duckdb", "postgres", "monetdb"], help="traces native-ENGINE and tique-ENGINE")
    tr.add_argument("--kind", required=True, nargs="+",
                    choices=["new-order", "payment", "order-status", "delivery", "stock-level", "keys"],
                    help="TPC-C transactions, or keys (bench keys' read 2 keys, update both): each traced in turn on one load")
    tr.add_argument("--transactions", type=int, default=50, help="traced transactions (the committed ones are averaged)")
    tr.add_argument("--warmup", type=float, default=5.0, metavar="SECONDS", help="untraced standard mix before them")
    tr.add_argument("--scale", choices=["full", "small", "tiny"], default="full",
                    help="TPC-C cardinalities: full (the specification), small (1/10 items and customers), tiny (tests)")
    tr.add_argument("--warehouses", type=int, default=1, help="TPC-C warehouses loaded (a --url database must hold that many)")
    tr.add_argument("--checkpoint-ms", type=int, default=1000, help="tique: background checkpointer interval (0: none)")
    tr.add_argument("--url", action="append", metavar="SYSTEM=URL", help="use an existing database for a system")
    tr.add_argument("--out", metavar="RESULT.json", help="write the breakdown as JSON")
    tr.set_defaults(func=_bench_trace)
    em = bench_sub.add_parser("executemany", help="rows/s of executemany of a one-row INSERT in one transaction, native and through tique side by side")
    em.add_argument("--system", dest="systems", nargs="+", choices=SYSTEMS,
                    default=["native-duckdb", "tique-duckdb", "native-postgres", "tique-postgres"],
                    help="systems to run, each on a fresh database (default: DuckDB and PostgreSQL, native and tique)")
    em.add_argument("--rows", type=int, default=20_000)
    em.add_argument("--batch", type=int, default=10_000, help="parameter rows per executemany call")
    em.add_argument("--url", action="append", metavar="SYSTEM=URL", help="use an existing database for a system")
    em.set_defaults(func=_bench_executemany)
    for parser in bench_sub.choices.values():
        parser.set_defaults(func=_with_bench_options(parser.get_default("func")))

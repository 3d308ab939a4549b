"""The `tique` command."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.table import Table

from tique.errors import redact


def _tpcc_data_arguments(parser: argparse.ArgumentParser, systems: Sequence[str]) -> None:
    """What every benchmark over TPC-C data asks first: the system and the database."""
    parser.add_argument("--system", required=True, choices=systems)
    parser.add_argument("--url", help="database to load into, or to reuse when it already holds this load (default: a fresh one)")
    parser.add_argument("--warehouses", type=int, default=1)


def _demo(args: argparse.Namespace) -> int:
    from bench.bank import run_native, run_tique

    console = Console()
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


def _checkpoint(args: argparse.Namespace) -> int:
    import tique
    from tique.checkpoint import Checkpointer

    conn = tique.connect(args.url)
    checkpointer = Checkpointer(conn.backend)
    rounds = 0
    try:
        while True:
            r = checkpointer.run_once()
            rounds += 1
            print(f"checkpoint: stable={r.stable} tables={r.tables} moved={r.moved} purged={r.purged} in {r.seconds * 1000:.1f} ms", flush=True)
            if args.every is None or (args.rounds and rounds >= args.rounds):
                return 0
            time.sleep(args.every / 1000.0)
    except KeyboardInterrupt:
        return 0
    finally:
        checkpointer.close()
        conn.close()


def _recover(args: argparse.Namespace) -> int:
    import tique
    from tique.recovery import recover

    conn = tique.connect(args.url)
    ran = recover(conn.backend, conn._raw, list(conn.tables.values()), force=True, first_open=False)
    print("recovery: unfinished transactions aborted, oracle re-seeded" if ran else "recovery: nothing to do")
    conn.close()
    return 0


def _adopt(args: argparse.Namespace) -> int:
    import tique
    from tique.adopt import adopt

    conn = tique.connect(args.url)
    for name, rows in adopt(conn, args.tables).items():
        print(f"adopted {name}: {rows} rows")
    conn.close()
    return 0


def _overhead(args: argparse.Namespace) -> int:
    from tique.overhead import measure, report

    url = args.url or f"duckdb:///{tempfile.mkdtemp(prefix='tique-overhead-')}/overhead.db"
    print(report(measure(url, args.repeats)))
    return 0


def _bench_planning(args: argparse.Namespace) -> int:
    from tique.planbench import run

    print(run(tuple(args.dialects)))
    return 0


def _bench_longtx(args: argparse.Namespace) -> int:
    from bench import longtx
    from bench.results import Result, now, table, write
    from drivers import open_system

    system = open_system(args.system, url=args.url)
    rows, results = [], []
    try:
        longtx.load(system, args.rows)
        modes = [False, True] if args.priority == "both" else [args.priority == "on"]
        for clients in args.clients:
            for priority in modes:
                if priority and not system.through_tique:
                    continue
                outcome = longtx.run(system, clients, args.duration, priority, rows=args.rows,
                                     regular_ops=args.regular_ops, long_ops=args.long_ops)
                metrics = outcome.metrics()
                results.append(Result("longtx", system.name, system.version(),
                                      {"clients": clients, "duration": args.duration, "rows": args.rows,
                                       "regular_ops": args.regular_ops, "long_ops": args.long_ops, "priority": outcome.priority},
                                      metrics, finished_at=now()).as_dict())
                rows.append([clients, "on" if outcome.priority else "off", metrics["regular_commits"], metrics["regular_abort_rate"] * 100,
                             metrics["long_commits"], metrics["long_abort_rate"] * 100, metrics["long_most_aborts"],
                             (metrics["long_rt"] or float("nan")) * 1000, metrics["txs"]])
    finally:
        system.close()
    table(f"{args.system}: long transactions ({args.long_ops}-op long client, {args.regular_ops}-op others), {args.duration:g}s each",
          ["clients", "priority", "short commits", "short abort %", "long commits", "long abort %", "most aborts of one long txn",
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


def _bench_keys(args: argparse.Namespace) -> int:
    from bench.keys import native_monetdb, report, tique_system

    rows = []
    for clients in args.clients:
        if args.monetdb:
            rows.append(native_monetdb(args.monetdb, clients, args.seconds))
            rows.append(tique_system(args.monetdb, clients, args.seconds, "tique-monetdb", commit_timeout=args.commit_timeout,
                                     checkpoint_interval_ms=args.checkpoint_ms))
        if args.duckdb:
            rows.append(tique_system(args.duckdb, clients, args.seconds, "tique-duckdb", commit_timeout=args.commit_timeout,
                                     checkpoint_interval_ms=args.checkpoint_ms))
        print(report(rows), flush=True)
    return 0


def _bench_tpcc(args: argparse.Namespace) -> int:
    from bench.tpcc.loader import FULL, TINY
    from bench.tpcc.run import benchmark

    result = benchmark(args.system, warehouses=args.warehouses, clients=args.clients, duration=args.duration,
                       warmup=args.warmup, contention=args.contention, url=args.url, out=args.out,
                       scale=TINY if args.tiny else FULL, checkpoint_ms=args.checkpoint_ms or None, seed=args.seed)
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


def _bench_htap(args: argparse.Namespace) -> int:
    from bench.chbench.htap import benchmark
    from bench.tpcc.loader import FULL, TINY

    result = benchmark(args.system, warehouses=args.warehouses, oltp_clients=args.oltp_clients,
                       olap_clients=args.olap_clients, duration=args.duration, sweep=args.sweep, counts=args.counts or (),
                       url=args.url, out=args.out, scale=TINY if args.tiny else FULL,
                       checkpoint_ms=args.checkpoint_ms or None, query_timeout=args.query_timeout)
    failed = any((p["oltp"] or {}).get("errors") or p["olap"]["error_samples"] for p in result.metrics["points"])
    return 1 if failed else 0


def _elle_run(args: argparse.Namespace) -> int:
    from drivers import open_system
    from elle.runner import RunConfig, run, summary
    from elle.workload import WorkloadConfig

    workload = WorkloadConfig(key_count=args.keys, min_txn_length=args.min_txn_length, max_txn_length=args.max_txn_length,
                              max_writes_per_key=args.max_writes_per_key, read_fraction=args.read_fraction, seed=args.seed)
    config = RunConfig(txns=args.txns, clients=args.clients, faults=tuple(dict.fromkeys(args.fault or ())), workload=workload,
                       time_limit=args.time_limit, checkpoint_ms=args.checkpoint_ms, kill_interval=args.kill_interval,
                       restart_interval=args.restart_interval, max_restarts=args.max_restarts,
                       commit_timeout=args.commit_timeout, seed=args.seed)
    if "restart" in config.faults:
        # Refused connections while the server restarts are expected and retried; pymonetdb
        # would log each one as an error.
        logging.getLogger("pymonetdb.mapi").setLevel(logging.CRITICAL)
    system = open_system(args.system, url=args.url, workdir=args.workdir)
    try:
        print(f"{system.name}: {system.version()}; {config.txns} txns, {config.clients} clients, "
              f"faults: {', '.join(config.faults) or 'none'}", flush=True)
        result = run(system, config, args.out, progress=not args.no_progress)
    finally:
        system.close()
    print(summary(result), flush=True)
    healthy = result.final.ok and not result.notes
    if args.check:
        from elle.cli import check_command

        healthy = check_command(str(result.history), args.check, None) == 0 and healthy
    return 0 if healthy else 1


def _elle_check(args: argparse.Namespace) -> int:
    from elle.cli import check_command

    return int(check_command(args.history, args.model, args.report))


def build_parser() -> argparse.ArgumentParser:
    """The `tique` command line. Help strings go through %-formatting: a literal % is %%."""
    parser = argparse.ArgumentParser(prog="tique", description="Transactions in the query engine.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="concurrent bank transfers: tique vs native DuckDB, side by side")
    demo.add_argument("--threads", type=int, default=4)
    demo.add_argument("--seconds", type=float, default=10.0)
    demo.add_argument("--accounts", type=int, default=1000)
    demo.add_argument("--dir", help="where to put the two database files (default: a temp dir)")
    demo.set_defaults(func=_demo)

    cp = sub.add_parser("checkpoint", help="move stable versions to storage and purge the caches")
    cp.add_argument("url")
    cp.add_argument("--every", type=int, metavar="MS", help="repeat every MS milliseconds")
    cp.add_argument("--rounds", type=int, default=0, help="with --every: stop after this many rounds")
    cp.set_defaults(func=_checkpoint)

    rec = sub.add_parser("recover", help="abort unfinished transactions and re-seed the oracle (idempotent)")
    rec.add_argument("url")
    rec.set_defaults(func=_recover)

    ad = sub.add_parser("adopt", help="turn native tables into tique tables without losing a row")
    ad.add_argument("url")
    ad.add_argument("tables", nargs="+")
    ad.set_defaults(func=_adopt)

    ov = sub.add_parser("overhead", help="micro-benchmark: driver overhead per statement and round trips per transaction")
    ov.add_argument("--url", help="default: a temporary DuckDB database")
    ov.add_argument("--repeats", type=int, default=2000)
    ov.set_defaults(func=_overhead)

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
    keys.set_defaults(func=_bench_keys)
    from drivers import SYSTEMS as _SYSTEMS

    tpcc = bench_sub.add_parser("tpcc", help="TPC-C: the five transactions, standard mix, no think time; consistency checked after")
    _tpcc_data_arguments(tpcc, _SYSTEMS)
    tpcc.add_argument("--clients", type=int, default=1)
    tpcc.add_argument("--duration", type=float, default=30.0, metavar="SECONDS", help="measured seconds")
    tpcc.add_argument("--warmup", type=float, default=5.0, metavar="SECONDS")
    tpcc.add_argument("--contention", type=int, metavar="K", help="99%% of transactions on warehouses 1..K")
    tpcc.add_argument("--out", metavar="RESULT.json", help="write the result as JSON")
    tpcc.add_argument("--checkpoint-ms", type=int, default=1000, help="tique systems: background checkpointer interval (0: none)")
    tpcc.add_argument("--seed", type=int, default=42)
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
    cmp.add_argument("--chbench-repetitions", type=int, default=1)
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
    lt.set_defaults(func=_bench_longtx)
    planning = bench_sub.add_parser("planning", help="ms of parsing and rewriting per distinct statement text on a cold plan cache (TPC-C, CH-benCHmark), per dialect; no engine runs")
    planning.add_argument("--dialects", nargs="+", default=["duckdb", "postgres", "monetdb"], choices=["duckdb", "postgres", "monetdb"])
    planning.set_defaults(func=_bench_planning)

    packed = bench_sub.add_parser("packed", help="MonetDB: a 3-column key table with and without tique's packed key column")
    packed.add_argument("--monetdb", metavar="URL", required=True, help="monetdb://user:pw@host:port/db")
    packed.add_argument("--warehouses", type=int, default=10)
    packed.add_argument("--items", type=int, default=10_000, help="rows per (warehouse, district); 10 districts")
    packed.add_argument("--repeats", type=int, default=1000)
    packed.set_defaults(func=_bench_packed)

    from drivers import SYSTEMS
    from elle.runner import FAULTS

    elle = sub.add_parser("elle", help="Elle consistency checks: list-append histories, run and checked")
    elle_sub = elle.add_subparsers(dest="elle_command", required=True)
    er = elle_sub.add_parser("run", help="run the list-append workload on a system and write its Jepsen EDN history")
    er.add_argument("--system", required=True, choices=SYSTEMS)
    er.add_argument("--txns", type=int, default=1000)
    er.add_argument("--clients", type=int, default=4)
    er.add_argument("--fault", action="append", choices=FAULTS,
                    help="repeatable; negative controls: stale-snapshot, no-certify, early-visibility; "
                         "survivable: checkpoint, kill, restart")
    er.add_argument("--keys", type=int, default=10, help="keys active at once")
    er.add_argument("--min-txn-length", type=int, default=1)
    er.add_argument("--max-txn-length", type=int, default=4)
    er.add_argument("--max-writes-per-key", type=int, default=32)
    er.add_argument("--read-fraction", type=float, default=0.5)
    er.add_argument("--seed", type=int, default=0)
    er.add_argument("--out", default="history.edn", help="where to write the history (default: history.edn)")
    er.add_argument("--url", help="an existing database (default: a fresh one; a server is started when needed)")
    er.add_argument("--workdir", help="DuckDB: where to put the database file")
    er.add_argument("--time-limit", type=float, metavar="SECONDS", help="start no transaction after this long")
    er.add_argument("--checkpoint-ms", type=float, default=5.0, help="checkpoint fault: pause between rounds")
    er.add_argument("--kill-interval", type=float, default=0.5, help="kill fault: mean seconds between kills")
    er.add_argument("--restart-interval", type=float, default=3.0, help="restart fault: mean seconds between restarts")
    er.add_argument("--max-restarts", type=int, default=3)
    er.add_argument("--commit-timeout", type=float, help="tique commit_timeout (default: tique's; 2s with kill/restart)")
    er.add_argument("--check", metavar="MODEL", help="then check the history, e.g. strong-session-snapshot-isolation")
    er.add_argument("--no-progress", action="store_true")
    er.set_defaults(func=_elle_run)
    ec = elle_sub.add_parser("check", help="check an EDN list-append history against a consistency model")
    ec.add_argument("history")
    ec.add_argument("--model", required=True)
    ec.add_argument("--report", metavar="JSON", help="write the full report here")
    ec.set_defaults(func=_elle_check)

    from fuzz.cli import register as register_fuzz  # lazy: only building the parser imports it

    register_fuzz(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "postgres_fast", False):
        from drivers.postgres_engine import set_durable

        set_durable(False)
    try:
        return int(args.func(args))
    except Exception as error:  # one clear line for the terminal; tracebacks with TIQUE_DEBUG=1
        if os.environ.get("TIQUE_DEBUG"):
            raise
        print(redact(f"tique {args.command}: {type(error).__name__}: {error}"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

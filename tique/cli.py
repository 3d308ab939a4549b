"""The `tique` command."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


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


def main(argv: list[str] | None = None) -> int:
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
    bench_sub = bench.add_subparsers(dest="benchmark", required=True)
    keys = bench_sub.add_parser("keys", help="transactions that read and update 2 random keys of a 10,000-row table")
    keys.add_argument("--monetdb", metavar="URL", help="monetdb://user:pw@host:port/db: native MonetDB vs tique-monetdb")
    keys.add_argument("--duckdb", metavar="URL", help="also tique on this DuckDB URL")
    keys.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    keys.add_argument("--seconds", type=float, default=10.0)
    keys.add_argument("--commit-timeout", type=float, default=10.0)
    keys.add_argument("--checkpoint-ms", type=int, default=200, help="background checkpointer interval for tique runs")
    keys.set_defaults(func=_bench_keys)

    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except Exception as error:  # one clear line for the terminal; tracebacks with TIQUE_DEBUG=1
        if os.environ.get("TIQUE_DEBUG"):
            raise
        print(f"tique {args.command}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

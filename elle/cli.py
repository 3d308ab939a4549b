"""Command entry points: check a history file, and benchmark the checker; and `tique elle ...`,
which tique's command line finds here (tique/cli.py, PARTS) and adds by calling `register`."""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

from elle.checker import CheckResult, check, check_file
from elle.history import HistoryError, Op, read_history, write_history
from elle.models import MODELS
from elle.synth import generate

ELLE_CMD_ENV = "TIQUE_ELLE_CMD"
ELLE_TIMEOUT_ENV = "TIQUE_ELLE_TIMEOUT"
DEFAULT_ELLE_TIMEOUT = 600.0


def check_command(history: str, model: str, report_path: str | None) -> int:
    """Check `history` against `model` and print the verdict.

    Returns 0 when the history is valid, 1 when it is not, 2 when it cannot be
    checked at all (unreadable file, malformed history, unknown model).  When
    TIQUE_ELLE_CMD is set, Jepsen Elle's own command line is run on the same
    file and its verdict printed alongside; it never changes the return code.
    """
    try:
        result = check_file(history, model)
    except (HistoryError, ValueError, OSError) as exc:
        print(f"cannot check {history}: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    print(f"(parsed in {result.parse_seconds:.2f} s)")
    if report_path:
        Path(report_path).write_text(result.to_json() + "\n", encoding="utf-8")
        print(f"report written to {report_path}")
    reference = os.environ.get(ELLE_CMD_ENV)
    if reference:
        _run_reference(reference, history, result.valid)
    return 0 if result.valid else 1


def _run_reference(command: str, history: str, ours: bool) -> None:
    timeout = float(os.environ.get(ELLE_TIMEOUT_ENV, DEFAULT_ELLE_TIMEOUT))
    argv = shlex.split(command) + [history]
    print(f"\nJepsen Elle: {shlex.join(argv)}")
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        print(f"  not run: {exc}")
        return
    except subprocess.TimeoutExpired:
        print(f"  not finished after {timeout:g} s; no verdict")
        return
    verdict = reference_verdict(done.stdout, history)
    print(f"  exit status {done.returncode} after {time.perf_counter() - started:.1f} s; "
          f"valid? {verdict if verdict is not None else 'unknown (could not read its output)'}")
    if verdict is not None and verdict != ("true" if ours else "false"):
        print(f"  DISAGREES with this checker (valid? {'true' if ours else 'false'})")
    tail = (done.stdout.strip().splitlines() + done.stderr.strip().splitlines())[-20:]
    for line in tail:
        print(f"  | {line}")


def reference_verdict(stdout: str, history: str) -> str | None:
    """elle-cli prints "<file> \\t <valid?>" per history (true, false or unknown)."""
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[-1] in ("true", "false", "unknown") and fields[0] in (history, os.path.basename(history)):
            return fields[-1]
    return None


def bench_command(txns: int, clients: int) -> None:
    """Generate a valid (strict serializable) history in memory and time the checker on it."""
    print(f"generating {txns} transactions from {clients} clients (simulated serializable database)...")
    started = time.perf_counter()
    ops = generate(txns, clients, isolation="serializable")
    types = [op.type for op in ops]
    print(f"  {len(ops)} ops in {time.perf_counter() - started:.1f} s: "
          f"{types.count('ok')} ok, {types.count('fail')} fail, {types.count('info')} info")
    with tempfile.TemporaryDirectory(prefix="elle-bench-") as tmp:
        path = Path(tmp) / "history.edn"
        wall, cpu = _timed(lambda: write_history(ops, path))
        print(f"  write EDN: {wall:.2f} s wall, {cpu:.2f} s cpu ({path.stat().st_size / 1e6:.1f} MB)")
        read_back: list[Op] = []
        wall, cpu = _timed(lambda: read_back.extend(read_history(path)))
        print(f"  read EDN:  {wall:.2f} s wall, {cpu:.2f} s cpu (round trip {'exact' if read_back == ops else 'DIFFERS'})")
    print(f"{'model':<36} {'wall s':>7} {'cpu s':>7}  verdict")
    for name in MODELS:
        box: list[CheckResult] = []
        wall, cpu = _timed(lambda: box.append(check(ops, name)))
        r = box[0]
        verdict = "valid" if r.valid else "INVALID " + ", ".join(f"{k} x{v}" for k, v in r.anomaly_counts.items())
        print(f"{name:<36} {wall:>7.2f} {cpu:>7.2f}  {verdict}")


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of fn(); the machine may be shared, so both matter."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _elle_run(args: argparse.Namespace) -> int:
    from drivers import open_system
    from elle.runner import ISOLATION_MODELS, RunConfig, run, summary
    from elle.workload import WorkloadConfig

    workload = WorkloadConfig(key_count=args.keys, min_txn_length=args.min_txn_length, max_txn_length=args.max_txn_length,
                              max_writes_per_key=args.max_writes_per_key, read_fraction=args.read_fraction, seed=args.seed)
    config = RunConfig(txns=args.txns, clients=args.clients, faults=tuple(dict.fromkeys(args.fault or ())), workload=workload,
                       time_limit=args.time_limit, checkpoint_ms=args.checkpoint_ms, kill_interval=args.kill_interval,
                       restart_interval=args.restart_interval, max_restarts=args.max_restarts,
                       commit_timeout=args.commit_timeout, seed=args.seed, isolation=args.isolation)
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
    # Checked against the model of the level the run asked for, unless told otherwise.
    model = args.check or ISOLATION_MODELS[args.isolation or "snapshot"]
    healthy = check_command(str(result.history), model, None) == 0 and healthy
    return 0 if healthy else 1


def _elle_check(args: argparse.Namespace) -> int:
    return int(check_command(args.history, args.model, args.report))


def register(sub: Any) -> None:
    """Adds `elle run` and `elle check` to tique's subcommands."""
    from drivers import SYSTEMS
    from elle.runner import FAULTS

    elle = sub.add_parser("elle", help="Elle consistency checks: list-append histories, run and checked")
    elle_sub = elle.add_subparsers(dest="elle_command", required=True)
    er = elle_sub.add_parser("run", help="run the list-append workload on a system and write its Jepsen EDN history")
    er.add_argument("--system", required=True, choices=SYSTEMS)
    er.add_argument("--txns", type=int, default=1000)
    er.add_argument("--clients", type=int, default=4)
    er.add_argument("--fault", action="append", choices=FAULTS,
                    help="repeatable; negative controls: stale-snapshot, no-certify, early-visibility, "
                         "no-read-certify (at SERIALIZABLE); "
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
    er.add_argument("--isolation", choices=("read-committed", "snapshot", "serializable"),
                    help="tique's isolation level for the clients' transactions (default: snapshot)")
    er.add_argument("--check", metavar="MODEL", help="the model to check the history against (default: the level's: "
                                                     "read-committed, strong-session-snapshot-isolation, serializable)")
    er.add_argument("--no-progress", action="store_true")
    er.set_defaults(func=_elle_run)
    ec = elle_sub.add_parser("check", help="check an EDN list-append history against a consistency model")
    ec.add_argument("history")
    ec.add_argument("--model", required=True)
    ec.add_argument("--report", metavar="JSON", help="write the full report here")
    ec.set_defaults(func=_elle_check)

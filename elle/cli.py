"""Command entry points: check a history file, and benchmark the checker."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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

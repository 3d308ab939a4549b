"""Runs the list-append workload with concurrent clients and writes a Jepsen history.

Every transaction is recorded as an :invoke, then completed as :ok (committed),
:fail (certainly not committed: it aborted, or failed before COMMIT and was rolled
back) or :info (COMMIT failed for another reason, e.g. the connection or the server
died: it may or may not have committed, and we do not guess). A process whose op
ended :info is replaced by a new process number, as in Jepsen: its session is gone.
Ops are appended to the file as they happen, so a crash keeps the history so far.

Clients are threads of this process, or, for the kill fault, child processes that
run transactions and report back over pipes while this process keeps the history
(elle.clients). DuckDB allows one process per database file, so its clients are
always threads.

Faults: the tique debug faults (negative controls, see tique.connection.FAULTS);
`checkpoint` runs tique's checkpointer every few milliseconds; `kill` SIGKILLs client
processes in the middle of transactions and commits and starts new ones; `restart`
crash-restarts the database server (elle.nemesis). After the run, one read of every
list checks that no append acknowledged by a commit was lost.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from elle.clients import TxnSource, connect_client, describe_error, run_processes, run_threads
from elle.nemesis import CheckpointLoop, RestartLoop
from elle.recorder import Recorder
from elle.sql_client import create_table
from elle.workload import ListAppendGenerator, WorkloadConfig

NEGATIVE_CONTROLS = ("stale-snapshot", "no-certify", "early-visibility", "no-read-certify")
SURVIVABLE = ("checkpoint", "kill", "restart")
FAULTS = NEGATIVE_CONTROLS + SURVIVABLE
# The isolation levels a run can ask tique for, and the Elle model each is checked
# against by default: what tique promises at that level (tique/isolation.py).
ISOLATION_MODELS = {
    "read-committed": "read-committed",
    "snapshot": "strong-session-snapshot-isolation",
    "serializable": "serializable",
}



@dataclass
class RunConfig:
    txns: int = 1000
    clients: int = 4
    faults: tuple[str, ...] = ()
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    time_limit: float | None = None  # seconds; no new transactions start after it
    checkpoint_ms: float = 5.0  # checkpoint fault: pause between checkpoint rounds
    kill_interval: float = 0.5  # kill fault: mean seconds between kills
    restart_interval: float = 3.0  # restart fault: mean seconds between server restarts
    max_restarts: int = 3
    # tique: how long a dead client's commit timestamp may block others (None: tique's
    # default, or 2 s with the kill and restart faults, which leave such timestamps behind)
    commit_timeout: float | None = None
    seed: int = 0  # fault timing
    # tique's isolation level for every client transaction (a key of ISOLATION_MODELS);
    # None: the connection's default, SNAPSHOT.
    isolation: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {', '.join(sorted(unknown))}; choose from {', '.join(FAULTS)}")
        if self.isolation is not None and self.isolation not in ISOLATION_MODELS:
            raise ValueError(f"unknown isolation {self.isolation!r}; choose from {', '.join(ISOLATION_MODELS)}")
        if self.txns < 0 or self.clients < 1:
            raise ValueError(f"need txns >= 0 and clients >= 1, not {self.txns} and {self.clients}")


@dataclass
class FinalCheck:
    """The lists as one transaction read them after the run, against what was acknowledged."""

    read: bool  # whether the final read succeeded at all
    keys: int = 0
    elements: int = 0
    acknowledged: int = 0  # appends of :ok transactions
    lost: list[tuple[int, int]] = field(default_factory=list)  # acknowledged (key, value) missing at the end
    aborted_present: list[tuple[int, int]] = field(default_factory=list)  # appends of :fail txns that are there
    duplicates: list[int] = field(default_factory=list)  # keys whose list repeats an element
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.read and not self.lost and not self.aborted_present and not self.duplicates


@dataclass
class RunResult:
    system: str
    history: Path
    txns: int  # invoked
    ok: int
    fail: int
    info: int
    seconds: float
    final: FinalCheck
    errors: Counter = field(default_factory=Counter)  # "fail: SerializationFailure" -> count
    events: Counter = field(default_factory=Counter)  # fault events: "kill", "restart", "checkpoint rounds"
    notes: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0


# ---------------------------------------------------------------- the run

def _final_check(connect: Callable[[], Any], recorder: Recorder, keys: Sequence[int]) -> FinalCheck:
    """Reads every list in one transaction, records it as a final op, and compares."""
    client = connect_client(connect)
    if client is None:
        return FinalCheck(False, error="could not connect for the final read")
    process = recorder.max_process + 1
    try:
        recorder.invoke(process, tuple(("r", k, None) for k in keys))
        try:
            lists = client.read_all()
        except Exception as error:
            recorder.complete(process, "fail", error=describe_error(error))
            return FinalCheck(False, error=describe_error(error))
        recorder.complete(process, "ok", tuple(("r", k, lists.get(k, ())) for k in keys))
    finally:
        client.close()
    present = {(k, v) for k, values in lists.items() for v in values}
    check = FinalCheck(True, keys=len(lists), elements=len(present))
    check.acknowledged = len(recorder.appended["ok"])
    check.lost = sorted(recorder.appended["ok"] - present)
    check.aborted_present = sorted(recorder.appended["fail"] & present)
    check.duplicates = sorted(k for k, values in lists.items() if len(set(values)) != len(values))
    return check


def check_faults(system: Any, faults: Sequence[str], restart: Callable[[], None] | None) -> None:
    """Refuses fault/system combinations that cannot run, with the reason."""
    tique_only = [f for f in faults if f in NEGATIVE_CONTROLS or f == "checkpoint"]
    if tique_only and not system.through_tique:
        raise ValueError(f"{', '.join(tique_only)}: a tique fault, and {system.name} does not run through tique")
    if system.engine.name == "duckdb":
        if "kill" in faults:
            raise ValueError("kill: DuckDB allows one process per database file, so its clients are threads of this "
                             "process and cannot be killed alone; run the kill fault on postgres or monetdb")
        if "restart" in faults:
            raise ValueError("restart: DuckDB is embedded, there is no server to restart; run it on postgres or monetdb")
    if "restart" in faults and restart is None and getattr(system.engine, "cluster", None) is None \
            and getattr(system.engine, "server", None) is None:
        raise ValueError(f"restart: {system.name} runs on a server this process did not start, so it cannot restart it")


def run(system: Any, config: RunConfig, out: str | Path, *, restart: Callable[[], None] | None = None,
        progress: bool = False, setup: bool = True) -> RunResult:
    """Runs `config.txns` transactions on `system` (from drivers.open_system) and writes
    the history to `out`. `restart` crash-restarts the server (default: the engine's own)."""
    faults = tuple(config.faults)
    check_faults(system, faults, restart)
    if config.isolation not in (None, "snapshot") and not system.through_tique:
        raise ValueError(f"--isolation {config.isolation}: {system.name} runs at its engine's own level; "
                         "isolation levels are chosen for tique systems")
    options: dict[str, Any] = {}
    if system.through_tique:
        if config.isolation is not None:
            options["isolation_level"] = config.isolation
            system.connect(**options).close()  # a level tique refuses fails here, before the run
        timeout = config.commit_timeout
        if timeout is None and ("kill" in faults or "restart" in faults):
            timeout = 2.0
        if timeout is not None:
            options["commit_timeout"] = timeout
        negative = [f for f in faults if f in NEGATIVE_CONTROLS]
        if negative:
            options["faults"] = frozenset(negative)
        if "no-read-certify" in negative:  # the fault is of SERIALIZABLE transactions, so run them at that level
            options["isolation_level"] = "serializable"
    if setup:
        create_table(system)
    generator = ListAppendGenerator(config.workload)
    path = Path(out)
    recorder = Recorder(path)
    source = TxnSource(generator, config.txns, config.time_limit)
    events: Counter = Counter()
    notes: list[str] = []
    background: list[Any] = []
    if "checkpoint" in faults:
        background.append(CheckpointLoop(system.engine.tique_url, config.checkpoint_ms / 1000.0, events))
    restarts = None
    if "restart" in faults:
        restarts = RestartLoop(restart or system.engine.restart, config.restart_interval, config.max_restarts,
                               config.seed + 1, recorder, events, first_after_invocations=max(1, config.txns // 20))
        background.append(restarts)

    bar, task = _progress_bar(config.txns) if progress else (None, None)
    tick: Callable[[], None] = (lambda: bar.advance(task)) if bar is not None else (lambda: None)  # type: ignore[union-attr]
    started = time.monotonic()
    try:
        for thread in background:
            thread.start()
        if "kill" in faults:
            run_processes(config.clients, source, recorder, system, {**system.tique_options, **options}, tick, events, notes,
                          kill_interval=config.kill_interval, seed=config.seed + 2)
        else:
            run_threads(config.clients, source, recorder, lambda: system.connect(**options), system.is_abort, tick, notes)
        seconds = time.monotonic() - started
    finally:
        source.stopped.set()
        for thread in background:
            thread.stop()
        if bar is not None:
            bar.stop()
    recorder.abandon_open("no completion before the run ended")
    if restarts is not None and restarts.error is not None:
        notes.append(f"restart failed: {describe_error(restarts.error)}")
    counts, errors = Counter(recorder.counts), Counter(recorder.errors)
    final = _final_check(lambda: system.connect(), recorder, list(generator.keys_used))
    recorder.close()
    return RunResult(system.name, path, counts["invoke"], counts["ok"], counts["fail"], counts["info"], seconds,
                     final, errors, events, notes)


def _progress_bar(total: int) -> tuple[Any, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("elle"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    task = bar.add_task("txns", total=total)
    bar.start()
    return bar, task


def summary(result: RunResult) -> str:
    lines = [
        f"{result.system}: {result.txns} transactions in {result.seconds:.1f}s "
        f"({result.throughput:.0f} committed/s): ok {result.ok}, fail {result.fail}, info {result.info}",
        f"history: {result.history}",
    ]
    for error, count in result.errors.most_common(6):
        lines.append(f"  {count:>7} x {error}")
    if result.events:
        lines.append("faults: " + ", ".join(f"{name} {count}" for name, count in sorted(result.events.items())))
    final = result.final
    if not final.read:
        lines.append(f"final read: FAILED ({final.error})")
    else:
        verdict = "ok" if final.ok else "PROBLEM"
        lines.append(f"final read: {verdict}: {final.keys} lists, {final.elements} elements; "
                     f"{final.acknowledged} acknowledged appends, {len(final.lost)} lost"
                     + (f" {final.lost[:10]}" if final.lost else "")
                     + (f"; {len(final.aborted_present)} appends of failed txns present {final.aborted_present[:10]}"
                        if final.aborted_present else "")
                     + (f"; duplicate elements in keys {final.duplicates[:10]}" if final.duplicates else ""))
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)

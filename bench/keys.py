"""Read-and-update-two-keys transactions: the measurement behind tique's MonetDB case.

Each transaction reads 2 random keys of a 10,000-row table and updates both. Native runs
use the engine's own transactions; tique runs send the same SQL through tique. Clients
are threads, each with its own connection: the client side mostly waits on the server,
and threads keep one process's tique connections on one in-process oracle (DuckDB).
"""
from __future__ import annotations

import random
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import tique
from tique.isolation import parse_level
from tique.session import Counters
from bench.runner import Client, LoadResult, run_clients

ROWS = 10_000
READ = "SELECT v FROM kv WHERE k = ?"
UPDATE = "UPDATE kv SET v = v + 1 WHERE k = ?"


@dataclass
class KeysResult(LoadResult):
    system: str = ""
    clients: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # seconds per committed transaction
    isolation: str = "engine's own (snapshot isolation)"  # the level the transactions ran at
    # Summed over every client and every attempt (committed or aborted), as the sessions
    # count them (tique/session.py; native through drivers/counting.py, counted alike):
    # round trips, engine commits, engine wall ns, and the client threads' CPU seconds.
    cost: Counters = field(default_factory=Counters)
    client_cpu: float = 0.0

    def per_commit(self) -> dict[str, float]:
        """Round trips, engine commits, engine ms and client CPU ms per committed
        transaction (what the aborted attempts cost is charged to the commits)."""
        n = self.commits or 1
        return {"round_trips": self.cost.round_trips / n, "engine_commits": self.cost.engine_commits / n,
                "engine_ms": self.cost.engine_ns / 1e6 / n, "client_cpu_ms": self.client_cpu * 1000 / n}


def _transaction(execute: Callable[[str, tuple], Any]) -> Callable[[random.Random], None]:
    def run(rng: random.Random) -> None:
        a, b = rng.sample(range(1, ROWS + 1), 2)
        execute(READ, (a,))
        execute(READ, (b,))
        execute(UPDATE, (a,))
        execute(UPDATE, (b,))
    return run


def _drive(system: str, clients: int, seconds: float, open_client: Callable[[], tuple[Client, Callable[[], Counters]]]) -> KeysResult:
    """Runs the clients; each attempt's cost (its session's counters, its thread's CPU
    time) is added to the result, so the per-transaction figures cover aborts too."""
    result = KeysResult(system=system, clients=clients)
    lock = threading.Lock()

    def counted() -> Client:
        (transaction, commit, rollback, aborted), counters = open_client()

        def accounted(action: Callable[..., None]) -> Callable[..., None]:
            def run(*args: Any) -> None:
                before, cpu = counters(), time.thread_time()
                try:
                    action(*args)
                finally:
                    spent, cpu = counters() - before, time.thread_time() - cpu
                    with lock:
                        result.cost = result.cost + spent
                        result.client_cpu += cpu
            return run

        return accounted(transaction), accounted(commit), accounted(rollback), aborted

    return run_clients(clients, seconds, counted, result)  # type: ignore[return-value]


# -- native MonetDB ------------------------------------------------------------------

def _monetdb_args(url: str) -> dict:
    from urllib.parse import unquote, urlsplit
    parts = urlsplit(url)
    return dict(hostname=parts.hostname, port=parts.port or 50000, username=unquote(parts.username or "monetdb"),
                password=unquote(parts.password or "monetdb"), database=parts.path.lstrip("/"))


def native_monetdb(url: str, clients: int, seconds: float) -> KeysResult:
    import pymonetdb

    args = _monetdb_args(url)
    setup = pymonetdb.connect(autocommit=True, **args)
    cur = setup.cursor()
    cur.execute("DROP TABLE IF EXISTS kv_native")
    cur.execute("CREATE TABLE kv_native (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    cur.execute(f"INSERT INTO kv_native SELECT value, 0 FROM sys.generate_series(1, {ROWS + 1})")

    def open_client() -> tuple[Client, Callable[[], Counters]]:
        from drivers.counting import CountingConnection

        conn = CountingConnection(pymonetdb.connect(autocommit=False, **args), begins_explicitly=False)
        c = conn.cursor()

        def execute(sql: str, params: tuple) -> Any:
            c.execute(sql.replace("kv", "kv_native").replace("?", "%s"), params)
            return c.fetchall() if c.description else None

        errors = (pymonetdb.exceptions.OperationalError, pymonetdb.exceptions.IntegrityError)
        return (_transaction(execute), conn.commit, conn.rollback, errors), lambda: conn.counters

    try:
        return _drive("native-monetdb", clients, seconds, open_client)
    finally:
        setup.close()


# -- tique ----------------------------------------------------------------------------

_PHASES = [
    ("begin", re.compile(r"tq_oracle\(")),
    ("statement snapshot", re.compile(r"^SELECT c\.snapshot FROM tq_clock")),
    ("certification", re.compile(r"FROM tq_write_sets AS mine", re.I)),
    ("write-set", re.compile(r"^INSERT INTO \"?tq_write_sets", re.I)),
    ("commit marker", re.compile(r"^INSERT INTO \"?tq_outcome", re.I)),
    ("writes", re.compile(r"^INSERT INTO \"?\w+_cache", re.I)),
    ("reads", re.compile(r"^SELECT", re.I)),
]
_ORACLE_OPS = {3: "begin", 5: "commit timestamp", 6: "snapshot advance", 13: "commit marker", 4: "begin", 9: "statement snapshot"}


def _phase_of(sql: str, params: Any) -> str:
    if "tq_oracle(" in sql and params:
        return _ORACLE_OPS.get(int(params[0]), "oracle other")
    for name, pattern in _PHASES:
        if pattern.search(sql):
            return name
    return "other"


def tique_system(url: str, clients: int, seconds: float, system: str, **options: Any) -> KeysResult:
    setup = tique.connect(url, autocommit=True, **options)
    cur = setup.cursor()
    cur.execute("DROP TABLE IF EXISTS kv")
    cur.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    setup.autocommit = False
    for first in range(1, ROWS + 1, 1000):  # 1,000 rows per statement, values bound
        keys = list(range(first, min(first + 1000, ROWS + 1)))
        cur.execute("INSERT INTO kv VALUES " + ", ".join(["(?, 0)"] * len(keys)), keys)
        setup.commit()
    from tique.checkpoint import checkpoint
    checkpoint(setup)

    backend = setup.backend
    spent: dict[str, float] = defaultdict(float)
    spent_lock = threading.Lock()
    original = backend.execute

    def timed(raw: Any, sql: str, params: Any, analytic: bool = False) -> Any:
        if threading.current_thread().name == "tique-checkpointer":  # not a client's commit path
            return original(raw, sql, params, analytic)
        began = time.perf_counter()
        try:
            return original(raw, sql, params, analytic)
        finally:
            elapsed = time.perf_counter() - began
            with spent_lock:
                spent[_phase_of(sql, params)] += elapsed

    backend.execute = timed  # type: ignore[method-assign]
    original_request = backend.request

    def timed_request(raw: Any, statements: Any, commit: bool = False, **more: Any) -> Any:
        """A request of several statements (MonetDB's commit) is accounted as a phase
        named after the statements in it, e.g. `certification+write-set+other`."""
        if threading.current_thread().name == "tique-checkpointer":
            return original_request(raw, statements, commit, **more)
        began = time.perf_counter()
        try:
            return original_request(raw, statements, commit, **more)
        finally:
            elapsed = time.perf_counter() - began
            name = "+".join(dict.fromkeys(_phase_of(str(sql), params) for sql, params in statements))
            with spent_lock:
                spent[name] += elapsed

    backend.request = timed_request  # type: ignore[method-assign]

    def open_client() -> tuple[Client, Callable[[], Counters]]:
        conn = tique.connect(url, **options)
        c = conn.cursor()

        def execute(sql: str, params: tuple) -> Any:
            c.execute(sql, params)
            return c.fetchall() if c.description else None

        return (_transaction(execute), conn.commit, conn.rollback, (tique.SerializationFailure,)), lambda: conn.counters

    try:
        result = _drive(system, clients, seconds, open_client)
        result.isolation = setup.isolation_level.value if "isolation_level" not in options else parse_level(options["isolation_level"]).value
    finally:
        # The wrappers are instance attributes over the class's methods: removing them
        # restores the backend for whoever uses it next.
        del backend.execute
        del backend.request
        from tique.checkpoint import stop_background_checkpointer
        stop_background_checkpointer(backend)
        setup.close()
    if result.commits:
        result.phases = {name: total / result.commits for name, total in sorted(spent.items())}
    return result


def report(rows: list[KeysResult]) -> str:
    lines = [f"{'system':<16}{'isolation':<16}{'clients':>8}{'commits/s':>11}{'abort rate':>12}{'p50 ms':>9}{'p99 ms':>9}"]
    for r in rows:
        level = r.isolation if r.system.startswith("tique") else "engine's own"
        lines.append(f"{r.system:<16}{level:<16}{r.clients:>8}{r.throughput:>11.1f}{r.abort_rate:>12.1%}"
                     f"{r.percentile(0.5) * 1000:>9.1f}{r.percentile(0.99) * 1000:>9.1f}")
    by_clients: dict[int, dict[str, KeysResult]] = defaultdict(dict)
    for r in rows:
        by_clients[r.clients][r.system] = r
    lines.append("")
    for clients, systems in sorted(by_clients.items()):
        native = next((r for s, r in systems.items() if s.startswith("native")), None)
        for name, r in systems.items():
            if native is not None and r is not native and native.throughput:
                lines.append(f"{clients:>3} clients: {name} commits/s = {r.throughput / native.throughput:.1f}x {native.system}")
    lines.append("per committed transaction (aborted attempts included): round trips, engine commits, engine ms, client CPU ms")
    for r in rows:
        c = r.per_commit()
        lines.append(f"  {r.system:<16}{r.clients:>3} clients: {c['round_trips']:6.2f} rt {c['engine_commits']:5.2f} commits "
                     f"{c['engine_ms']:7.2f} engine ms {c['client_cpu_ms']:6.2f} client CPU ms")
    for r in rows:
        if r.phases:
            total = sum(r.phases.values())
            parts = ", ".join(f"{k} {v * 1000:.2f}" for k, v in r.phases.items())
            lines.append(f"{r.system} @ {r.clients} clients, client statement time per committed transaction, ms: {parts} (sum {total * 1000:.1f})")
    return "\n".join(lines)


def save(rows: list[KeysResult], path: str, parameters: dict[str, Any]) -> None:
    """The rows as one result document (bench/results.py), each with the level it ran at."""
    from bench.results import Result, write

    shown = {k: v for k, v in parameters.items() if k != "func"}
    result = Result("keys", ", ".join(dict.fromkeys(r.system for r in rows)), "", shown)
    result.metrics = {"runs": [{"system": r.system, "isolation": r.isolation, "clients": r.clients, "commits": r.commits,
                                "aborts": r.aborts, "seconds": r.seconds, "commits_per_s": r.throughput,
                                "abort_rate": r.abort_rate, "p50_ms": r.percentile(0.5) * 1000,
                                "p99_ms": r.percentile(0.99) * 1000, "per_commit": r.per_commit(), "phases_ms": {k: v * 1000 for k, v in r.phases.items()}}
                               for r in rows]}
    write(result, path)

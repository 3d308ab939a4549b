"""Long-running read-write transactions (paper 4.3.4): n-1 clients run short
transactions (10 operations, half reads and half writes, on random keys of a 10,000-row
table) and one client runs transactions 100x longer; aborted transactions are retried
until they commit. With tique's priority mode on the long client, a long transaction
aborts at most once; without it, first-committer-wins starves it.

Clients are threads: each mostly waits on its engine, and tique-duckdb's oracle is in-process."""
from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drivers import System, TableLoad

READ = "SELECT v FROM longtx_kv WHERE k = ?"
WRITE = "UPDATE longtx_kv SET v = v + 1 WHERE k = ?"


@dataclass
class ClassStats:
    commits: int = 0
    attempts: int = 0
    response_times: list[float] = field(default_factory=list)  # first attempt to commit, retries included
    # the most times one transaction lost before it committed: its aborts and its priority re-executions
    most_aborts: int = 0
    # re-executions inside commit() by tique's priority mode: counted on their own, neither
    # attempts nor aborts, so the abort rate is the rate of aborts the client saw
    priority_retries: int = 0

    @property
    def abort_rate(self) -> float:
        return 1 - self.commits / self.attempts if self.attempts else 0.0

    def merge(self, other: "ClassStats") -> None:
        self.commits += other.commits
        self.attempts += other.attempts
        self.response_times.extend(other.response_times)
        self.most_aborts = max(self.most_aborts, other.most_aborts)
        self.priority_retries += other.priority_retries


@dataclass
class LongTxResult:
    system: str
    clients: int
    priority: bool
    seconds: float
    regular: ClassStats
    long: ClassStats
    isolation: str = "SNAPSHOT"  # the level the transactions ran at (bench/tpcc/run.py isolation_name)

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": self.seconds}
        for name, stats in (("regular", self.regular), ("long", self.long)):
            out[f"{name}_commits"] = stats.commits
            out[f"{name}_txs"] = stats.commits / self.seconds if self.seconds else 0.0
            out[f"{name}_abort_rate"] = stats.abort_rate
            out[f"{name}_rt"] = statistics.mean(stats.response_times) if stats.response_times else None
            out[f"{name}_most_aborts"] = stats.most_aborts
            out[f"{name}_priority_retries"] = stats.priority_retries
        out["txs"] = (self.regular.commits + self.long.commits) / self.seconds if self.seconds else 0.0
        attempts = self.regular.attempts + self.long.attempts
        out["abort_rate"] = 1 - (self.regular.commits + self.long.commits) / attempts if attempts else 0.0
        out["priority_retries"] = self.regular.priority_retries + self.long.priority_retries
        return out


def load(system: System, rows: int) -> None:
    keys = np.arange(1, rows + 1, dtype=np.int64)
    system.load([TableLoad("longtx_kv", "CREATE TABLE longtx_kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
                           ["k", "v"], [[keys, np.zeros(rows, dtype=np.int64)]])])


def _client(system: System, ops: int, rows: int, priority: bool, stop_at: float, seed: int, stats: ClassStats,
            commit_timeout: float, level: dict[str, Any]) -> None:
    options: dict[str, Any] = {"priority": True, "commit_timeout": commit_timeout} if priority else {}
    options.update(level)
    conn = system.connect(**options)
    cur = conn.cursor()
    rng = random.Random(seed)
    try:
        while time.perf_counter() < stop_at:
            keys = [rng.randint(1, rows) for _ in range(ops)]
            began = time.perf_counter()
            aborts = 0
            while time.perf_counter() < stop_at:
                stats.attempts += 1
                retried_before = getattr(conn, "priority_retries", 0)
                try:
                    for i, k in enumerate(keys):
                        cur.execute(READ if i % 2 == 0 else WRITE, (k,))
                        if cur.description:
                            cur.fetchall()
                    conn.commit()
                except Exception as error:
                    if not system.is_abort(error):
                        raise
                    aborts += 1
                    try:
                        conn.rollback()
                    except Exception:
                        pass
                    continue
                # a priority re-execution inside commit() lost once more, but is no attempt of the client's
                reexecuted = getattr(conn, "priority_retries", 0) - retried_before
                stats.priority_retries += reexecuted
                aborts += reexecuted
                stats.commits += 1
                stats.response_times.append(time.perf_counter() - began)
                stats.most_aborts = max(stats.most_aborts, aborts)
                break
    finally:
        conn.close()


def run(system: System, clients: int, seconds: float, priority: bool, rows: int = 10_000,
        regular_ops: int = 10, long_ops: int = 1000, commit_timeout: float = 120.0,
        isolation: str | None = None) -> LongTxResult:
    """`clients` includes the long one; `priority` applies to the long client (tique only).
    `isolation`: every client's level (None: the default, SNAPSHOT); a native system runs at
    its engine's own level of that name or refuses it (bench/tpcc/run.py)."""
    from bench.tpcc.run import isolation_name, isolation_options

    level = isolation_options(system, isolation)
    regular, long = ClassStats(), ClassStats()
    stop_at = time.perf_counter() + seconds
    per_thread = [ClassStats() for _ in range(clients)]
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            is_long = i == 0
            _client(system, long_ops if is_long else regular_ops, rows, priority and is_long and system.through_tique,
                    stop_at, i, per_thread[i], commit_timeout, level)
        except BaseException as error:  # reported after the run, never swallowed
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + commit_timeout + 60)
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    long.merge(per_thread[0])
    for stats in per_thread[1:]:
        regular.merge(stats)
    return LongTxResult(system.name, clients, priority and system.through_tique, elapsed, regular, long,
                        isolation_name(system, isolation))

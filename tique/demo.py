"""The demo: a concurrent bank-transfer workload, through tique and natively, on one engine.

Each transfer reads two balances and moves money between them in one transaction.
Total money must be conserved under both; tique should commit far more transfers,
because the native engine aborts concurrent updates that tique certifies per key.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

import tique

ACCOUNTS = 1000
INITIAL = 1000


@dataclass
class RunResult:
    system: str
    commits: int = 0
    aborts: int = 0
    seconds: float = 0.0
    total_before: int = 0
    total_after: int = 0
    latencies: list[float] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0

    @property
    def abort_rate(self) -> float:
        attempts = self.commits + self.aborts
        return self.aborts / attempts if attempts else 0.0

    @property
    def conserved(self) -> bool:
        return self.total_before == self.total_after


def _transfer(cur: Any, rng: random.Random, accounts: int) -> None:
    a, b = rng.sample(range(1, accounts + 1), 2)
    amount = rng.randint(1, 10)
    cur.execute("SELECT balance FROM accounts WHERE id = ?", (a,))
    cur.fetchone()
    cur.execute("SELECT balance FROM accounts WHERE id = ?", (b,))
    cur.fetchone()
    cur.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, a))
    cur.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, b))


def _run(system: str, open_client: Callable[[], tuple[Any, Callable[[], None], Callable[[], None], type]],
         total: Callable[[], int], threads: int, seconds: float, accounts: int) -> RunResult:
    result = RunResult(system, total_before=total())
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(seed: int) -> None:
        cur, commit, rollback, aborted = open_client()
        rng = random.Random(seed)
        commits = aborts = 0
        latencies = []
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                _transfer(cur, rng, accounts)
                commit()
                commits += 1
                latencies.append(time.perf_counter() - started)
            except aborted:
                aborts += 1
                try:
                    rollback()
                except Exception:
                    pass
        with lock:
            result.commits += commits
            result.aborts += aborts
            result.latencies.extend(latencies)

    started = time.perf_counter()
    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=seconds + 60)
    result.seconds = time.perf_counter() - started
    result.total_after = total()
    return result


def run_tique(url: str, threads: int, seconds: float, accounts: int = ACCOUNTS) -> RunResult:
    setup = tique.connect(url, autocommit=True, checkpoint_interval_ms=200)
    cur = setup.cursor()
    cur.execute("DROP TABLE IF EXISTS accounts")
    cur.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)")
    cur.execute("INSERT INTO accounts SELECT i, ? FROM range(1, ? + 1) t(i)", (INITIAL, accounts))

    def total() -> int:
        cur.execute("SELECT sum(balance) FROM accounts")
        return int(cur.fetchone()[0])

    def open_client() -> tuple[Any, Callable[[], None], Callable[[], None], type]:
        conn = tique.connect(url)
        return conn.cursor(), conn.commit, conn.rollback, tique.SerializationFailure

    try:
        return _run("tique-duckdb", open_client, total, threads, seconds, accounts)
    finally:
        from tique.checkpoint import stop_background_checkpointer

        stop_background_checkpointer(setup.backend)
        setup.close()


def run_native(path: str, threads: int, seconds: float, accounts: int = ACCOUNTS) -> RunResult:
    base = duckdb.connect(path)
    base.execute("DROP TABLE IF EXISTS accounts")
    base.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)")
    base.execute("INSERT INTO accounts SELECT i, ? FROM range(1, ? + 1) t(i)", [INITIAL, accounts])

    def total() -> int:
        return int(base.execute("SELECT sum(balance) FROM accounts").fetchone()[0])

    def open_client() -> tuple[Any, Callable[[], None], Callable[[], None], type]:
        conn = base.cursor()
        conn.execute("BEGIN")

        def commit() -> None:
            conn.execute("COMMIT")
            conn.execute("BEGIN")

        def rollback() -> None:
            conn.execute("ROLLBACK")
            conn.execute("BEGIN")

        class Cursor:
            def execute(self, sql: str, params: tuple) -> None:
                conn.execute(sql, list(params))

            def fetchone(self) -> Any:
                return conn.fetchone()

        return Cursor(), commit, rollback, duckdb.TransactionException

    try:
        return _run("native-duckdb", open_client, total, threads, seconds, accounts)
    finally:
        base.close()

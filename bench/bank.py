"""The demo: a concurrent bank-transfer workload, through tique and natively, on one engine.

Each transfer reads two balances and moves money between them in one transaction.
Total money must be conserved under both; tique should commit far more transfers,
because the native engine aborts concurrent updates that tique certifies per key.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

import duckdb

import tique
from bench.runner import Client, LoadResult, run_clients

ACCOUNTS = 1000
INITIAL = 1000


@dataclass
class RunResult(LoadResult):
    system: str = ""
    total_before: int = 0
    total_after: int = 0

    @property
    def conserved(self) -> bool:
        return self.total_before == self.total_after


def _transfer(execute: Callable[[str, tuple], Any], accounts: int) -> Callable[[random.Random], None]:
    def run(rng: random.Random) -> None:
        a, b = rng.sample(range(1, accounts + 1), 2)
        amount = rng.randint(1, 10)
        execute("SELECT balance FROM accounts WHERE id = ?", (a,))
        execute("SELECT balance FROM accounts WHERE id = ?", (b,))
        execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, a))
        execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, b))
    return run


def _run(system: str, open_client: Callable[[], Client], total: Callable[[], int], threads: int, seconds: float) -> RunResult:
    result = RunResult(system=system, total_before=total())
    run_clients(threads, seconds, open_client, result)
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

    def open_client() -> Client:
        conn = tique.connect(url)
        cur = conn.cursor()

        def execute(sql: str, params: tuple) -> None:
            cur.execute(sql, params)
            if cur.description:
                cur.fetchall()

        return _transfer(execute, accounts), conn.commit, conn.rollback, (tique.SerializationFailure,)

    try:
        return _run("tique-duckdb", open_client, total, threads, seconds)
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

    def open_client() -> Client:
        conn = base.cursor()
        conn.execute("BEGIN")

        def commit() -> None:
            conn.execute("COMMIT")
            conn.execute("BEGIN")

        def rollback() -> None:
            conn.execute("ROLLBACK")
            conn.execute("BEGIN")

        def execute(sql: str, params: tuple) -> None:
            conn.execute(sql, list(params))
            if conn.description:
                conn.fetchall()

        return _transfer(execute, accounts), commit, rollback, (duckdb.TransactionException,)

    try:
        return _run("native-duckdb", open_client, total, threads, seconds)
    finally:
        base.close()

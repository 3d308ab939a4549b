"""Micro-benchmark of the driver itself: what tique adds per statement on a plan-cache
hit, and how many engine round trips each kind of transaction costs. Printed, never asserted."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import tique


@dataclass
class Overhead:
    engine: str
    tique_us: float
    engine_us: float
    planning_us: float
    round_trips: dict[str, int]

    @property
    def driver_us(self) -> float:
        return self.tique_us - self.engine_us


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def measure(url: str, repeats: int = 2000) -> Overhead:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS tq_overhead")
    conn.commit()
    cur.execute("CREATE TABLE tq_overhead (id INTEGER PRIMARY KEY, v INTEGER)")
    cur.execute("INSERT INTO tq_overhead VALUES (1, 1), (2, 2), (3, 3)")
    conn.commit()
    point = "SELECT v FROM tq_overhead WHERE id = ?"
    cur.execute(point, (1,))
    cur.fetchall()
    plan = conn._plan(point)
    txn = conn._txn
    assert txn is not None
    backend, raw = conn.backend, conn._raw
    tique_times, engine_times = [], []
    for i in range(repeats):
        key = (i % 3) + 1
        started = time.perf_counter()
        cur.execute(point, (key,))
        cur.fetchall()
        tique_times.append(time.perf_counter() - started)
        values = plan.statement.values((key,), txn.context())
        started = time.perf_counter()
        backend.execute(raw, plan.statement.sql, values).fetchall()
        engine_times.append(time.perf_counter() - started)
    conn.commit()
    started = time.perf_counter()
    for i in range(50):
        conn._plans.clear()
        conn.backend.shared_plans.clear()  # a miss in both plan caches
        conn._plan(point)
    planning = (time.perf_counter() - started) / 50 * 1e6

    trips: dict[str, int] = {}
    scenarios = {
        "read-only transaction, 1 point read": [(point, (1,))],
        "read-write transaction, 1 read + 1 update": [(point, (1,)), ("UPDATE tq_overhead SET v = v + 1 WHERE id = ?", (1,))],
        "read-write transaction, 1 read + 2 updates": [(point, (1,)), ("UPDATE tq_overhead SET v = v + 1 WHERE id = ?", (1,)), ("UPDATE tq_overhead SET v = v + 1 WHERE id = ?", (2,))],
        "insert transaction, 1 row (with key check)": [("INSERT INTO tq_overhead VALUES (?, 0)", (100,))],
    }
    for name, statements in scenarios.items():
        before = conn.counters
        for sql, params in statements:
            cur.execute(sql, params)
        conn.commit()
        trips[name] = (conn.counters - before).round_trips
    cur.execute("DROP TABLE tq_overhead")
    conn.close()
    return Overhead(url.split(":")[0], _median_us(tique_times), _median_us(engine_times), planning, trips)


def report(result: Overhead) -> str:
    lines = [
        f"engine: {result.engine}",
        f"point read through tique (cache hit): {result.tique_us:8.1f} us median",
        f"same rewritten SQL straight to engine: {result.engine_us:8.1f} us median",
        f"driver overhead per statement:         {result.driver_us:8.1f} us",
        f"parse + rewrite on a cache miss:       {result.planning_us:8.1f} us",
        "engine round trips per transaction (statements sent, commit included):",
    ]
    lines += [f"  {name:<45} {count}" for name, count in result.round_trips.items()]
    return "\n".join(lines)

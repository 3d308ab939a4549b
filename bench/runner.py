"""A closed-loop load driver: C client threads, each running one transaction after
another with no think time, for a fixed duration, counting commits, aborts and latency."""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class LoadResult:
    commits: int = 0
    aborts: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0

    @property
    def abort_rate(self) -> float:
        total = self.commits + self.aborts
        return self.aborts / total if total else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


# A client: (run one transaction's statements given a random source, commit, rollback,
# the exception types that mean "aborted, try the next one").
Client = tuple[Callable[[random.Random], None], Callable[[], None], Callable[[], None], tuple[type, ...]]


def run_clients(clients: int, seconds: float, open_client: Callable[[], Client], result: LoadResult | None = None) -> LoadResult:
    """Threads, because each client mostly waits on its engine and because the
    connections of one process share DuckDB's in-process oracle."""
    result = result if result is not None else LoadResult()
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(seed: int) -> None:
        transaction, commit, rollback, aborted = open_client()
        rng = random.Random(seed)
        commits = aborts = 0
        latencies = []
        start.wait()
        while time.perf_counter() < stop_at[0]:
            began = time.perf_counter()
            try:
                transaction(rng)
                commit()
                commits += 1
                latencies.append(time.perf_counter() - began)
            except aborted:
                aborts += 1
                try:
                    rollback()
                except Exception:  # the abort already ended the transaction
                    pass
        with lock:
            result.commits += commits
            result.aborts += aborts
            result.latencies.extend(latencies)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds  # set before the barrier opens, so every worker sees it
    start.wait()
    for t in threads:
        t.join(timeout=seconds + 120)
    result.seconds = time.perf_counter() - began
    return result

"""The engine workers analytical reads may hold together, per database in this process.

A per-read worker cap alone bounds one analytical read; six OLAP clients each capped at
one worker still take six of the engine's threads from the point transactions beside
them. The budget bounds them together: a read starts only when its workers fit beside
those of the reads already running, and otherwise waits for one of them to finish.

Invariant: the workers held by running analytical reads never exceed the budget, except
that a read waiting with no other read running starts at once (so a cap above the
budget still runs, alone, and no read waits on nothing). A read holds its workers only
while the engine executes its statement, never while the client fetches or holds a
transaction open, so every wait ends when the engine answers a read already running.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class WorkerBudget:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._in_use = 0
        self.peak = 0  # the most workers ever held at once (the invariant's witness)

    @contextmanager
    def held(self, workers: int, budget: int) -> Iterator[None]:
        """Holds `workers` of `budget` for the block, waiting while they do not fit beside
        the workers other reads hold."""
        with self._changed:
            while self._in_use and self._in_use + workers > budget:
                self._changed.wait()
            self._in_use += workers
            self.peak = max(self.peak, self._in_use)
        try:
            yield
        finally:
            with self._changed:
                self._in_use -= workers
                self._changed.notify_all()

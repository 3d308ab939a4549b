"""Faults injected while the workload runs, each in its own thread: tique's
checkpointer every few milliseconds, and crash-restarts of the database server."""
from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any, Callable

from elle.recorder import Recorder


class CheckpointLoop(threading.Thread):
    """tique's checkpointer, every `interval` seconds, on its own connection."""

    def __init__(self, url: str, interval: float, events: Counter) -> None:
        super().__init__(name="elle-checkpointer", daemon=True)
        self.url = url
        self.interval = interval
        self.events = events
        self.stopping = threading.Event()

    def run(self) -> None:
        import tique
        from tique.checkpoint import Checkpointer

        checkpointer: Any = None
        conn: Any = None
        while not self.stopping.wait(self.interval):
            try:
                if checkpointer is None:
                    conn = tique.connect(self.url)
                    checkpointer = Checkpointer(conn.backend)
                report = checkpointer.run_once()
                self.events["checkpoint rounds"] += 0 if report.skipped else 1
                self.events["versions checkpointed"] += report.moved
            except Exception:
                # A restart fault kills our connection too: start over with a new one.
                self.events["checkpoint errors"] += 1
                _close_quietly(checkpointer, conn)
                checkpointer = conn = None
                self.stopping.wait(0.2)
        _close_quietly(checkpointer, conn)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


class RestartLoop(threading.Thread):
    """Crash-restarts the server at random moments while the workload runs."""

    def __init__(self, restart: Callable[[], None], interval: float, max_restarts: int, seed: int,
                 recorder: Recorder, events: Counter, first_after_invocations: int = 0) -> None:
        super().__init__(name="elle-restarts", daemon=True)
        self.restart = restart
        self.interval = interval
        # The first restart comes once this many transactions have begun, not after a
        # time: a workload that finishes faster than one interval would otherwise run
        # without a single restart on a fast machine.
        self.first_after_invocations = first_after_invocations
        self.max_restarts = max_restarts
        self.recorder = recorder
        self.events = events
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self._random = random.Random(seed)

    def _waited(self, first: bool) -> bool:
        """Waits for the next restart's moment; False when the run stopped first."""
        if first and self.first_after_invocations > 0:
            while self.recorder.counts["invoke"] < self.first_after_invocations:
                if self.stopping.wait(0.01):
                    return False
            return True
        return not self.stopping.wait(self.interval * self._random.uniform(0.5, 1.5))

    def run(self) -> None:
        for n in range(self.max_restarts):
            if not self._waited(first=n == 0):
                return
            self.recorder.nemesis("restart", ":start")
            try:
                self.restart()
            except BaseException as error:  # reported; the run goes on (and will likely fail loudly)
                self.error = error
                self.recorder.nemesis("restart", ":failed")
                return
            self.events["server restarts"] += 1
            self.recorder.nemesis("restart", ":done")

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=120)


def _close_quietly(*closables: Any) -> None:
    for closing in closables:
        try:
            if closing is not None:
                closing.close()
        except Exception:  # a connection to a server that died cannot close cleanly
            pass

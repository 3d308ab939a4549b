"""The history file: Jepsen's EDN operations, appended as they happen.

Each op gets a global :index (the order events were recorded in) and :time (ns,
monotonic, since the run started); a crash of the run keeps every line written so far.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from elle.history import Mop, Op, format_op


class Recorder:
    """Appends ops to the history file with global :index and :time (ns since the start)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out: TextIO | None = open(path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._index = 0
        self._start = time.monotonic_ns()
        self.open: dict[int, Op] = {}  # process -> its invocation awaiting completion
        self.counts: Counter = Counter()
        self.errors: Counter = Counter()
        self.appended: dict[str, set[tuple[int, int]]] = {"ok": set(), "fail": set(), "info": set()}
        self.max_process = -1

    def _write(self, line: str) -> None:
        if self._out is not None:
            self._out.write(line + "\n")
            self._out.flush()

    def invoke(self, process: int, txn: tuple[Mop, ...]) -> Op:
        with self._lock:
            if process in self.open:
                raise RuntimeError(f"process {process} invoked an op while its previous one is open")
            op = Op("invoke", "txn", txn, process, time.monotonic_ns() - self._start, self._index)
            self._index += 1
            self.open[process] = op
            self.max_process = max(self.max_process, process)
            self.counts["invoke"] += 1
            self._write(format_op(op))
            return op

    def complete(self, process: int, type_: str, value: tuple[Mop, ...] | None = None, error: str | None = None) -> Op | None:
        """Completes the process's open op; value None means the invoked value (fail/info)."""
        with self._lock:
            invoked = self.open.pop(process, None)
            if invoked is None:
                return None  # already completed (e.g. as :info when the run gave up on it)
            op = Op(type_, "txn", invoked.value if value is None else value, process,
                    time.monotonic_ns() - self._start, self._index, error)
            self._index += 1
            self.counts[type_] += 1
            if error is not None:
                self.errors[f"{type_}: {error.split(':')[0]}"] += 1
            self.appended[type_].update((k, v) for f, k, v in invoked.value if f == "append")
            self._write(format_op(op))
            return op

    def nemesis(self, f: str, value: str) -> None:
        """A fault event, as Jepsen records its nemesis (checkers skip non-integer processes)."""
        with self._lock:
            now = time.monotonic_ns() - self._start
            self._write(f"{{:type :info, :f :{f}, :value {value}, :process :nemesis, :time {now}, :index {self._index}}}")
            self._index += 1

    def abandon_open(self, reason: str) -> None:
        for process in list(self.open):
            self.complete(process, "info", error=reason)

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None

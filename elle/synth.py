"""Synthetic list-append histories from a simulated in-memory database.

The simulated database gives every transaction a snapshot when it is invoked
and decides at completion, optimistically, whether it commits:

* "serializable": abort if any key it read or appended was committed to since
  its snapshot.  A committed transaction then behaves as if it ran atomically
  at its commit, which lies between its invocation and completion, so the
  history is strict serializable.
* "snapshot-isolation": abort only on write-write conflicts (first committer
  wins).  Histories are strong snapshot isolation and show write skew (G2-item).
* "no-conflict-check": snapshot reads but every transaction commits, so
  concurrent updates are lost: a deliberately broken database whose histories
  are full of anomalies (lost updates, G-single, G2-item, ...).

Keys rotate as in Elle's generator: a small pool of active keys, each retired
after a random number of appends, so read lengths stay bounded.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from elle.history import Mop, Op

ISOLATION_LEVELS = ("serializable", "snapshot-isolation", "no-conflict-check")


@dataclass
class _Pending:
    process: int
    invoke: Op
    snapshot: int
    mops: tuple[Mop, ...]  # with read results as seen from the snapshot
    keys_read: set[Any] = field(default_factory=set)
    keys_written: set[Any] = field(default_factory=set)


class _Database:
    def __init__(self) -> None:
        self.state: dict[Any, tuple[int, ...]] = {}
        self.last_commit: dict[Any, int] = {}  # key -> commit sequence number of its last append
        self.seq = 0

    def run(self, mops: list[tuple[str, Any, Any]]) -> tuple[tuple[Mop, ...], set[Any], set[Any]]:
        """Execute against the current committed state (the snapshot) plus the
        transaction's own earlier appends."""
        local: dict[Any, tuple[int, ...]] = {}
        out: list[Mop] = []
        read: set[Any] = set()
        written: set[Any] = set()
        for f, k, v in mops:
            current = local.get(k, self.state.get(k))
            if f == "r":
                out.append(("r", k, current))
                read.add(k)
            else:
                local[k] = (current or ()) + (v,)
                out.append(("append", k, v))
                written.add(k)
        return tuple(out), read, written

    def try_commit(self, p: _Pending, isolation: str) -> bool:
        if isolation == "serializable":
            watched = p.keys_written | p.keys_read
        elif isolation == "snapshot-isolation":
            watched = p.keys_written
        else:
            watched = set()
        if any(self.last_commit.get(k, 0) > p.snapshot for k in watched):
            return False
        self.seq += 1
        for f, k, v in p.mops:
            if f == "append":
                self.state[k] = self.state.get(k, ()) + (v,)
                self.last_commit[k] = self.seq
        return True


class _Keys:
    """Elle-style key rotation with unique values per key."""

    def __init__(self, rng: random.Random, count: int, max_writes: int) -> None:
        self.rng = rng
        self.max_writes = max_writes
        self.active = list(range(count))
        self.budget = {k: rng.randint(1, max_writes) for k in self.active}
        self.next_key = count
        self.next_value: dict[int, int] = {}

    def pick(self) -> int:
        # Lower slots are hotter, as with Elle's exponential key distribution.
        i = min(int(self.rng.expovariate(1.0 / max(1.0, len(self.active) / 3))), len(self.active) - 1)
        return self.active[i]

    def value(self, k: int) -> int:
        v = self.next_value.get(k, 1)
        self.next_value[k] = v + 1
        if v >= self.budget[k]:
            i = self.active.index(k)
            fresh = self.next_key
            self.next_key += 1
            self.active[i] = fresh
            self.budget[fresh] = self.rng.randint(1, self.max_writes)
        return v


def generate(
    txns: int,
    clients: int,
    *,
    isolation: str = "serializable",
    seed: int = 0,
    key_count: int = 10,
    max_writes_per_key: int = 128,
    max_txn_length: int = 4,
    info_rate: float = 0.002,
) -> list[Op]:
    """`txns` transactions from `clients` concurrent clients, as a list of ops."""
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, not {isolation!r}")
    rng = random.Random(seed)
    db = _Database()
    keys = _Keys(rng, key_count, max_writes_per_key)
    ops: list[Op] = []
    now = 0
    running: dict[int, _Pending] = {}
    processes = list(range(clients))  # current process id of each client
    started = 0
    while started < txns or running:
        client = rng.randrange(clients)
        now += rng.randint(1_000, 200_000)
        process = processes[client]
        pending = running.pop(process, None)
        if pending is None:
            if started >= txns:
                continue
            started += 1
            mops = []
            for _ in range(rng.randint(1, max_txn_length)):
                k = keys.pick()
                mops.append(("r", k, None) if rng.random() < 0.5 else ("append", k, keys.value(k)))
            invoke = Op("invoke", "txn", tuple(mops), process, now, len(ops))
            ops.append(invoke)
            executed, read, written = db.run(mops)
            running[process] = _Pending(process, invoke, db.seq, executed, read, written)
            continue
        if rng.random() < info_rate:
            # The client lost track of the outcome: the commit may or may not happen.
            if rng.random() < 0.5:
                db.try_commit(pending, isolation)
            ops.append(Op("info", "txn", pending.invoke.value, process, now, len(ops), "timeout"))
            processes[client] = process + clients  # a crashed client comes back as a new process
        elif db.try_commit(pending, isolation):
            ops.append(Op("ok", "txn", pending.mops, process, now, len(ops)))
        else:
            ops.append(Op("fail", "txn", pending.invoke.value, process, now, len(ops), "conflict"))
    return ops

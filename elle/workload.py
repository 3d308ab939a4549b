"""Elle's list-append workload: transactions of reads and appends over a few hot keys.

As in Elle's generator, a bounded pool of keys is active at a time; a key that has
received `max_writes_per_key` appends retires and a fresh key takes its place, so
lists stay short (reads stay cheap, version orders stay easy to infer) and new keys
keep exercising the insert path. Each key's appended values count up from 1, so every
element of every list is unique and names the one append that wrote it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator

from elle.history import Mop


@dataclass(frozen=True)
class WorkloadConfig:
    key_count: int = 10  # keys active at once
    min_txn_length: int = 1
    max_txn_length: int = 4
    max_writes_per_key: int = 32
    read_fraction: float = 0.5  # probability that a micro-op is a read rather than an append
    seed: int = 0

    def __post_init__(self) -> None:
        if self.key_count < 1:
            raise ValueError(f"key_count must be at least 1, not {self.key_count}")
        if not 1 <= self.min_txn_length <= self.max_txn_length:
            raise ValueError(f"need 1 <= min_txn_length <= max_txn_length, not {self.min_txn_length}..{self.max_txn_length}")
        if self.max_writes_per_key < 1:
            raise ValueError(f"max_writes_per_key must be at least 1, not {self.max_writes_per_key}")
        if not 0.0 <= self.read_fraction <= 1.0:
            raise ValueError(f"read_fraction must be within [0, 1], not {self.read_fraction}")


class ListAppendGenerator:
    """Deterministic for a given config: the n-th transaction drawn is always the same."""

    def __init__(self, config: WorkloadConfig) -> None:
        self.config = config
        self._random = random.Random(config.seed)
        self._active = list(range(config.key_count))
        self._next_key = config.key_count
        self._writes: dict[int, int] = {}

    def _append(self, key: int) -> Mop:
        value = self._writes.get(key, 0) + 1
        self._writes[key] = value
        if value >= self.config.max_writes_per_key:
            # The key is full: retire it. Appends already drawn stay valid; no new ones come.
            self._active[self._active.index(key)] = self._next_key
            self._next_key += 1
        return ("append", key, value)

    def next_txn(self) -> tuple[Mop, ...]:
        rnd, config = self._random, self.config
        length = rnd.randint(config.min_txn_length, config.max_txn_length)
        mops: list[Mop] = []
        for _ in range(length):
            key = rnd.choice(self._active)
            if rnd.random() < config.read_fraction:
                mops.append(("r", key, None))
            else:
                mops.append(self._append(key))
        return tuple(mops)

    def __iter__(self) -> Iterator[tuple[Mop, ...]]:
        while True:
            yield self.next_txn()

    @property
    def active_keys(self) -> tuple[int, ...]:
        return tuple(self._active)

    @property
    def keys_used(self) -> range:
        """Every key a transaction drawn so far may have touched."""
        return range(self._next_key)

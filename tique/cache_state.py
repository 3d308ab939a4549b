"""Which tables' caches hold nothing, for embedded engines, where every writer of the
database runs in this process.

A read of a table whose cache holds nothing is a read of its storage table alone: the
snapshot subquery adds nothing to it but cost (a union, a join to the outcome log and a
window, planned afresh on every statement). CH-benCHmark's queries, and TPC-C's reads of
`item`, read such tables most of the time once the checkpointer has caught up.

Invariant: a table is clean only if its cache held no row, committed or not, when it was
counted, no transaction of this process that writes the table was open then, and none
has begun writing it since. Why that is enough: rows a transaction commits after a reader
began carry a commit timestamp above the reader's start, so the reader would not see them
anyway; rows committed before the reader began were written by a transaction that marked
the table dirty before writing, and only a later count of an empty cache (the
checkpointer moved them to storage and purged them) marks it clean again.

An engine transaction reads the database as it was when it began (DuckDB): a table that
became clean after that may still have had rows in its cache then, not yet in storage.
So a read inside one uses only the tables that were already clean when it began
(`clean(since=...)` with the epoch taken before it began).
"""
from __future__ import annotations

import threading
from collections import Counter


class CacheState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clean: set[str] = set()
        self._writers: Counter[str] = Counter()  # open transactions writing each table
        self._version: Counter[str] = Counter()  # bumped by every transaction that starts writing it
        self._epoch = 0  # counts tables made clean
        self._clean_since: dict[str, int] = {}

    def writing(self, table: str) -> None:
        """A transaction is about to write `table` (once per transaction and table)."""
        with self._lock:
            self._clean.discard(table)
            self._writers[table] += 1
            self._version[table] += 1

    def done(self, tables: set[str]) -> None:
        """A transaction that wrote `tables` committed or rolled back."""
        with self._lock:
            for table in tables:
                self._writers[table] -= 1

    def before_count(self, table: str) -> int | None:
        """The version to confirm an empty count against; None while a writer is open."""
        with self._lock:
            return None if self._writers[table] else self._version[table]

    def counted_empty(self, table: str, version: int) -> None:
        with self._lock:
            if not self._writers[table] and self._version[table] == version and table not in self._clean:
                self._epoch += 1
                self._clean.add(table)
                self._clean_since[table] = self._epoch

    def forget(self, table: str) -> None:
        """The table was dropped or created: nothing is known of its cache."""
        with self._lock:
            self._clean.discard(table)
            self._version[table] += 1

    def epoch(self) -> int:
        with self._lock:
            return self._epoch

    def clean(self, since: int | None = None) -> frozenset[str]:
        """Tables whose caches hold nothing; with `since`, those clean since that epoch."""
        with self._lock:
            if since is None:
                return frozenset(self._clean)
            return frozenset(t for t in self._clean if self._clean_since[t] <= since)

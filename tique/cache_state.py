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

Keys, the same way one level down: a table's cache is rarely empty under a steady load,
but most keys have no version in it. Every write registers, before it runs, the keys it
appends versions of (or that it may append any key's: unkeyed), under its transaction
id. A table is armed once a count finds only rows of registered transactions in its
cache (rows a previous process left are of no one's). A registration is dropped when its
transaction has ended and a count begun after that finds no row of the transaction left
in the cache (the checkpointer moved or purged them all: by transaction, all at once).
A key of an armed table with no registration and no unkeyed writer has no version in
the cache, by the table-level argument above, so a point read of it reads storage. An
engine transaction may still see versions dropped after it began: inside one, a table
whose registrations were dropped since then is read through its snapshot.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Iterable

# A key, or a prefix of one (leading key columns): every key it begins.
Key = tuple[int, ...]


class CacheState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clean: set[str] = set()
        self._writers: Counter[str] = Counter()  # open transactions writing each table
        self._version: Counter[str] = Counter()  # bumped by every transaction that starts writing it
        self._epoch = 0  # counts tables made clean
        self._clean_since: dict[str, int] = {}
        # Key level: tables armed (epoch of arming), registered keys of transactions not
        # yet known to be gone from the cache, and of each transaction what it registered
        # (None for a table: unkeyed).
        self._armed: dict[str, int] = {}
        self._keys: dict[str, Counter[Key]] = {}
        self._prefixes: dict[str, Counter[Key]] = {}  # every leading part of each registered key
        self._unkeyed: Counter[str] = Counter()
        self._registered: dict[int, dict[str, set[Key] | None]] = {}
        self._ended: set[int] = set()
        self._dropped_at: dict[str, int] = {}  # epoch of the last registration dropped, per table
        self._generation: Counter[str] = Counter()  # bumped by forget: a count taken before is void

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
                if table not in self._armed:
                    # Empty with no writer open: every registration of it is gone too.
                    self._drop_table_registrations(table)
                    self._armed[table] = self._epoch

    def forget(self, table: str) -> None:
        """The table was dropped or created: nothing is known of its cache."""
        with self._lock:
            self._clean.discard(table)
            self._version[table] += 1
            self._armed.pop(table, None)
            self._generation[table] += 1

    # -- keys ------------------------------------------------------------------
    def writing_keys(self, txid: int, table: str, keys: Iterable[Key] | None) -> None:
        """Transaction `txid` is about to append versions of `keys` of `table` (None:
        of keys not known)."""
        with self._lock:
            mine = self._registered.setdefault(txid, {})
            if table in mine and mine[table] is None:
                return
            if keys is None:
                for key in mine.get(table) or ():
                    self._release_key(table, key)
                mine[table] = None
                self._unkeyed[table] += 1
                return
            held = mine.setdefault(table, set())
            assert held is not None
            counted = self._keys.setdefault(table, Counter())
            prefixes = self._prefixes.setdefault(table, Counter())
            for key in keys:
                if key not in held:
                    held.add(key)
                    counted[key] += 1
                    for end in range(1, len(key) + 1):
                        prefixes[key[:end]] += 1

    def ended(self, txid: int) -> None:
        """Transaction `txid` committed or rolled back its engine transaction."""
        with self._lock:
            if txid in self._registered:
                self._ended.add(txid)

    def ended_writers(self, table: str) -> tuple[frozenset[int], int | None]:
        """Ended transactions still registered for `table`, what a count begun after this
        call can drop, and the generation to arm the table at (None: armed already)."""
        with self._lock:
            ended = frozenset(t for t in self._ended if table in self._registered[t])
            return ended, None if table in self._armed else self._generation[table]

    def counted_unarmed(self, table: str, generation: int, present: set[int]) -> None:
        """A count begun after `generation` was read found rows of `present` transactions
        in the cache of `table`: if each registered for it, every row there is known."""
        with self._lock:
            known = all(t in self._registered and table in self._registered[t] for t in present)
            if known and self._generation[table] == generation and table not in self._armed:
                self._epoch += 1
                self._armed[table] = self._epoch

    def counted_writers(self, table: str, ended: frozenset[int], present: set[int]) -> None:
        """A count begun after `ended` was taken found rows of `present` transactions in
        the cache of `table`: the others of `ended` have none left there."""
        with self._lock:
            gone = [t for t in ended if t not in present and t in self._registered and table in self._registered[t]]
            for txid in gone:
                self._drop(txid, table)
            if gone:
                self._epoch += 1
                self._dropped_at[table] = self._epoch

    def keys_clean(self, table: str, keys: Iterable[Key], since: int | None = None) -> bool:
        """Whether no transaction has (or may have) versions of any key `keys` begin in the
        cache of `table`; with `since`, also none dropped from the state since that epoch."""
        with self._lock:
            armed = self._armed.get(table)
            if armed is None or self._unkeyed[table]:
                return False
            if since is not None and (armed > since or self._dropped_at.get(table, 0) > since):
                return False
            counted = self._keys.get(table)
            if not counted:
                return True
            prefixes = self._prefixes[table]
            # Two keys or prefixes overlap when one begins the other.
            return not any(key in prefixes or any(key[:end] in counted for end in range(1, len(key)))
                           for key in keys)

    def _drop(self, txid: int, table: str) -> None:
        mine = self._registered[txid]
        keys = mine.pop(table)
        if keys is None:
            self._unkeyed[table] -= 1
        else:
            for key in keys:
                self._release_key(table, key)
        if not mine:
            del self._registered[txid]
            self._ended.discard(txid)

    def _release_key(self, table: str, key: Key) -> None:
        counted = self._keys[table]
        counted[key] -= 1
        if counted[key] <= 0:
            del counted[key]
        prefixes = self._prefixes[table]
        for end in range(1, len(key) + 1):
            prefixes[key[:end]] -= 1
            if prefixes[key[:end]] <= 0:
                del prefixes[key[:end]]

    def _drop_table_registrations(self, table: str) -> None:
        for txid in [t for t, mine in self._registered.items() if table in mine]:
            self._drop(txid, table)

    def epoch(self) -> int:
        with self._lock:
            return self._epoch

    def clean(self, since: int | None = None) -> frozenset[str]:
        """Tables whose caches hold nothing; with `since`, those clean since that epoch."""
        with self._lock:
            if since is None:
                return frozenset(self._clean)
            return frozenset(t for t in self._clean if self._clean_since[t] <= since)

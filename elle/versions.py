"""Per-key version orders inferred from reads, and the indexes built around them.

In a list-append history every read of key k returns the whole list, so one
read of [1 2 3] tells us the versions k went through: [], [1], [1 2], [1 2 3].
If the database is correct every read of k is a prefix of the longest one,
which is then the (observed part of the) version order of k.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from elle.txns import Txn


@dataclass
class Versions:
    # key -> observed version order: the distinct elements of the longest :ok read
    orders: dict[Any, tuple[Any, ...]] = field(default_factory=dict)
    # key -> element -> position in orders[key]
    positions: dict[Any, dict[Any, int]] = field(default_factory=dict)
    # key -> element -> the transaction (of any type) that appended it
    writers: dict[Any, dict[Any, Txn]] = field(default_factory=dict)
    # key -> every element some :ok read returned
    observed: dict[Any, set[Any]] = field(default_factory=dict)
    # key -> distinct :ok read values -> first transaction that read it
    distinct_reads: dict[Any, dict[tuple[Any, ...], Txn]] = field(default_factory=dict)
    # key -> distinct read values that are not a prefix of the longest one
    incompatible: dict[Any, list[tuple[Any, ...]]] = field(default_factory=dict)

    def previous(self, k: Any, element: Any) -> Any:
        """The element appended just before `element` in k's version order; None for the
        initial (empty) state.  An append no read observed must come after every observed
        element (else the longest read would contain it), so its predecessor is the last
        observed element."""
        order = self.orders.get(k, ())
        i = self.positions.get(k, {}).get(element)
        if i is None:
            return order[-1] if order else None
        return order[i - 1] if i > 0 else None

    def writer(self, k: Any, element: Any) -> Txn | None:
        by_value = self.writers.get(k)
        return None if by_value is None else by_value.get(element)


def build_versions(txns: list[Txn]) -> Versions:
    v = Versions()
    writers = v.writers
    distinct = v.distinct_reads
    for t in txns:
        ok = t.type == "ok"
        for f, k, value in t.mops:
            if f == "append":
                by_value = writers.get(k)
                if by_value is None:
                    writers[k] = {value: t}
                else:
                    by_value[value] = t
            elif ok:  # reads of :info and :fail transactions are unknown or void
                reads = distinct.get(k)
                key = value if value is not None else ()
                if reads is None:
                    distinct[k] = {key: t}
                elif key not in reads:
                    reads[key] = t
    for k, reads in distinct.items():
        longest = max(reads, key=len)
        elements = set(longest)
        observed = set(elements)
        bad = []
        for r in reads:
            if longest[: len(r)] != r:
                bad.append(r)
                observed.update(r)
        if bad:
            v.incompatible[k] = bad
        if len(elements) == len(longest):
            order = longest
        else:
            # Duplicated elements: keep each element at its first position.
            order = tuple(dict.fromkeys(longest))
        v.orders[k] = order
        v.positions[k] = {e: i for i, e in enumerate(order)}
        v.observed[k] = observed
    return v

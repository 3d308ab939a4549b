"""Anomalies visible without the dependency graph: bad reads and broken version orders.

Each finder returns a list of cases; a case is a JSON-ready dict whose "text"
explains it in words.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from elle.text import edn, ending, state
from elle.txns import Txn
from elle.versions import Versions

Case = dict[str, Any]


def find_all(txns: list[Txn], versions: Versions) -> dict[str, list[Case]]:
    found: dict[str, list[Case]] = {
        "G1a": aborted_reads(versions),
        "garbage": garbage_reads(versions),
        "G1b": intermediate_reads(txns, versions),
        "dirty-update": dirty_updates(versions),
        "duplicate-elements": duplicate_elements(versions),
        "incompatible-order": incompatible_orders(versions),
        "lost-update": lost_updates(txns),
    }
    internal, future = internal_cases(txns)
    found["internal"] = internal
    found["future-read"] = future
    return {name: cases for name, cases in found.items() if cases}


def _first_reader(versions: Versions, k: Any, element: Any) -> tuple[Txn, tuple[Any, ...]]:
    for read, reader in versions.distinct_reads[k].items():
        if element in read:
            return reader, read
    raise AssertionError(f"element {element!r} of key {k!r} is observed but no read holds it")


def aborted_reads(versions: Versions) -> list[Case]:
    """G1a: a committed read observed an element appended by a transaction that failed."""
    cases = []
    for k, observed in versions.observed.items():
        writers = versions.writers.get(k, {})
        for e in observed:
            w = writers.get(e)
            if w is None or w.type != "fail":
                continue
            reader, read = _first_reader(versions, k, e)
            cases.append({
                "key": k, "element": e, "writer": w.name, "reader": reader.name, "read": read,
                "text": f"{reader.name} read key {edn(k)} = {state(read)}, which holds {edn(e)}, "
                        f"appended by {w.name}, a transaction that failed (aborted read)",
            })
    return cases


def garbage_reads(versions: Versions) -> list[Case]:
    """A committed read observed an element nobody ever tried to append to that key."""
    cases = []
    for k, observed in versions.observed.items():
        writers = versions.writers.get(k, {})
        for e in observed:
            if e in writers:
                continue
            reader, read = _first_reader(versions, k, e)
            cases.append({
                "key": k, "element": e, "reader": reader.name, "read": read,
                "text": f"{reader.name} read key {edn(k)} = {state(read)}, which holds {edn(e)}, "
                        f"but no transaction ever appended {edn(e)} to key {edn(k)}",
            })
    return cases


def intermediate_reads(txns: list[Txn], versions: Versions) -> list[Case]:
    """G1b: a read's last element is an append its writer later followed with another
    append to the same key, so the read saw a state that writer never committed."""
    intermediate: dict[Any, dict[Any, tuple[Txn, Any]]] = {}
    for t in txns:
        last: dict[Any, Any] = {}
        for f, k, v in t.mops:
            if f != "append":
                continue
            if k in last:
                intermediate.setdefault(k, {})[last[k]] = (t, v)
            last[k] = v
    if not intermediate:
        return []
    cases = []
    for t in txns:
        if t.type != "ok":
            continue
        for f, k, v in t.mops:
            if f != "r" or not v:
                continue
            hit = intermediate.get(k, {}).get(v[-1])
            if hit is None or hit[0] is t:
                continue
            w, later = hit
            cases.append({
                "key": k, "element": v[-1], "writer": w.name, "reader": t.name, "read": v,
                "text": f"{t.name} read key {edn(k)} = {state(v)}, a state ending in {edn(v[-1])}; "
                        f"but {w.name} appended {edn(later)} to key {edn(k)} after {edn(v[-1])} in the same "
                        f"transaction, so that state was never committed (intermediate read)",
            })
    return cases


def dirty_updates(versions: Versions) -> list[Case]:
    """A committed append directly follows, in a key's version order, elements written only
    by failed transactions: committed state was built on aborted state."""
    cases = []
    for k, order in versions.orders.items():
        writers = versions.writers.get(k, {})
        anchor: Txn | None = None  # last writer whose outcome we track; None: the initial state
        span: list[Any] = []
        for e in order:
            w = writers.get(e)
            if w is None:
                continue
            span.append(e)
            if w.type == "ok":
                if anchor is not None and anchor.type == "fail":
                    cases.append({
                        "key": k, "values": list(span), "failed": anchor.name, "committed": w.name,
                        "text": f"key {edn(k)}: {w.name} committed its append of {edn(e)} on top of "
                                f"{state(span[:-1])}, written by {anchor.name}, which failed (dirty update)",
                    })
                anchor, span = w, [e]
            elif w.type == "fail" and (anchor is None or anchor.type != "fail"):
                anchor, span = w, [e]
    return cases


def duplicate_elements(versions: Versions) -> list[Case]:
    cases = []
    for k, reads in versions.distinct_reads.items():
        for read, reader in reads.items():
            if len(set(read)) == len(read):
                continue
            dups = {e: n for e, n in Counter(read).items() if n > 1}
            listed = ", ".join(f"{edn(e)} appears {n} times" for e, n in dups.items())
            cases.append({
                "key": k, "reader": reader.name, "read": read, "duplicates": dups,
                "text": f"{reader.name} read key {edn(k)} = {state(read)}: {listed}, "
                        f"but every appended value is unique",
            })
    return cases


def incompatible_orders(versions: Versions) -> list[Case]:
    cases = []
    for k, bad in versions.incompatible.items():
        reads = versions.distinct_reads[k]
        longest = max(reads, key=len)
        r = min(bad, key=len)
        cases.append({
            "key": k, "read": r, "reader": reads[r].name, "longest": longest, "longest_reader": reads[longest].name,
            "incompatible_reads": len(bad),
            "text": f"key {edn(k)}: {reads[r].name} read {state(r)} but {reads[longest].name} read "
                    f"{state(longest)}; the first is not a prefix of the second, so no single order "
                    f"of appends explains both ({len(bad)} incompatible read(s) of this key)",
        })
    return cases


def lost_updates(txns: list[Txn]) -> list[Case]:
    """Two committed transactions read the same version of k and both appended to k:
    one of the updates was computed from a state the other had already replaced."""
    groups: dict[tuple[Any, Any], list[tuple[Txn, Any]]] = {}
    for t in txns:
        if t.type != "ok":
            continue
        read_last: dict[Any, Any] = {}
        counted: set[Any] = set()
        for f, k, v in t.mops:
            if f == "r":
                if k not in read_last:
                    read_last[k] = v[-1] if v else None
            elif k in read_last and k not in counted:
                counted.add(k)
                groups.setdefault((k, read_last[k]), []).append((t, v))
    cases = []
    for (k, last), members in groups.items():
        if len(members) < 2:
            continue
        names = [t.name for t, _ in members]
        appends = ", ".join(f"{t.name} appended {edn(v)}" for t, v in members)
        cases.append({
            "key": k, "read_last": last, "txns": names,
            "text": f"{len(members)} committed transactions read key {edn(k)} = {ending(last)} "
                    f"and then appended to it ({appends}): all but one update was lost",
        })
    return cases


def internal_cases(txns: list[Txn]) -> tuple[list[Case], list[Case]]:
    """Reads that disagree with the transaction's own earlier reads and appends
    (internal), and reads that observe an append the transaction makes only later
    (future-read)."""
    internal: list[Case] = []
    future: list[Case] = []
    for t in txns:
        mops = t.mops
        if t.type != "ok" or len(mops) < 2 or len({k for _, k, _ in mops}) == len(mops):
            continue  # no key touched twice: nothing to disagree with
        bad = _internal(t)
        if bad is not None:
            internal.append(bad)
        bad = _future_read(t)
        if bad is not None:
            future.append(bad)
    return internal, future


def _internal(t: Txn) -> Case | None:
    # key -> (whole state known?, expected state or expected suffix)
    expect: dict[Any, tuple[bool, tuple[Any, ...]]] = {}
    for f, k, v in t.mops:
        if f == "append":
            known, s = expect.get(k, (False, ()))
            expect[k] = (known, s + (v,))
            continue
        read = v or ()
        if k in expect:
            known, s = expect[k]
            if known:
                ok = read == s
                shown = state(s)
            else:
                ok = len(read) >= len(s) and read[len(read) - len(s):] == s
                shown = "[... " + " ".join(map(edn, s)) + "]"
            if not ok:
                return {
                    "txn": t.name, "key": k, "read": read, "expected": shown,
                    "text": f"{t.name} read key {edn(k)} = {state(read)}, but given its own earlier "
                            f"reads and appends of that key it should have read {shown}",
                }
        expect[k] = (True, read)
    return None


def _future_read(t: Txn) -> Case | None:
    seen: dict[Any, set[Any]] = {}
    for f, k, v in t.mops:
        if f == "r":
            if v:
                seen.setdefault(k, set()).update(v)
        elif v in seen.get(k, ()):
            return {
                "txn": t.name, "key": k, "element": v,
                "text": f"{t.name} read key {edn(k)} containing {edn(v)} before it appended {edn(v)} itself",
            }
    return None

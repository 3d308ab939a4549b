"""Explaining a dependency cycle step by step, in the manner of Elle:

    Let:
      T3 = {:type :ok, ...}
      T7 = {:type :ok, ...}
    Then:
      - T3 < T7, because T3 read key 4 = [1 2] and did not see T7's append of 3, which came right after 2 (rw).
      - However, T7 < T3, because T3 read key 5 = [... 9], observing T7's append of 9 (wr): a contradiction!
"""
from __future__ import annotations

from typing import Any

from elle.cycles import FoundCycle
from elle.graph import KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from elle.text import edn, state
from elle.txns import Txn
from elle.versions import Versions

Step = dict[str, Any]


def explain_cycle(found: FoundCycle, vertices: list[Txn], versions: Versions) -> dict[str, Any]:
    txns = [vertices[v] for v in found.nodes]
    n = len(txns)
    steps = [explain_step(txns[i], txns[(i + 1) % n], kind, versions) for i, kind in enumerate(found.labels)]
    lines = [f"{found.name} cycle over {n} transactions (strongly connected component of {found.component_size}).", "Let:"]
    lines += [f"  {t.name} = {t.edn()}" for t in txns]
    lines.append("Then:")
    for i, step in enumerate(steps):
        because = f"{step['from']} < {step['to']}, because {step['text']}"
        lines.append(f"  - However, {because}: a contradiction!" if i == n - 1 else f"  - {because}.")
    return {
        "type": found.name,
        "cycle": [t.name for t in txns] + [txns[0].name],
        "steps": steps,
        "txns": {t.name: t.edn() for t in txns},
        "component_size": found.component_size,
        "text": "\n".join(lines),
    }


def explain_step(a: Txn, b: Txn, kind: int, versions: Versions) -> Step:
    """Why a precedes b through an edge of `kind`: the key and values that force it."""
    if kind == WW:
        detail = _ww(a, b, versions)
    elif kind == WR:
        detail = _wr(a, b, versions)
    elif kind == RW:
        detail = _rw(a, b, versions)
    elif kind == PROCESS:
        detail = {"process": a.process, "text": f"process {a.process} ran {a.name} and then {b.name}"}
    elif kind == REALTIME:
        detail = _realtime(a, b)
    else:
        raise AssertionError(f"unknown edge kind {kind}")
    detail["text"] += f" ({KIND_NAMES[kind]})"
    return {"from": a.name, "to": b.name, "type": KIND_NAMES[kind], **detail}


def _appends(t: Txn) -> list[tuple[int, Any, Any]]:
    return [(i, k, v) for i, (f, k, v) in enumerate(t.mops) if f == "append"]


def _reads(t: Txn) -> list[tuple[int, Any, tuple[Any, ...]]]:
    if t.type != "ok":
        return []
    return [(i, k, v or ()) for i, (f, k, v) in enumerate(t.mops) if f == "r"]


def _unread(versions: Versions, k: Any, v: Any) -> bool:
    return v not in versions.positions.get(k, {})


def _ww(a: Txn, b: Txn, versions: Versions) -> dict[str, Any]:
    for i, k, v in _appends(b):
        prev = versions.previous(k, v)
        if prev is None or versions.writer(k, prev) is not a:
            continue
        if _unread(versions, k, v):
            text = (f"{b.name} appended {edn(v)} to key {edn(k)}; no read saw it, so it follows every observed "
                    f"element, the last of which is {edn(prev)}, appended by {a.name}")
        else:
            text = f"{b.name} appended {edn(v)} after {a.name} appended {edn(prev)} to key {edn(k)}"
        return {"key": k, "value": prev, "value'": v, "b_mop_index": i, "text": text}
    raise AssertionError(f"no ww dependency {a.name} -> {b.name}")


def _wr(a: Txn, b: Txn, versions: Versions) -> dict[str, Any]:
    for i, k, read in _reads(b):
        if read and versions.writer(k, read[-1]) is a:
            text = f"{b.name} read key {edn(k)} = {state(read)}, observing {a.name}'s append of {edn(read[-1])}"
            return {"key": k, "value": read[-1], "read": read, "b_mop_index": i, "text": text}
    raise AssertionError(f"no wr dependency {a.name} -> {b.name}")


def _rw(a: Txn, b: Txn, versions: Versions) -> dict[str, Any]:
    reads = _reads(a)
    for _, k, v in _appends(b):
        prev = versions.previous(k, v)
        for i, rk, read in reads:
            if rk != k or (read[-1] if read else None) != prev:
                continue
            if prev is None:
                text = (f"{a.name} read key {edn(k)} = [], the initial state, which {b.name} "
                        f"changed by appending {edn(v)}")
            elif _unread(versions, k, v):
                text = (f"{a.name} read key {edn(k)} = {state(read)} and did not see {b.name}'s append of {edn(v)}, "
                        f"which no read saw and so follows every observed element")
            else:
                text = (f"{a.name} read key {edn(k)} = {state(read)} and did not see {b.name}'s append of {edn(v)}, "
                        f"which came right after {edn(prev)}")
            return {"key": k, "value": prev, "value'": v, "read": read, "a_mop_index": i, "text": text}
    raise AssertionError(f"no rw dependency {a.name} -> {b.name}")


def _realtime(a: Txn, b: Txn) -> dict[str, Any]:
    done, start = a.complete, b.invoke
    assert done is not None
    text = f"{a.name} completed (history index {done.index}) before {b.name} was invoked (index {start.index})"
    if done.time >= 0 and start.time >= 0 and start.time > done.time:
        text += f", {(start.time - done.time) / 1e9:.6f} s later"
    return {"completed_index": done.index, "invoked_index": start.index, "text": text}

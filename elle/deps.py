"""The dependency graph: which committed transaction must precede which.

Vertices are the transactions known to have committed: every :ok one, and
every :info one whose append some read observed (an unobserved :info append
proves nothing, and a vertex with only incoming edges cannot lie on a cycle
anyway).  Data edges follow Adya's definitions over the inferred version
orders; process and realtime edges are only built when a model needs them.
"""
from __future__ import annotations

from typing import Any

from elle.graph import PROCESS, REALTIME, RW, WR, WW, Graph
from elle.txns import Txn
from elle.versions import Versions


def committed(txns: list[Txn], versions: Versions) -> list[Txn]:
    """Number the committed transactions as graph vertices (sets Txn.node)."""
    nodes: list[Txn] = []
    observed = versions.observed
    for t in txns:
        if t.type == "ok" or (t.type == "info" and any(
            f == "append" and v in observed.get(k, ()) for f, k, v in t.mops
        )):
            t.node = len(nodes)
            nodes.append(t)
        else:
            t.node = -1
    return nodes


def build_graph(
    txns: list[Txn],
    nodes: list[Txn],
    versions: Versions,
    n_ops: int,
    *,
    anti: bool,
    process: bool,
    realtime: bool,
) -> Graph:
    g = Graph(len(nodes))
    unobserved = _unobserved_appends(nodes, versions)
    _write_edges(g, versions, unobserved)
    _read_edges(g, nodes, versions, unobserved, anti)
    if process:
        _process_edges(g, txns)
    if realtime:
        _realtime_edges(g, txns, n_ops)
    return g


def _unobserved_appends(nodes: list[Txn], versions: Versions) -> dict[Any, list[Txn]]:
    """key -> committed transactions whose append to it no read observed.  Such an
    append must follow every observed element, or the longest read would hold it."""
    out: dict[Any, list[Txn]] = {}
    positions = versions.positions
    for t in nodes:
        for f, k, v in t.mops:
            if f == "append" and v not in positions.get(k, ()):
                out.setdefault(k, []).append(t)
    return out


def _write_edges(g: Graph, versions: Versions, unobserved: dict[Any, list[Txn]]) -> None:
    link = g.link
    for k, order in versions.orders.items():
        writers = versions.writers.get(k, {})
        prev = -1
        for e in order:
            w = writers.get(e)
            node = w.node if w is not None else -1
            if prev >= 0 and node >= 0:
                link(prev, node, WW)
            prev = node
        if prev >= 0:
            for t in unobserved.get(k, ()):
                link(prev, t.node, WW)


def _read_edges(g: Graph, nodes: list[Txn], versions: Versions, unobserved: dict[Any, list[Txn]], anti: bool) -> None:
    link = g.link
    writers = versions.writers
    orders = versions.orders
    positions = versions.positions
    for t in nodes:
        if t.type != "ok":
            continue  # an :info transaction's reads returned nothing we know
        me = t.node
        for f, k, v in t.mops:
            if f != "r":
                continue
            if v:
                w = writers.get(k, {}).get(v[-1])
                if w is not None and w.node >= 0:
                    link(w.node, me, WR)
            if not anti:
                continue
            # rw: whoever appended the element right after the state we read.
            order = orders.get(k, ())
            if v:
                i = positions[k].get(v[-1])
                if i is None:
                    continue  # the read is incompatible with the order; nothing follows it
                nxt = i + 1
            else:
                nxt = 0
            if nxt < len(order):
                w = writers.get(k, {}).get(order[nxt])
                if w is not None and w.node >= 0:
                    link(me, w.node, RW)
            else:
                for u in unobserved.get(k, ()):
                    link(me, u.node, RW)


def _process_edges(g: Graph, txns: list[Txn]) -> None:
    """Consecutive :ok transactions of each process (txns are in completion order)."""
    last: dict[int, int] = {}
    for t in txns:
        if t.type != "ok":
            continue
        prev = last.get(t.process)
        if prev is not None:
            g.link(prev, t.node, PROCESS)
        last[t.process] = t.node


def _realtime_edges(g: Graph, txns: list[Txn], n_ops: int) -> None:
    """A transitively reduced realtime order: a -> b when a completed before b was invoked.

    Walk the history keeping a frontier of completed transactions nothing later
    has yet been ordered after.  Each invocation gets an edge from every frontier
    member; when a transaction completes it joins the frontier and evicts the
    members it was linked from at its invocation, which now reach later
    transactions through it.  The frontier stays about as large as the number
    of concurrent clients, so this is linear in the history.
    """
    at: list[Txn | None] = [None] * n_ops
    for t in txns:
        at[t.invoke_pos] = t
        if t.complete_pos >= 0:
            at[t.complete_pos] = t
    link = g.link
    frontier: set[int] = set()
    linked: dict[int, list[int]] = {}
    for pos, event in enumerate(at):
        if event is None:
            continue
        t = event
        if pos == t.invoke_pos:
            if t.node < 0:
                continue  # failed or unobserved: not a vertex
            preds = list(frontier)
            for a in preds:
                link(a, t.node, REALTIME)
            if t.type == "ok":
                linked[t.id] = preds
        elif t.type == "ok":
            frontier.difference_update(linked.pop(t.id))
            frontier.add(t.node)

"""A directed graph over transactions whose edges carry a bit set of dependency kinds,
plus the graph algorithms the checker needs (iterative: histories are long)."""
from __future__ import annotations

from collections.abc import Callable, Sequence

WW = 1  # write-write: b appended the element right after a's append
WR = 2  # write-read: b read a state whose last element a appended
RW = 4  # read-write (anti-dependency): b appended the element right after the state a read
PROCESS = 8  # a and b ran in that order on the same process
REALTIME = 16  # a completed before b was invoked

KIND_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}
DATA = WW | WR | RW


class Graph:
    """Vertices 0..n-1; succ[a] maps each successor b to the kinds of a -> b."""

    __slots__ = ("succ",)

    def __init__(self, n: int) -> None:
        self.succ: list[dict[int, int]] = [{} for _ in range(n)]

    def link(self, a: int, b: int, kind: int) -> None:
        if a == b:
            return  # a transaction never depends on itself
        out = self.succ[a]
        out[b] = out.get(b, 0) | kind

    def edge_count(self) -> int:
        return sum(map(len, self.succ))


def strongly_connected(adj: Sequence[Sequence[int]] | Sequence[dict[int, int]]) -> list[list[int]]:
    """Tarjan's algorithm without recursion; returns only components with 2+ vertices
    (the graphs it is used on never have self-loops)."""
    n = len(adj)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, iter(adj[root]))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(adj[w])))
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        components.append(component)
    return components


def component_ids(n: int, components: list[list[int]]) -> list[int]:
    """Vertex -> index of its (nontrivial) component, -1 for vertices on no cycle."""
    ids = [-1] * n
    for c, members in enumerate(components):
        for v in members:
            ids[v] = c
    return ids


class Budget:
    """Caps the edges a family of searches may relax, so a pathological component
    cannot stall the checker; `exhausted` records that a search was cut short."""

    __slots__ = ("left", "exhausted")

    def __init__(self, edges: int) -> None:
        self.left = edges
        self.exhausted = False

    def spend(self, n: int) -> bool:
        self.left -= n
        if self.left < 0:
            self.exhausted = True
            return False
        return True


def bfs_path(
    adj: Sequence[Sequence[int]],
    source: int,
    is_target: Callable[[int], bool],
    allowed: Callable[[int], bool],
    budget: Budget | None = None,
) -> list[int] | None:
    """Shortest path source -> first vertex satisfying is_target, through allowed vertices.
    The source itself is never a target (so a path has at least one edge)."""
    parent = {source: source}
    frontier = [source]
    while frontier:
        nxt = []
        for v in frontier:
            out = adj[v]
            if budget is not None and not budget.spend(len(out)):
                return None
            for w in out:
                if w in parent or not allowed(w):
                    if w == source and is_target(w):
                        return _unwind(parent, v, source) + [source]
                    continue
                parent[w] = v
                if is_target(w):
                    return _unwind(parent, w, source)
                nxt.append(w)
        frontier = nxt
    return None


def _unwind(parent: dict[int, int], v: int, source: int) -> list[int]:
    path = [v]
    while v != source:
        v = parent[v]
        path.append(v)
    path.reverse()
    return path

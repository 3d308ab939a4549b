"""Finding and classifying dependency cycles, one strongly connected component at a time.

A cycle's class follows from its edges (after Adya and Elle): all ww is G0; ww
and wr with at least one wr is G1c; exactly one rw is G-single; two or more rw,
none adjacent (cyclically), is G-nonadjacent; otherwise G2-item.  A cycle that
needs a process or realtime edge gets the "-process" / "-realtime" suffix.

Each class is searched for with a method that is exact where the verdict
depends on it:

* G0 / G1c (and their variants): any cycle in the subgraph of the allowed
  edges will do, because the classes searched earlier (which imply this one)
  are known to be absent; Tarjan finds the cycles, BFS the shortest through a vertex.
* G-single: an rw edge u -> v whose tail is reachable from v over non-rw edges.
* G-nonadjacent: a cycle with no two adjacent rw edges is a cycle in a graph of
  states (vertex, "did we arrive over rw?") where rw may not follow rw; an rw
  edge inside a strongly connected component of that state graph lies on such
  a cycle.  This is linear, so whether a snapshot-isolation-proscribed cycle
  exists is always decided exactly, even if the (budgeted) G-single search
  gave up on a huge component.
* G2-item: two adjacent rw edges u -> w -> v closed by a path v -> u.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from elle.graph import PROCESS, REALTIME, RW, WR, WW, Budget, Graph, bfs_path, component_ids, strongly_connected
from elle.models import Model, cycle_name, implied

Cycle = tuple[list[int], list[int]]  # vertices in order, label of the edge leaving each one

# Start vertices tried per component when looking for a shorter cycle than the first.
_STARTS = 8

# Edge kinds in the order a multi-kind edge is labelled by: data dependencies
# first, rw last, so a cycle is never made to look worse than its edges force.
_PRIORITY = (WW, WR, PROCESS, REALTIME, RW)


def label(mask: int, allowed: int) -> int:
    m = mask & allowed
    for kind in _PRIORITY:
        if m & kind:
            return kind
    raise AssertionError("edge has no allowed kind")


def classify(labels: list[int]) -> str:
    n_rw = labels.count(RW)
    if n_rw == 1:
        base = "G-single"
    elif n_rw >= 2:
        adjacent = any(labels[i] == RW and labels[i - 1] == RW for i in range(len(labels)))
        base = "G2-item" if adjacent else "G-nonadjacent"
    elif WR in labels:
        base = "G1c"
    else:
        base = "G0"
    if REALTIME in labels:
        return cycle_name(base, REALTIME)
    if PROCESS in labels:
        return cycle_name(base, PROCESS)
    return base


def _rw_adjacent(labels: list[int]) -> bool:
    return any(labels[i] == RW and labels[i - 1] == RW for i in range(len(labels)))


def simplify(nodes: list[int], labels: list[int]) -> Cycle:
    """Turn a closed walk without adjacent rw edges into a simple cycle without them.

    Split the walk at a repeated vertex into two closed walks: at most one of them
    can have acquired an rw-rw junction at the split (the walk had none), so keep
    a good one, preferring one that still has an rw edge.
    """
    while True:
        first: dict[int, int] = {}
        for i, x in enumerate(nodes):
            if x in first:
                j = first[x]
                break
            first[x] = i
        else:
            return nodes, labels
        halves = [(nodes[j:i], labels[j:i]), (nodes[:j] + nodes[i:], labels[:j] + labels[i:])]
        good = [h for h in halves if not _rw_adjacent(h[1])]
        with_rw = [h for h in good if RW in h[1]]
        nodes, labels = (with_rw or good or halves)[0]


def _equals(target: int) -> Callable[[int], bool]:
    return lambda x: x == target


def _within(ids: list[int], component: int) -> Callable[[int], bool]:
    return lambda x: ids[x] == component


def _state_within(state_ids: list[int], component: int) -> Callable[[int], bool]:
    """Vertex x whose "arrived over a non-rw edge" state lies in the component."""
    return lambda x: state_ids[2 * x] == component


def _within_except(ids: list[int], component: int, skip: int) -> Callable[[int], bool]:
    return lambda x: x != skip and ids[x] == component


@dataclass
class FoundCycle:
    name: str
    nodes: list[int]  # global vertex ids
    labels: list[int]
    component_size: int


class ComponentSearch:
    """Cycle searches inside one strongly connected component of the dependency graph."""

    def __init__(self, graph: Graph, members: list[int], model: Model, budget_edges: int) -> None:
        self.members = sorted(members)
        local = {g: i for i, g in enumerate(self.members)}
        self.succ: list[dict[int, int]] = []
        for g in self.members:
            self.succ.append({local[w]: m for w, m in graph.succ[g].items() if w in local})
        self.n = len(self.members)
        self.edges = sum(map(len, self.succ))
        self.model = model
        self.budget_edges = max(budget_edges, 4 * self.edges)
        self.truncated: list[str] = []  # notes on searches the budget cut short, set by run()
        self._cut_short: list[str] = []
        self._filtered: dict[int, list[list[int]]] = {}
        self._doubled: dict[int, tuple[list[list[int]], list[int]]] = {}

    # ------------------------------------------------------------ driver

    def run(self) -> list[FoundCycle]:
        found: list[FoundCycle] = []
        covered: set[str] = set()
        for base, extra in self.model.cycle_classes():
            name = cycle_name(base, extra)
            if name in covered:
                continue
            cycle = self._search(base, extra)
            if cycle is not None:
                self._record(cycle, found, covered)
        if not found and self.model.proscribed >= {"G2-item", "G-single", "G1c", "G0"}:
            # Every cycle is proscribed, and the component holds at least one.
            cycle = self._any_cycle(WW | WR | RW | self.model.extra)
            if cycle is not None:
                self._record(cycle, found, covered)
        self.truncated = [
            f"search for {name} in a component of {self.n} transactions was cut short after "
            f"{self.budget_edges} edge visits; a {name} cycle there may have gone unreported"
            for name in dict.fromkeys(self._cut_short) if name not in covered
        ]
        return found

    def _record(self, cycle: Cycle, found: list[FoundCycle], covered: set[str]) -> None:
        nodes, labels = cycle
        name = classify(labels)
        if name in covered or name not in self.model.proscribed:
            return
        covered.update(implied(name))
        found.append(FoundCycle(name, [self.members[v] for v in nodes], labels, self.n))

    def _search(self, base: str, extra: int) -> Cycle | None:
        if base == "G0":
            return self._any_cycle(WW | extra)
        if base == "G1c":
            return self._any_cycle(WW | WR | extra)
        if base == "G-single":
            return self._single(extra)
        if base == "G-nonadjacent":
            return self._nonadjacent(extra)
        return self._g2(extra)

    # ------------------------------------------------------------ helpers

    def _budget(self) -> Budget:
        return Budget(self.budget_edges)

    def _note_truncated(self, budget: Budget, what: str) -> None:
        if budget.exhausted:
            self._cut_short.append(what)

    def filtered(self, allowed: int) -> list[list[int]]:
        adj = self._filtered.get(allowed)
        if adj is None:
            adj = [[w for w, m in out.items() if m & allowed] for out in self.succ]
            self._filtered[allowed] = adj
        return adj

    def _labels(self, nodes: list[int], allowed: int) -> list[int]:
        n = len(nodes)
        return [label(self.succ[nodes[i]][nodes[(i + 1) % n]], allowed) for i in range(n)]

    def _rw_only(self, dependency: int) -> list[tuple[int, int]]:
        """rw edges that carry no dependency kind, so a cycle must count them as rw."""
        return [(u, v) for u in range(self.n) for v, m in self.succ[u].items() if m & RW and not m & dependency]

    # ------------------------------------------------------------ searches

    def _any_cycle(self, allowed: int) -> Cycle | None:
        """Shortest cycle through a few vertices of each component of the allowed subgraph."""
        adj = self.filtered(allowed)
        components = strongly_connected(adj)
        if not components:
            return None
        ids = component_ids(self.n, components)
        budget = self._budget()
        best: list[int] | None = None
        for members in sorted(components, key=len):
            inside = _within(ids, ids[members[0]])
            for i, start in enumerate(sorted(members)[:_STARTS]):
                # The first search in a component always runs to completion: it is
                # guaranteed to find a cycle. Later ones only try to find a shorter one.
                path = bfs_path(adj, start, _equals(start), inside, None if i == 0 else budget)
                if path is not None and (best is None or len(path) < len(best)):
                    best = path
                if best is not None and len(best) <= 3 or budget.exhausted:
                    break
            if best is not None and len(best) <= 3:
                break
        assert best is not None
        nodes = best[:-1]
        return nodes, self._labels(nodes, allowed)

    def _single(self, extra: int) -> Cycle | None:
        dep = WW | WR | extra
        adj = self.filtered(dep)
        candidates = self._rw_only(dep)
        if not candidates:
            return None
        best: Cycle | None = None
        budget = self._budget()
        # Phase 1: rw edges inside a component of the dependency subgraph close a cycle for sure.
        ids = component_ids(self.n, strongly_connected(adj))
        for u, v in candidates:
            if ids[u] == -1 or ids[u] != ids[v]:
                continue
            path = bfs_path(adj, v, _equals(u), _within(ids, ids[u]), None if best is None else budget)
            if path is not None:
                cycle = ([u] + path[:-1], [RW] + self._labels_path(path, dep))
                if best is None or len(cycle[0]) < len(best[0]):
                    best = cycle
            if best is not None and len(best[0]) <= 2 or budget.exhausted:
                break
        if best is not None:
            return best
        # Phase 2: reachability across dependency components, only for rw edges that lie
        # on some cycle without adjacent rw edges (the state graph tells which).
        dadj, sid = self.doubled(extra)
        by_head: dict[int, set[int]] = {}
        for u, v in candidates:
            if sid[2 * u] != -1 and sid[2 * u] == sid[2 * v + 1]:
                by_head.setdefault(v, set()).add(u)
        for v, tails in sorted(by_head.items()):
            path = bfs_path(adj, v, tails.__contains__, _state_within(sid, sid[2 * v + 1]), budget)
            if path is not None:
                return [path[-1]] + path[:-1], [RW] + self._labels_path(path, dep)
            if budget.exhausted:
                self._note_truncated(budget, cycle_name("G-single", extra))
                return None
        return None

    def _labels_path(self, path: list[int], allowed: int) -> list[int]:
        return [label(self.succ[path[i]][path[i + 1]], allowed) for i in range(len(path) - 1)]

    def doubled(self, extra: int) -> tuple[list[list[int]], list[int]]:
        """The state graph for cycles without adjacent rw edges: state 2x is "at x, last
        edge was not rw", 2x+1 is "at x, last edge was rw"; rw edges leave even states
        only.  Returns its adjacency and each state's component id (-1: on no cycle)."""
        cached = self._doubled.get(extra)
        if cached is not None:
            return cached
        dep = WW | WR | extra
        adj: list[list[int]] = [[] for _ in range(2 * self.n)]
        for x, out in enumerate(self.succ):
            plain = [2 * y for y, m in out.items() if m & dep]
            anti = [2 * y + 1 for y, m in out.items() if m & RW and not m & dep]
            adj[2 * x] = plain + anti
            adj[2 * x + 1] = plain
        ids = component_ids(2 * self.n, strongly_connected(adj))
        self._doubled[extra] = (adj, ids)
        return adj, ids

    def _nonadjacent(self, extra: int) -> Cycle | None:
        dep = WW | WR | extra
        dadj, sid = self.doubled(extra)
        candidates = [(u, v) for u, v in self._rw_only(dep) if sid[2 * u] != -1 and sid[2 * u] == sid[2 * v + 1]]
        best: Cycle | None = None
        best_key: tuple[bool, int] | None = None
        target = cycle_name("G-nonadjacent", extra)
        budget = self._budget()
        for u, v in candidates:
            states = bfs_path(dadj, 2 * v + 1, _equals(2 * u), _within(sid, sid[2 * u]), None if best is None else budget)
            if states is None:
                break  # budget spent on an improvement attempt
            nodes = [u] + [s >> 1 for s in states[:-1]]
            labels = [RW]
            for a, b in zip(states, states[1:]):
                labels.append(RW if b & 1 else label(self.succ[a >> 1][b >> 1], dep))
            cycle = simplify(nodes, labels)
            key = (classify(cycle[1]) != target, len(cycle[0]))
            if best_key is None or key < best_key:
                best, best_key = cycle, key
            if best_key[0] is False and best_key[1] <= 4 or budget.exhausted:
                break
        return best

    def _g2(self, extra: int) -> Cycle | None:
        allowed = WW | WR | RW | extra
        dep = WW | WR | extra
        adj = self.filtered(allowed)
        ids = component_ids(self.n, strongly_connected(adj))
        rw_in: dict[int, list[int]] = {}
        rw_out: dict[int, list[int]] = {}
        for u, v in self._rw_only(dep):
            if ids[u] != -1 and ids[u] == ids[v]:
                rw_out.setdefault(u, []).append(v)
                rw_in.setdefault(v, []).append(u)
        budget = self._budget()
        best: Cycle | None = None
        attempts_left = 16  # after the first hit, a few more tries for a shorter cycle
        for w in sorted(set(rw_in) & set(rw_out)):
            around = _within_except(ids, ids[w], w)
            for u in rw_in[w]:
                for v in rw_out[w]:
                    if u == v:
                        return [u, w], [RW, RW]
                    if best is not None:
                        attempts_left -= 1
                    if attempts_left < 0 or not budget.spend(1):
                        break
                    path = bfs_path(adj, v, _equals(u), around, budget)
                    if path is not None and (best is None or len(path) + 1 < len(best[0])):
                        best = [u, w] + path[:-1], [RW, RW] + self._labels_path(path, allowed)
                if attempts_left < 0 or budget.exhausted:
                    break
            if attempts_left < 0 or budget.exhausted:
                break
        if best is None:
            self._note_truncated(budget, cycle_name("G2-item", extra))
        return best

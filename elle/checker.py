"""Elle-style checking of list-append histories against a consistency model.

    result = check(read_history("history.edn"), "snapshot-isolation")
    result.valid, result.anomaly_counts, print(result.summary())

The analysis follows Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies
from Experimental Observations": version orders come from the longest read of
each key, dependencies from those orders, and anomalies from reads that no
committed state explains and from cycles of dependencies.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elle.anomalies import find_all
from elle.cycles import ComponentSearch
from elle.deps import build_graph, committed
from elle.explain import explain_cycle
from elle.graph import PROCESS, REALTIME, Graph, strongly_connected
from elle.history import Op, read_history
from elle.models import BASES, Model, model as lookup_model
from elle.txns import Txn, pair_transactions
from elle.versions import Versions, build_versions

# Edge visits one budgeted cycle search may spend in a component (at least 4x the
# component's edges), like Elle's per-component search timeout: a pathological
# component cannot stall the check.  Only the choice of example cycles depends on
# it, never the verdict (see elle.cycles).
SEARCH_BUDGET = 500_000
MAX_EXAMPLES = 50


@dataclass
class CheckResult:
    valid: bool
    model: str
    anomaly_counts: dict[str, int]
    anomalies: dict[str, list[dict[str, Any]]]
    txn_count: int
    ok_count: int
    fail_count: int
    info_count: int
    seconds: float
    # Anomalies found that the model allows (e.g. lost-update under read-committed).
    allowed_counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    parse_seconds: float = 0.0

    @property
    def anomaly_types(self) -> list[str]:
        return sorted(self.anomaly_counts, key=_severity)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["anomaly_types"] = self.anomaly_types
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_jsonable)

    def summary(self) -> str:
        lines = [
            f"list-append history checked against {self.model}: "
            f"{self.txn_count} transactions ({self.ok_count} ok, {self.fail_count} fail, {self.info_count} info) "
            f"in {self.seconds:.2f} s",
        ]
        if self.valid:
            lines.append(f"VALID: no anomaly proscribed by {self.model} was found.")
        else:
            counts = ", ".join(f"{name} x{self.anomaly_counts[name]}" for name in self.anomaly_types)
            lines.append(f"INVALID under {self.model}: {counts}")
        if self.allowed_counts:
            allowed = ", ".join(f"{k} x{v}" for k, v in sorted(self.allowed_counts.items()))
            lines.append(f"Also seen, but allowed by {self.model}: {allowed}")
        for note in self.notes[:5]:
            lines.append(f"Note: {note}")
        if len(self.notes) > 5:
            lines.append(f"Note: ... and {len(self.notes) - 5} more (see the JSON report)")
        for name in self.anomaly_types:
            example = self.anomalies[name][0]
            per = " (one example cycle per strongly connected component)" if "cycle" in example else ""
            lines.append("")
            lines.append(f"{name}: {self.anomaly_counts[name]} found{per}; first example:")
            lines.extend("  " + line for line in example["text"].splitlines())
        return "\n".join(lines)


_ORDER = ["internal", "future-read", "garbage", "duplicate-elements", "incompatible-order", "G1a", "dirty-update", "G1b"]
_ORDER += [b + s for s in ("", "-process", "-realtime") for b in BASES] + ["lost-update"]


def _severity(name: str) -> tuple[int, str]:
    return (_ORDER.index(name) if name in _ORDER else len(_ORDER), name)


def _jsonable(x: Any) -> Any:
    if isinstance(x, (tuple, set, frozenset)):
        return list(x)
    return str(x)


def check(ops: list[Op], model: str, *, max_examples: int = MAX_EXAMPLES) -> CheckResult:
    """Check a history (client ops in history order) against a consistency model:
    read-committed, snapshot-isolation, strong-session-snapshot-isolation,
    strong-snapshot-isolation, serializable, strong-session-serializable or
    strict-serializable."""
    started = time.perf_counter()
    m = lookup_model(model)
    txns = pair_transactions(ops)
    versions = build_versions(txns)
    found = find_all(txns, versions)
    vertices = committed(txns, versions)
    graph = build_graph(
        txns, vertices, versions, len(ops),
        anti=m.anti, process=m.extra == PROCESS, realtime=m.extra == REALTIME,
    )
    cycles, notes = _cycle_anomalies(graph, vertices, versions, m)
    for name, cases in cycles.items():
        found.setdefault(name, []).extend(cases)

    proscribed = {k: v for k, v in found.items() if k in m.proscribed}
    allowed = {k: len(v) for k, v in found.items() if k not in m.proscribed}
    types = [t.type for t in txns]
    return CheckResult(
        valid=not proscribed,
        model=m.name,
        anomaly_counts={k: len(v) for k, v in proscribed.items()},
        anomalies={k: v[:max_examples] for k, v in proscribed.items()},
        txn_count=len(txns),
        ok_count=types.count("ok"),
        fail_count=types.count("fail"),
        info_count=types.count("info"),
        seconds=time.perf_counter() - started,
        allowed_counts=allowed,
        notes=notes,
    )


def _cycle_anomalies(graph: Graph, vertices: list[Txn], versions: Versions, m: Model) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """One explained cycle per class per strongly connected component, plus notes on cut-short searches."""
    out: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    if not m.cycle_classes():
        return out, notes
    for members in sorted(strongly_connected(graph.succ), key=min):
        search = ComponentSearch(graph, members, m, SEARCH_BUDGET)
        for cycle in search.run():
            out.setdefault(cycle.name, []).append(explain_cycle(cycle, vertices, versions))
        notes.extend(search.truncated)
    return out, notes


def check_file(path: str | Path, model: str, *, max_examples: int = MAX_EXAMPLES) -> CheckResult:
    started = time.perf_counter()
    ops = read_history(path)
    parsed = time.perf_counter()
    result = check(ops, model, max_examples=max_examples)
    result.parse_seconds = parsed - started
    result.seconds = time.perf_counter() - started
    return result

"""What each figure draws, computed from tidy rows (ours and the paper's alike) without
matplotlib: lines of (x, y) points with their labels and styles.

Where our scale differs from the paper's (a few warehouses on this machine against 512
warehouses on 32 vCPUs), the paper is overlaid as scale-free quantities only: ratios
between systems measured in the same run, a system relative to itself at a baseline
point, fractions (abort rates), or clients per warehouse in use. Absolute numbers are
drawn for our runs alone."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from bench.analysis.data import (Row, analytical_native, chbench_totals, engine_of, format_table, is_tique, mean_by,
                                 query_number, ratio_points, relative_to, series, system_order, systems_in,
                                 tique_native_pairs)
from bench.analysis.paper import SETUP

COLORS = {"native-monetdb": "#1f77b4", "tique-monetdb": "#ff7f0e", "native-postgres": "#2ca02c",
          "tique-postgres": "#8c564b", "native-duckdb": "#9467bd", "tique-duckdb": "#d62728"}
MARKERS = {"monetdb": "^", "duckdb": "o", "postgres": "s"}
PAPER_NAMES = {"native-monetdb": "MonetDB", "tique-monetdb": "tique on MonetDB", "native-postgres": "PostgreSQL"}


@dataclass
class Line:
    label: str
    points: list[tuple[Any, float]]
    source: str  # "ours" or "paper"
    color: str = "black"
    marker: str = "o"
    notes: list[str] = field(default_factory=list)  # one per point, written next to it (may be empty)

    @property
    def linestyle(self) -> str:
        return "--" if self.source == "paper" else "-"

    def y(self, x: Any) -> float | None:
        return dict(self.points).get(x)


def color(system: str) -> str:
    return COLORS.get(system, "#7f7f7f")


def marker(system: str) -> str:
    return MARKERS.get(engine_of(system), "o")


def name(source: str, system: str) -> str:
    return PAPER_NAMES.get(system, system) if source == "paper" else system


def label(source: str, text: str, warehouses: int | None = None, many_warehouses: bool = False) -> str:
    """Paper series say so, with the paper's setup; ours name W when runs differ in it."""
    if source == "paper":
        return f"{text} (paper, {SETUP})"
    return f"{text}, W={warehouses}" if many_warehouses and warehouses is not None else text


def _sources(rows: Sequence[Row]) -> list[str]:
    return [s for s in ("ours", "paper") if any(r.get("source") == s for r in rows)]


def _many_warehouses(rows: Iterable[Row]) -> bool:
    return len({r.get("warehouses") for r in rows if r.get("source") == "ours"}) > 1


def _line(source: str, system: str, points: list[tuple[Any, float]], warehouses: int | None, many: bool,
          suffix: str = "") -> Line:
    return Line(label(source, name(source, system) + suffix, warehouses, many), points, source, color(system),
                marker(system))


# -- TPC-C: throughput and abort rate vs clients (paper figure 7) ------------------------

def _clients_run(row: Row) -> bool:
    """A run of the clients experiment (figure 7), not of the contention one (figure 8)."""
    return not row.get("contention_run")


def tpcc_lines(rows: Sequence[Row], value: str, sources: Sequence[str] = ("ours", "paper")) -> list[Line]:
    """`value` (throughput, abort_rate, ...) vs clients per system, uncontended runs."""
    chosen = [r for r in rows if r.get("source") in sources and _clients_run(r)]
    many = _many_warehouses(chosen)
    found = series(chosen, "clients", value, by=("source", "system", "warehouses"))
    return [_line(source, system, points, w, many) for (source, system, w), points in _ordered(found)]


def tpcc_pairs(systems: Iterable[str]) -> list[tuple[str, str]]:
    """tique over the native engine it runs on (paper: 3x at 1 client, 300-980x at 2-32),
    and PostgreSQL over tique on an analytical engine (paper: 1.0x at 1, 2.7x at 32)."""
    present = set(systems)
    pairs = tique_native_pairs(present)
    if "native-postgres" in present:
        pairs += [("native-postgres", t) for t in sorted(present) if is_tique(t) and engine_of(t) != "postgres"]
    return pairs


def pair_line(source: str, numerator: str, denominator: str, points: list[tuple[Any, float]],
              warehouses: int | None = None, many: bool = False) -> Line:
    text = f"{name(source, numerator)} ÷ {name(source, denominator)}"
    return Line(label(source, text, warehouses, many), points, source, color(numerator),
                marker(denominator if numerator == "native-postgres" else numerator))


def tpcc_ratio_lines(rows: Sequence[Row]) -> list[Line]:
    """Throughput ratios at equal client counts, ours and the paper's."""
    chosen = [r for r in rows if _clients_run(r)]
    many = _many_warehouses(chosen)
    found = series(chosen, "clients", "throughput", by=("source", "system", "warehouses"))
    lines = []
    for source in _sources(chosen):
        for w in sorted({k[2] for k in found if k[0] == source}):
            systems = [k[1] for k in found if k[0] == source and k[2] == w]
            for num, den in tpcc_pairs(systems):
                points = ratio_points(found[(source, num, w)], found[(source, den, w)])
                if points:
                    lines.append(pair_line(source, num, den, points, w, many))
    return lines


# -- contention (paper figure 8) -----------------------------------------------------------

def _contention_groups(rows: Sequence[Row]) -> dict[tuple, list[Row]]:
    """(source, system, warehouses, clients) groups with a contended run (K < W), each
    with its runs at every K. The K = W baseline is the contention experiment's own run
    at K = W when it has one, else the uncontended run at those clients."""
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        groups.setdefault((r["source"], r["system"], r["warehouses"], r["clients"]), []).append(r)
    out = {}
    for key, group in groups.items():
        if not any(r.get("contention_run") and r["contention"] < r["warehouses"] for r in group):
            continue
        own_baseline = any(r.get("contention_run") and r["contention"] == r["warehouses"] for r in group)
        out[key] = [r for r in group if r.get("contention_run") or not own_baseline]
    return out


def contention_lines(rows: Sequence[Row], value: str, per_client_warehouse: bool = False,
                     relative: bool = False, sources: Sequence[str] = ("ours", "paper")) -> list[Line]:
    """`value` vs K, or vs clients per warehouse in use (C/K, comparable across scales);
    `relative` divides by the group's uncontended (K = W) value."""
    groups = _contention_groups([r for r in rows if r.get("source") in sources])
    many = len({k[2] for k in groups if k[0] == "ours"}) > 1 or len({k[3] for k in groups if k[0] == "ours"}) > 1
    lines = []
    for (source, system, w, clients), group in _ordered(groups.items()):
        means = mean_by(group, ("contention",), value)
        points = sorted(((k[0], v) for k, v in means.items()), reverse=True)  # from W down to 1, as the paper plots
        if relative:
            points = relative_to(points, w)
        if per_client_warehouse:
            points = [(clients / k, v) for k, v in points]
        if points:
            text = name(source, system) + (f", {clients} clients" if source == "ours" and many else "")
            lines.append(Line(label(source, text, w, many), points, source, color(system), marker(system)))
    return lines


# -- CH-benCHmark (paper figure 9) -------------------------------------------------------

def chbench_pairs(systems: Iterable[str]) -> list[tuple[str, str]]:
    """tique over its native engine (paper: 1.22x native MonetDB in total), and
    PostgreSQL over the native analytical engine (paper: 7.3x native MonetDB)."""
    present = set(systems)
    pairs = tique_native_pairs(present)
    base = analytical_native(present)
    if "native-postgres" in present and base is not None:
        pairs.append(("native-postgres", base))
    return pairs


def chbench_times(rows: Sequence[Row], source: str = "ours") -> dict[str, dict[int, float]]:
    """system -> query number -> mean seconds."""
    out: dict[str, dict[int, float]] = {}
    for (src, system, query), seconds in mean_by(rows, ("source", "system", "query"), "seconds").items():
        if src == source:
            out.setdefault(system, {})[query_number(query)] = seconds
    return {s: dict(sorted(out[s].items())) for s in systems_in(rows, source) if s in out}


def chbench_ratio_lines(rows: Sequence[Row]) -> list[Line]:
    """Per-query time ratios (x: query number), ours and the paper's."""
    lines = []
    for source in _sources(rows):
        times = chbench_times(rows, source)
        for num, den in chbench_pairs(times):
            points = ratio_points(sorted(times[num].items()), sorted(times[den].items()))
            if points:
                lines.append(pair_line(source, num, den, points))
    return lines


def chbench_total_ratios(rows: Sequence[Row]) -> list[tuple[str, str, float]]:
    """(source, "A ÷ B", ratio of the 22-query totals) for each pair; a system with a
    failed query has no total."""
    totals = chbench_totals(rows)
    out = []
    for source in _sources(rows):
        systems = [s for (src, s) in totals if src == source]
        for num, den in chbench_pairs(systems):
            if totals[(source, den)]:
                out.append((source, f"{name(source, num)} ÷ {name(source, den)}",
                            totals[(source, num)] / totals[(source, den)]))
    return out


# -- HTAP (paper figures 1, 10 and 11) -----------------------------------------------------

def htap_sweep_lines(rows: Sequence[Row], varying: str) -> list[Line]:
    """`varying` "olap": OLTP throughput vs OLAP clients at fixed OLTP clients (figure
    10a); "oltp": the OLAP 22-query total vs OLTP clients at fixed OLAP clients (figure
    10b). Each relative to the same system with none of the other kind of client.

    Our points are pooled whichever sweep ran them (a point is its two client counts);
    the paper's sweeps stay apart, as its tests differed in setup (OLAP threads)."""
    fixed, x, value = (("oltp_clients", "olap_clients", "oltp_txs") if varying == "olap"
                       else ("olap_clients", "oltp_clients", "olap_total_s"))
    chosen = [r for r in rows if r.get("source") == "ours" or r.get("sweep") == varying]
    found = series(chosen, x, value, by=("source", "system", "warehouses", fixed))
    drawn = [(key, relative_to(points, 0)) for key, points in _ordered(found)]
    drawn = [(key, points) for key, points in drawn if points]
    many = len({(k[2], k[3]) for k, _ in drawn if k[0] == "ours"}) > 1
    other = "OLTP" if varying == "olap" else "OLAP"
    return [Line(label(source, name(source, system) + (f", {held} {other}" if source == "ours" and many else ""), w,
                       many), points, source, color(system), marker(system))
            for (source, system, w, held), points in drawn]


def htap_both_lines(rows: Sequence[Row]) -> list[Line]:
    """Figure 11: OLTP throughput against the OLAP 22-query total as both client counts
    grow together, each source normalised by its tique system's smallest point (x: OLAP
    total, lower is better; y: OLTP throughput, higher is better); the points are noted
    with their client count. Ours are all our points with as many OLTP as OLAP clients;
    the paper's are its scale-both test."""
    lines = []
    for source in _sources(rows):
        both = [r for r in rows if r.get("source") == source and r["oltp_clients"] == r["olap_clients"] >= 1
                and (source == "ours" or r.get("sweep") == "both")]
        oltp = mean_by(both, ("system", "oltp_clients"), "oltp_txs")
        olap = mean_by(both, ("system", "oltp_clients"), "olap_total_s")
        systems = systems_in(both, source)
        points_of = {s: [(n, olap[(s, n)], oltp[(s, n)]) for (s2, n) in sorted(oltp) if s2 == s and (s, n) in olap]
                     for s in systems}
        reference = next((s for s in systems if is_tique(s) and points_of[s]), None)
        if reference is None:
            continue
        _, x0, y0 = points_of[reference][0]
        if not x0 or not y0:
            continue
        for system in systems:
            points = points_of[system]
            if points:
                lines.append(Line(label(source, name(source, system)), [(x / x0, y / y0) for _, x, y in points],
                                  source, color(system), marker(system), [str(n) for n, _, _ in points]))
    return lines


def tradeoff_lines(tpcc: Sequence[Row], chbench: Sequence[Row]) -> list[Line]:
    """Figure 1, from runs apart: each system's best TPC-C throughput (any clients,
    uncontended) against its CH-benCHmark total, both relative to the native analytical
    engine (MonetDB, else DuckDB), so ours and the paper's share one plane. One point per
    system, its label noted beside it."""
    totals = chbench_totals(chbench)
    best = {}
    for (source, system, _), v in mean_by([r for r in tpcc if _clients_run(r)], ("source", "system", "clients"),
                                          "throughput").items():
        best[(source, system)] = max(v, best.get((source, system), 0.0))
    lines = []
    for source in ("ours", "paper"):
        systems = [s for (src, s) in totals if src == source and (src, s) in best]
        base = analytical_native(systems)
        if base is None or not totals[(source, base)] or not best[(source, base)]:
            continue
        for system in systems_in([{"source": source, "system": s} for s in systems], source):
            point = (totals[(source, system)] / totals[(source, base)], best[(source, system)] / best[(source, base)])
            lines.append(Line(label(source, name(source, system)), [point], source, color(system), marker(system),
                              [name(source, system)]))
    return lines


# -- long transactions (paper figure 12) -----------------------------------------------------

def longtx_lines(rows: Sequence[Row], value: str, relative: bool = False,
                 sources: Sequence[str] = ("ours", "paper")) -> list[Line]:
    """`value` vs clients per (system, priority). `relative`: divided by the same
    source's tique system (same engine) without priority at equal clients."""
    chosen = [r for r in rows if r.get("source") in sources]
    found = series(chosen, "clients", value, by=("source", "system", "priority"))
    lines = []
    for (source, system, priority), points in _ordered(found):
        if relative:
            base = found.get((source, f"tique-{engine_of(system)}", False))
            if base is None or (is_tique(system) and not priority):
                continue
            points = ratio_points(points, base)
        if points:
            suffix = ", priority" if priority else ""
            if relative:
                suffix += f" ÷ {name(source, 'tique-' + engine_of(system))}"
            line = _line(source, system, points, None, False, suffix)
            if priority:
                line.marker = "D"
            lines.append(line)
    return lines


def longtx_rt_lines(rows: Sequence[Row]) -> tuple[list[Line], list[Line]]:
    """The long transaction's mean response time as a fraction of the run, and, apart,
    the runs in which no long transaction committed (drawn at 1: the whole run)."""
    lines = longtx_lines(rows, "long_rt_fraction")
    missing = [r for r in rows if r.get("long_rt_fraction") is None]
    never = []
    for (source, system, priority), group in _ordered(_group(missing, ("source", "system", "priority")).items()):
        points = sorted({(r["clients"], 1.0) for r in group})
        line = _line(source, system, points, None, False, (", priority" if priority else "") + ": none committed")
        line.marker = "x"
        never.append(line)
    return lines, never


# -- helpers ----------------------------------------------------------------------------------

def _group(rows: Iterable[Row], keys: Sequence[str]) -> dict[tuple, list[Row]]:
    out: dict[tuple, list[Row]] = {}
    for r in rows:
        out.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return out


def _ordered(items: dict[tuple, Any] | Iterable[tuple[tuple, Any]]) -> list[tuple[tuple, Any]]:
    """(key, value) pairs keyed (source, system, ...): ours before the paper's, then in
    system_order."""
    pairs = list(items.items()) if isinstance(items, dict) else list(items)

    def order(pair: tuple[tuple, Any]) -> tuple:
        source, system = pair[0][0], pair[0][1]
        return (source != "ours", system_order(system), tuple(str(v) for v in pair[0][2:]))
    return sorted(pairs, key=order)


def describe(lines: Sequence[Line], x: str, value: str) -> str:
    """The lines' points as a text table: one row per point."""
    rows = [{"series": line.label, "x": px, "y": py} for line in lines for px, py in line.points]
    return format_table(rows, ["series", "x", "y"], ["series", x, value]) if rows else "(nothing to compare)"

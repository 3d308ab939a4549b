"""Result files into tidy rows: one flat dict per measured point, the same shape for our
runs (`source` "ours") and for the paper's published numbers (`source` "paper", see
paper.py), so one set of functions computes the series and ratios for both."""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence

Row = dict[str, Any]

ENGINE_ORDER = ("monetdb", "duckdb", "postgres")


def results_dir(default: str = "results") -> Path:
    """$TIQUE_RESULTS, else ./results, else ../results (a notebook runs from notebooks/)."""
    chosen = os.environ.get("TIQUE_RESULTS")
    if chosen:
        return Path(chosen)
    for candidate in (Path(default), Path("..") / default):
        if candidate.is_dir():
            return candidate
    return Path(default)


def _documents(value: Any) -> list[Row]:
    """The Result dicts in one JSON document: a Result, {"runs": [Result, ...]} (as
    `tique bench longtx` writes), or a list of either."""
    if isinstance(value, list):
        return [doc for item in value for doc in _documents(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("runs"), list):
        return _documents(value["runs"])
    if {"benchmark", "system", "metrics"} <= value.keys():
        return [value]
    return []


def load_results(directory: str | Path) -> list[Row]:
    """Every result in the JSON files under `directory` (recursively), in file order;
    files that are not results (or not JSON) are skipped. Each result gains `_file`."""
    root = Path(directory)
    out: list[Row] = []
    if not root.is_dir():
        return out
    for path in sorted(root.rglob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        for result in _documents(document):
            out.append({**result, "_file": str(path)})
    return out


def engine_of(system: str) -> str:
    return system.split("-", 1)[1] if "-" in system else system


def is_tique(system: str) -> bool:
    return system.startswith("tique-")


def _number(value: Any) -> float | None:
    """A finite float, or None (results write NaN as null; a missing metric is None)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# -- tidy rows per benchmark ------------------------------------------------------------

def tpcc_rows(results: Iterable[Row]) -> list[Row]:
    """One row per TPC-C run (the contention runs included): throughput in transactions
    per second (all five types, as the paper's py-tpcc counts), abort rate, New-Order
    latency and the consistency verdict."""
    rows = []
    for r in results:
        if r.get("benchmark") not in ("tpcc", "contention"):
            continue
        p, m = r.get("parameters") or {}, r.get("metrics") or {}
        warehouses = int(p.get("warehouses") or 1)
        contention = p.get("contention")
        new_order = (m.get("transactions") or {}).get("new_order") or {}
        rows.append({
            "source": "ours", "system": r["system"], "warehouses": warehouses, "clients": int(p.get("clients") or 1),
            # A run of the contention experiment (99% of transactions on K warehouses);
            # K = W, or no contention, is the uncontended run.
            "contention_run": bool(contention), "contention": int(contention) if contention else warehouses,
            "throughput": _number(m.get("txn_per_s")), "tpmC": _number(m.get("tpmC")),
            "abort_rate": _number(m.get("abort_rate")), "new_order_p95_ms": _number(new_order.get("p95_ms")),
            "consistent": (r.get("consistency") or {}).get("all_hold"), "full_scale": p.get("full_scale"),
            "errors": m.get("errors")})
    return rows


def chbench_rows(results: Iterable[Row]) -> list[Row]:
    """One row per (run, query): the median seconds of its repetitions (None if it failed)."""
    rows = []
    for r in results:
        if r.get("benchmark") != "chbench":
            continue
        p = r.get("parameters") or {}
        for name, q in ((r.get("metrics") or {}).get("queries") or {}).items():
            rows.append({"source": "ours", "system": r["system"], "warehouses": int(p.get("warehouses") or 1),
                         "query": name, "seconds": _number(q.get("median_s")), "error": q.get("error")})
    return rows


def query_number(name: str) -> int:
    """"Q7" or "query-7" -> 7."""
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else 0


def chbench_totals(rows: Iterable[Row]) -> dict[tuple[str, str], float]:
    """(source, system) -> the sum over queries of the mean per-query time; a system with
    any failed query has no total (a partial sum would flatter it)."""
    per_query = mean_by(rows, ("source", "system", "query"), "seconds")
    failed = {(r["source"], r["system"]) for r in rows if r.get("seconds") is None}
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for (source, system, _), seconds in per_query.items():
        totals[(source, system)] += seconds
    return {key: total for key, total in totals.items() if key not in failed}


def htap_rows(results: Iterable[Row]) -> list[Row]:
    """One row per HTAP point: OLTP throughput (None without OLTP clients), OLAP queries
    per second and the 22-query total (sum of per-query medians; None until every query
    completed once at that point)."""
    rows = []
    for r in results:
        if r.get("benchmark") != "htap":
            continue
        p = r.get("parameters") or {}
        for point in (r.get("metrics") or {}).get("points") or []:
            oltp, olap = point.get("oltp") or {}, point.get("olap") or {}
            olap_clients = int(point.get("olap_clients") or 0)
            rows.append({"source": "ours", "system": r["system"], "warehouses": int(p.get("warehouses") or 1),
                         "sweep": p.get("sweep"), "oltp_clients": int(point.get("oltp_clients") or 0),
                         "olap_clients": olap_clients, "oltp_txs": _number(oltp.get("txn_per_s")),
                         "oltp_abort_rate": _number(oltp.get("abort_rate")),
                         "olap_qps": _number(olap.get("queries_per_s")) if olap_clients else None,
                         "olap_total_s": _number(olap.get("total_median_s")) if olap_clients else None})
    return rows


def longtx_rows(results: Iterable[Row]) -> list[Row]:
    """One row per long-transaction run: overall and per-class throughput, the long
    transaction's mean response time (None when none committed) as seconds and as a
    fraction of the run, and its abort counts."""
    rows = []
    for r in results:
        if r.get("benchmark") != "longtx":
            continue
        p, m = r.get("parameters") or {}, r.get("metrics") or {}
        seconds = _number(p.get("duration")) or _number(m.get("seconds"))
        long_rt = _number(m.get("long_rt"))
        rows.append({"source": "ours", "system": r["system"], "clients": int(p.get("clients") or 1),
                     "priority": bool(p.get("priority")), "seconds": seconds, "txs": _number(m.get("txs")),
                     "regular_txs": _number(m.get("regular_txs")), "long_txs": _number(m.get("long_txs")),
                     "long_commits": m.get("long_commits"), "long_rt": long_rt,
                     "long_rt_fraction": long_rt / seconds if long_rt is not None and seconds else None,
                     "abort_rate": _number(m.get("abort_rate")), "long_abort_rate": _number(m.get("long_abort_rate")),
                     "long_most_aborts": m.get("long_most_aborts")})
    return rows


# -- grouping and ratios ----------------------------------------------------------------

def mean_by(rows: Iterable[Row], keys: Sequence[str], value: str) -> dict[tuple, float]:
    """The mean of `value` per distinct `keys` tuple (repeated runs of one point), over
    the rows where it is a number."""
    sums: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        number = _number(row.get(value))
        if number is not None:
            sums[tuple(row.get(k) for k in keys)].append(number)
    return {key: sum(values) / len(values) for key, values in sums.items()}


def series(rows: Iterable[Row], x: str, value: str, by: Sequence[str] = ("source", "system"),
           where: Callable[[Row], bool] | None = None) -> dict[tuple, list[tuple[float, float]]]:
    """Per `by` key, the (x, mean value) points sorted by x."""
    chosen = [r for r in rows if where is None or where(r)]
    means = mean_by(chosen, (*by, x), value)
    out: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for key, mean in means.items():
        out[key[:-1]].append((key[-1], mean))
    return {key: sorted(points) for key, points in out.items()}


def ratio_points(numerator: Sequence[tuple[Hashable, float]],
                 denominator: Sequence[tuple[Hashable, float]]) -> list[tuple[Any, float]]:
    """numerator / denominator at each x both have (a zero denominator gives no point)."""
    below = dict(denominator)
    return [(x, value / below[x]) for x, value in numerator if below.get(x)]


def relative_to(points: Sequence[tuple[Any, float]], base_x: Any) -> list[tuple[Any, float]]:
    """Each point divided by the value at `base_x` (none if that value is missing or 0)."""
    base = dict(points).get(base_x)
    return [(x, v / base) for x, v in points] if base else []


def system_order(system: str) -> tuple:
    """Engines in a fixed order, the native system before tique on it."""
    engine = engine_of(system)
    return (ENGINE_ORDER.index(engine) if engine in ENGINE_ORDER else len(ENGINE_ORDER), engine, is_tique(system))


def systems_in(rows: Iterable[Row], source: str = "ours") -> list[str]:
    """The systems of `source` present in `rows`, in system_order."""
    return sorted({r["system"] for r in rows if r.get("source") == source}, key=system_order)


def tique_native_pairs(systems: Iterable[str]) -> list[tuple[str, str]]:
    """(tique-E, native-E) for every engine E with both systems present."""
    present = set(systems)
    return [(name, f"native-{engine_of(name)}") for name in sorted(present)
            if is_tique(name) and f"native-{engine_of(name)}" in present]


def analytical_native(systems: Iterable[str]) -> str | None:
    """The native analytical engine the paper measures against: MonetDB when present,
    else DuckDB."""
    present = set(systems)
    return next((name for name in ("native-monetdb", "native-duckdb") if name in present), None)


# -- text tables --------------------------------------------------------------------------

def fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return str(value)


def format_table(rows: Sequence[Row], columns: Sequence[str], headers: Sequence[str] | None = None) -> str:
    """A plain-text table (numbers right-aligned), for notebooks and terminals alike."""
    headers = list(headers or columns)
    cells = [[fmt(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(h)] + [len(line[i]) for line in cells]) for i, h in enumerate(headers)]
    numeric = [all(_number(row.get(c)) is not None or row.get(c) is None for row in rows) and
               any(_number(row.get(c)) is not None for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(c) for c in cells])

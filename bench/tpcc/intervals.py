"""Per-interval figures of a TPC-C run (`tique bench tpcc --report-every SECONDS`): the
transactions completed in each interval, and for tique systems the row counts of every
cache and metadata table (and on PostgreSQL their dead tuples) and what the background
checkpointer did meanwhile. They show whether throughput decays over a long run and
which table grows with it.

The sampler reads on a connection of its own, each count autocommitted, so it holds no
engine snapshot, and no tique transaction, that could keep the stable timestamp back."""
from __future__ import annotations

from typing import Any

from sqlglot import exp

METADATA_TABLES = ("tq_write_sets", "tq_outcome", "tq_read_sets", "tq_committing", "tq_rolled_back")


class TableSampler:
    """Counts the rows of tique's caches and logs over a background engine connection."""

    def __init__(self, system: Any) -> None:
        self.conn = system.connect()  # keeps the backend (and its checkpointer) registered
        self.backend = self.conn.backend
        self.raw = self.backend.open_background()
        self.dialect = self.backend.dialect

    def _quoted(self, name: str) -> str:
        return exp.to_identifier(name, quoted=True).sql(self.dialect)

    def sample(self) -> dict[str, Any]:
        backend, raw = self.backend, self.raw
        names = sorted(str(n) for (n,) in backend.rows(raw, "SELECT name FROM tq_tables", []))
        tables = [*METADATA_TABLES, *(f"{n}_cache" for n in names)]
        union = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM {self._quoted(t)}" for t in tables)
        rows = {str(t): int(c) for t, c in backend.rows(raw, union, [])}
        sample: dict[str, Any] = {"rows": rows}
        if self.dialect == "postgres":
            dead = backend.rows(raw, "SELECT relname, n_dead_tup FROM pg_stat_user_tables", [])
            sample["dead_tuples"] = {str(t): int(c) for t, c in dead if str(t) in rows}
        from tique.checkpoint import _background

        checkpointer = _background.get(backend)
        if checkpointer is not None:
            sample["checkpointer"] = {"rounds": checkpointer.runs, "early_rounds": getattr(checkpointer, "early_runs", 0),
                                      "failures": checkpointer.failures,
                                      "busy_s": round(checkpointer.busy_s, 3),
                                      "waited_s": round(getattr(checkpointer, "waited_s", 0.0), 3)}
        return sample

    def close(self) -> None:
        try:
            self.backend.close_raw(self.raw)
        finally:
            self.conn.close()


def interval_rows(intervals: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """A table of the intervals: end second, txn/s, checkpointer busy %, total rows in
    caches and in logs, and the largest table."""
    header = ["t s", "txn/s", "ckpt busy%", "cache rows", "log rows", "largest"]
    out = []
    previous_busy = 0.0
    for i in intervals:
        rows = i.get("rows") or {}
        cache = sum(c for t, c in rows.items() if t.endswith("_cache"))
        logs = sum(c for t, c in rows.items() if t in METADATA_TABLES)
        largest = max(rows.items(), key=lambda kv: kv[1], default=("-", 0))
        busy = (i.get("checkpointer") or {}).get("busy_s")
        share = "-" if busy is None else round((busy - previous_busy) / i["seconds"] * 100, 1)
        previous_busy = busy if busy is not None else previous_busy
        out.append([round(i["end_s"]), round(i["txn_per_s"], 1), share, cache if rows else "-", logs if rows else "-",
                    f"{largest[0]} {largest[1]}" if rows else "-"])
    return header, out

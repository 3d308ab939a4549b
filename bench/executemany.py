"""executemany of a one-row INSERT ... VALUES: rows per second, natively and through tique.

One explicit transaction inserts `rows` rows with executemany in batches of `batch`
parameter sets, then commits; the table has a primary key and a NOT NULL column, so
the key check and NOT NULL are part of what is measured.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from drivers import System

CREATE = "CREATE TABLE em_rows (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, note VARCHAR(40))"
INSERT = "INSERT INTO em_rows (id, grp, note) VALUES (?, ?, ?)"


@dataclass(frozen=True)
class Outcome:
    system: str
    rows: int
    seconds: float
    round_trips: int | None  # None where the driver does not count them

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def _round_trips(conn: object) -> int | None:
    counters = getattr(conn, "counters", None)
    return getattr(counters, "round_trips", None)


def run(system: System, rows: int, batch: int) -> Outcome:
    """Inserts `rows` fresh rows in one transaction and checks they are all there."""
    system.execute_script(["DROP TABLE IF EXISTS em_rows", CREATE])
    values = [(i, i % 10, f"row {i}") for i in range(1, rows + 1)]
    conn = system.connect()
    try:
        cur = conn.cursor()
        before = _round_trips(conn)
        started = time.perf_counter()
        for first in range(0, rows, batch):
            cur.executemany(INSERT, values[first:first + batch])
        conn.commit()
        seconds = time.perf_counter() - started
        after = _round_trips(conn)
        cur.execute("SELECT count(*) FROM em_rows")
        (count,) = cur.fetchone()
        conn.commit()
    finally:
        conn.close()
    if count != rows:
        raise RuntimeError(f"{system.name}: {count} rows after inserting {rows}")
    trips = after - before if before is not None and after is not None else None
    return Outcome(system.name, rows, seconds, trips)


def report(outcomes: list[Outcome]) -> str:
    """rows/s per system, and each tique system's against its native engine's."""
    native = {o.system.split("-", 1)[1]: o for o in outcomes if o.system.startswith("native-")}
    lines = [f"executemany of a one-row INSERT, one transaction: {outcomes[0].rows:,} rows" if outcomes else "no runs",
             f"{'system':<16} {'rows/s':>10} {'round trips':>12} {'tique/native':>13}"]
    for o in outcomes:
        base = native.get(o.system.split("-", 1)[1])
        ratio = f"{o.rows_per_second / base.rows_per_second:.2f}x" if o.system.startswith("tique-") and base else ""
        trips = "" if o.round_trips is None else f"{o.round_trips:,}"
        lines.append(f"{o.system:<16} {o.rows_per_second:>10,.0f} {trips:>12} {ratio:>13}")
    return "\n".join(lines)

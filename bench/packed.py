"""Packed multi-column keys on MonetDB (paper §3.2.5), measured: the same composite-key
table through tique with and without the packed key column, point reads and one-row
read-update transactions, side by side in one run. Printed, never asserted."""
from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import tique
from tique.adopt import adopt
from tique.checkpoint import checkpoint

READ = "SELECT qty FROM stock_like WHERE w = ? AND d = ? AND i = ?"
UPDATE = "UPDATE stock_like SET qty = qty + 1 WHERE w = ? AND d = ? AND i = ?"


@dataclass
class PackedResult:
    label: str
    read_ms: float
    transaction_ms: float


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query["schema"] = schema
    return urlunsplit(parts._replace(query=urlencode(query)))


def _load(url: str, packed: bool, warehouses: int, districts: int, items: int) -> tique.Connection:
    conn = tique.connect(url, autocommit=True, packed_keys=packed)
    assert conn.backend.packs_keys == packed, "one process opened this database with the other setting"
    backend, raw = conn.backend, conn._raw
    conn.cursor().execute("DROP TABLE IF EXISTS stock_like")  # the tique table of an earlier run
    backend.execute(raw, "DROP TABLE IF EXISTS stock_like", [])  # a native one an interrupted run left
    backend.execute(raw, "CREATE TABLE stock_like (w INTEGER NOT NULL, d INTEGER NOT NULL, i INTEGER NOT NULL, "
                         "qty INTEGER NOT NULL, PRIMARY KEY (w, d, i))", [])
    backend.execute(raw, "INSERT INTO stock_like SELECT w.value, d.value, i.value, 50 FROM sys.generate_series(1, $1) AS w, "
                         "sys.generate_series(1, $2) AS d, sys.generate_series(1, $3) AS i",
                    [warehouses + 1, districts + 1, items + 1])
    adopt(conn, ["stock_like"])
    return conn


def _transaction(conn: tique.Connection, key: tuple[int, int, int]) -> tuple[float, float]:
    cur = conn.cursor()
    began = time.perf_counter()
    cur.execute(READ, key)
    cur.fetchall()
    read = time.perf_counter() - began
    cur.execute(UPDATE, key)
    conn.commit()
    return read, time.perf_counter() - began


def compare(url: str, warehouses: int = 10, districts: int = 10, items: int = 10_000, repeats: int = 1000) -> list[PackedResult]:
    """Both tables are measured in lockstep, the same key on each in turn (alternating
    which goes first), so the noise of a shared machine falls on both alike."""
    rng = random.Random(1)
    keys = [(rng.randint(1, warehouses), rng.randint(1, districts), rng.randint(1, items)) for _ in range(repeats)]
    urls = [_with_schema(url, f"tq_packed_{int(packed)}") for packed in (False, True)]
    conns = [_load(u, packed, warehouses, districts, items) for u, packed in zip(urls, (False, True))]
    samples: list[list[tuple[float, float]]] = [[], []]
    try:
        for conn in conns:
            conn.autocommit = False
        for n, key in enumerate(keys):
            order = (0, 1) if n % 2 == 0 else (1, 0)
            for which in order:
                samples[which].append(_transaction(conns[which], key))
            if n % 200 == 199:
                for conn in conns:
                    checkpoint(conn)
    finally:
        from tique.backends import forget_database

        for conn, u in zip(conns, urls):
            conn.close()
            forget_database(u)
    return [PackedResult(label, statistics.median(r for r, _ in s) * 1000, statistics.median(t for _, t in s) * 1000)
            for label, s in zip(("3-column key", "packed key"), samples)]


def report(results: list[PackedResult], rows: int) -> str:
    lines = [f"stock-like table, {rows:,} rows, key (w, d, i), through tique-monetdb; medians",
             f"{'':<14}{'point read ms':>15}{'read+update+commit ms':>23}"]
    for r in results:
        lines.append(f"{r.label:<14}{r.read_ms:>15.2f}{r.transaction_ms:>23.2f}")
    plain, packed = results
    lines.append(f"packed / 3-column: point read {plain.read_ms / packed.read_ms:.2f}x faster, "
                 f"transaction {plain.transaction_ms / packed.transaction_ms:.2f}x faster")
    return "\n".join(lines)

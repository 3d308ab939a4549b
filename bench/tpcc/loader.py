"""TPC-C initial population (clause 4.3.3.1), generated vectorised with numpy and
streamed to `System.load` in column-array batches, which bulk-loads them by the engine's
fastest path (and, on tique systems, adopts the tables).

Generation is deterministic per (seed, table, warehouse, district), so each table's
batches are produced lazily while the previous table loads, and ORDERS and ORDER_LINE
agree on every order's line count without holding either in memory.
"""
from __future__ import annotations

import datetime
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from bench.tpcc.rand import LAST_NAMES, Constants, nurand_array
from bench.tpcc.schema import COLUMNS, MARKER_SQL, MARKER_TABLE, TABLE_NAMES, TABLES
from drivers import System, TableLoad

DISTRICTS = 10  # per warehouse; fixed by the specification, also at reduced scale


@dataclass(frozen=True)
class Scale:
    """Cardinalities. The defaults are the specification's; smaller values are for tests
    only (a run at reduced scale is not a TPC-C result). Every consistency condition
    holds at any scale: the last 30% of each district's orders are undelivered and in
    NEW_ORDER, as 900 of 3000 are at full scale."""

    items: int = 100_000
    customers: int = 3000  # per district
    orders: int = 3000  # per district, one per customer

    def __post_init__(self) -> None:
        if self.items < 15 or self.customers < 1 or self.orders != self.customers:
            raise ValueError(f"bad TPC-C scale {self}: need items >= 15 and one order per customer (orders == customers)")

    @property
    def new_orders(self) -> int:
        return self.orders * 900 // 3000

    @property
    def first_undelivered(self) -> int:
        """The first order id without a carrier (2101 at full scale)."""
        return self.orders - self.new_orders + 1

    @property
    def last_names(self) -> int:
        """C_LAST numbers 0..last_names-1 exist in every district (customers 1..1000 take
        their number's name), so selecting by one of them always finds a customer."""
        return min(1000, self.customers)


FULL = Scale()
TINY = Scale(items=1000, customers=30, orders=30)  # tests only

ALNUM = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)
DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
ORIGINAL = np.frombuffer(b"ORIGINAL", dtype=np.uint8)
_TABLE_TAGS = {name: i for i, name in enumerate(TABLE_NAMES)}
_ORDER_COUNTS_TAG = 100  # ORDERS' O_OL_CNT, regenerated identically for ORDER_LINE


def text(gen: np.random.Generator, n: int, low: int, high: int, alphabet: np.ndarray = ALNUM,
         original: bool = False) -> np.ndarray:
    """n random strings of length low..high over `alphabet` (an a-string, or an n-string
    with DIGITS); with `original`, 10% of them carry "ORIGINAL" at a random position."""
    lengths = gen.integers(low, high + 1, n)
    chars = alphabet[gen.integers(0, len(alphabet), (n, high))]
    if original and n:
        rows = gen.choice(n, size=max(1, n // 10), replace=False)
        starts = gen.integers(0, lengths[rows] - len(ORIGINAL) + 1)
        chars[rows[:, None], starts[:, None] + np.arange(len(ORIGINAL))] = ORIGINAL
    chars[np.arange(high)[None, :] >= lengths[:, None]] = 0  # NUL-padded: the bytes dtype drops them
    return chars.view(f"S{high}").ravel().astype(f"U{high}")


def _money(gen: np.random.Generator, n: int, low_cents: int, high_cents: int) -> np.ndarray:
    return gen.integers(low_cents, high_cents + 1, n) / 100.0


def _address(gen: np.random.Generator, n: int) -> list[np.ndarray]:
    """street_1, street_2, city, state, zip (a zip is 4 random digits then 11111)."""
    zips = np.char.add(text(gen, n, 4, 4, DIGITS), "11111")
    return [text(gen, n, 10, 20), text(gen, n, 10, 20), text(gen, n, 10, 20), text(gen, n, 2, 2), zips]


class Generator:
    """The population of `warehouses` warehouses at `scale`, table by table."""

    def __init__(self, warehouses: int, scale: Scale = FULL, seed: int = 1, constants: Constants | None = None,
                 now: datetime.datetime | None = None, batch_rows: int = 50_000) -> None:
        self.warehouses = warehouses
        self.scale = scale
        self.seed = seed
        self.constants = constants or Constants.for_load(random.Random(seed))
        self.now = np.datetime64(now or datetime.datetime.now().replace(microsecond=0), "us")
        self.batch_rows = batch_rows

    def _gen(self, table: str | int, *key: int) -> np.random.Generator:
        tag = table if isinstance(table, int) else _TABLE_TAGS[table]
        return np.random.default_rng([self.seed, tag, *key])

    def _ol_counts(self, w: int, d: int) -> np.ndarray:
        return self._gen(_ORDER_COUNTS_TAG, w, d).integers(5, 16, self.scale.orders)

    def expected_rows(self) -> dict[str, int]:
        """Rows per table; ORDER_LINE's is exact too (its line counts are regenerated here)."""
        w, s = self.warehouses, self.scale
        lines = sum(int(self._ol_counts(wi, d).sum()) for wi in range(1, w + 1) for d in range(1, DISTRICTS + 1))
        per_district = w * DISTRICTS
        return {"warehouse": w, "district": per_district, "customer": per_district * s.customers,
                "history": per_district * s.customers, "new_order": per_district * s.new_orders,
                "orders": per_district * s.orders, "order_line": lines, "item": s.items, "stock": w * s.items}

    # -- tables, each a stream of column-array batches in schema.COLUMNS order ---------

    def warehouse(self) -> Iterator[list[np.ndarray]]:
        n = self.warehouses
        gen = self._gen("warehouse")
        yield [np.arange(1, n + 1), text(gen, n, 6, 10), *_address(gen, n),
               gen.integers(0, 2001, n) / 10000.0,
               np.full(n, DISTRICTS * self.scale.customers * 10.0)]  # 300,000.00: the history's sum

    def district(self) -> Iterator[list[np.ndarray]]:
        for w in range(1, self.warehouses + 1):
            gen, n = self._gen("district", w), DISTRICTS
            yield [np.arange(1, n + 1), np.full(n, w), text(gen, n, 6, 10), *_address(gen, n),
                   gen.integers(0, 2001, n) / 10000.0, np.full(n, self.scale.customers * 10.0),  # 30,000.00
                   np.full(n, self.scale.orders + 1)]

    def _districts(self) -> Iterator[tuple[int, int]]:
        for w in range(1, self.warehouses + 1):
            for d in range(1, DISTRICTS + 1):
                yield w, d

    def customer(self) -> Iterator[list[np.ndarray]]:
        n = self.scale.customers
        for w, d in self._districts():
            gen = self._gen("customer", w, d)
            ids = np.arange(1, n + 1)
            # customers 1..1000 take their number's name, the rest NURand(255, 0, 999)
            numbers = np.where(ids <= 1000, ids - 1, nurand_array(gen, 255, 0, 999, self.constants.c_last, n))
            credit = np.where(gen.random(n) < 0.1, "BC", "GC")
            yield [ids, np.full(n, d), np.full(n, w), text(gen, n, 8, 16), np.full(n, "OE"), LAST_NAMES[numbers],
                   *_address(gen, n), text(gen, n, 16, 16, DIGITS), np.full(n, self.now), credit,
                   np.full(n, 50_000.0), gen.integers(0, 5001, n) / 10000.0, np.full(n, -10.0), np.full(n, 10.0),
                   np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64), text(gen, n, 300, 500)]

    def history(self) -> Iterator[list[np.ndarray]]:
        n = self.scale.customers
        for w, d in self._districts():
            gen = self._gen("history", w, d)
            yield [np.arange(1, n + 1), np.full(n, d), np.full(n, w), np.full(n, d), np.full(n, w),
                   np.full(n, self.now), np.full(n, 10.0), text(gen, n, 12, 24)]

    def new_order(self) -> Iterator[list[np.ndarray]]:
        ids = np.arange(self.scale.first_undelivered, self.scale.orders + 1)
        for w, d in self._districts():
            yield [ids, np.full(len(ids), d), np.full(len(ids), w)]

    def orders(self) -> Iterator[list[np.ndarray]]:
        n, first_undelivered = self.scale.orders, self.scale.first_undelivered
        for w, d in self._districts():
            gen = self._gen("orders", w, d)
            ids = np.arange(1, n + 1)
            carriers = gen.integers(1, 11, n).astype(object)
            carriers[ids >= first_undelivered] = None
            yield [ids, np.full(n, d), np.full(n, w), gen.permutation(self.scale.customers) + 1,
                   np.full(n, self.now), carriers, self._ol_counts(w, d), np.ones(n, dtype=np.int64)]

    def order_line(self) -> Iterator[list[np.ndarray]]:
        first_undelivered = self.scale.first_undelivered
        for w, d in self._districts():
            gen = self._gen("order_line", w, d)
            counts = self._ol_counts(w, d)
            n = int(counts.sum())
            order_ids = np.repeat(np.arange(1, self.scale.orders + 1), counts)
            numbers = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts) + 1
            delivered = order_ids < first_undelivered
            delivery = np.where(delivered, self.now, np.datetime64("NaT", "us"))
            amount = np.where(delivered, 0.0, _money(gen, n, 1, 999_999))
            yield [order_ids, np.full(n, d), np.full(n, w), numbers, gen.integers(1, self.scale.items + 1, n),
                   np.full(n, w), delivery, np.full(n, 5), amount, text(gen, n, 24, 24)]

    def item(self) -> Iterator[list[np.ndarray]]:
        for first in range(1, self.scale.items + 1, self.batch_rows):
            ids = np.arange(first, min(first + self.batch_rows, self.scale.items + 1))
            gen, n = self._gen("item", first), len(ids)
            yield [ids, gen.integers(1, 10_001, n), text(gen, n, 14, 24), _money(gen, n, 100, 10_000),
                   text(gen, n, 26, 50, original=True)]

    def stock(self) -> Iterator[list[np.ndarray]]:
        for w in range(1, self.warehouses + 1):
            for first in range(1, self.scale.items + 1, self.batch_rows):
                ids = np.arange(first, min(first + self.batch_rows, self.scale.items + 1))
                gen, n = self._gen("stock", w, first), len(ids)
                zeros = np.zeros(n, dtype=np.int64)
                yield [ids, np.full(n, w), gen.integers(10, 101, n), *(text(gen, n, 24, 24) for _ in range(10)),
                       zeros, zeros, zeros, text(gen, n, 26, 50, original=True)]

    def marker(self) -> Iterator[list[np.ndarray]]:
        s = self.scale
        yield [np.array([self.warehouses]), np.array([s.items]), np.array([s.customers]), np.array([s.orders]),
               np.array([self.constants.c_last])]

    def table_loads(self) -> list[TableLoad]:
        loads = [TableLoad(name, TABLES[name], COLUMNS[name], getattr(self, name)()) for name in TABLE_NAMES]
        marker_columns = ("warehouses", "items", "customers", "orders", "c_last_load")
        return loads + [TableLoad(MARKER_TABLE, MARKER_SQL, marker_columns, self.marker())]


@dataclass(frozen=True)
class Loaded:
    """What a database holds: a complete load at this scale (from its marker row)."""

    warehouses: int
    scale: Scale
    c_last_load: int


@dataclass
class LoadReport:
    rows: int = 0
    seconds: float = 0.0
    per_table: dict[str, tuple[int, float]] = field(default_factory=dict)  # rows, seconds
    reused: bool = False

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def existing_load(system: System) -> Loaded | None:
    """The marker of a complete load, read through `system`, or None when there is none."""
    conn = system.connect()
    try:
        cur = conn.cursor()
        try:
            cur.execute(f"SELECT warehouses, items, customers, orders, c_last_load FROM {MARKER_TABLE}")
            rows = cur.fetchall()
        except Exception:  # no marker table: nothing (complete) loaded here
            conn.rollback()
            return None
        conn.rollback()
    finally:
        conn.close()
    if len(rows) != 1:
        return None
    w, items, customers, orders, c_last = (int(v) for v in rows[0])
    return Loaded(w, Scale(items, customers, orders), c_last)


def _adopt_if_native(system: System) -> None:
    """A database loaded natively and reused by a tique system: its tables become tique tables."""
    if not system.through_tique:
        return
    import tique
    from tique.adopt import adopt

    conn = tique.connect(system.engine.tique_url, autocommit=True)
    try:
        missing = [n for n in (*TABLE_NAMES, MARKER_TABLE) if n not in conn.tables]
        if missing:
            adopt(conn, missing)
    finally:
        conn.close()


def load(system: System, warehouses: int, scale: Scale = FULL, seed: int = 1, progress: bool = True,
         reuse: bool = True, console: Any = None) -> tuple[Loaded, LoadReport]:
    """Populates `system` with `warehouses` warehouses, or, with `reuse`, keeps a complete
    load already there when its marker says the same warehouses and scale."""
    if reuse:
        if system.through_tique and _native_marker(system):
            _adopt_if_native(system)
        if not system.through_tique and _tique_marker(system):
            raise ValueError("the database holds a TPC-C load made through tique (its tables are tique tables): "
                             "run a tique system on it, or load a fresh database for a native system")
        found = existing_load(system)
        if found is not None:
            if found.warehouses != warehouses or found.scale != scale:
                raise ValueError(f"the database already holds a TPC-C load of {found.warehouses} warehouses at {found.scale}; "
                                 f"asked for {warehouses} at {scale}: use a fresh database")
            return found, LoadReport(reused=True)
    generator = Generator(warehouses, scale, seed)
    expected = generator.expected_rows()
    report = LoadReport()
    began = time.perf_counter()
    table_began: dict[str, float] = {}

    def counted(name: str, rows: int) -> None:
        table_began.setdefault(name, time.perf_counter())
        done, _ = report.per_table.get(name, (0, 0.0))
        report.per_table[name] = (done + rows, time.perf_counter() - table_began[name])

    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("loading {task.fields[table]:<11}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("rows"), TimeElapsedColumn(), console=console, transient=False) as bar:
            task = bar.add_task("load", total=sum(expected.values()) + 1, table="")

            def tick(name: str, rows: int) -> None:
                counted(name, rows)
                bar.update(task, advance=rows, table=name)

            report.rows = system.load(_timed(generator.table_loads(), table_began), progress=tick)
    else:
        report.rows = system.load(_timed(generator.table_loads(), table_began), progress=counted)
    report.seconds = time.perf_counter() - began
    return Loaded(warehouses, scale, generator.constants.c_last), report


def _timed(loads: list[TableLoad], began: dict[str, float]) -> list[TableLoad]:
    """Starts each table's clock when its first batch is asked for (generation included)."""
    def stamped(name: str, batches: Any) -> Iterator[Sequence[np.ndarray]]:
        began.setdefault(name, time.perf_counter())
        yield from batches
    return [TableLoad(t.name, t.create_sql, t.columns, stamped(t.name, t.batches)) for t in loads]


def _native_marker(system: System) -> bool:
    """Whether the engine holds the marker as a native (not yet adopted) table."""
    raw = system.engine.native_connect()
    try:
        cur = raw.cursor()
        try:
            cur.execute(f"SELECT count(*) FROM {MARKER_TABLE}")
            cur.fetchall()
            return True
        except Exception:
            return False
        finally:
            raw.rollback()
    finally:
        raw.close()


def _tique_marker(system: System) -> bool:
    """Whether tique's catalog on this engine lists the marker as a tique table."""
    raw = system.engine.native_connect()
    try:
        cur = raw.cursor()
        try:
            cur.execute("SELECT COUNT(*) FROM tq_tables WHERE name = ?", (MARKER_TABLE,))
            return bool(cur.fetchall()[0][0])
        except Exception:  # no tique catalog here
            return False
        finally:
            raw.rollback()
    finally:
        raw.close()


def print_report(report: LoadReport, system: str, console: Any = None, out: Callable[[str], None] | None = None) -> None:
    lines = [f"{system}: loaded {report.rows:,} rows in {report.seconds:.1f} s ({report.rows_per_second:,.0f} rows/s)"]
    for name, (rows, seconds) in report.per_table.items():
        lines.append(f"  {name:<12}{rows:>12,} rows {seconds:>7.1f} s {rows / seconds if seconds else 0:>12,.0f} rows/s")
    text_out = "\n".join(lines)
    if out is not None:
        out(text_out)
    elif console is not None:
        console.print(text_out)
    else:
        print(text_out)

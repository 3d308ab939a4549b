"""CH-benCHmark: the 22 queries run unchanged natively and through tique, and return the
same rows on the same data, on DuckDB, PostgreSQL and (when a server is at hand) MonetDB.

Per engine, a native and a tique system are loaded identically (same generator, seed
and load timestamp) at a reduced TPC-C scale, then compared:
1. right after the load (tique's caches are empty: storage only);
2. after the same committed writes on both sides (inserts, updates, deletes of every
   kind TPC-C does, plus a few it does not), with the versions sitting in tique's
   caches, while tique also has a rolled-back and an uncommitted transaction whose
   writes its readers must not see;
3. inside one open transaction on each side that has written and not committed: each
   side's queries must see their own writes;
4. after real TPC-C transactions (random, so run through tique only): the queries
   through tique against the engine's own evaluation of the same snapshot, read
   natively from tique's storage tables after a checkpoint has moved it there.
The tests of one engine share a loaded pair and run in file order (4 leaves the two
systems holding different data, so it comes last).
"""
from __future__ import annotations

import datetime as dt
import itertools
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from bench.chbench.compare import (Comparison, compare_outputs, compare_rows, compare_systems, compare_with_storage,
                                   load_identically, run_all)
from bench.chbench.htap import oltp_loss, run_order, run_point, sweep_points
from bench.chbench.queries import QUERIES
from bench.chbench.run import cache_rows, time_queries
from bench.chbench.tables import NATIONS, SUPPLIERS, table_loads
from bench.tpcc.loader import TINY, Loaded, Scale
from bench.tpcc.rand import Constants
from drivers import System, open_system
from progress import until_progress

SCALE = Scale(items=2000, customers=60, orders=60)  # 600 customers and orders, ~6,000 order lines
SEED = 1
_names = itertools.count(1)


def _open(name: str, engine: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> System:
    if engine == "duckdb":
        return open_system(name, workdir=tmp_path_factory.mktemp("chbench"))
    if engine == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        return open_system(name, url=cluster.create_database(f"chbench_{next(_names)}"))
    server = request.getfixturevalue("monetdb_server")  # skips without a server
    return open_system(name, url=server.url)  # each system gets its own schema


@pytest.fixture(scope="module", params=["duckdb", "postgres", "monetdb"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[System, System]]:
    engine = request.param
    native = _open(f"native-{engine}", engine, request, tmp_path_factory)
    tq = _open(f"tique-{engine}", engine, request, tmp_path_factory)
    try:
        load_identically([native, tq], 1, SCALE, SEED)
        yield native, tq
    finally:
        tq.close()
        native.close()


def _assert_equal(comparisons: list[Comparison]) -> None:
    differing = [f"{c.query}: {c.difference}" for c in comparisons if not c.equal]
    assert not differing, "\n".join(differing)


def _rows(conn: Any, sql: str, params: tuple = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description else []


# -- writes, the same on both systems -------------------------------------------------

ENTRY = dt.datetime(2024, 2, 1, 9, 30)
DELIVERED = dt.datetime(2025, 3, 1, 17, 0)
_ORDER = ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
          "VALUES (?, ?, 1, ?, ?, NULL, ?, 1)")
_LINE = ("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "
         "ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, 1, ?, ?, 1, NULL, ?, ?, ?)")
_CUSTOMER = ("INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_state, c_phone, c_since, "
             "c_credit, c_balance, c_data) VALUES (?, ?, 1, ?, 'OE', ?, ?, ?, ?, 'GC', ?, ?)")


def _ordered_items(conn: Any) -> list[int]:
    return [r[0] for r in _rows(conn, "SELECT DISTINCT ol_i_id FROM order_line WHERE ol_o_id <= 6 ORDER BY ol_i_id")]


def new_order(execute: Callable[..., list[tuple]], district: int, customer: int, items: list[int], entry: dt.datetime) -> int:
    (next_id,) = execute("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = ?", (district,))[0]
    execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = ?", (district,))
    execute(_ORDER, (next_id, district, customer, entry, len(items)))
    execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, 1)", (next_id, district))
    for number, item in enumerate(items, 1):
        quantity = 1 + (item + number) % 9
        execute(_LINE, (next_id, district, number, item, quantity, Decimal(item % 500) + Decimal("0.75"), f"{item:024d}"))
        execute("UPDATE stock SET s_quantity = s_quantity - ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1 "
                "WHERE s_w_id = 1 AND s_i_id = ?", (quantity, quantity, item))
    return int(next_id)


def deliver(execute: Callable[..., list[tuple]], district: int, carrier: int, when: dt.datetime) -> None:
    (oldest,) = execute("SELECT min(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = ?", (district,))[0]
    execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = ? AND no_o_id = ?", (district, oldest))
    execute("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = 1 AND o_d_id = ? AND o_id = ?", (carrier, district, oldest))
    execute("UPDATE order_line SET ol_delivery_d = ? WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ?", (when, district, oldest))
    (customer,) = execute("SELECT o_c_id FROM orders WHERE o_w_id = 1 AND o_d_id = ? AND o_id = ?", (district, oldest))[0]
    (amount,) = execute("SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ?",
                        (district, oldest))[0]
    execute("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
            "WHERE c_w_id = 1 AND c_d_id = ? AND c_id = ?", (amount, district, customer))


def apply_writes(system: System) -> None:
    """A fixed series of transactions, each committed: what they write depends only on
    the data, which is the same on both systems."""
    conn = system.connect()
    cur = conn.cursor()

    def execute(sql: str, params: tuple = ()) -> list[tuple]:
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []

    try:
        items = _ordered_items(conn)
        conn.commit()
        # New-Orders in three districts, one of them twice in a transaction.
        for district in (1, 2, 3):
            new_order(execute, district, district * 7, items[district:district + 5], ENTRY)
            if district == 2:
                new_order(execute, district, 11, items[10:16], ENTRY + dt.timedelta(hours=1))
            conn.commit()
        # Deliveries: new_order rows deleted, carriers, delivery dates later than the
        # entry dates (Q4, Q10, Q12, Q21 select on that), balances up.
        for district in (1, 2, 4, 5):
            deliver(execute, district, district, DELIVERED + dt.timedelta(days=district))
            conn.commit()
        # Payments, and new customers without orders (Q22 counts those).
        for c_id in range(1, 9):
            execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                    "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = 1 AND c_d_id = 6 AND c_id = ?",
                    (Decimal("-250.50") * c_id, Decimal("250.50") * c_id, c_id))
        for k in range(6):
            execute(_CUSTOMER, (SCALE.customers + 1 + k, 1 + k % 3, f"First{k}", f"NEWLAST{k}", ("Ab", "Ga", "zz")[k % 3],
                                f"{(k % 7) + 1}{k:015d}", ENTRY, Decimal(900_000 + 50 * k), "x" * 300))
        conn.commit()
        # Item texts the queries filter on (Q2, Q8, Q9, Q14, Q16, Q17, Q19, Q20), and a
        # stock row updated twice in one transaction.
        texts = ["PRomotion item ab", "standard xBB", "copper coated b", "zzlast b", "coastal item c"]
        for k, item in enumerate(items[:10]):
            execute("UPDATE item SET i_data = ?, i_price = i_price + 1 WHERE i_id = ?", (texts[k % len(texts)], item))
        execute("UPDATE stock SET s_quantity = 3 WHERE s_w_id = 1 AND s_i_id = ?", (items[0],))
        execute("UPDATE stock SET s_quantity = s_quantity + 95, s_order_cnt = s_order_cnt + 7 WHERE s_w_id = 1 AND s_i_id = ?",
                (items[0],))
        conn.commit()
        # Suppliers: two gone, one with a complaint (Q16 excludes it), and the supplier
        # of an item just delivered moved to Germany, with more orders for that item
        # (Q11 and Q21 select on German suppliers).
        execute("DELETE FROM supplier WHERE su_suppkey = ? OR su_suppkey = ?", (items[1] % SUPPLIERS, items[2] % SUPPLIERS))
        execute("UPDATE supplier SET su_comment = 'a bad supplier' WHERE su_suppkey = ?", (items[3] % SUPPLIERS,))
        (delivered_item,) = execute("SELECT min(ol_i_id) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 1 "
                                    "AND ol_delivery_d = ?", (DELIVERED + dt.timedelta(days=1),))[0]
        execute("UPDATE supplier SET su_nationkey = ? WHERE su_suppkey = ?", (ord("6"), delivered_item % SUPPLIERS))
        execute("UPDATE stock SET s_order_cnt = s_order_cnt + 50 WHERE s_w_id = 1 AND s_i_id = ?", (delivered_item,))
        conn.commit()
    finally:
        conn.close()


def test_nations_as_defined() -> None:
    assert len(NATIONS) == 62 and {k for k, _, _ in NATIONS} == {ord(c) for c in
                                                                 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}
    assert ("Germany", 5) in {(n, r) for _, n, r in NATIONS} and ("Cambodia", 3) in {(n, r) for _, n, r in NATIONS}
    first, again = table_loads(7), table_loads(7)
    suppliers = first[2].batches[0]
    assert len(suppliers[0]) == SUPPLIERS and list(suppliers[0][:2]) == [0, 1]
    assert all((a == b).all() for x, y in zip(first, again) for a, b in zip(x.batches[0], y.batches[0]))


def test_compare_rows_tolerance_and_order() -> None:
    assert compare_rows([(1, 0.1 + 0.2)], [(1, 0.3)], ordered=True) is None
    assert compare_rows([(1, Decimal("2.50"))], [(1, 2.5)], ordered=True) is None
    assert compare_rows([(1, 0.3)], [(1, 0.31)], ordered=True) is not None
    assert compare_rows([("a", 1), ("b", 2)], [("b", 2), ("a", 1)], ordered=False) is None
    assert compare_rows([("a", 1), ("b", 2)], [("b", 2), ("a", 1)], ordered=True) is not None
    assert compare_rows([("a", 1.0), ("a", 2.0)], [("a", 2.0), ("a", 1.0000000000001)], ordered=False) is None
    assert compare_rows([("a", 1), ("a", 1)], [("a", 1), ("b", 1)], ordered=False) is not None
    assert compare_rows([(None,)], [(0,)], ordered=True) is not None


def test_fresh_load_equal(pair: tuple[System, System]) -> None:
    native, tq = pair
    comparisons = compare_systems(native, tq)
    _assert_equal(comparisons)
    assert sum(1 for c in comparisons if c.left_rows) >= 14  # most queries find rows at this scale


def test_equal_after_the_same_writes(pair: tuple[System, System]) -> None:
    native, tq = pair
    before = run_all_on(tq)
    for system in (native, tq):
        apply_writes(system)
    # tique only: a rolled-back transaction and one left open while the queries run.
    rolled = tq.connect()
    _rows(rolled, "UPDATE order_line SET ol_amount = 0, ol_quantity = ol_quantity + 1 WHERE ol_d_id = 1")
    _rows(rolled, "DELETE FROM new_order WHERE no_d_id = 3")
    rolled.rollback()
    open_txn = tq.connect()
    _rows(open_txn, "UPDATE customer SET c_balance = 1000000 WHERE c_d_id = 2")
    _rows(open_txn, "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
                    "VALUES (100000, 1, 1, 1, ?, 9, 5, 1)", (ENTRY,))
    try:
        comparisons = compare_systems(native, tq)
    finally:
        open_txn.rollback()
        open_txn.close()
        rolled.close()
    _assert_equal(comparisons)
    caches = cache_rows(tq) or {}
    assert all(caches[t] > 0 for t in ("orders", "order_line", "new_order", "customer", "stock", "item", "supplier"))
    changed = [c.query for c in compare_outputs(before, run_all_on(tq)) if not c.equal]
    assert len(changed) >= 15, f"the writes should change most results; changed: {changed}"
    assert all(c.left_rows for c in comparisons if c.query in ("Q11", "Q21", "Q22"))


def run_all_on(system: System) -> dict[str, Any]:
    conn = system.connect()
    try:
        return run_all(conn)
    finally:
        conn.close()


def test_own_writes_equal(pair: tuple[System, System]) -> None:
    """Each side writes and, in the same transaction, runs the 22 queries; then rolls back."""
    native, tq = pair
    outputs = []
    for system in (native, tq):
        conn = system.connect()
        cur = conn.cursor()

        def execute(sql: str, params: tuple = ()) -> list[tuple]:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

        try:
            items = _ordered_items(conn)
            new_order(execute, 7, 3, items[20:27], ENTRY + dt.timedelta(days=3))
            deliver(execute, 7, 4, DELIVERED + dt.timedelta(days=30))
            execute("UPDATE customer SET c_balance = c_balance + 5000 WHERE c_w_id = 1 AND c_d_id = 8 AND c_id <= 5")
            execute("DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 9 AND ol_o_id = 1")
            outputs.append(run_all(conn, commit=False))
        finally:
            conn.rollback()
            conn.close()
    _assert_equal(compare_outputs(outputs[0], outputs[1]))
    # the transaction saw its writes, which are gone after its rollback
    assert any(not c.equal for c in compare_outputs(outputs[1], run_all_on(tq)))


def test_tpcc_then_checkpointed_snapshot_equal(pair: tuple[System, System]) -> None:
    _, tq = pair
    from bench.tpcc.run import run as run_tpcc

    loaded = Loaded(1, SCALE, Constants.for_load(random.Random(SEED)).c_last)
    tpcc = until_progress(lambda seconds: run_tpcc(tq, loaded, clients=2, duration=seconds, warmup=0.0, seed=5),
                          lambda run: run.metrics()["commits"] > 0, seconds=4.0)
    metrics = tpcc.metrics()
    assert metrics["commits"] > 0 and not metrics["errors"], metrics["error_samples"]
    assert sum((cache_rows(tq) or {}).values()) > 0
    _assert_equal(compare_with_storage(tq))


# -- runners --------------------------------------------------------------------------

def test_time_queries_reports_every_query(tmp_path: Path) -> None:
    system = open_system("tique-duckdb", workdir=tmp_path)
    try:
        load_identically([system], 1, TINY)
        times = time_queries(system, repetitions=2, queries=QUERIES[:3])
    finally:
        system.close()
    assert [t.name for t in times] == ["Q1", "Q2", "Q3"]
    assert all(len(t.seconds) == 2 and t.error is None and t.median > 0 for t in times)


def test_sweep_points() -> None:
    assert sweep_points(None, 4, 2, []) == [(4, 2)]
    assert sweep_points("olap", 6, 0, [0, 1, 6]) == [(6, 0), (6, 1), (6, 6)]
    assert sweep_points("oltp", 0, 6, [0, 3]) == [(0, 6), (3, 6)]
    assert sweep_points("both", 0, 0, [1, 2]) == [(1, 1), (2, 2)]
    with pytest.raises(ValueError):
        sweep_points("sideways", 1, 1, [1])


def test_paired_points_run_beside_their_baselines() -> None:
    """--paired: point by point, each cap in turn, each loaded point right after its own
    baseline; unpaired, setting by setting as before."""
    points = [(6, 0), (6, 1), (6, 6)]
    assert run_order(points, [None, "auto"], False) == [(w, 6, n) for w in (None, "auto") for n in (0, 1, 6)]
    assert run_order(points, [None, "auto"], True) == [
        (None, 6, 0), (None, 6, 1), ("auto", 6, 0), ("auto", 6, 1), (None, 6, 0), (None, 6, 6), ("auto", 6, 0), ("auto", 6, 6)]
    assert run_order([(0, 2), (2, 2)], ["auto"], True) == [("auto", 0, 2), ("auto", 2, 0), ("auto", 2, 2)]


def test_oltp_loss_compares_with_the_nearest_earlier_baseline_of_the_setting() -> None:
    def point(oltp: int, olap: int, workers: object, txn: float) -> dict:
        return {"oltp_clients": oltp, "olap_clients": olap, "analytic_workers": workers, "oltp": {"txn_per_s": txn}}

    points = [point(6, 0, None, 10.0), point(6, 0, "auto", 8.0), point(6, 1, None, 9.0), point(6, 1, "auto", 2.0),
              point(6, 0, None, 20.0), point(6, 6, None, 5.0), point(3, 1, None, 1.0)]
    assert oltp_loss(points) == [None, None, pytest.approx(0.1), pytest.approx(0.75), None, pytest.approx(0.75), None]


def test_htap_short_run_makes_progress_on_both_sides(tmp_path: Path) -> None:
    system = open_system("tique-duckdb", workdir=tmp_path, checkpoint_interval_ms=500)
    try:
        load_identically([system], 1, TINY)
        loaded = Loaded(1, TINY, Constants.for_load(random.Random(SEED)).c_last)
        # Both sides progressing within one point is the claim: a busy machine gets a longer point.
        point = until_progress(lambda seconds: run_point(system, loaded, oltp_clients=1, olap_clients=1, duration=seconds),
                               lambda p: p.metrics()["oltp"]["commits"] > 0 and p.metrics()["olap"]["queries_completed"] > 0,
                               seconds=4.0)
    finally:
        system.close()
    metrics = point.metrics()
    assert metrics["oltp"]["commits"] > 0 and not metrics["oltp"]["errors"], metrics["oltp"]["error_samples"]
    assert metrics["olap"]["queries_completed"] > 0 and not metrics["olap"]["error_samples"], metrics["olap"]["error_samples"]


def test_cli_chbench_and_htap_write_results(tmp_path: Path) -> None:
    from tique.cli import main

    out = tmp_path / "chbench.json"
    assert main(["bench", "chbench", "--system", "tique-duckdb", "--tiny", "--repetitions", "1", "--oltp-seconds", "1",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["benchmark"] == "chbench" and result["system"] == "tique-duckdb"
    assert len(result["metrics"]["queries"]) == 22 and not result["metrics"]["failed"]
    assert result["metrics"]["total_median_s"] > 0

    out = tmp_path / "htap.json"

    def htap(seconds: float) -> list[dict]:
        assert main(["bench", "htap", "--system", "native-duckdb", "--tiny", "--oltp-clients", "1", "--olap-clients", "1",
                     "--duration", str(seconds), "--out", str(out)]) == 0
        return json.loads(out.read_text())["metrics"]["points"]

    points = until_progress(htap, lambda p: p[0]["oltp"]["commits"] > 0 and p[0]["olap"]["queries_completed"] > 0, seconds=2.0)
    assert len(points) == 1 and points[0]["oltp"]["commits"] > 0 and points[0]["olap"]["queries_completed"] > 0


def test_cli_htap_sweeps_the_analytic_worker_cap(tmp_path: Path) -> None:
    """Each --analytic-workers value runs the points again, and each point records its cap."""
    from tique.cli import main

    out = tmp_path / "htap-workers.json"
    assert main(["bench", "htap", "--system", "tique-duckdb", "--tiny", "--oltp-clients", "1", "--olap-clients", "1",
                 "--duration", "0.5", "--analytic-workers", "none", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["parameters"]["analytic_workers"] == [None, 1]
    assert [p["analytic_workers"] for p in result["metrics"]["points"]] == [None, 1]
    out = tmp_path / "htap-paired.json"
    assert main(["bench", "htap", "--system", "tique-duckdb", "--tiny", "--oltp-clients", "1", "--sweep", "olap",
                 "--counts", "0", "1", "--duration", "0.5", "--analytic-workers", "none", "1", "--paired", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["parameters"]["paired"] is True
    assert [(p["analytic_workers"], p["olap_clients"]) for p in result["metrics"]["points"]] == [(None, 0), (None, 1), (1, 0), (1, 1)]
    losses = [p["oltp_loss"] for p in result["metrics"]["points"]]
    assert losses[0] is None and losses[2] is None
    with pytest.raises(SystemExit):
        main(["bench", "htap", "--system", "tique-duckdb", "--analytic-workers", "0"])


def test_cli_htap_records_the_load_and_the_olap_clients_queue(tmp_path: Path) -> None:
    """Each point records the machine's load average as it began and ended (a shared
    machine skews a point), and --analytic-queue is recorded with the parameters."""
    from tique.cli import main

    out = tmp_path / "htap-queue.json"
    assert main(["bench", "htap", "--system", "tique-duckdb", "--tiny", "--oltp-clients", "1", "--olap-clients", "1",
                 "--duration", "0.5", "--analytic-queue", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["parameters"]["olap_analytic_queue"] is True
    [point] = result["metrics"]["points"]
    assert len(point["load_average"]) == 2 and all(x >= 0 for x in point["load_average"])

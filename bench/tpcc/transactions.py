"""The five TPC-C transactions (clause 2.4-2.8) as plain SQL with `?` parameters over a
DB-API connection. Native systems run this SQL on the engine; tique systems send the very
same text through tique.

The SQL is the portable subset DuckDB, PostgreSQL and MonetDB all accept: no SELECT ...
FOR UPDATE (snapshot isolation detects write-write conflicts without it), no RETURNING,
LIMIT for "the first row", no engine-specific functions.
"""
from __future__ import annotations

import datetime
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Protocol, Sequence

from bench.tpcc.loader import DISTRICTS, Scale
from bench.tpcc.rand import LAST_NAMES, Constants, nurand

# -- New-Order (clause 2.4) ----------------------------------------------------------
NO_WAREHOUSE = "SELECT w_tax FROM warehouse WHERE w_id = ?"
NO_DISTRICT = "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?"
NO_DISTRICT_NEXT = "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?"
NO_CUSTOMER = "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
NO_ORDER = ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
            "VALUES (?, ?, ?, ?, ?, NULL, ?, ?)")
NO_NEW_ORDER = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)"
NO_ITEM = "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?"
NO_STOCK = tuple(f"SELECT s_quantity, s_data, s_dist_{d:02d} FROM stock WHERE s_i_id = ? AND s_w_id = ?"
                 for d in range(1, DISTRICTS + 1))
NO_STOCK_UPDATE = ("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, "
                   "s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?")
# One row's text, sent once for all of an order's lines (5..15) by executemany: one
# statement text whatever the line count, as an application would write it.
NO_ORDER_LINES = ("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                  "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)")

# -- Payment (clause 2.5) -------------------------------------------------------------
PAY_WAREHOUSE_YTD = "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?"
PAY_WAREHOUSE = "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?"
PAY_DISTRICT_YTD = "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?"
PAY_DISTRICT = "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ? AND d_id = ?"
CUSTOMERS_BY_NAME = "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first"
PAY_CUSTOMER = ("SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, "
                "c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")
PAY_CUSTOMER_DATA = "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
PAY_CUSTOMER_UPDATE = ("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                       "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")
PAY_CUSTOMER_UPDATE_BC = ("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                          "c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")
PAY_HISTORY = ("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")

# -- Order-Status (clause 2.6) --------------------------------------------------------
OS_CUSTOMER = "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
OS_LAST_ORDER = ("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? "
                 "ORDER BY o_id DESC LIMIT 1")
OS_LINES = ("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
            "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?")

# -- Delivery (clause 2.7) ------------------------------------------------------------
DL_OLDEST = "SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = ? AND no_d_id = ?"
DL_DELETE = "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
DL_ORDER = "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
DL_CARRIER = "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
DL_LINES = "UPDATE order_line SET ol_delivery_d = ? WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
DL_AMOUNT = "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
DL_CUSTOMER = ("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
               "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")

# -- Stock-Level (clause 2.8) ---------------------------------------------------------
SL_NEXT = "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?"
SL_LOW = ("SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id = ol_i_id "
          "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_quantity < ?")

KINDS = ("new_order", "payment", "order_status", "delivery", "stock_level")
MIX = (45, 43, 4, 4, 4)  # percent, the standard mix (clause 5.2.3 minimums, New-Order the rest)


class UserRollback(Exception):
    """The 1% of New-Orders that name an unused item and roll back by design (clause
    2.4): a completed business transaction, not an abort."""


@dataclass(frozen=True)
class Outcome:
    rolled_back: bool = False  # a New-Order's user rollback
    skipped: int = 0  # Delivery: districts without an undelivered order


class Execute(Protocol):
    def __call__(self, sql: str, params: Sequence[Any], many: bool = False) -> list[tuple]:
        """The result rows (empty for statements without a result); `many`: `params` is a
        sequence of rows, run by the cursor's executemany."""


def executor(conn: Any) -> Execute:
    """execute(sql, params) -> the result rows (empty for statements without a result)."""
    cur = conn.cursor()

    def execute(sql: str, params: Sequence[Any], many: bool = False) -> list[tuple]:
        if many:
            cur.executemany(sql, params)
            return []
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []

    return execute


def _money(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


class Workload:
    """Inputs (clause 2.x.1) and the five transactions for one client. Each transaction
    runs its statements and returns; the caller commits (or rolls back a UserRollback)."""

    def __init__(self, warehouses: int, scale: Scale, constants: Constants, contention: int | None = None,
                 mix: Sequence[int] = MIX) -> None:
        self.warehouses = warehouses
        self.scale = scale
        self.c = constants
        self.contention = contention
        self.mix = tuple(mix)  # weights in KINDS order; tests may even them out to meet every type quickly

    # -- inputs --------------------------------------------------------------------------
    def home_warehouse(self, rng: random.Random) -> int:
        """Any warehouse, or with contention K: 99% among warehouses 1..K, 1% any (paper §4.3.1)."""
        if self.contention is not None and rng.random() < 0.99:
            return rng.randint(1, min(self.contention, self.warehouses))
        return rng.randint(1, self.warehouses)

    def other_warehouse(self, rng: random.Random, home: int) -> int:
        other = rng.randint(1, self.warehouses - 1)
        return other if other < home else other + 1

    def customer_id(self, rng: random.Random) -> int:
        return nurand(rng, 1023, 1, self.scale.customers, self.c.c_id)

    def last_name(self, rng: random.Random) -> str:
        return str(LAST_NAMES[nurand(rng, 255, 0, self.scale.last_names - 1, self.c.c_last)])

    def item_id(self, rng: random.Random) -> int:
        return nurand(rng, 8191, 1, self.scale.items, self.c.ol_i_id)

    def choose(self, rng: random.Random) -> str:
        return rng.choices(KINDS, weights=self.mix)[0]

    def run(self, kind: str, execute: Execute, rng: random.Random) -> Outcome:
        transaction: Callable[[Execute, random.Random], Outcome] = getattr(self, kind)
        return transaction(execute, rng)

    def _by_name(self, execute: Execute, w: int, d: int, last: str) -> int:
        """The customer at position ceil(n/2) of those with this last name, by C_FIRST (clause 2.5.2.2)."""
        ids = execute(CUSTOMERS_BY_NAME, (w, d, last))
        if not ids:
            raise LookupError(f"no customer named {last!r} in warehouse {w} district {d}")
        return int(ids[(len(ids) + 1) // 2 - 1][0])

    # -- transactions -------------------------------------------------------------------
    def new_order(self, execute: Execute, rng: random.Random) -> Outcome:
        w, d, c = self.home_warehouse(rng), rng.randint(1, DISTRICTS), self.customer_id(rng)
        count = rng.randint(5, 15)
        unused_item = rng.randint(1, 100) == 1  # the last line names an item that does not exist
        lines = []
        for number in range(1, count + 1):
            item = self.scale.items + 1 if unused_item and number == count else self.item_id(rng)
            remote = self.warehouses > 1 and rng.randint(1, 100) == 1
            lines.append((item, self.other_warehouse(rng, w) if remote else w, rng.randint(1, 10)))
        entry = datetime.datetime.now()

        execute(NO_WAREHOUSE, (w,))
        (_d_tax, order_id), = execute(NO_DISTRICT, (w, d))
        execute(NO_DISTRICT_NEXT, (w, d))
        execute(NO_CUSTOMER, (w, d, c))
        all_local = int(all(supply == w for _, supply, _ in lines))
        execute(NO_ORDER, (order_id, d, w, c, entry, count, all_local))
        execute(NO_NEW_ORDER, (order_id, d, w))
        # The order total and the brand-generic flags are only displayed on the terminal:
        # no statement depends on them, so they are not computed.
        rows: list[tuple] = []
        for number, (item, supply, quantity) in enumerate(lines, start=1):
            found = execute(NO_ITEM, (item,))
            if not found:
                raise UserRollback(f"item {item} is not in the catalog")
            price = found[0][0]
            s_quantity, _s_data, dist_info = execute(NO_STOCK[d - 1], (item, supply))[0]
            s_quantity = s_quantity - quantity if s_quantity >= quantity + 10 else s_quantity - quantity + 91
            execute(NO_STOCK_UPDATE, (s_quantity, quantity, int(supply != w), item, supply))
            amount = (quantity * _money(price)).quantize(Decimal("0.01"))
            rows.append((order_id, d, w, number, item, supply, quantity, amount, dist_info))
        execute(NO_ORDER_LINES, rows, many=True)
        return Outcome()

    def payment(self, execute: Execute, rng: random.Random) -> Outcome:
        w, d = self.home_warehouse(rng), rng.randint(1, DISTRICTS)
        if self.warehouses > 1 and rng.randint(1, 100) <= 15:  # paid through a remote warehouse
            c_w, c_d = self.other_warehouse(rng, w), rng.randint(1, DISTRICTS)
        else:
            c_w, c_d = w, d
        by_name = rng.randint(1, 100) <= 60
        last = self.last_name(rng) if by_name else ""
        c = 0 if by_name else self.customer_id(rng)
        amount = Decimal(rng.randint(100, 500_000)) / 100

        execute(PAY_WAREHOUSE_YTD, (amount, w))
        w_name = execute(PAY_WAREHOUSE, (w,))[0][0]
        execute(PAY_DISTRICT_YTD, (amount, w, d))
        d_name = execute(PAY_DISTRICT, (w, d))[0][0]
        if by_name:
            c = self._by_name(execute, c_w, c_d, last)
        customer = execute(PAY_CUSTOMER, (c_w, c_d, c))[0]
        if customer[10] == "BC":
            (data,), = execute(PAY_CUSTOMER_DATA, (c_w, c_d, c))
            data = f"{c} {c_d} {c_w} {d} {w} {amount} | {data}"[:500]
            execute(PAY_CUSTOMER_UPDATE_BC, (amount, amount, data, c_w, c_d, c))
        else:
            execute(PAY_CUSTOMER_UPDATE, (amount, amount, c_w, c_d, c))
        h_data = f"{w_name}    {d_name}"[:24]
        execute(PAY_HISTORY, (c, c_d, c_w, d, w, datetime.datetime.now(), amount, h_data))
        return Outcome()

    def order_status(self, execute: Execute, rng: random.Random) -> Outcome:
        w, d = self.home_warehouse(rng), rng.randint(1, DISTRICTS)
        c = self._by_name(execute, w, d, self.last_name(rng)) if rng.randint(1, 100) <= 60 else self.customer_id(rng)
        execute(OS_CUSTOMER, (w, d, c))
        order = execute(OS_LAST_ORDER, (w, d, c))
        if order:
            execute(OS_LINES, (w, d, order[0][0]))
        return Outcome()

    def delivery(self, execute: Execute, rng: random.Random) -> Outcome:
        w, carrier = self.home_warehouse(rng), rng.randint(1, 10)
        now = datetime.datetime.now()
        skipped = 0
        for d in range(1, DISTRICTS + 1):
            (order_id,), = execute(DL_OLDEST, (w, d))
            if order_id is None:  # no undelivered order in this district: skipped, as the specification allows
                skipped += 1
                continue
            execute(DL_DELETE, (w, d, order_id))
            (customer,), = execute(DL_ORDER, (w, d, order_id))
            execute(DL_CARRIER, (carrier, w, d, order_id))
            execute(DL_LINES, (now, w, d, order_id))
            (amount,), = execute(DL_AMOUNT, (w, d, order_id))
            execute(DL_CUSTOMER, (_money(amount or 0), w, d, customer))
        return Outcome(skipped=skipped)

    def stock_level(self, execute: Execute, rng: random.Random) -> Outcome:
        w, d, threshold = self.home_warehouse(rng), rng.randint(1, DISTRICTS), rng.randint(10, 20)
        (next_id,), = execute(SL_NEXT, (w, d))
        execute(SL_LOW, (w, d, next_id, next_id - 20, w, threshold))
        return Outcome()

"""The consistency conditions of clause 3.3.2, checked through the system under test.

They are an application-level check of the isolation the system provides: each is an
invariant every TPC-C transaction preserves, so it must hold after any run in which
only serializable-enough (here: snapshot-isolated) transactions committed. All queries
run in one transaction, at one snapshot, through the same connection type the clients
used (for tique systems: through tique).

Each query counts the districts (or warehouses) with at least one violation. Condition
11 (count(ORDER) - count(NEW-ORDER) = 2100 per district) is left out: it holds only for
the initial population, since every Delivery changes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_DELIVERED = ("SELECT o_w_id, o_d_id, o_c_id, SUM(ol_amount) AS delivered FROM orders "
              "JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
              "WHERE ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id")
_PAID = "SELECT h_c_w_id, h_c_d_id, h_c_id, SUM(h_amount) AS paid FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id"


def _districts(select_w_d_where: str) -> str:
    """Counts the distinct (w, d) pairs a query over violating rows yields."""
    return f"SELECT COUNT(*) FROM ({select_w_d_where}) AS violating"


# number -> (what it states, unit, query counting violating units)
CONDITIONS: dict[int, tuple[str, str, str]] = {
    1: ("W_YTD = sum(D_YTD)", "warehouses",
        "SELECT COUNT(*) FROM warehouse JOIN (SELECT d_w_id, SUM(d_ytd) AS ytd FROM district GROUP BY d_w_id) AS d "
        "ON d.d_w_id = w_id WHERE w_ytd <> d.ytd"),
    2: ("D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", "districts",
        "SELECT COUNT(*) FROM district "
        "LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS max_o FROM orders GROUP BY o_w_id, o_d_id) AS o "
        "ON o.o_w_id = d_w_id AND o.o_d_id = d_id "
        "LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS max_no FROM new_order GROUP BY no_w_id, no_d_id) AS n "
        "ON n.no_w_id = d_w_id AND n.no_d_id = d_id "
        "WHERE o.max_o IS NULL OR d_next_o_id - 1 <> o.max_o OR (n.max_no IS NOT NULL AND d_next_o_id - 1 <> n.max_no)"),
    3: ("max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER)", "districts",
        "SELECT COUNT(*) FROM (SELECT COUNT(*) AS n, MAX(no_o_id) AS hi, MIN(no_o_id) AS lo FROM new_order "
        "GROUP BY no_w_id, no_d_id) AS g WHERE g.n <> g.hi - g.lo + 1"),
    4: ("sum(O_OL_CNT) = count(ORDER-LINE)", "districts",
        "SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS ol_cnt FROM orders GROUP BY o_w_id, o_d_id) AS o "
        "LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS ol_rows FROM order_line GROUP BY ol_w_id, ol_d_id) AS l "
        "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE l.ol_rows IS NULL OR o.ol_cnt <> l.ol_rows"),
    5: ("O_CARRIER_ID is null iff a NEW-ORDER row exists", "districts", _districts(
        "SELECT o_w_id, o_d_id FROM orders LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id "
        "WHERE (o_carrier_id IS NULL AND no_o_id IS NULL) OR (o_carrier_id IS NOT NULL AND no_o_id IS NOT NULL) "
        "GROUP BY o_w_id, o_d_id")),
    6: ("O_OL_CNT = the order's ORDER-LINE rows", "districts", _districts(
        "SELECT o_w_id, o_d_id FROM orders LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS ol_rows FROM order_line "
        "GROUP BY ol_w_id, ol_d_id, ol_o_id) AS l ON l.ol_w_id = o_w_id AND l.ol_d_id = o_d_id AND l.ol_o_id = o_id "
        "WHERE l.ol_rows IS NULL OR l.ol_rows <> o_ol_cnt GROUP BY o_w_id, o_d_id")),
    7: ("OL_DELIVERY_D is null iff O_CARRIER_ID is null", "districts", _districts(
        "SELECT ol_w_id, ol_d_id FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id "
        "WHERE (ol_delivery_d IS NULL AND o_carrier_id IS NOT NULL) OR (ol_delivery_d IS NOT NULL AND o_carrier_id IS NULL) "
        "GROUP BY ol_w_id, ol_d_id")),
    8: ("W_YTD = sum(H_AMOUNT)", "warehouses",
        "SELECT COUNT(*) FROM warehouse LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS paid FROM history GROUP BY h_w_id) AS h "
        "ON h.h_w_id = w_id WHERE h.paid IS NULL OR w_ytd <> h.paid"),
    9: ("D_YTD = sum(H_AMOUNT)", "districts",
        "SELECT COUNT(*) FROM district LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS paid FROM history "
        "GROUP BY h_w_id, h_d_id) AS h ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE h.paid IS NULL OR d_ytd <> h.paid"),
    10: ("C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)", "districts", _districts(
        f"SELECT c_w_id, c_d_id FROM customer LEFT JOIN ({_DELIVERED}) AS a "
        "ON a.o_w_id = c_w_id AND a.o_d_id = c_d_id AND a.o_c_id = c_id "
        f"LEFT JOIN ({_PAID}) AS h ON h.h_c_w_id = c_w_id AND h.h_c_d_id = c_d_id AND h.h_c_id = c_id "
        "WHERE c_balance <> COALESCE(a.delivered, 0) - COALESCE(h.paid, 0) GROUP BY c_w_id, c_d_id")),
    12: ("C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)", "districts", _districts(
        f"SELECT c_w_id, c_d_id FROM customer LEFT JOIN ({_DELIVERED}) AS a "
        "ON a.o_w_id = c_w_id AND a.o_d_id = c_d_id AND a.o_c_id = c_id "
        "WHERE c_balance + c_ytd_payment <> COALESCE(a.delivered, 0) GROUP BY c_w_id, c_d_id")),
}


@dataclass(frozen=True)
class Condition:
    number: int
    statement: str
    unit: str
    violations: int  # units (warehouses or districts) where it does not hold

    @property
    def holds(self) -> bool:
        return self.violations == 0

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "condition": self.statement, "holds": self.holds,
                "violations": self.violations, "unit": self.unit}


def check(system: Any, conditions: tuple[int, ...] = tuple(CONDITIONS)) -> list[Condition]:
    """Evaluates `conditions` in one read-only transaction through `system`."""
    conn = system.connect()
    try:
        cur = conn.cursor()
        results = []
        for number in conditions:
            statement, unit, sql = CONDITIONS[number]
            cur.execute(sql)
            (violations,), = cur.fetchall()
            results.append(Condition(number, statement, unit, int(violations)))
        conn.commit()
        return results
    finally:
        conn.close()


def verdict(results: list[Condition]) -> dict[str, Any]:
    return {"all_hold": all(r.holds for r in results), "conditions": [r.as_dict() for r in results]}

"""The 22 CH-benCHmark queries (Cole et al., "The mixed workload CH-benCHmark",
DBTest 2011) over the TPC-C tables plus supplier, nation and region.

Written once, as plain SQL that DuckDB, PostgreSQL and MonetDB all run unchanged, and
that tique runs unchanged by reading every tique table at the transaction's snapshot.
The portable spellings:
- the stock-to-supplier join is `mod((s_w_id * s_i_id), 10000) = su_suppkey` and a
  customer's nation is `ascii(substr(c_state, 1, 1))`, as the benchmark defines them;
- dates are TIMESTAMP literals, never strings compared with timestamps;
- GROUP BY and ORDER BY repeat expressions instead of naming SELECT aliases (not every
  engine resolves an output alias inside an expression or in GROUP BY);
- Q8 divides by NULLIF(sum(ol_amount), 0): on a fresh load every delivered order line
  has ol_amount 0 (TPC-C clause 4.3.3.1), and a year whose selected lines are all
  delivered would otherwise divide by zero on engines that raise for it;
- the upper ends of the date windows (2012 in Q4, Q7, Q8; 2020 in Q6, Q12, Q14) lie
  before the dates a TPC-C load writes (the time of the load), which would leave those
  queries nothing to aggregate; they are moved a century on (2112, 2120), keeping
  the predicates and so the work each query does;
- Q15's revenue view is a WITH clause (as in the benchmark's own text), so a query
  needs no DDL.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Query:
    number: int
    sql: str
    # Whether ORDER BY fixes the order of every row (it sorts by a key of the result);
    # otherwise rows tied on the sort keys may come in any order.
    total_order: bool

    @property
    def name(self) -> str:
        return f"Q{self.number}"


_TEXTS: dict[int, tuple[bool, str]] = {
    1: (True, """
SELECT ol_number,
       sum(ol_quantity) AS sum_qty,
       sum(ol_amount) AS sum_amount,
       avg(ol_quantity) AS avg_qty,
       avg(ol_amount) AS avg_amount,
       count(*) AS count_order
FROM order_line
WHERE ol_delivery_d > TIMESTAMP '2007-01-02 00:00:00'
GROUP BY ol_number
ORDER BY ol_number"""),
    2: (False, """
SELECT su_suppkey, su_name, n_name, i_id, i_name, su_address, su_phone, su_comment
FROM item, supplier, stock, nation, region,
     (SELECT s_i_id AS m_i_id, min(s_quantity) AS m_s_quantity
      FROM stock, supplier, nation, region
      WHERE mod((s_w_id * s_i_id), 10000) = su_suppkey
        AND su_nationkey = n_nationkey
        AND n_regionkey = r_regionkey
        AND r_name LIKE 'Europ%'
      GROUP BY s_i_id) m
WHERE i_id = s_i_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND su_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND i_data LIKE '%b'
  AND r_name LIKE 'Europ%'
  AND i_id = m_i_id
  AND s_quantity = m_s_quantity
ORDER BY n_name, su_name, i_id"""),
    3: (False, """
SELECT ol_o_id, ol_w_id, ol_d_id, sum(ol_amount) AS revenue, o_entry_d
FROM customer, new_order, orders, order_line
WHERE c_state LIKE 'A%'
  AND c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND no_w_id = o_w_id
  AND no_d_id = o_d_id
  AND no_o_id = o_id
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND o_entry_d > TIMESTAMP '2007-01-02 00:00:00'
GROUP BY ol_o_id, ol_w_id, ol_d_id, o_entry_d
ORDER BY revenue DESC, o_entry_d"""),
    4: (True, """
SELECT o_ol_cnt, count(*) AS order_count
FROM orders
WHERE o_entry_d >= TIMESTAMP '2007-01-02 00:00:00'
  AND o_entry_d < TIMESTAMP '2112-01-02 00:00:00'
  AND EXISTS (SELECT *
              FROM order_line
              WHERE o_id = ol_o_id
                AND o_w_id = ol_w_id
                AND o_d_id = ol_d_id
                AND ol_delivery_d >= o_entry_d)
GROUP BY o_ol_cnt
ORDER BY o_ol_cnt"""),
    5: (False, """
SELECT n_name, sum(ol_amount) AS revenue
FROM customer, orders, order_line, stock, supplier, nation, region
WHERE c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND ol_o_id = o_id
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_w_id = s_w_id
  AND ol_i_id = s_i_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND ascii(substr(c_state, 1, 1)) = su_nationkey
  AND su_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND r_name = 'Europe'
  AND o_entry_d >= TIMESTAMP '2007-01-02 00:00:00'
GROUP BY n_name
ORDER BY revenue DESC"""),
    6: (True, """
SELECT sum(ol_amount) AS revenue
FROM order_line
WHERE ol_delivery_d >= TIMESTAMP '1999-01-01 00:00:00'
  AND ol_delivery_d < TIMESTAMP '2120-01-01 00:00:00'
  AND ol_quantity BETWEEN 1 AND 100000"""),
    7: (True, """
SELECT su_nationkey AS supp_nation,
       substr(c_state, 1, 1) AS cust_nation,
       extract(YEAR FROM o_entry_d) AS l_year,
       sum(ol_amount) AS revenue
FROM supplier, stock, order_line, orders, customer, nation n1, nation n2
WHERE ol_supply_w_id = s_w_id
  AND ol_i_id = s_i_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND su_nationkey = n1.n_nationkey
  AND ascii(substr(c_state, 1, 1)) = n2.n_nationkey
  AND ((n1.n_name = 'Germany' AND n2.n_name = 'Cambodia')
       OR (n1.n_name = 'Cambodia' AND n2.n_name = 'Germany'))
  AND ol_delivery_d BETWEEN TIMESTAMP '2007-01-02 00:00:00' AND TIMESTAMP '2112-01-02 00:00:00'
GROUP BY su_nationkey, substr(c_state, 1, 1), extract(YEAR FROM o_entry_d)
ORDER BY su_nationkey, substr(c_state, 1, 1), extract(YEAR FROM o_entry_d)"""),
    8: (True, """
SELECT extract(YEAR FROM o_entry_d) AS l_year,
       sum(CASE WHEN n2.n_name = 'Germany' THEN ol_amount ELSE 0 END)
         / NULLIF(sum(ol_amount), 0) AS mkt_share
FROM item, supplier, stock, order_line, orders, customer, nation n1, nation n2, region
WHERE i_id = s_i_id
  AND ol_i_id = s_i_id
  AND ol_supply_w_id = s_w_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND n1.n_nationkey = ascii(substr(c_state, 1, 1))
  AND n1.n_regionkey = r_regionkey
  AND ol_i_id < 1000
  AND r_name = 'Europe'
  AND su_nationkey = n2.n_nationkey
  AND o_entry_d BETWEEN TIMESTAMP '2007-01-02 00:00:00' AND TIMESTAMP '2112-01-02 00:00:00'
  AND i_data LIKE '%b'
  AND i_id = ol_i_id
GROUP BY extract(YEAR FROM o_entry_d)
ORDER BY extract(YEAR FROM o_entry_d)"""),
    9: (True, """
SELECT n_name, extract(YEAR FROM o_entry_d) AS l_year, sum(ol_amount) AS sum_profit
FROM item, stock, supplier, order_line, orders, nation
WHERE ol_i_id = s_i_id
  AND ol_supply_w_id = s_w_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND ol_i_id = i_id
  AND su_nationkey = n_nationkey
  AND i_data LIKE '%BB'
GROUP BY n_name, extract(YEAR FROM o_entry_d)
ORDER BY n_name, extract(YEAR FROM o_entry_d) DESC"""),
    10: (False, """
SELECT c_id, c_last, sum(ol_amount) AS revenue, c_city, c_phone, n_name
FROM customer, orders, order_line, nation
WHERE c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND o_entry_d >= TIMESTAMP '2007-01-02 00:00:00'
  AND o_entry_d <= ol_delivery_d
  AND n_nationkey = ascii(substr(c_state, 1, 1))
GROUP BY c_id, c_last, c_city, c_phone, n_name
ORDER BY revenue DESC"""),
    11: (False, """
SELECT s_i_id, sum(s_order_cnt) AS ordercount
FROM stock, supplier, nation
WHERE mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND su_nationkey = n_nationkey
  AND n_name = 'Germany'
GROUP BY s_i_id
HAVING sum(s_order_cnt) > (SELECT sum(s_order_cnt) * 0.005
                           FROM stock, supplier, nation
                           WHERE mod((s_w_id * s_i_id), 10000) = su_suppkey
                             AND su_nationkey = n_nationkey
                             AND n_name = 'Germany')
ORDER BY ordercount DESC"""),
    12: (True, """
SELECT o_ol_cnt,
       sum(CASE WHEN o_carrier_id = 1 OR o_carrier_id = 2 THEN 1 ELSE 0 END) AS high_line_count,
       sum(CASE WHEN o_carrier_id <> 1 AND o_carrier_id <> 2 THEN 1 ELSE 0 END) AS low_line_count
FROM orders, order_line
WHERE ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
  AND o_entry_d <= ol_delivery_d
  AND ol_delivery_d < TIMESTAMP '2120-01-01 00:00:00'
GROUP BY o_ol_cnt
ORDER BY o_ol_cnt"""),
    13: (True, """
SELECT c_count, count(*) AS custdist
FROM (SELECT c_id, count(o_id) AS c_count
      FROM customer
      LEFT OUTER JOIN orders ON (c_w_id = o_w_id
                                 AND c_d_id = o_d_id
                                 AND c_id = o_c_id
                                 AND o_carrier_id > 8)
      GROUP BY c_id) AS c_orders
GROUP BY c_count
ORDER BY custdist DESC, c_count DESC"""),
    14: (True, """
SELECT 100.00 * sum(CASE WHEN i_data LIKE 'PR%' THEN ol_amount ELSE 0 END) / (1 + sum(ol_amount)) AS promo_revenue
FROM order_line, item
WHERE ol_i_id = i_id
  AND ol_delivery_d >= TIMESTAMP '2007-01-02 00:00:00'
  AND ol_delivery_d < TIMESTAMP '2120-01-02 00:00:00'"""),
    15: (True, """
WITH revenue (supplier_no, total_revenue) AS (
    SELECT mod((s_w_id * s_i_id), 10000), sum(ol_amount)
    FROM order_line, stock
    WHERE ol_i_id = s_i_id
      AND ol_supply_w_id = s_w_id
      AND ol_delivery_d >= TIMESTAMP '2007-01-02 00:00:00'
    GROUP BY mod((s_w_id * s_i_id), 10000))
SELECT su_suppkey, su_name, su_address, su_phone, total_revenue
FROM supplier, revenue
WHERE su_suppkey = supplier_no
  AND total_revenue = (SELECT max(total_revenue) FROM revenue)
ORDER BY su_suppkey"""),
    16: (False, """
SELECT i_name,
       substr(i_data, 1, 3) AS brand,
       i_price,
       count(DISTINCT mod((s_w_id * s_i_id), 10000)) AS supplier_cnt
FROM stock, item
WHERE i_id = s_i_id
  AND i_data NOT LIKE 'zz%'
  AND mod((s_w_id * s_i_id), 10000) NOT IN (SELECT su_suppkey FROM supplier WHERE su_comment LIKE '%bad%')
GROUP BY i_name, substr(i_data, 1, 3), i_price
ORDER BY supplier_cnt DESC"""),
    17: (True, """
SELECT sum(ol_amount) / 2.0 AS avg_yearly
FROM order_line,
     (SELECT i_id, avg(ol_quantity) AS a
      FROM item, order_line
      WHERE i_data LIKE '%b'
        AND ol_i_id = i_id
      GROUP BY i_id) t
WHERE ol_i_id = t.i_id
  AND ol_quantity < t.a"""),
    18: (False, """
SELECT c_last, c_id, o_id, o_entry_d, o_ol_cnt, sum(ol_amount) AS amount_sum
FROM customer, orders, order_line
WHERE c_id = o_c_id
  AND c_w_id = o_w_id
  AND c_d_id = o_d_id
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_o_id = o_id
GROUP BY o_id, o_w_id, o_d_id, c_id, c_last, o_entry_d, o_ol_cnt
HAVING sum(ol_amount) > 200
ORDER BY sum(ol_amount) DESC, o_entry_d"""),
    19: (True, """
SELECT sum(ol_amount) AS revenue
FROM order_line, item
WHERE (ol_i_id = i_id
       AND i_data LIKE '%a'
       AND ol_quantity >= 1
       AND ol_quantity <= 10
       AND i_price BETWEEN 1 AND 400000
       AND ol_w_id IN (1, 2, 3))
   OR (ol_i_id = i_id
       AND i_data LIKE '%b'
       AND ol_quantity >= 1
       AND ol_quantity <= 10
       AND i_price BETWEEN 1 AND 400000
       AND ol_w_id IN (1, 2, 4))
   OR (ol_i_id = i_id
       AND i_data LIKE '%c'
       AND ol_quantity >= 1
       AND ol_quantity <= 10
       AND i_price BETWEEN 1 AND 400000
       AND ol_w_id IN (1, 5, 3))"""),
    20: (True, """
SELECT su_name, su_address
FROM supplier, nation
WHERE su_suppkey IN (SELECT mod(s_i_id * s_w_id, 10000)
                     FROM stock, order_line
                     WHERE s_i_id IN (SELECT i_id FROM item WHERE i_data LIKE 'co%')
                       AND ol_i_id = s_i_id
                       AND ol_delivery_d > TIMESTAMP '2010-05-23 12:00:00'
                     GROUP BY s_i_id, s_w_id, s_quantity
                     HAVING 2 * s_quantity > sum(ol_quantity))
  AND su_nationkey = n_nationkey
  AND n_name = 'Germany'
ORDER BY su_name"""),
    21: (True, """
SELECT su_name, count(*) AS numwait
FROM supplier, order_line l1, orders, stock, nation
WHERE ol_o_id = o_id
  AND ol_w_id = o_w_id
  AND ol_d_id = o_d_id
  AND ol_w_id = s_w_id
  AND ol_i_id = s_i_id
  AND mod((s_w_id * s_i_id), 10000) = su_suppkey
  AND l1.ol_delivery_d > o_entry_d
  AND NOT EXISTS (SELECT *
                  FROM order_line l2
                  WHERE l2.ol_o_id = l1.ol_o_id
                    AND l2.ol_w_id = l1.ol_w_id
                    AND l2.ol_d_id = l1.ol_d_id
                    AND l2.ol_delivery_d > l1.ol_delivery_d)
  AND su_nationkey = n_nationkey
  AND n_name = 'Germany'
GROUP BY su_name
ORDER BY count(*) DESC, su_name"""),
    22: (True, """
SELECT substr(c_state, 1, 1) AS country, count(*) AS numcust, sum(c_balance) AS totacctbal
FROM customer
WHERE substr(c_phone, 1, 1) IN ('1', '2', '3', '4', '5', '6', '7')
  AND c_balance > (SELECT avg(c_balance)
                   FROM customer
                   WHERE c_balance > 0.00
                     AND substr(c_phone, 1, 1) IN ('1', '2', '3', '4', '5', '6', '7'))
  AND NOT EXISTS (SELECT *
                  FROM orders
                  WHERE o_c_id = c_id
                    AND o_w_id = c_w_id
                    AND o_d_id = c_d_id)
GROUP BY substr(c_state, 1, 1)
ORDER BY substr(c_state, 1, 1)"""),
}

QUERIES: tuple[Query, ...] = tuple(Query(n, text.strip(), total) for n, (total, text) in sorted(_TEXTS.items()))


def query(number: int) -> Query:
    return QUERIES[number - 1]

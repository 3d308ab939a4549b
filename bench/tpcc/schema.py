"""The TPC-C schema (TPC-C specification 5.11, clause 1.3), as portable SQL.

Table and column names are the specification's, lower-cased, so that other workloads
over this data (CH-benCHmark's queries) run unchanged. The ORDER table is named
`orders` (ORDER is a reserved word). Types are the portable subset every engine takes:
INTEGER for identifiers and counts, DECIMAL(p, s) for the specification's signed
numerics, VARCHAR(n) for variable text, CHAR(n) for fields that always hold exactly n
characters, TIMESTAMP for dates. Primary keys are the specification's; HISTORY has none
(tique gives such a table a hidden row key).
"""
from __future__ import annotations

# Creation order: referenced tables first (there are no FOREIGN KEY clauses, which not
# every engine enforces the same way, but the order keeps a reader's picture simple).
TABLES: dict[str, str] = {
    "warehouse": """CREATE TABLE warehouse (
    w_id INTEGER NOT NULL,
    w_name VARCHAR(10),
    w_street_1 VARCHAR(20),
    w_street_2 VARCHAR(20),
    w_city VARCHAR(20),
    w_state CHAR(2),
    w_zip CHAR(9),
    w_tax DECIMAL(4, 4),
    w_ytd DECIMAL(12, 2),
    PRIMARY KEY (w_id)
)""",
    "district": """CREATE TABLE district (
    d_id INTEGER NOT NULL,
    d_w_id INTEGER NOT NULL,
    d_name VARCHAR(10),
    d_street_1 VARCHAR(20),
    d_street_2 VARCHAR(20),
    d_city VARCHAR(20),
    d_state CHAR(2),
    d_zip CHAR(9),
    d_tax DECIMAL(4, 4),
    d_ytd DECIMAL(12, 2),
    d_next_o_id INTEGER,
    PRIMARY KEY (d_w_id, d_id)
)""",
    "customer": """CREATE TABLE customer (
    c_id INTEGER NOT NULL,
    c_d_id INTEGER NOT NULL,
    c_w_id INTEGER NOT NULL,
    c_first VARCHAR(16),
    c_middle CHAR(2),
    c_last VARCHAR(16),
    c_street_1 VARCHAR(20),
    c_street_2 VARCHAR(20),
    c_city VARCHAR(20),
    c_state CHAR(2),
    c_zip CHAR(9),
    c_phone CHAR(16),
    c_since TIMESTAMP,
    c_credit CHAR(2),
    c_credit_lim DECIMAL(12, 2),
    c_discount DECIMAL(4, 4),
    c_balance DECIMAL(12, 2),
    c_ytd_payment DECIMAL(12, 2),
    c_payment_cnt INTEGER,
    c_delivery_cnt INTEGER,
    c_data VARCHAR(500),
    PRIMARY KEY (c_w_id, c_d_id, c_id)
)""",
    "history": """CREATE TABLE history (
    h_c_id INTEGER,
    h_c_d_id INTEGER,
    h_c_w_id INTEGER,
    h_d_id INTEGER,
    h_w_id INTEGER,
    h_date TIMESTAMP,
    h_amount DECIMAL(6, 2),
    h_data VARCHAR(24)
)""",
    "new_order": """CREATE TABLE new_order (
    no_o_id INTEGER NOT NULL,
    no_d_id INTEGER NOT NULL,
    no_w_id INTEGER NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id)
)""",
    "orders": """CREATE TABLE orders (
    o_id INTEGER NOT NULL,
    o_d_id INTEGER NOT NULL,
    o_w_id INTEGER NOT NULL,
    o_c_id INTEGER,
    o_entry_d TIMESTAMP,
    o_carrier_id INTEGER,
    o_ol_cnt INTEGER,
    o_all_local INTEGER,
    PRIMARY KEY (o_w_id, o_d_id, o_id)
)""",
    "order_line": """CREATE TABLE order_line (
    ol_o_id INTEGER NOT NULL,
    ol_d_id INTEGER NOT NULL,
    ol_w_id INTEGER NOT NULL,
    ol_number INTEGER NOT NULL,
    ol_i_id INTEGER,
    ol_supply_w_id INTEGER,
    ol_delivery_d TIMESTAMP,
    ol_quantity INTEGER,
    ol_amount DECIMAL(6, 2),
    ol_dist_info CHAR(24),
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
)""",
    "item": """CREATE TABLE item (
    i_id INTEGER NOT NULL,
    i_im_id INTEGER,
    i_name VARCHAR(24),
    i_price DECIMAL(5, 2),
    i_data VARCHAR(50),
    PRIMARY KEY (i_id)
)""",
    "stock": """CREATE TABLE stock (
    s_i_id INTEGER NOT NULL,
    s_w_id INTEGER NOT NULL,
    s_quantity INTEGER,
    s_dist_01 CHAR(24),
    s_dist_02 CHAR(24),
    s_dist_03 CHAR(24),
    s_dist_04 CHAR(24),
    s_dist_05 CHAR(24),
    s_dist_06 CHAR(24),
    s_dist_07 CHAR(24),
    s_dist_08 CHAR(24),
    s_dist_09 CHAR(24),
    s_dist_10 CHAR(24),
    s_ytd INTEGER,
    s_order_cnt INTEGER,
    s_remote_cnt INTEGER,
    s_data VARCHAR(50),
    PRIMARY KEY (s_w_id, s_i_id)
)""",
}

TABLE_NAMES: tuple[str, ...] = tuple(TABLES)

# Column names of each table in CREATE TABLE order (the loader's column arrays follow it).
COLUMNS: dict[str, tuple[str, ...]] = {
    name: tuple(line.strip().split()[0] for line in sql.splitlines()[1:]
                if line.strip() and not line.strip().startswith(("PRIMARY", ")")))
    for name, sql in TABLES.items()
}

# Records that a database holds a complete TPC-C load and at which scale (see
# loader.existing_load): written last by the loader, so a partial load has none.
# c_last_load is the NURand constant C the load used for C_LAST; a run's C must differ
# from it as clause 2.1.6.1 requires.
MARKER_TABLE = "tpcc_loaded"
MARKER_SQL = f"""CREATE TABLE {MARKER_TABLE} (
    warehouses INTEGER NOT NULL,
    items INTEGER NOT NULL,
    customers INTEGER NOT NULL,
    orders INTEGER NOT NULL,
    c_last_load INTEGER NOT NULL,
    PRIMARY KEY (warehouses)
)"""


def create_statements() -> list[str]:
    return list(TABLES.values())

"""executemany of a one-row INSERT ... VALUES: the rows go out as one many-row insert per
batch, with native semantics (rowcount, key and NOT NULL errors raised from the call with
nothing of it written, the transaction's own writes readable afterwards). Behaviour and
round trips are asserted here; speed is `tique bench executemany`'s business."""
from __future__ import annotations

from typing import Callable

import pytest

import tique
import tique.planner
from sqlhelp import rows, run

Connect = Callable[..., tique.Connection]
INSERT = "INSERT INTO items (id, grp, note) VALUES (?, ?, ?)"


def setup(conn: tique.Connection) -> None:
    run(conn, "CREATE TABLE items (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, note VARCHAR(40))")
    run(conn, "INSERT INTO items VALUES (1, 0, 'committed')")
    conn.commit()


def values(first: int, count: int) -> list[tuple]:
    return [(i, i % 7, f"row {i}") for i in range(first, first + count)]


def count(conn: tique.Connection) -> int:
    return rows(conn, "SELECT count(*) FROM items")[0][0]


def test_rows_rowcount_and_own_writes(connect: Connect) -> None:
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    cur.executemany(INSERT, values(2, 1000))
    assert cur.rowcount == 1000
    assert count(conn) == 1001  # its own writes, before commit
    assert rows(conn, "SELECT grp, note FROM items WHERE id = 777") == [(777 % 7, "row 777")]
    assert count(connect()) == 1  # nobody else sees them yet
    conn.commit()
    assert count(connect()) == 1001
    assert rows(connect(), "SELECT sum(id) FROM items")[0][0] == sum(range(1, 1002))


def test_a_thousand_rows_cost_a_few_round_trips(connect: Connect) -> None:
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    cur.executemany(INSERT, values(2, 2))  # the first write also opens the engine transaction
    start = conn.counters
    cur.executemany(INSERT, values(10, 1000))
    cost = conn.counters - start
    assert cost.round_trips <= 4  # one insert and one key check per batch; not one per row
    assert cost.engine_commits == 0
    conn.commit()
    assert count(connect()) == 1003


def test_rows_over_several_batches(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tique.planner, "BATCH_ROWS", 64)
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    cur.executemany(INSERT, values(2, 300))  # 4 full batches and a short one
    assert cur.rowcount == 300
    conn.commit()
    assert rows(connect(), "SELECT count(*), min(id), max(id) FROM items") == [(301, 1, 301)]


@pytest.mark.parametrize("duplicate", ["in the call", "committed", "own write", "in an earlier batch"])
def test_a_duplicate_key_fails_the_call_and_writes_nothing(connect: Connect, monkeypatch: pytest.MonkeyPatch, duplicate: str) -> None:
    monkeypatch.setattr(tique.planner, "BATCH_ROWS", 64)
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    run(conn, "INSERT INTO items VALUES (5000, 1, 'own')")
    batch = values(10, 50)
    if duplicate == "in the call":
        batch.append((20, 1, "again"))
    elif duplicate == "committed":
        batch.append((1, 1, "again"))
    elif duplicate == "own write":
        batch.append((5000, 1, "again"))
    else:
        batch = values(10, 200) + [(15, 1, "again")]  # batch 4 repeats a key of batch 1
    with pytest.raises(tique.IntegrityError, match="duplicate primary key"):
        cur.executemany(INSERT, batch)
    # As natively, the failed statement aborted the transaction: nothing of it is left.
    assert conn.transaction_failed
    conn.rollback()
    assert rows(conn, "SELECT id FROM items ORDER BY id") == [(1,)]


def test_null_in_a_not_null_column(connect: Connect) -> None:
    conn = connect()
    setup(conn)
    with pytest.raises(tique.IntegrityError):
        conn.cursor().executemany(INSERT, values(2, 10) + [(99, None, "no group")])
    conn.rollback()
    assert count(conn) == 1


def test_autocommit_makes_the_call_one_transaction(connect: Connect) -> None:
    conn = connect(autocommit=True)
    setup(conn)
    cur = conn.cursor()
    with pytest.raises(tique.IntegrityError):
        cur.executemany(INSERT, values(2, 10) + [(3, 1, "again")])
    assert not conn.transaction_failed and not conn.in_transaction
    assert count(conn) == 1
    cur.executemany(INSERT, values(2, 10))
    assert cur.rowcount == 10
    assert count(connect()) == 11


def test_a_row_with_a_wrong_number_of_values_stops_the_call_there(connect: Connect) -> None:
    """As a loop of executes: the rows before it are written, it raises execute's
    client-side error, and the transaction stays open."""
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    with pytest.raises(tique.ProgrammingError, match="3 parameter marker"):
        cur.executemany(INSERT, values(2, 100) + [(200, 1)] + values(300, 5))
    assert not conn.transaction_failed
    conn.commit()
    assert rows(connect(), "SELECT count(*), max(id) FROM items") == [(101, 101)]


def test_expressions_in_the_row_and_other_statements(connect: Connect) -> None:
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    cur.executemany("INSERT INTO items (id, grp, note) VALUES (? + 100, ? * 2, upper(?))", [(1, 1, "a"), (2, 2, "b")])
    assert cur.rowcount == 2
    cur.executemany("UPDATE items SET note = ? WHERE id = ?", [("x", 101), ("y", 102), ("z", 9999)])
    assert cur.rowcount == 2  # runs per row; the counts add up
    cur.executemany(INSERT, [])
    assert cur.rowcount == 0
    conn.commit()
    assert rows(connect(), "SELECT id, grp, note FROM items WHERE id > 100 ORDER BY id") == [(101, 2, "x"), (102, 4, "y")]


def test_buffered_writes_send_the_batches_at_commit(connect: Connect) -> None:
    conn = connect(buffered_writes=True)
    setup(conn)
    cur = conn.cursor()
    cur.executemany(INSERT, values(2, 500))
    conn.commit()
    assert count(connect()) == 501
    cur.executemany(INSERT, values(600, 10) + [(2, 1, "again")])
    with pytest.raises(tique.IntegrityError, match="duplicate primary key"):
        conn.commit()  # buffered: key violations surface at commit
    assert count(connect()) == 501


def test_many_rows_land_as_the_same_rows_one_by_one_would(connect: Connect) -> None:
    """Many rows may travel differently (DuckDB: one list per parameter); what lands is
    what single-row inserts of the same values give, type by type, NULLs included."""
    import datetime
    import decimal

    conn = connect()
    for name in ("many", "single"):
        run(conn, f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, n BIGINT, d DECIMAL(10, 2), day DATE, ok BOOLEAN, "
                  f"txt VARCHAR(20), f DOUBLE, tag VARCHAR(10) DEFAULT 'dflt')")
    conn.commit()
    data = [(i, None if i % 5 == 0 else i * 10_000_000_000, decimal.Decimal(i) / 4, datetime.date(2024, 1, 1 + i % 28),
             None if i % 3 == 0 else i % 2 == 0, None if i % 4 == 0 else f"text {i}", i / 3) for i in range(40)]
    columns = "(id, n, d, day, ok, txt, f)"
    cur = conn.cursor()
    cur.executemany(f"INSERT INTO many {columns} VALUES (?, ?, ?, ?, ?, ?, ?)", data)
    assert cur.rowcount == 40
    for row in data:
        cur.execute(f"INSERT INTO single {columns} VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    conn.commit()
    many = rows(conn, "SELECT * FROM many ORDER BY id")
    assert many == rows(conn, "SELECT * FROM single ORDER BY id")
    assert len(many) == 40 and many[1][7] == "dflt"


def test_many_rows_with_expressions(connect: Connect) -> None:
    conn = connect()
    setup(conn)
    cur = conn.cursor()
    cur.executemany("INSERT INTO items (note, id, grp) VALUES (upper(?), ? + 100, ? * 2)", [(f"n{i}", i, i) for i in range(1, 41)])
    assert cur.rowcount == 40
    assert rows(conn, "SELECT id, grp, note FROM items WHERE id IN (101, 140) ORDER BY id") == [(101, 2, "N1"), (140, 80, "N40")]


def test_batches_keep_unique_and_check_constraints(connect: Connect) -> None:
    """A batch is one insert, but every row of it is held to the table's UNIQUE and CHECK
    constraints, within the batch and against what is already there, as row by row."""
    conn = connect()
    run(conn, "CREATE TABLE tagged (id INTEGER PRIMARY KEY, tag INTEGER UNIQUE, qty INTEGER CHECK (qty >= 0))")
    conn.commit()
    cur = conn.cursor()
    cur.executemany("INSERT INTO tagged VALUES (?, ?, ?)", [(i, i, i) for i in range(1, 101)])
    conn.commit()
    for bad in ([(200 + i, 1000 + i % 50, 1) for i in range(100)],      # a tag repeated within the batch
                [(300 + i, 1000 + i if i != 70 else 5, 1) for i in range(100)],  # a committed tag
                [(400 + i, 2000 + i, -1 if i == 99 else 1) for i in range(100)]):  # a CHECK broken by the last row
        with pytest.raises(tique.IntegrityError):
            cur.executemany("INSERT INTO tagged VALUES (?, ?, ?)", bad)
        conn.rollback()
        assert rows(conn, "SELECT count(*) FROM tagged") == [(100,)]

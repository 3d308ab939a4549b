"""Adopting a native table keeps each column's declared size: CHAR(n), VARCHAR(n) and
DECIMAL(p, s) (PostgreSQL's information_schema names them without it, and a bare
"character" is CHAR(1), which no two-letter value fits)."""
from __future__ import annotations

from decimal import Decimal
from typing import Callable

import pytest

import tique
from tique.adopt import adopt


def test_adopt_keeps_sized_types(url: str, connect: Callable[..., tique.Connection]) -> None:
    setup = connect(static_tables=["sized"])
    cur = setup.cursor()
    cur.execute("CREATE TABLE sized (k INTEGER PRIMARY KEY, state CHAR(2), name VARCHAR(10), amount DECIMAL(12, 2))")
    cur.executemany("INSERT INTO sized VALUES (?, ?, ?, ?)",
                    [(i, f"A{i}", f"name{i}", Decimal("1234567.89") + i) for i in range(1, 6)])
    setup.commit()
    admin = connect(autocommit=True)
    assert adopt(admin, ["sized"]) == {"sized": 5}

    conn = connect()
    c = conn.cursor()
    c.execute("SELECT k, state, name, amount FROM sized ORDER BY k")
    assert [(k, s.strip(), n, Decimal(a)) for k, s, n, a in c.fetchall()] == [
        (i, f"A{i}", f"name{i}", Decimal("1234567.89") + i) for i in range(1, 6)]
    c.execute("UPDATE sized SET state = 'ZZ', amount = amount + 0.01 WHERE k = 1")
    conn.commit()
    c.execute("SELECT state, amount FROM sized WHERE k = 1")
    state, amount = c.fetchone()
    assert (state.strip(), Decimal(amount)) == ("ZZ", Decimal("1234568.90"))
    conn.commit()
    if conn.backend.dialect == "postgres":  # the size is enforced, as on the native table
        with pytest.raises(tique.Error):
            c.execute("UPDATE sized SET name = 'much too long for ten' WHERE k = 2")

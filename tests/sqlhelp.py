"""Small helpers the tests share: run a statement for its rowcount, or for its rows."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tique

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]


def run(conn: tique.Connection, sql: str, params: Sequence[Any] = ()) -> int:
    """Executes a statement; returns its rowcount."""
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.rowcount


def rows(conn: tique.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall()

"""Runs list-append transactions as an application would, on any system under test.

Each list is one row of an ordinary table, its elements a comma-separated string
(MonetDB has no arrays, and a string works the same everywhere). An append is an
UPDATE that concatenates; when no row was updated the key is new and the row is
INSERTed, so two transactions creating the same key conflict on the primary key
(an engine's unique violation, or tique's certification). A read is a point SELECT.
"""
from __future__ import annotations

from typing import Any, Sequence

from elle.history import Mop

TABLE = "elle_lists"
CREATE_TABLE = f"CREATE TABLE {TABLE} (k INTEGER PRIMARY KEY, vals TEXT NOT NULL)"
APPEND = f"UPDATE {TABLE} SET vals = vals || ? WHERE k = ?"
INSERT = f"INSERT INTO {TABLE} (k, vals) VALUES (?, ?)"
READ = f"SELECT vals FROM {TABLE} WHERE k = ?"
READ_ALL = f"SELECT k, vals FROM {TABLE}"


class ClientError(RuntimeError):
    """The system answered in a way no correct SQL engine would (not an anomaly the
    checker should judge, but a broken client contract, e.g. an unknown row count)."""


def parse_list(text: str | None) -> tuple[int, ...]:
    if text is None or text == "":
        return ()
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ClientError(f"list value {text[:80]!r} is not comma-separated integers") from None


def create_table(system: Any) -> None:
    system.execute_script([CREATE_TABLE])


class ListAppendClient:
    """One client session: a DB-API connection (taking `?` markers) and its cursor."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.cur = conn.cursor()

    def _append(self, key: int, value: int) -> None:
        self.cur.execute(APPEND, (f",{value}", key))
        count = self.cur.rowcount
        if count == 0:
            self.cur.execute(INSERT, (key, str(value)))
        elif count != 1:
            raise ClientError(f"{APPEND!r} for key {key} reported {count} updated rows; expected 0 or 1")

    def _read(self, key: int) -> tuple[int, ...]:
        self.cur.execute(READ, (key,))
        rows = self.cur.fetchall()
        if len(rows) > 1:
            raise ClientError(f"{READ!r} for key {key} returned {len(rows)} rows from a primary key lookup")
        return parse_list(rows[0][0]) if rows else ()

    def apply(self, txn: Sequence[Mop]) -> tuple[Mop, ...]:
        """Runs the transaction's statements (not its commit); returns it with reads filled in."""
        done: list[Mop] = []
        for f, key, value in txn:
            if f == "append":
                self._append(key, value)
                done.append((f, key, value))
            elif f == "r":
                done.append((f, key, self._read(key)))
            else:
                raise ClientError(f"unknown micro-op {f!r}")
        return tuple(done)

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def read_all(self) -> dict[int, tuple[int, ...]]:
        """Every list, in one statement (one snapshot), then commit."""
        self.cur.execute(READ_ALL)
        lists = {int(k): parse_list(vals) for k, vals in self.cur.fetchall()}
        self.conn.commit()
        return lists

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # a connection to a server that died cannot close cleanly
            pass

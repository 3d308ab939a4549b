"""PostgreSQL oracle: sequences, one clock row and advisory locks, all server-side
(sql/postgres/metadata.sql), so many client processes share it and waits block
inside the server instead of polling."""
from __future__ import annotations

from typing import Any


class PostgresOracle:
    def __init__(self, run: Any) -> None:
        self._run = run  # (raw, sql, params) -> rows

    def begin(self, raw: Any) -> tuple[int, int]:
        (row,) = self._run(raw, "SELECT o_txid, o_sts FROM tq_begin()", [])
        return int(row[0]), int(row[1])

    def end(self, raw: Any, txid: int) -> None:
        self._run(raw, "SELECT tq_end($1)", [txid])

    def take_commit_timestamp(self, raw: Any, txid: int, timeout: float) -> int:
        (row,) = self._run(raw, "SELECT tq_take_cts($1)", [txid])
        return int(row[0])

    def decide(self, raw: Any, cts: int) -> bool:
        return True  # the outcome table's key on cts arbitrates

    def publish(self, raw: Any, txid: int, cts: int, timeout: float) -> None:
        self._run(raw, "SELECT tq_publish($1, $2, $3)", [txid, cts, max(1, int(timeout * 1000))])

    def stable_timestamp(self, raw: Any) -> int:
        (row,) = self._run(raw, "SELECT o_stable FROM tq_stable()", [])
        return int(row[0])

    def recover(self, raw: Any, force: bool) -> bool:
        (row,) = self._run(raw, "SELECT tq_recover($1)", [force])
        return bool(row[0])

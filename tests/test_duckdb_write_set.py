"""DuckDB logs a write-set row per cached version (no DISTINCT, see
DuckDBBackend.distinct_write_set): certification still finds every overlap, however
often either transaction wrote the key."""
from __future__ import annotations

from pathlib import Path

import pytest

import tique
from sqlhelp import rows, run


def _two_writers(url: str) -> tuple[tique.Connection, tique.Connection, tique.Connection]:
    """An admin connection over two accounts at 0, and two writers."""
    admin = tique.connect(url)
    run(admin, "CREATE TABLE acct (id INTEGER PRIMARY KEY, n INTEGER)")
    run(admin, "INSERT INTO acct VALUES (1, 0), (2, 0)")
    admin.commit()
    first, second = tique.connect(url), tique.connect(url)
    return admin, first, second


def test_keys_written_twice_still_conflict_first_committer_wins(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path}/ws.db"
    admin, first, second = _two_writers(url)
    for conn in (first, second):
        assert rows(conn, "SELECT n FROM acct WHERE id = 1") == [(0,)]  # both begin before either commits
    for _ in range(2):  # each writes key 1 twice: two cached versions, two write-set rows
        run(first, "UPDATE acct SET n = n + 1 WHERE id = 1")
        run(second, "UPDATE acct SET n = n + 10 WHERE id = 1")
    run(second, "UPDATE acct SET n = n + 10 WHERE id = 2")
    first.commit()
    with pytest.raises(tique.SerializationFailure):
        second.commit()
    assert rows(admin, "SELECT id, n FROM acct ORDER BY id") == [(1, 2), (2, 0)]
    admin.commit()
    raw = admin.backend.open()
    try:
        hashes = admin.backend.rows(raw, "SELECT key_hash, count(*) FROM tq_write_sets GROUP BY txid, key_hash ORDER BY 2", [])
    finally:
        admin.backend.close_raw(raw)
    assert [n for _, n in hashes][-1] >= 2  # a key written twice by one transaction is logged per version


def test_a_disjoint_writer_of_the_same_table_commits(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path}/ws2.db"
    admin, first, second = _two_writers(url)
    for conn in (first, second):
        rows(conn, "SELECT n FROM acct WHERE id = 1")
    run(first, "UPDATE acct SET n = n + 1 WHERE id = 1")
    run(first, "UPDATE acct SET n = n + 1 WHERE id = 1")
    run(second, "UPDATE acct SET n = n + 5 WHERE id = 2")
    run(second, "UPDATE acct SET n = n + 5 WHERE id = 2")
    first.commit()
    second.commit()
    assert rows(admin, "SELECT id, n FROM acct ORDER BY id") == [(1, 2), (2, 10)]
    admin.commit()

"""DuckDB's scan snapshot (sql/duckdb/snapshot_scan.sql) anti-joins storage with the
visible cache keys: a scan sees each key's newest visible version exactly once, storage
rows only for keys without one, and neither uncommitted nor later commits of others."""
from __future__ import annotations

from pathlib import Path
import tique
from sqlhelp import rows, run
from test_cache_state import sent
from tique.checkpoint import checkpoint


def test_scans_read_each_keys_newest_visible_version_once(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path}/scan.db"
    admin = tique.connect(url)
    run(admin, "CREATE TABLE n (w INTEGER, d INTEGER, o INTEGER, v INTEGER, PRIMARY KEY (w, d, o))")
    admin.cursor().executemany("INSERT INTO n VALUES (?, ?, ?, ?)", [(1, d, o, 0) for d in (1, 2) for o in range(1, 6)])
    admin.commit()
    checkpoint(admin)  # the rows are in storage
    run(admin, "UPDATE n SET v = 1 WHERE w = 1 AND d = 1 AND o = 2")
    run(admin, "DELETE FROM n WHERE w = 1 AND d = 1 AND o = 1")
    run(admin, "INSERT INTO n VALUES (1, 1, 9, 9)")
    admin.commit()  # cache versions: updated, deleted and new keys

    reader, writer = tique.connect(url), tique.connect(url)
    with sent(reader) as texts:
        before = rows(reader, "SELECT o, v FROM n WHERE w = ? AND d = ? ORDER BY o", [1, 1])
        run(writer, "UPDATE n SET v = 7 WHERE w = 1 AND d = 1 AND o = 3")
        run(writer, "DELETE FROM n WHERE w = 1 AND d = 1 AND o = 4")
        writer.commit()  # after the reader's snapshot: invisible to it
        again = rows(reader, "SELECT o, v FROM n WHERE w = ? AND d = ? ORDER BY o", [1, 1])
        run(reader, "UPDATE n SET v = 5 WHERE w = 1 AND d = 1 AND o = 5")  # its own write: visible to it
        own = rows(reader, "SELECT MIN(o), COUNT(*), SUM(v) FROM n WHERE w = ? AND d = ?", [1, 1])
    reader.rollback()
    assert before == again == [(2, 1), (3, 0), (4, 0), (5, 0), (9, 9)]
    assert own == [(2, 5, 15)]
    assert any("ANTI JOIN" in t.upper() for t in texts)
    assert rows(reader, "SELECT o, v FROM n WHERE w = ? AND d = ? ORDER BY o", [1, 1]) == [(2, 1), (3, 7), (5, 0), (9, 9)]
    assert rows(reader, "SELECT COUNT(*) FROM n WHERE d = ?", [2]) == [(5,)]
    reader.commit()

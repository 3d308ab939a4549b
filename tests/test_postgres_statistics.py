"""PostgreSQL plans tique's snapshots by table statistics: a table it never analyzed is
estimated at one row per filter, and a cache table is then probed by its key's leading
columns only, once per storage row (tique/backends/postgres.py, refresh_statistics).
tique analyzes what it bulk-fills (adopt) and the caches it checkpoints."""
from __future__ import annotations

from typing import Callable

import psycopg
import pytest

import tique
from tique.adopt import adopt
from tique.checkpoint import checkpoint


def _reltuples(url: str, table: str) -> float:
    with psycopg.connect(url, autocommit=True) as raw:
        row = raw.execute("SELECT reltuples FROM pg_class WHERE relname = %s", (table,)).fetchone()
    assert row is not None
    return float(row[0])


@pytest.mark.parametrize("engine", ["postgres"])
def test_adopted_storage_and_checkpointed_caches_have_statistics(url: str, connect: Callable[..., tique.Connection]) -> None:
    with psycopg.connect(url, autocommit=True) as native:
        native.execute("CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_price INTEGER)")
        native.execute("INSERT INTO item SELECT g, g % 100 FROM generate_series(1, 2000) AS g")
    admin = connect(autocommit=True)
    assert adopt(admin, ["item"]) == {"item": 2000}
    assert _reltuples(url, "item_storage") == 2000  # analyzed: -1 means never

    assert _reltuples(url, "item_cache") < 0  # a new cache: never analyzed yet
    cur = admin.cursor()
    cur.execute("UPDATE item SET i_price = i_price + 1 WHERE i_id <= 300")
    checkpoint(admin)
    # Analyzed before the round moved the versions to storage and purged them: the
    # cache as readers met it.
    assert _reltuples(url, "item_cache") == 300

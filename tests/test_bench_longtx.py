"""The long-transaction benchmark at tiny scale: it runs, and with priority mode a long
transaction that commits aborted at most once before it did."""
from __future__ import annotations

from pathlib import Path

from bench import longtx
from drivers import open_system


def test_priority_mode_bounds_the_aborts_of_a_long_transaction(tmp_path: Path) -> None:
    system = open_system("tique-duckdb", workdir=tmp_path)
    try:
        longtx.load(system, rows=50)  # few rows: the short clients collide with the long one
        result = longtx.run(system, clients=3, seconds=6, priority=True, rows=50, regular_ops=4, long_ops=40)
    finally:
        system.close()
    assert result.priority
    assert result.regular.commits > 0
    assert result.long.commits >= 1
    assert result.long.most_aborts <= 1
    assert result.metrics()["txs"] > 0


def test_native_systems_run_without_priority(tmp_path: Path) -> None:
    system = open_system("native-duckdb", workdir=tmp_path)
    try:
        longtx.load(system, rows=50)
        result = longtx.run(system, clients=2, seconds=3, priority=True, rows=50, regular_ops=4, long_ops=20)
    finally:
        system.close()
    assert not result.priority  # priority mode is tique's; a native system ignores it
    assert result.regular.commits + result.long.commits > 0

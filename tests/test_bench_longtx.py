"""The long-transaction benchmark at tiny scale: it runs, and with priority mode a long
transaction that commits aborted at most once before it did."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import longtx
from drivers import open_system
from progress import until_progress


def test_priority_mode_bounds_the_aborts_of_a_long_transaction(tmp_path: Path) -> None:
    system = open_system("tique-duckdb", workdir=tmp_path)
    try:
        longtx.load(system, rows=50)  # few rows: the short clients collide with the long one
        result = until_progress(
            lambda seconds: longtx.run(system, clients=3, seconds=seconds, priority=True, rows=50, regular_ops=4, long_ops=40),
            lambda r: r.regular.commits > 0 and r.long.commits >= 1, seconds=6.0)
    finally:
        system.close()
    assert result.priority
    assert result.regular.commits > 0
    assert result.long.commits >= 1
    # At most once, except when a writer of its keys already held a commit timestamp as the
    # reservation was made (reserve() explains the window): never more than twice here.
    assert result.long.most_aborts <= 2
    assert result.metrics()["txs"] > 0


def test_native_systems_run_without_priority(tmp_path: Path) -> None:
    system = open_system("native-duckdb", workdir=tmp_path)
    try:
        longtx.load(system, rows=50)
        result = until_progress(
            lambda seconds: longtx.run(system, clients=2, seconds=seconds, priority=True, rows=50, regular_ops=4, long_ops=20),
            lambda r: r.regular.commits + r.long.commits > 0, seconds=3.0)
    finally:
        system.close()
    assert not result.priority  # priority mode is tique's; a native system ignores it
    assert result.regular.commits + result.long.commits > 0


def test_longtx_and_contention_commands_on_postgres(pg_cluster: Any, tmp_path: Path) -> None:
    """The long-transaction and contention commands, native and through tique, on PostgreSQL."""
    from tique.cli import main

    for name in ("native-postgres", "tique-postgres"):
        url = pg_cluster.create_database(f"cmd_{name.replace('-', '_')}")
        out = tmp_path / f"longtx-{name}.json"

        def longtx_command(seconds: float, url: str = url, out: Path = out, name: str = name) -> list[dict]:
            assert main(["bench", "longtx", "--system", name, "--url", url, "--clients", "2", "--duration", str(seconds),
                         "--rows", "50", "--regular-ops", "4", "--long-ops", "20", "--out", str(out)]) == 0
            return json.loads(out.read_text())["runs"]

        runs = until_progress(longtx_command, lambda runs: all(r["metrics"]["regular_commits"] + r["metrics"]["long_commits"] > 0 for r in runs),
                              seconds=2.0)
        assert [r["parameters"]["priority"] for r in runs] == ([False, True] if name.startswith("tique") else [False])
        assert all(r["metrics"]["regular_commits"] + r["metrics"]["long_commits"] > 0 for r in runs)
        curl = pg_cluster.create_database(f"cont_{name.replace('-', '_')}")
        out = tmp_path / f"contention-{name}.json"
        assert main(["bench", "contention", "--system", name, "--url", curl, "--warehouses", "2", "--clients", "2",
                     "--ks", "2", "1", "--duration", "2", "--warmup", "1", "--tiny", "--out", str(out)]) == 0  # 0: consistent
        runs = json.loads(out.read_text())["runs"]
        assert [r["parameters"]["contention"] for r in runs] == [2, 1]

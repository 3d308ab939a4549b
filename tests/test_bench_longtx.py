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
        assert {r["parameters"]["isolation"] for r in runs} == ({"SNAPSHOT"} if name.startswith("tique") else {"engine's own REPEATABLE READ"})
        assert all(r["metrics"]["regular_commits"] + r["metrics"]["long_commits"] > 0 for r in runs)
        curl = pg_cluster.create_database(f"cont_{name.replace('-', '_')}")
        out = tmp_path / f"contention-{name}.json"
        assert main(["bench", "contention", "--system", name, "--url", curl, "--warehouses", "2", "--clients", "2",
                     "--ks", "2", "1", "--duration", "2", "--warmup", "1", "--tiny", "--out", str(out)]) == 0  # 0: consistent
        runs = json.loads(out.read_text())["runs"]
        assert [r["parameters"]["contention"] for r in runs] == [2, 1]


def test_longtx_records_its_isolation_level(tmp_path: Path, capsys: Any) -> None:
    """`--isolation` reaches every client and the JSON; priority re-executions are their
    own figure, not attempts (the abort rate is the aborts the clients saw)."""
    from tique.cli import main

    out = tmp_path / "longtx.json"

    def command(seconds: float) -> list[dict]:
        assert main(["bench", "longtx", "--system", "tique-duckdb", "--url", f"duckdb:///{tmp_path}/l.db", "--clients", "3",
                     "--duration", str(seconds), "--rows", "50", "--regular-ops", "4", "--long-ops", "20",
                     "--isolation", "serializable", "--out", str(out)]) == 0
        return json.loads(out.read_text())["runs"]

    runs = until_progress(command, lambda runs: all(r["metrics"]["regular_commits"] > 0 for r in runs), seconds=2.0)
    assert [r["parameters"]["isolation"] for r in runs] == ["SERIALIZABLE", "SERIALIZABLE"]
    for r in runs:
        m = r["metrics"]
        assert m["priority_retries"] == m["regular_priority_retries"] + m["long_priority_retries"]
        if not r["parameters"]["priority"]:
            assert m["priority_retries"] == 0
    assert "tique-duckdb at serializable" in capsys.readouterr().out
    assert main(["bench", "longtx", "--system", "native-duckdb", "--clients", "2", "--duration", "1",
                 "--isolation", "serializable"]) == 1
    assert "native-duckdb has no SERIALIZABLE level of its own" in capsys.readouterr().err


def test_serializable_reaches_the_longtx_clients(tmp_path: Path) -> None:
    """At SERIALIZABLE a client's reads are certified: run() hands the level to tique."""
    system = open_system("tique-duckdb", workdir=tmp_path)
    try:
        longtx.load(system, rows=50)
        result = until_progress(
            lambda seconds: longtx.run(system, clients=2, seconds=seconds, priority=False, rows=50, regular_ops=4,
                                       long_ops=20, isolation="serializable"),
            lambda r: r.regular.commits > 0, seconds=2.0)
    finally:
        system.close()
    assert result.isolation == "SERIALIZABLE" and result.metrics()["priority_retries"] == 0

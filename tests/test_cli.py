"""The `tique` command: adopt, checkpoint, overhead and the demo, run for real."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

import pytest

import tique
from tique.cli import build_parser, main


def test_adopt_keeps_every_row(url: str, connect: Callable[..., tique.Connection], native: Callable[[str], list[tuple]]) -> None:
    conn = connect(static_tables=["keyed", "loose"])
    cur = conn.cursor()
    cur.execute("CREATE TABLE keyed (a INTEGER, b INTEGER, note VARCHAR, PRIMARY KEY (a, b))")
    cur.execute("CREATE TABLE loose (x INTEGER, y VARCHAR)")
    cur.executemany("INSERT INTO keyed VALUES (?, ?, ?)", [(i, i % 3, f"n{i}") for i in range(50)])
    cur.executemany("INSERT INTO loose VALUES (?, ?)", [(i % 5, "dup") for i in range(40)])
    assert main(["adopt", url, "keyed", "loose"]) == 0

    fresh = connect()
    assert set(fresh.tables) >= {"keyed", "loose"}
    assert fresh.tables["keyed"].key == ("a", "b")
    assert fresh.tables["loose"].hidden_rowid
    c = fresh.cursor()
    c.execute("SELECT count(*), sum(a) FROM keyed")
    assert c.fetchone() == (50, sum(range(50)))
    c.execute("SELECT count(*) FROM loose WHERE y = 'dup'")
    assert c.fetchone() == (40,)
    c.execute("UPDATE loose SET y = 'one' WHERE x = 0")
    assert c.rowcount == 8
    c.execute("INSERT INTO loose VALUES (9, 'added')")
    fresh.commit()
    c.execute("SELECT count(*) FROM loose")
    assert c.fetchone() == (41,)
    fresh.commit()
    with pytest.raises(tique.IntegrityError):
        c.execute("INSERT INTO keyed VALUES (1, 1, 'again')")
    fresh.rollback()
    assert native("SELECT count(*) FROM keyed_storage") == [(50,)]


def test_adopt_refuses_unknown_tables(url: str, connect: Callable[..., tique.Connection]) -> None:
    connect()
    assert main(["adopt", url, "no_such_table"]) == 1


def test_checkpoint_command(url: str, connect: Callable[..., tique.Connection], native: Callable[[str], list[tuple]], capsys: pytest.CaptureFixture[str]) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    cur.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(10)])
    conn.commit()
    assert main(["checkpoint", url]) == 0
    assert "moved=10" in capsys.readouterr().out
    assert native("SELECT count(*) FROM t_cache") == [(0,)]
    assert main(["checkpoint", url, "--every", "5", "--rounds", "3"]) == 0
    assert capsys.readouterr().out.count("checkpoint:") == 3


def test_overhead_prints_round_trips(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["overhead", "--url", url, "--repeats", "50"]) == 0
    out = capsys.readouterr().out
    assert "driver overhead per statement" in out
    assert "read-only transaction, 1 point read" in out


def test_demo_conserves_money(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seconds", "1.5", "--threads", "3", "--accounts", "50", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tique-duckdb" in out and "native-duckdb" in out
    assert "NO" not in out


def test_bench_keys_prints_throughput_and_phases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"duckdb:///{tmp_path}/keys.db"
    assert main(["bench", "keys", "--duckdb", url, "--clients", "2", "--seconds", "1"]) == 0
    out = capsys.readouterr().out
    assert "tique-duckdb" in out and "commits/s" in out
    assert "per committed transaction" in out and "certification" in out


def test_bench_keys_runs_at_a_chosen_level_and_records_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"duckdb:///{tmp_path}/keys.db"
    out = tmp_path / "keys.json"
    assert main(["bench", "keys", "--duckdb", url, "--clients", "1", "--seconds", "1", "--isolation", "read-committed",
                 "--out", str(out)]) == 0
    assert "READ COMMITTED" in capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written["benchmark"] == "keys" and written["parameters"]["isolation"] == "read-committed"
    (run,) = written["metrics"]["runs"]
    assert run["system"] == "tique-duckdb" and run["isolation"] == "READ COMMITTED" and run["commits"] > 0


def test_bench_keys_on_monetdb_accounts_each_transaction_like_for_like(monetdb_server: object, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Native and tique on one MonetDB server, each committed transaction's cost counted
    by its session: native commits once in 5 round trips (2 reads, 2 updates, commit);
    tique's writer commits its writes with its write-set once, and its outcome row once."""
    url = f"{monetdb_server.url}?schema=tique_keys_bench"  # type: ignore[attr-defined]
    out = tmp_path / "keys.json"
    assert main(["bench", "keys", "--monetdb", url, "--clients", "1", "--seconds", "1", "--out", str(out)]) == 0
    assert "per committed transaction" in capsys.readouterr().out
    runs = {run["system"]: run for run in json.loads(out.read_text())["metrics"]["runs"]}
    native, tq = runs["native-monetdb"], runs["tique-monetdb"]
    assert native["commits"] > 0 and tq["commits"] > 0 and tq["aborts"] == 0
    assert native["per_commit"]["round_trips"] == 5 and native["per_commit"]["engine_commits"] == 1
    assert tq["per_commit"]["engine_commits"] == 2
    assert tq["per_commit"]["engine_ms"] > 0 and tq["per_commit"]["client_cpu_ms"] > 0


def _subcommand_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the parser: (), ("bench",), ("bench", "tpcc"), ..."""
    paths = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                paths.extend(_subcommand_paths(child, prefix + (name,)))
    return paths


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _subcommand_paths(build_parser())
    assert ("bench", "contention") in paths and ("elle", "check") in paths
    for path in paths:
        for flag in ("--help", "-h"):
            with pytest.raises(SystemExit) as exited:
                build_parser().parse_args([*path, flag])
            assert exited.value.code == 0, (path, flag)
            assert "usage: tique" in capsys.readouterr().out, (path, flag)


def test_bench_executemany_prints_native_and_tique_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "executemany", "--system", "native-duckdb", "tique-duckdb", "--rows", "300", "--batch", "100"]) == 0
    out = capsys.readouterr().out
    assert "native-duckdb" in out and "tique-duckdb" in out and "rows/s" in out and "tique/native" in out


def test_reports_piped_to_a_file_are_not_wrapped_at_80_columns() -> None:
    """rich falls back to 80 columns off a terminal, which split the comparison tables' cells in
    CI logs; the reports use a wider console there, and COLUMNS still decides when it is set."""
    import os
    import subprocess
    import sys

    probe = ("from bench.console import report_console\n"
             "from rich.table import Table\n"
             "t = Table('system', *[f'TPC-C {i} clients' for i in range(6)])\n"
             "t.add_row('tique-monetdb', *[f'{i}.00x native' for i in range(6)])\n"
             "report_console().print(t)\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    piped = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert any("tique-monetdb" in line and "5.00x native" in line for line in piped.splitlines())
    narrow = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env={**env, "COLUMNS": "80"},
                            check=True).stdout
    assert not any("tique-monetdb" in line and "5.00x native" in line for line in narrow.splitlines())

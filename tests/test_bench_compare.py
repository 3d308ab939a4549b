"""`tique bench compare` at tiny scale: every system runs TPC-C and CH-benCHmark in one
invocation, TPC-C's consistency conditions hold, and the results, ratios and chart are written."""
from __future__ import annotations

import json
from pathlib import Path

from bench.compare import CompareConfig, compare
from bench.tpcc.loader import TINY


def test_compare_native_and_tique_duckdb(tmp_path: Path) -> None:
    out = tmp_path / "results"
    config = CompareConfig(systems=("native-duckdb", "tique-duckdb"), clients=(1, 2), tpcc_seconds=3.0, warmup_seconds=2.0,
                           chbench_repetitions=1, chbench_oltp_seconds=1.0, htap=(1, 1, 2.0), scale=TINY, out_dir=out)
    document = compare(config)
    assert [s["system"] for s in document["systems"]] == ["native-duckdb", "tique-duckdb"]
    for summary in document["systems"]:
        assert summary["consistent"], summary
        assert summary["chbench_failed"] == []
        assert summary["chbench_total_s"] > 0
        # a loaded machine may finish no tique-duckdb transaction inside one short window, but not in both
        assert sum(summary["tpcc"][clients]["txn_per_s"] for clients in (1, 2)) > 0
    saved = json.loads((out / "compare.json").read_text())
    ratios = [row[4] for row in saved["table"] if row[1] == "tique-duckdb"]
    assert ratios and all(r.endswith("x") for r in ratios if r)  # tique's ratio to native, side by side
    assert any(r for r in ratios)
    # The HTAP point runs its OLTP clients alone first, so the table gives what the queries cost them.
    for summary in saved["systems"]:
        assert (summary["htap_oltp_alone"]["oltp_clients"], summary["htap_oltp_alone"]["olap_clients"]) == (1, 0)
        assert (summary["htap"]["oltp_clients"], summary["htap"]["olap_clients"]) == (1, 1)
        assert summary["htap"]["olap"]["queries_completed"] > 0
    losses = [row for row in saved["table"] if row[0].startswith("HTAP OLTP lost")]
    assert losses and {row[1] for row in losses} <= {"native-duckdb", "tique-duckdb"}
    for name in ("tpcc-native-duckdb-c1.json", "tpcc-tique-duckdb-c2.json", "chbench-tique-duckdb.json"):
        assert json.loads((out / name).read_text())["system"] in name
    assert (out / "compare.png").stat().st_size > 10_000
    # The run's own table, as the terminal shows it: a row per metric, native and tique
    # side by side, tique's ratio beside its column.
    from rich.console import Console

    from bench.compare import matrix

    console = Console(width=100, record=True)
    console.print(matrix(saved["table"], ["native-duckdb", "tique-duckdb"], "title"))
    lines = console.export_text().splitlines()
    txn = [line.split() for line in lines if line.lstrip().startswith("txn/s,")]
    assert [row[:3] for row in txn] == [["txn/s,", "1", "cl"], ["txn/s,", "2", "cl"]]
    # native, tique, then tique over native (none where tique finished nothing: see above)
    assert all(len(row) in (5, 6) for row in txn) and any(row[-1].endswith("x") for row in txn)


def test_the_terminal_table_is_one_matrix_of_six_systems_within_100_columns() -> None:
    """compare's terminal table: a row per metric (abort rates on rows of their own), a
    column per system with each tique column's ratio over native beside it, 100 columns
    wide at 1, 4 and 16 clients, without wrapping into a list of rows per system."""
    from rich.console import Console

    from bench.compare import matrix, report

    names = ["native-duckdb", "tique-duckdb", "native-postgres", "tique-postgres", "native-monetdb", "tique-monetdb"]
    clients = (1, 4, 16)
    summaries = [{"system": name, "consistent": True, "chbench_failed": [],
                  "chbench_total_s": 0.25 * (i + 1), "chbench_first_run_total_s": 0.5 * (i + 1),
                  "tpcc": {c: {"txn_per_s": 1234.5 / (i + c), "abort_rate": 0.9 / c, "tpmc": 98765.0 / (i + c)} for c in clients}}
                 for i, name in enumerate(names)]
    config = CompareConfig(systems=tuple(names), clients=clients, tpcc_seconds=60.0, scale=TINY)
    console = Console(width=100, record=True)
    rows = report(summaries, config, console)
    assert {row[1] for row in rows} == set(names)  # compare.json keeps a row per metric and system
    console = Console(width=100, record=True)
    console.print(matrix(rows, names, "title"))
    lines = [line.rstrip() for line in console.export_text().splitlines() if line.strip()]
    assert max(len(line) for line in lines) <= 100
    body = [line for line in lines if line.lstrip().startswith(("txn/s", "abort %", "tpmC", "CH "))]
    assert len(body) == 3 * len(clients) + 2  # txn/s, abort % and tpmC per client count; CH total and first runs
    first = next(line for line in body if line.lstrip().startswith("txn/s, 1 cl"))
    # six values and three ratios: tique-duckdb's 1,234.5 / 2 over native's 1,234.5 / 1
    assert len(first.split()) == 3 + 6 + 3 and "0.50x" in first.split()

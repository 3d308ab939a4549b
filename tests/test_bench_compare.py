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

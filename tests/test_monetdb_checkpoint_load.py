"""MonetDB stays up, and consistent, under TPC-C at 6 clients beside the background
checkpointer.

MonetDB 11.45 crashed (a segfault in its optimizer's column statistics, `col_stats`)
within seconds of TPC-C at 6 clients while the checkpointer updated packed tables' storage
rows in place (UPDATE ... FROM the cache's stable versions): 2 of 2 full-scale runs and a
tiny-scale one crashed with that step, none of 6 without it. The checkpointer now deletes
and appends on MonetDB as on the other engines. The load is counted in commits, not
seconds (tests/progress.py); the server must still run afterwards, every client must have
got an answer to every statement, and TPC-C's consistency conditions must hold.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from progress import until_progress

COMMITS = 600


def test_tpcc_at_six_clients_beside_the_checkpointer_keeps_monetdb_up(tmp_path: Path) -> None:
    from drivers.monetdb_server import MonetDBServer
    from tique.cli import main

    try:
        server = MonetDBServer()
    except FileNotFoundError as reason:
        pytest.skip(str(reason))
    try:
        out = tmp_path / "tpcc.json"
        url = f"{server.url.split('?', 1)[0]}?schema=tpcc_load"

        def attempt(seconds: float) -> dict:
            code = main(["bench", "tpcc", "--system", "tique-monetdb", "--url", url, "--tiny", "--clients", "6",
                         "--duration", str(seconds), "--warmup", "0", "--checkpoint-ms", "100", "--out", str(out)])
            if not out.exists():  # the run stopped before writing its result
                return {"exit": code or 1}
            written = json.loads(out.read_text())
            out.unlink()
            written["exit"] = code
            return written

        written = until_progress(attempt, lambda w: w["exit"] != 0 or bool(w["metrics"]["errors"]) or w["metrics"]["commits"] >= COMMITS,
                                 seconds=10.0)
        assert server.process is not None and server.process.poll() is None, "mserver5 died under the load"
        metrics = written["metrics"]
        assert written["exit"] == 0 and metrics["errors"] == 0, metrics
        assert metrics["commits"] > 0 and written["consistency"]["all_hold"] is True
    finally:
        server.stop()

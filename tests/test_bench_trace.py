"""`tique bench trace` at tiny scale on each engine: every round trip a transaction's
session counts appears in the breakdown under a statement and a step, native's
statements and tique's side by side, tique's protocol steps named. No timing is asserted."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.trace import run
from bench.tpcc.loader import TINY
from conftest import ENGINES, new_url
from tique.cli import main

NEW_ORDER_STATEMENTS = {"NO_WAREHOUSE", "NO_DISTRICT", "NO_DISTRICT_NEXT", "NO_CUSTOMER", "NO_ORDER", "NO_NEW_ORDER",
                        "NO_ITEM", "NO_STOCK", "NO_STOCK_UPDATE", "NO_ORDER_LINES", "COMMIT"}


def _urls(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """Databases on the session's server (DuckDB: fresh files made by the run itself)."""
    if engine == "duckdb":
        return {}
    return {f"{flavour}-{engine}": new_url(engine, tmp_path, request) for flavour in ("native", "tique")}


def _check_sums(trace: dict[str, Any], engine: str) -> tuple[dict[str, Any], dict[str, Any]]:
    systems = trace["systems"]
    assert list(systems) == [f"native-{engine}", f"tique-{engine}"]
    for system in systems.values():
        assert system["errors"] == []
        assert system["transactions"] >= 1, system
        sums = system["sums"]
        # The steps account for exactly what the session counted: nothing sent unlabelled or twice.
        assert sums["traced_round_trips"] == sums["counted_round_trips"] > 0
        assert sums["traced_engine_commits"] == sums["counted_engine_commits"] > 0
        assert sums["traced_engine_ns"] == sums["counted_engine_ns"]
        assert sum(s["round_trips"] for s in system["steps"]) == pytest.approx(system["total"]["round_trips"])
    return systems[f"native-{engine}"], systems[f"tique-{engine}"]


@pytest.mark.parametrize("engine", ENGINES)
def test_new_order_trace_accounts_every_round_trip(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    result = run(engine, ["new_order"], transactions=3, warmup=0.5, scale=TINY, urls=_urls(engine, tmp_path, request))
    (trace,) = result.metrics["traces"]
    assert trace["kind"] == "new_order"
    native, tique_trace = _check_sums(trace, engine)
    native_statements = {s["statement"] for s in native["steps"]}
    tique_statements = {s["statement"] for s in tique_trace["steps"]}
    assert native_statements == tique_statements == NEW_ORDER_STATEMENTS
    # Native's statements are their own requests; tique's carry its protocol steps.
    assert {s["step"] for s in native["steps"]} <= {"statement", "begin (driver)", "commit"}
    tique_steps = {(s["statement"], s["step"]) for s in tique_trace["steps"]}
    if engine == "postgres":  # the oracle's begin travels in the first statement's request
        assert not any(step == "begin" for _, step in tique_steps)
    else:
        assert ("NO_WAREHOUSE", "begin") in tique_steps
    assert ("NO_STOCK_UPDATE", "write") in tique_steps or ("NO_STOCK_UPDATE", "write + validate") in tique_steps
    commit_steps = {step for statement, step in tique_steps if statement == "COMMIT"}
    assert any("publish" in step for step in commit_steps)
    assert any("write-set" in step for step in commit_steps)
    assert native["calls"]["NO_ITEM"] == tique_trace["calls"]["NO_ITEM"] >= 5  # the same inputs on both
    # Where tique's extra time goes: each statement's own work against native's, and each protocol step.
    extra = {(r["statement"], r["step"]): r for r in trace["extra"]}
    assert {statement for statement, _ in extra} == NEW_ORDER_STATEMENTS
    publish = next((k for k in extra if k[0] == "COMMIT" and "publish" in k[1]), None)
    if engine in ("postgres", "monetdb"):
        # Publish travels in the request of an engine commit, the counterpart of native's
        # COMMIT: PostgreSQL's whole commit, MonetDB's second request.
        assert publish is None and extra[("COMMIT", "own request")]["tique_round_trips"] == 1
    else:
        assert publish is not None and extra[publish]["native_ms"] == 0
    assert extra[("NO_ITEM", "own request")]["native_round_trips"] == extra[("NO_ITEM", "own request")]["tique_round_trips"]
    spent = tique_trace["total"]["engine_ms"] + tique_trace["total"]["client_cpu_ms"]
    assert sum(r["tique_ms"] for r in extra.values()) == pytest.approx(spent)


@pytest.mark.parametrize("engine", ["monetdb"])
def test_keys_trace_from_the_command_line(engine: str, tmp_path: Path, request: pytest.FixtureRequest,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.json"
    urls = [f"--url={name}={url}" for name, url in _urls(engine, tmp_path, request).items()]
    code = main(["bench", "trace", "--engine", engine, "--kind", "keys", "--transactions", "3", "--warmup", "0.5",
                 "--scale", "tiny", "--out", str(out), *urls])
    assert code == 0
    document = json.loads(out.read_text())
    (trace,) = document["metrics"]["traces"]
    native, tique_trace = _check_sums(trace, engine)
    assert {s["statement"] for s in native["steps"]} == {s["statement"] for s in tique_trace["steps"]} == {"READ", "UPDATE", "COMMIT"}
    assert native["calls"] == tique_trace["calls"] == {"READ": 2.0, "UPDATE": 2.0, "COMMIT": 1.0}
    printed = capsys.readouterr().out
    assert "keys: per committed transaction" in printed and "COMMIT" in printed


@pytest.mark.parametrize("engine", ["monetdb"])
def test_trace_loads_the_warehouses_asked_for(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from drivers import system_for

    out = tmp_path / "trace.json"
    urls = _urls(engine, tmp_path, request)
    code = main(["bench", "trace", "--engine", engine, "--kind", "order-status", "--transactions", "2", "--warmup", "0",
                 "--scale", "tiny", "--warehouses", "2", "--out", str(out), *[f"--url={n}={u}" for n, u in urls.items()]])
    assert code == 0
    document = json.loads(out.read_text())
    assert document["parameters"]["warehouses"] == 2
    for system in document["metrics"]["traces"][0]["systems"].values():
        assert system["errors"] == [] and system["transactions"] >= 1, system
    for name, url in urls.items():
        with system_for(name, None, url) as system:
            conn = system.connect()
            try:
                cur = conn.cursor()
                cur.execute("SELECT COUNT(*), MAX(w_id) FROM warehouse")
                assert cur.fetchall() == [(2, 2)], name
            finally:
                conn.close()

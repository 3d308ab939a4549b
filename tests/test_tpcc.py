"""TPC-C at tiny scale on every system: the load is the specification's (at reduced
cardinalities), concurrent clients commit every transaction type, and the consistency
conditions hold afterwards, natively and through tique."""
from __future__ import annotations

import itertools
import json
import random
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest

from bench.tpcc import consistency
from bench.tpcc.loader import TINY, Generator, existing_load, load
from bench.tpcc.rand import LAST_NAMES, Constants, nurand, run_c_last
from bench.tpcc.run import benchmark, run
from bench.tpcc.transactions import KINDS, MIX, Workload
from drivers import SYSTEMS, open_system

_names = itertools.count(1)
EVEN_MIX = (1, 1, 1, 1, 1)  # every type often enough to commit in a few seconds
CLIENTS = 2


@pytest.fixture(params=SYSTEMS)
def system(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A system on a fresh database: DuckDB in tmp_path, PostgreSQL on the session's
    cluster, MonetDB on the session's server (skipped without one)."""
    name: str = request.param
    engine = name.split("-", 1)[1]
    if engine == "postgres":
        opened = open_system(name, url=request.getfixturevalue("pg_cluster").create_database(f"tpcc_{next(_names)}"))
    elif engine == "monetdb":
        server = request.getfixturevalue("monetdb_server")
        opened = open_system(name, url=f"{server.url}?schema=tpcc_{next(_names)}")
    else:
        opened = open_system(name, workdir=tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def test_tpcc_runs_and_stays_consistent(system: Any, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = benchmark(system.name, warehouses=1, clients=CLIENTS, duration=4.0, warmup=0.5, scale=TINY, out=str(out),
                       system=system, progress=False, mix=EVEN_MIX)
    assert result.metrics["load"]["rows"] == sum(Generator(1, TINY).expected_rows().values()) + 1  # + the marker
    assert result.metrics["errors"] == 0, result.metrics["error_samples"]
    assert result.metrics["stuck_clients"] == 0
    assert result.consistency is not None and result.consistency["all_hold"], result.consistency
    assert {c["number"] for c in result.consistency["conditions"]} == set(consistency.CONDITIONS)

    written = json.loads(out.read_text())
    assert written["system"] == system.name and written["benchmark"] == "tpcc"
    assert written["engine_version"] == system.version()
    assert written["machine"]["cpu_count"] >= 1
    assert written["parameters"]["clients"] == CLIENTS and written["parameters"]["scale"]["items"] == TINY.items
    assert written["consistency"]["all_hold"] is True
    if system.through_tique:  # the run's planning, as a fresh process pays it (tique/plan_timing.py)
        planning = written["metrics"]["planning"]
        assert planning["texts"] > 0 and planning["total_cpu_ms"] > 0
        # A part is made at most once per formulation (over the snapshot, or over storage
        # alone where the cache holds nothing), never once per row count.
        assert all(n <= 2 for n in planning["variants"].values()), planning["variants"]
    else:
        assert "planning" not in written["metrics"]

    # A slow system (or a busy machine) may not have met every type in 4 s: more rounds,
    # bounded. Each round's new connections plan their statements afresh, so a round is
    # long enough to get past that.
    commits = Counter({kind: s["commits"] for kind, s in result.metrics["transactions"].items()})
    loaded = existing_load(system)
    assert loaded is not None and loaded.scale == TINY
    deadline = time.monotonic() + 50
    while any(commits[k] == 0 for k in KINDS) and time.monotonic() < deadline:
        more = run(system, loaded, CLIENTS, 10.0, warmup=0.0, mix=EVEN_MIX)
        assert more.total.errors == 0 and more.stuck_clients == 0, more.error_samples
        commits.update({kind: s.commits for kind, s in more.per_kind.items()})
    assert all(commits[k] > 0 for k in KINDS), f"{system.name}: some type never committed: {commits}"
    failed = [c for c in consistency.check(system) if not c.holds]
    assert not failed, f"{system.name}: consistency conditions violated: {failed}"


def test_a_saved_load_is_reused_not_reloaded(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path}/tpcc.db"
    first = open_system("native-duckdb", url=url)
    try:
        loaded, report = load(first, 1, TINY, progress=False)
        assert not report.reused and report.rows > 0
    finally:
        first.close()
    again = open_system("tique-duckdb", url=url)  # a tique system adopts the native load
    try:
        found, report = load(again, 1, TINY, progress=False)
        assert report.reused and found == loaded
        assert existing_load(again) == loaded
        with pytest.raises(ValueError, match="already holds a TPC-C load"):
            load(again, 2, TINY, progress=False)
        assert all(c.holds for c in consistency.check(again))
    finally:
        again.close()


def test_consistency_check_sees_a_broken_invariant(tmp_path: Path) -> None:
    system = open_system("native-duckdb", workdir=tmp_path)
    try:
        load(system, 1, TINY, progress=False)
        assert all(c.holds for c in consistency.check(system))
        conn = system.connect()
        cur = conn.cursor()
        cur.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3")  # no history, no W_YTD
        cur.execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 5 AND no_o_id = ?", (TINY.orders - 1,))
        conn.commit()
        conn.close()
        broken = {c.number: c.violations for c in consistency.check(system) if not c.holds}
        assert broken == {1: 1, 3: 1, 5: 1, 9: 1}
    finally:
        system.close()


def test_decimal_parameters_keep_their_cents(system: Any) -> None:
    """Money arithmetic with bound DECIMAL values, repeated (engines may prepare a
    repeated statement and type its markers from context)."""
    system.execute_script(["CREATE TABLE account (id INTEGER NOT NULL, balance DECIMAL(12, 2), PRIMARY KEY (id))",
                           "INSERT INTO account (id, balance) VALUES (1, -10.00)"])
    conn = system.connect()
    try:
        cur = conn.cursor()
        for amount in ("15000.96", "33122.97", "0.01", "7"):
            cur.execute("UPDATE account SET balance = balance + ? WHERE id = ?", (Decimal(amount), 1))
            conn.commit()
        cur.execute("SELECT balance FROM account WHERE id = ?", (1,))
        assert cur.fetchall() == [(Decimal("48120.94"),)]
        conn.commit()
    finally:
        conn.close()


def test_the_generators_follow_the_specification() -> None:
    generator = Generator(2, TINY, seed=3)
    (customer,) = list(itertools.islice(generator.customer(), 1))
    last, credit, data = customer[5], customer[13], customer[20]
    assert list(last[:3]) == ["BARBARBAR", "BARBAROUGHT", "BARBARABLE"]  # customers 1..1000 by number
    assert set(credit) <= {"GC", "BC"} and all(300 <= len(d) <= 500 for d in data)
    (orders,) = list(itertools.islice(generator.orders(), 1))
    carriers = orders[5]
    undelivered = [o for o, c in zip(orders[0], carriers) if c is None]
    assert undelivered == list(range(TINY.first_undelivered, TINY.orders + 1))
    assert sorted(orders[3]) == list(range(1, TINY.customers + 1))  # a permutation of the customers
    (lines,) = list(itertools.islice(generator.order_line(), 1))
    assert len(lines[0]) == int(orders[6].sum())  # O_OL_CNT lines per order
    (items,) = list(generator.item())
    assert sum("ORIGINAL" in d for d in items[4]) == TINY.items // 10
    assert all(26 <= len(d) <= 50 for d in items[4])


def test_random_inputs_follow_the_specification() -> None:
    rng = random.Random(7)
    assert all(1 <= nurand(rng, 1023, 1, 3000, 259) <= 3000 for _ in range(10_000))
    for load_c in range(256):
        delta = abs(run_c_last(load_c, rng) - load_c)
        assert 65 <= delta <= 119 and delta not in (96, 112)
    workload = Workload(10, TINY, Constants.for_run(0, rng))
    mix = Counter(workload.choose(rng) for _ in range(100_000))
    for kind, percent in zip(KINDS, MIX):
        assert abs(mix[kind] / 1000 - percent) < 1.0, mix
    assert all(workload.last_name(rng) in set(LAST_NAMES[: TINY.customers]) for _ in range(1000))
    hot = Workload(10, TINY, Constants.for_run(0, rng), contention=2)
    homes = Counter(hot.home_warehouse(rng) for _ in range(100_000))
    assert 0.985 < (homes[1] + homes[2]) / 100_000 < 0.995 and set(homes) == set(range(1, 11))


def test_cli_runs_tpcc_and_writes_a_result(tmp_path: Path) -> None:
    from tique.cli import main

    url = f"duckdb:///{tmp_path}/cli.db"
    out = tmp_path / "tpcc.json"
    argv = ["bench", "tpcc", "--system", "tique-duckdb", "--url", url, "--tiny", "--clients", "2",
            "--duration", "1", "--warmup", "0", "--out", str(out)]
    assert main(argv) == 0
    written = json.loads(out.read_text())
    assert written["parameters"]["warehouses"] == 1 and written["consistency"]["all_hold"] is True
    assert written["metrics"]["load"]["reused"] is False
    assert main(argv) == 0  # the saved load is reused
    assert json.loads(out.read_text())["metrics"]["load"]["reused"] is True
    native = ["bench", "tpcc", "--system", "native-duckdb", "--url", url, "--tiny", "--duration", "1", "--warmup", "0"]
    assert main(native) == 1  # a tique load is not run natively behind tique's back


def test_cli_records_the_isolation_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One client: nothing conflicts, so READ COMMITTED keeps TPC-C consistent (with more
    clients New-Order's read of d_next_o_id before its update may go stale, as natively)."""
    from tique.cli import main

    url = f"duckdb:///{tmp_path}/rc.db"
    out = tmp_path / "tpcc.json"
    argv = ["bench", "tpcc", "--system", "tique-duckdb", "--url", url, "--tiny", "--clients", "1",
            "--duration", "1", "--warmup", "0", "--out", str(out), "--isolation", "read-committed"]
    assert main(argv) == 0
    written = json.loads(out.read_text())
    assert written["parameters"]["isolation"] == "READ COMMITTED" and written["consistency"]["all_hold"] is True
    assert main(argv[:-1] + ["snapshot"]) == 0
    assert json.loads(out.read_text())["parameters"]["isolation"] == "SNAPSHOT"
    native = ["bench", "tpcc", "--system", "native-duckdb", "--tiny", "--duration", "1", "--warmup", "0", "--isolation", "read-committed"]
    assert main(native) == 1
    assert "native-duckdb has no READ COMMITTED level of its own" in capsys.readouterr().err
    monetdb = ["bench", "tpcc", "--system", "native-monetdb", "--tiny", "--duration", "1", "--warmup", "0", "--isolation", "serializable"]
    assert main(monetdb) == 1  # refused before a server is started or anything loaded
    assert "native-monetdb has no SERIALIZABLE level of its own" in capsys.readouterr().err


def test_native_postgres_runs_at_its_own_serializable(pg_cluster: Any) -> None:
    """--isolation serializable puts native-postgres's connections at PostgreSQL's
    SERIALIZABLE (SSI): a write skew between two of them fails one with SQLSTATE 40001,
    which the bench counts as an abort. At snapshot they run at REPEATABLE READ, where the
    same write skew commits both."""
    from bench.tpcc.run import isolation_name, isolation_options

    url = pg_cluster.create_database(f"tpcc_ssi_{next(_names)}")
    system = open_system("native-postgres", url=url)
    try:
        system.execute_script(["CREATE TABLE doctors (name TEXT PRIMARY KEY, on_call BOOLEAN NOT NULL)",
                               "INSERT INTO doctors VALUES ('alice', TRUE), ('bob', TRUE)"])
        outcomes = {}
        for level, shown in (("serializable", "serializable"), ("snapshot", "repeatable read")):
            options = isolation_options(system, level)
            first, second = system.connect(**options), system.connect(**options)
            try:
                for conn in (first, second):
                    cur = conn.cursor()
                    cur.execute("SHOW transaction_isolation")
                    assert cur.fetchone()[0] == shown
                    cur.execute("UPDATE doctors SET on_call = TRUE")  # both back on call, then a fresh transaction
                    conn.commit()
                for conn, name in ((first, "alice"), (second, "bob")):  # each sees two on call, takes one off
                    cur = conn.cursor()
                    cur.execute("SELECT count(*) FROM doctors WHERE on_call")
                    assert cur.fetchone()[0] == 2
                    cur.execute("UPDATE doctors SET on_call = FALSE WHERE name = ?", (name,))
                aborted = []
                for conn in (first, second):
                    try:
                        conn.commit()
                    except Exception as error:  # noqa: BLE001 - classified right below
                        assert system.is_abort(error) and getattr(error, "sqlstate", None) == "40001", error
                        conn.rollback()
                        aborted.append(error)
                outcomes[level] = len(aborted)
            finally:
                first.close()
                second.close()
        assert outcomes == {"serializable": 1, "snapshot": 0}
        assert isolation_name(system, "serializable") == "engine's own SERIALIZABLE"
        assert isolation_name(system, None) == "engine's own REPEATABLE READ"
    finally:
        system.close()


def test_cli_runs_native_postgres_serializable_and_counts_priority_retries(pg_cluster: Any, tmp_path: Path) -> None:
    """A short run of each new flag records it: native-postgres at SERIALIZABLE, and
    tique with --priority, whose re-executions are their own figure beside the aborts."""
    from tique.cli import main

    from progress import until_progress

    def command(argv: list[str], out: Path) -> Any:
        def attempt(seconds: float) -> dict:
            assert main([*argv, "--tiny", "--clients", "2", "--duration", str(seconds), "--warmup", "0", "--out", str(out)]) == 0
            return json.loads(out.read_text())
        return until_progress(attempt, lambda written: written["metrics"]["commits"] > 0, seconds=1.0)

    url = pg_cluster.create_database(f"tpcc_cli_ssi_{next(_names)}")
    written = command(["bench", "tpcc", "--system", "native-postgres", "--url", url, "--isolation", "serializable"],
                      tmp_path / "native.json")
    assert written["parameters"]["isolation"] == "engine's own SERIALIZABLE"
    assert written["metrics"]["commits"] > 0 and written["consistency"]["all_hold"] is True
    written = command(["bench", "tpcc", "--system", "tique-duckdb", "--url", f"duckdb:///{tmp_path}/p.db",
                       "--isolation", "serializable", "--priority"], tmp_path / "priority.json")
    assert written["parameters"]["priority"] is True and written["parameters"]["isolation"] == "SERIALIZABLE"
    metrics = written["metrics"]
    assert metrics["commits"] > 0
    assert metrics["priority_retries"] == sum(t["priority_retries"] for t in metrics["transactions"].values())
    attempts = metrics["commits"] + metrics["rollbacks"] + metrics["aborts"] + metrics["errors"]
    assert metrics["abort_rate"] == pytest.approx(metrics["aborts"] / attempts)  # re-executions are no attempts

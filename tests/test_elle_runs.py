"""Elle list-append runs on real engines: tique's histories are valid under strong
session snapshot isolation, with and without faults, and each debug fault that
breaks snapshot isolation is caught with the anomalies it must cause."""
from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import psycopg
import pytest
from psycopg import sql

import tique
from drivers import open_system
from drivers.base import System
from elle.checker import CheckResult, check_file
from elle.history import read_history
from elle.runner import RunConfig, RunResult, run
from elle.workload import ListAppendGenerator, WorkloadConfig
from progress import until_progress
from tique.cli import main

SSSI = "strong-session-snapshot-isolation"
_names = itertools.count(1)


@pytest.fixture
def open_sut(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., System]]:
    """Opens a system under test on a fresh database of the shared test servers."""
    opened: list[System] = []

    def make(name: str, durable: bool = False) -> System:
        engine = name.split("-", 1)[1]
        if engine == "duckdb":
            system = open_system(name, workdir=tmp_path / f"db{next(_names)}")
        elif engine == "postgres":
            cluster = request.getfixturevalue("pg_cluster")
            dbname = f"elle_{next(_names)}"
            url = cluster.create_database(dbname)
            if durable:  # the shared cluster commits asynchronously; a crash must not lose acknowledged commits
                with psycopg.connect(cluster.url, autocommit=True) as conn:
                    conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = on").format(sql.Identifier(dbname)))
            system = open_system(name, url=url)
        else:
            server = request.getfixturevalue("monetdb_server")
            system = open_system(name, url=f"{server.url}?schema=elle_{next(_names)}")
        opened.append(system)
        return system

    yield make
    for system in opened:
        system.close()


def _run(system: System, tmp_path: Path, restart: Callable[[], None] | None = None, **config: Any) -> tuple[RunResult, CheckResult]:
    workload = config.pop("workload", WorkloadConfig())
    result = run(system, RunConfig(workload=workload, **config), tmp_path / f"{system.name}-{next(_names)}.edn", restart=restart)
    return result, check_file(result.history, SSSI)


def _assert_sound(result: RunResult, verdict: CheckResult) -> None:
    """Valid under strong session SI, and the final read has every acknowledged append."""
    assert verdict.valid, verdict.summary()
    assert result.final.ok, (result.final.lost[:10], result.final.aborted_present[:10], result.final.duplicates)
    assert result.final.acknowledged > 0 and not result.notes
    # The final read is the history's last op: it saw every list, including every acknowledged append.
    last = read_history(result.history)[-1]
    assert last.type == "ok" and all(f == "r" for f, _, _ in last.value)
    assert sum(len(v or ()) for _, _, v in last.value) == result.final.elements


# ---------------------------------------------------------------- the workload

def test_generator_is_deterministic_retires_keys_and_never_repeats_a_value() -> None:
    config = WorkloadConfig(key_count=3, min_txn_length=2, max_txn_length=5, max_writes_per_key=4, read_fraction=0.3, seed=7)
    first = ListAppendGenerator(config)
    txns = [first.next_txn() for _ in range(300)]
    again = ListAppendGenerator(config)
    assert [again.next_txn() for _ in range(300)] == txns
    other = ListAppendGenerator(WorkloadConfig(key_count=3, max_writes_per_key=4, read_fraction=0.3, seed=8))
    assert [other.next_txn() for _ in range(300)] != txns

    assert all(2 <= len(t) <= 5 for t in txns)
    appends: dict[int, list[int]] = {}
    for txn in txns:
        for f, k, v in txn:
            if f == "append":
                appends.setdefault(k, []).append(v)
            else:
                assert f == "r" and v is None
    # Values count up from 1 per key; a key stops at max_writes_per_key and a fresh key replaces it.
    assert all(values == list(range(1, len(values) + 1)) for values in appends.values())
    active = set(first.active_keys)
    assert len(active) == 3 and len(appends) > 20
    assert all(len(values) == 4 for k, values in appends.items() if k not in active)
    assert all(len(appends.get(k, [])) < 4 for k in active)
    reads = sum(f == "r" for t in txns for f, _, _ in t)
    assert 0.2 < reads / sum(len(t) for t in txns) < 0.4


# ---------------------------------------------------------------- valid runs

@pytest.mark.parametrize("name,txns", [("tique-duckdb", 200), ("tique-postgres", 400), ("tique-monetdb", 300),
                                       ("native-postgres", 300)])
def test_run_is_valid_under_strong_session_si(name: str, txns: int, open_sut: Callable[..., System], tmp_path: Path) -> None:
    result, verdict = _run(open_sut(name), tmp_path, txns=txns, clients=4, workload=WorkloadConfig(key_count=5, seed=1))
    assert result.txns == txns and result.ok + result.fail + result.info == txns
    assert result.ok > txns // 3 and result.info == 0
    assert result.fail > 0  # 4 clients on 5 hot keys do conflict: first committer wins
    _assert_sound(result, verdict)
    # Serializability is what SI gives up: the only cycles allowed are G2-item (write skew).
    serializable = check_file(result.history, "serializable")
    assert set(serializable.anomaly_counts) <= {"G2-item"}, serializable.summary()


# ---------------------------------------------------------------- negative controls

def test_stale_snapshot_is_caught(open_sut: Callable[..., System], tmp_path: Path) -> None:
    """Each statement reads the latest committed data: a transaction sees a list grow
    under it (internal) and reads skew across keys (G-single)."""
    result, verdict = _run(open_sut("tique-postgres"), tmp_path, txns=600, clients=4, faults=("stale-snapshot",),
                           workload=WorkloadConfig(key_count=3, seed=2))
    assert not verdict.valid
    assert {"internal", "G-single"} <= set(verdict.anomaly_counts), verdict.anomaly_counts
    # The skewed reads may also close a cycle through a client's own order (the process
    # variants); what the fault must never let through is a lost update.
    assert set(verdict.anomaly_counts) <= {"internal", "G0", "G1c", "G-single", "G-nonadjacent",
                                           "G-single-process", "G-nonadjacent-process"}
    assert result.final.ok  # certification still stops lost updates


def test_no_certify_is_caught(open_sut: Callable[..., System], tmp_path: Path) -> None:
    """Without certification every transaction commits and concurrent appends overwrite
    each other: lost updates, lists whose versions disagree, write cycles (G0)."""
    result, verdict = _run(open_sut("tique-postgres"), tmp_path, txns=400, clients=4, faults=("no-certify",),
                           workload=WorkloadConfig(key_count=3, seed=3))
    assert result.fail == 0 and result.ok == 400
    assert {"lost-update", "incompatible-order", "G0"} <= set(verdict.anomaly_counts), verdict.anomaly_counts
    assert len(result.final.lost) > 10  # acknowledged appends missing from the final lists


def test_early_visibility_is_caught_only_with_session_order(open_sut: Callable[..., System], tmp_path: Path) -> None:
    """A transaction that misses its own client's previous commit is consistent SI, but
    breaks the session guarantee: a G-single cycle through a process edge."""
    result, verdict = _run(open_sut("tique-postgres"), tmp_path, txns=400, clients=4, faults=("early-visibility",),
                           workload=WorkloadConfig(key_count=3, seed=4))
    assert set(verdict.anomaly_counts) == {"G-single-process"}, verdict.anomaly_counts
    assert verdict.anomaly_counts["G-single-process"] >= 3
    assert check_file(result.history, "snapshot-isolation").valid
    assert result.final.ok


def test_debug_faults_change_what_a_transaction_reads(tmp_path: Path) -> None:
    """The two snapshot faults, statement by statement, on one DuckDB database."""
    url = f"duckdb:///{tmp_path}/faults.db"
    setup = tique.connect(url, autocommit=True)
    setup.cursor().execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER)")
    setup.cursor().execute("INSERT INTO kv VALUES (1, 0)")

    def read(conn: tique.Connection) -> int:
        cur = conn.cursor()
        cur.execute("SELECT v FROM kv WHERE k = 1")
        return cur.fetchone()[0]

    def write(conn: tique.Connection, value: int) -> None:
        conn.cursor().execute("UPDATE kv SET v = ? WHERE k = 1", (value,))
        conn.commit()

    correct, stale, writer = tique.connect(url), tique.connect(url, faults={"stale-snapshot"}), tique.connect(url)
    assert read(correct) == read(stale) == 0  # both transactions have begun
    write(writer, 1)
    assert read(correct) == 0  # the snapshot holds
    assert read(stale) == 1  # the fault reads what committed since the transaction began
    correct.commit(), stale.commit()

    early = tique.connect(url, faults={"early-visibility"})
    write(early, 2)
    assert read(early) == 1  # the next transaction misses its own client's commit
    early.commit()
    assert read(early) == 2  # once: the one after sees it
    early.commit()
    for conn in (correct, stale, writer, early, setup):
        conn.close()


def test_debug_faults_are_refused_where_they_cannot_apply(open_sut: Callable[..., System], tmp_path: Path) -> None:
    duck = open_sut("tique-duckdb")
    with pytest.raises(ValueError, match="kill: DuckDB allows one process per database file"):
        run(duck, RunConfig(txns=1, faults=("kill",)), tmp_path / "x.edn")
    with pytest.raises(ValueError, match="restart: DuckDB is embedded"):
        run(duck, RunConfig(txns=1, faults=("restart",)), tmp_path / "x.edn")
    with pytest.raises(ValueError, match="no-certify: a tique fault, and native-duckdb does not run through tique"):
        run(open_sut("native-duckdb"), RunConfig(txns=1, faults=("no-certify",)), tmp_path / "x.edn")
    with pytest.raises(ValueError, match="unknown fault"):
        RunConfig(faults=("slow-disk",))
    with pytest.raises(tique.InterfaceError, match="unknown fault.*stale-read.*early-visibility, no-certify, no-read-certify, stale-snapshot"):
        tique.connect(duck.engine.tique_url, faults={"stale-read"})


# ---------------------------------------------------------------- faults that must be survived

@pytest.mark.parametrize("name,txns", [("tique-duckdb", 200), ("tique-postgres", 400)])
def test_checkpointer_every_few_ms(name: str, txns: int, open_sut: Callable[..., System], tmp_path: Path) -> None:
    result, verdict = _run(open_sut(name), tmp_path, txns=txns, clients=4, faults=("checkpoint",), checkpoint_ms=2,
                           workload=WorkloadConfig(key_count=5, max_writes_per_key=16, seed=5))
    assert result.events["checkpoint rounds"] > 10 and result.events["versions checkpointed"] > 0, result.events
    _assert_sound(result, verdict)


def test_client_processes_killed_mid_transaction_and_commit(open_sut: Callable[..., System], tmp_path: Path) -> None:
    """Kills come every 0.25 s on average, so how many a run sees depends on how fast its
    transactions go: the run is made longer (counted in transactions) until it saw three."""
    def attempt(scale: float) -> tuple[RunResult, CheckResult]:
        return _run(open_sut("tique-postgres"), tmp_path, txns=int(500 * scale), clients=4, faults=("kill",), kill_interval=0.25,
                    time_limit=20 * scale, workload=WorkloadConfig(key_count=5, seed=6))

    def kills(run: tuple[RunResult, CheckResult]) -> int:
        return run[0].events["kills while running"] + run[0].events["kills while committing"]

    result, verdict = until_progress(attempt, lambda run: kills(run) >= 3, seconds=1.0, bound=16.0)
    assert kills((result, verdict)) >= 3 and result.events["client processes replaced"] >= 1, result.events
    assert result.info >= 1  # a killed client's transaction is indeterminate, never guessed
    _assert_sound(result, verdict)


def test_postgres_server_restarts(open_sut: Callable[..., System], pg_cluster: Any, tmp_path: Path) -> None:
    result, verdict = _run(open_sut("tique-postgres", durable=True), tmp_path, txns=1500, clients=4, faults=("restart",),
                           restart_interval=1.5, max_restarts=2, time_limit=15,
                           workload=WorkloadConfig(key_count=5, seed=7), restart=lambda: pg_cluster.restart("immediate"))
    assert result.events["server restarts"] >= 1, (result.events, result.notes)
    _assert_sound(result, verdict)


def test_monetdb_server_restarts(open_sut: Callable[..., System], monetdb_server: Any, tmp_path: Path) -> None:
    system = open_sut("tique-monetdb")
    # enough transactions that the run outlasts the restart's random moment (0.5-1.5 s)
    result = run(system, RunConfig(txns=4000, clients=4, faults=("restart",), restart_interval=1.0, max_restarts=1,
                                   time_limit=15, workload=WorkloadConfig(key_count=5, seed=8)),
                 tmp_path / "monetdb-restart.edn", restart=monetdb_server.restart)
    assert result.events["server restarts"] == 1, (result.events, result.notes)
    _assert_sound(result, check_file(result.history, SSSI))


# ---------------------------------------------------------------- the command

def test_elle_run_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.edn"
    code = main(["elle", "run", "--system", "tique-duckdb", "--txns", "40", "--clients", "2", "--keys", "3",
                 "--workdir", str(tmp_path), "--out", str(out), "--check", SSSI, "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "tique-duckdb: 40 transactions" in printed and "0 lost" in printed and "VALID" in printed
    assert len(read_history(out)) == 2 * 41  # 40 transactions and the final read, each invoked and completed
    report = tmp_path / "report.json"
    assert main(["elle", "check", str(out), "--model", SSSI, "--report", str(report)]) == 0
    assert json.loads(report.read_text())["valid"] is True
    code = main(["elle", "run", "--system", "tique-duckdb", "--txns", "60", "--keys", "2", "--fault", "no-certify",
                 "--workdir", str(tmp_path / "nc"), "--out", str(tmp_path / "nc.edn"), "--check", SSSI, "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 1 and "INVALID" in printed and "PROBLEM" in printed, printed

"""READ COMMITTED (tique/transaction.py, its invariant): each statement reads the newest
committed snapshot, a transaction reads its own writes and never another's uncommitted
ones, and first committer wins per key from the first write statement's snapshot, so
concurrent increments lose no update; on every engine, with an Elle run checked against
the read-committed model."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

import pytest

import tique
from elle.checker import check_file
from tique import IsolationLevel
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]


def _counter(conn: tique.Connection, rows: int = 1) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE c (k INTEGER PRIMARY KEY, n INTEGER)")
    for k in range(1, rows + 1):
        cur.execute("INSERT INTO c VALUES (?, 0)", (k,))
    conn.commit()


def _value(conn: tique.Connection, k: int = 1) -> int:
    cur = conn.cursor()
    cur.execute("SELECT n FROM c WHERE k = ?", (k,))
    return cur.fetchone()[0]


def _commit_increment(conn: tique.Connection, k: int = 1) -> None:
    conn.cursor().execute("UPDATE c SET n = n + 1 WHERE k = ?", (k,))
    conn.commit()


def _run_clients(work: Callable[[int], None], clients: int) -> None:
    """Runs work(0) … work(clients - 1) on threads at once and waits for them; a bound
    that only a hang reaches, not a slow machine."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
        assert not t.is_alive(), "a client hung"


def test_statement_sees_a_commit_after_the_transaction_began(connect: Connect) -> None:
    reader, writer = connect(isolation_level="read committed"), connect()
    _counter(writer)
    cur = reader.cursor()
    cur.execute("SELECT count(*) FROM c")  # the transaction begins here
    assert cur.fetchone()[0] == 1
    _commit_increment(writer)
    assert _value(reader) == 1  # the next statement of the same transaction sees it
    reader.commit()


def test_snapshot_keeps_the_transaction_start_for_contrast(connect: Connect) -> None:
    reader, writer = connect(), connect()
    _counter(writer)
    assert _value(reader) == 0
    _commit_increment(writer)
    assert _value(reader) == 0
    reader.commit()
    assert _value(reader) == 1


def test_two_statements_see_different_committed_states(connect: Connect) -> None:
    reader, writer = connect(), connect()
    _counter(writer, rows=2)
    cur = reader.cursor()
    cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    seen = [_value(reader, 1)]
    _commit_increment(writer, 1)
    seen.append(_value(reader, 1))
    _commit_increment(writer, 1)
    cur.execute("SELECT sum(n) FROM c")  # a scan, not a point read
    seen.append(cur.fetchone()[0])
    assert seen == [0, 1, 2]
    assert reader.in_transaction
    reader.commit()


def test_own_writes_visible_and_uncommitted_writes_hidden(connect: Connect) -> None:
    mine, other, writer = (connect(isolation_level=IsolationLevel.READ_COMMITTED) for _ in range(3))
    _counter(writer, rows=2)
    cur = mine.cursor()
    cur.execute("UPDATE c SET n = 10 WHERE k = 1")
    cur.execute("INSERT INTO c VALUES (3, 30)")
    _commit_increment(writer, 2)  # a commit after our first write
    cur.execute("SELECT k, n FROM c ORDER BY k")
    assert cur.fetchall() == [(1, 10), (2, 1), (3, 30)]  # the commit after our write too
    other_cur = other.cursor()
    other_cur.execute("SELECT k, n FROM c ORDER BY k")
    assert other_cur.fetchall() == [(1, 0), (2, 1)]  # nothing uncommitted
    mine.commit()
    other_cur.execute("SELECT k, n FROM c ORDER BY k")
    assert other_cur.fetchall() == [(1, 10), (2, 1), (3, 30)]
    other.commit()


def test_concurrent_committed_write_is_never_overwritten_blindly(connect: Connect) -> None:
    """Both increment from 0; the second to commit read 0 after the first's commit
    existed only above its write's snapshot, so it loses certification."""
    first, second, setup = (connect(isolation_level="read committed") for _ in range(3))
    _counter(setup)
    first.cursor().execute("UPDATE c SET n = n + 1 WHERE k = 1")
    second.cursor().execute("UPDATE c SET n = n + 1 WHERE k = 1")
    first.commit()
    with pytest.raises(tique.SerializationFailure):
        second.commit()
    assert _value(setup) == 1
    setup.commit()


def test_write_after_a_newer_commit_is_not_a_conflict(connect: Connect) -> None:
    """The write statement reads the newest snapshot, which already holds the other
    commit: nothing was overwritten blindly, so it commits (at SNAPSHOT it would not)."""
    mine, writer = connect(isolation_level="read committed"), connect()
    _counter(writer)
    assert _value(mine) == 0  # the transaction began before the other commit
    _commit_increment(writer)
    _commit_increment(mine)
    assert _value(writer) == 2
    writer.commit()
    snap = connect()
    assert _value(snap) == 2
    _commit_increment(writer)
    snap.cursor().execute("UPDATE c SET n = n + 1 WHERE k = 1")
    with pytest.raises(tique.SerializationFailure):
        snap.commit()


def test_no_lost_update_under_contention(connect: Connect) -> None:
    clients, attempts = 4, 25
    setup = connect()
    _counter(setup)
    conns = [connect(isolation_level="read committed") for _ in range(clients)]
    committed = [0] * clients
    aborted = [0] * clients
    errors: list[BaseException] = []
    start = threading.Barrier(clients)

    def work(i: int) -> None:
        conn = conns[i]
        try:
            start.wait()
            for _ in range(attempts):
                cur = conn.cursor()
                cur.execute("SELECT n FROM c WHERE k = 1")
                cur.fetchall()
                cur.execute("UPDATE c SET n = n + 1 WHERE k = 1")
                try:
                    conn.commit()
                    committed[i] += 1
                except tique.SerializationFailure:
                    aborted[i] += 1
        except BaseException as error:  # reported by the test thread
            errors.append(error)

    _run_clients(work, clients)
    assert not errors, errors
    assert sum(committed) + sum(aborted) == clients * attempts
    assert sum(committed) >= 1
    assert _value(setup) == sum(committed)
    setup.commit()


def test_overlapping_increments_at_most_one_commits(connect: Connect) -> None:
    """Rounds in which every client has run its increment before any commits: each
    increment read the counter before the others committed, so at most one per round may
    commit (certification counts a concurrent committer whose outcome is still open as a
    conflict, so all may abort), and the count grows by exactly the commits."""
    clients, rounds = 3, 5
    setup = connect()
    _counter(setup)
    conns = [connect(isolation_level="read committed") for _ in range(clients)]
    updated = threading.Barrier(clients)
    per_round = [[0] * clients for _ in range(rounds)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for r in range(rounds):
                conns[i].cursor().execute("UPDATE c SET n = n + 1 WHERE k = 1")
                updated.wait()  # every client's increment is written, none committed
                try:
                    conns[i].commit()
                    per_round[r][i] = 1
                except tique.SerializationFailure:
                    pass
                updated.wait()  # the round is over before the next begins
        except BaseException as error:  # reported by the test thread; frees the others
            errors.append(error)
            updated.abort()

    _run_clients(work, clients)
    assert not errors, errors
    assert all(sum(commits) <= 1 for commits in per_round), per_round
    assert _value(setup) == sum(map(sum, per_round))
    setup.commit()


@pytest.mark.parametrize(("system", "txns"), [("tique-duckdb", 300), ("tique-postgres", 200), ("tique-monetdb", 150)])
def test_elle_run_is_valid_under_read_committed(system: str, txns: int, tmp_path: Path, request: pytest.FixtureRequest,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tique.cli import main

    url = _server_url(system, tmp_path, request)
    out = tmp_path / "history.edn"
    argv = ["elle", "run", "--system", system, "--isolation", "read-committed", "--txns", str(txns), "--clients", "4",
            "--out", str(out), "--no-progress"]
    if url is not None:
        argv += ["--url", url]
    else:
        argv += ["--workdir", str(tmp_path)]
    assert main(argv) == 0, capsys.readouterr()
    result = check_file(out, "read-committed")
    assert result.valid, result.summary()
    assert "read-committed" in capsys.readouterr().out


@pytest.mark.slow
def test_elle_run_duckdb_2000(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tique.cli import main

    out = tmp_path / "history.edn"
    assert main(["elle", "run", "--system", "tique-duckdb", "--isolation", "read-committed", "--txns", "2000", "--clients", "4",
                 "--out", str(out), "--workdir", str(tmp_path), "--no-progress"]) == 0, capsys.readouterr()
    assert check_file(out, "read-committed").valid


def _server_url(system: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | None:
    from conftest import new_url

    if system == "tique-duckdb":
        return None
    return new_url(system.removeprefix("tique-"), tmp_path, request)


def _trips(conn: tique.Connection, level: str) -> list[int]:
    """Round trips of each statement of one transaction: a read, a write, a read, a write,
    a write, then the commit."""
    conn.isolation_level = level
    cur = conn.cursor()
    statements = [("SELECT n FROM c WHERE k = ?", (1,)), ("UPDATE c SET n = n + 1 WHERE k = ?", (1,)),
                  ("SELECT sum(n) FROM c", ()), ("UPDATE c SET n = n + 1 WHERE k = ?", (2,)),
                  ("UPDATE c SET n = n + 1 WHERE k = ?", (1,))]
    trips = []
    for sql, params in statements:
        before = conn.counters.round_trips
        cur.execute(sql, params)
        if cur.description:
            cur.fetchall()
        trips.append(conn.counters.round_trips - before)
    before = conn.counters.round_trips
    conn.commit()
    return trips + [conn.counters.round_trips - before]


def test_what_a_fresh_snapshot_per_statement_costs(connect: Connect, engine: str) -> None:
    """Round trips of READ COMMITTED against SNAPSHOT, statement by statement: DuckDB asks
    its in-process oracle; PostgreSQL's reads and later writes read the newest snapshot in
    their own SQL, and only the first write (after the transaction's first statement) asks
    for it, certification needing its value; MonetDB asks its oracle once per statement
    after the first, before and after the transaction writes (after, to learn whether the
    engine transaction holding its writes still sees the newest snapshot; with no
    concurrent commit here, it does, so nothing more is committed or sent)."""
    conn = connect()
    _counter(conn, rows=2)
    _trips(conn, "snapshot")  # plans every statement, and learns what each result looks like
    _trips(conn, "read committed")
    snapshot, committed = _trips(conn, "snapshot"), _trips(conn, "read committed")
    extra = [rc - si for rc, si in zip(committed, snapshot)]
    expected = {"duckdb": [0, 0, 0, 0, 0, 0], "postgres": [0, 1, 0, 0, 0, 0], "monetdb": [0, 1, 1, 1, 1, 0]}[engine]
    assert extra == expected, (snapshot, committed)
    assert _value(conn, 1) == 8 and _value(conn, 2) == 4
    conn.commit()


def _rows(conn: tique.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall()


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_statement_after_own_write_sees_newer_commits(connect: Connect, native: Callable[[str], list[tuple]], outcome: str) -> None:
    """A statement after the transaction's own write still reads the newest committed
    snapshot: another's update of b and insert of c, committed after our write of a,
    show by point read and by scan, next to our own write of a. A checkpoint meanwhile
    leaves our write alone; once we end, a checkpoint leaves no cache row behind, and
    after a rollback nothing of ours remains."""
    mine, writer, check = connect(isolation_level="read committed"), connect(), connect()
    _counter(writer, rows=2)  # keys 1 (a) and 2 (b), both 0
    mine.cursor().execute("UPDATE c SET n = 10 WHERE k = 1")  # our write of a
    cur = writer.cursor()
    cur.execute("UPDATE c SET n = 20 WHERE k = 2")
    cur.execute("INSERT INTO c VALUES (3, 30)")
    writer.commit()
    assert _rows(mine, "SELECT n FROM c WHERE k = ?", (2,)) == [(20,)]
    assert _rows(mine, "SELECT n FROM c WHERE k = ?", (3,)) == [(30,)]
    assert _rows(mine, "SELECT n FROM c WHERE k = ?", (1,)) == [(10,)]
    assert _rows(mine, "SELECT k, n FROM c ORDER BY k") == [(1, 10), (2, 20), (3, 30)]
    assert _rows(check, "SELECT k, n FROM c ORDER BY k") == [(1, 0), (2, 20), (3, 30)]
    check.commit()
    checkpoint(check)  # our transaction runs: its write stays where it is
    cur = mine.cursor()
    cur.execute("UPDATE c SET n = n + 1 WHERE k = ?", (1,))  # reads its own write of a
    assert _rows(mine, "SELECT k, n FROM c ORDER BY k") == [(1, 11), (2, 20), (3, 30)]
    if outcome == "commit":
        mine.commit()
        expected = [(1, 11), (2, 20), (3, 30)]
    else:
        mine.rollback()
        expected = [(1, 0), (2, 20), (3, 30)]
    assert _rows(check, "SELECT k, n FROM c ORDER BY k") == expected
    assert _rows(check, "SELECT k, n FROM c WHERE k = ?", (1,)) == expected[:1]
    check.commit()
    checkpoint(check)
    assert native("SELECT count(*) FROM c_cache") == [(0,)]
    assert sorted(native("SELECT k, n FROM c_storage")) == expected


def test_write_read_write_under_contention(connect: Connect) -> None:
    """Clients each increment a shared counter, read the table, increment their own row,
    and commit or roll back in turn, while the others commit in between: every statement
    after a write reads commits made after it (its engine transaction may change), yet no
    increment is lost, a rolled-back transaction leaves nothing, and each transaction reads
    its own increments."""
    clients, attempts = 3, 12
    setup = connect()
    _counter(setup, rows=1 + clients)
    conns = [connect(isolation_level="read committed") for _ in range(clients)]
    committed = [0] * clients
    errors: list[BaseException] = []
    start = threading.Barrier(clients)

    def work(i: int) -> None:
        conn, own = conns[i], i + 2
        try:
            start.wait()
            for attempt in range(attempts):
                cur = conn.cursor()
                try:
                    cur.execute("UPDATE c SET n = n + 1 WHERE k = 1")
                    cur.execute("SELECT k, n FROM c ORDER BY k")
                    seen = dict(cur.fetchall())
                    assert seen[own] == committed[i]  # only this client writes its row
                    cur.execute("UPDATE c SET n = n + 1 WHERE k = ?", (own,))
                    assert _value(conn, own) == committed[i] + 1  # its own write
                    if attempt % 3 == 2:
                        conn.rollback()
                        continue
                    conn.commit()
                    committed[i] += 1
                except tique.SerializationFailure:
                    pass
        except BaseException as error:  # reported by the test thread
            errors.append(error)

    _run_clients(work, clients)
    assert not errors, errors
    assert sum(committed) >= 1
    cur = setup.cursor()
    cur.execute("SELECT k, n FROM c ORDER BY k")
    assert cur.fetchall() == [(1, sum(committed))] + [(i + 2, committed[i]) for i in range(clients)]
    setup.commit()

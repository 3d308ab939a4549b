"""Threaded contention: concurrent transfers between bank accounts keep every invariant.

Each worker thread has its own connection and runs a bounded number of transfers
(read two balances, write both back, append a ledger row), retrying on
SerializationFailure. Afterwards: money is conserved, every balance equals its
opening balance plus what the ledger says moved, and the ledger holds exactly the
transfers whose commit returned.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import pytest

import tique
import tique.checkpoint
from progress import wait_for
from sqlhelp import rows, run
from tique.checkpoint import checkpoint, ensure_background_checkpointer

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]

OPENING = 1000
THREADS = 4
RETRIES = 60  # per transfer; a transfer that still loses is counted, not hidden
JOIN_TIMEOUT = 60.0

pytestmark = pytest.mark.timeout(180)




@dataclass
class Tally:
    committed: list[int] = field(default_factory=list)  # ledger ids whose commit returned
    aborts: int = 0
    gave_up: int = 0
    abort_messages: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def transfer(conn: tique.Connection, ledger_id: int, src: int, dst: int, amount: int, rng: random.Random) -> None:
    """One read-modify-write transfer; the new balances are computed here, in the client,
    so a lost update would show up as created or destroyed money."""
    (src_balance,), = rows(conn, "SELECT bal FROM accounts WHERE id = ?", (src,))
    (dst_balance,), = rows(conn, "SELECT bal FROM accounts WHERE id = ?", (dst,))
    amount = min(amount, src_balance)
    time.sleep(rng.random() * 0.002)  # widen the read-to-write window so writers overlap
    assert run(conn, "UPDATE accounts SET bal = ? WHERE id = ?", (src_balance - amount, src)) == 1
    assert run(conn, "UPDATE accounts SET bal = ? WHERE id = ?", (dst_balance + amount, dst)) == 1
    assert run(conn, "INSERT INTO ledger (id, src, dst, amount) VALUES (?, ?, ?, ?)", (ledger_id, src, dst, amount)) == 1
    conn.commit()


def worker(conn: tique.Connection, me: int, transfers: int, accounts: int, tally: Tally, deadline: float) -> None:
    rng = random.Random(1000 + me)
    try:
        for n in range(transfers):
            if time.monotonic() > deadline:
                tally.problems.append(f"worker {me} ran out of time after {n} transfers")
                return
            src, dst = rng.sample(range(accounts), 2)
            amount = rng.randint(1, 50)
            ledger_id = me * 1_000_000 + n
            for _ in range(RETRIES):
                try:
                    transfer(conn, ledger_id, src, dst, amount, rng)
                except tique.SerializationFailure as failure:
                    assert not conn.in_transaction
                    with tally.lock:
                        tally.aborts += 1
                        tally.abort_messages.add(str(failure).split(":")[0])
                    continue
                with tally.lock:
                    tally.committed.append(ledger_id)
                break
            else:
                with tally.lock:
                    tally.gave_up += 1
    except BaseException as error:  # reported by the test, never swallowed
        tally.problems.append(f"worker {me}: {error!r}")
        try:
            conn.rollback()
        except Exception:
            pass


def open_bank(connect: Connect, accounts: int) -> tique.Connection:
    admin = connect()
    run(admin, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)")
    run(admin, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, amount INTEGER NOT NULL)")
    admin.cursor().executemany("INSERT INTO accounts (id, bal) VALUES (?, ?)", [(i, OPENING) for i in range(accounts)])
    admin.commit()
    return admin


def run_load(connections: list[tique.Connection], transfers: int, accounts: int) -> Tally:
    tally = Tally()
    deadline = time.monotonic() + JOIN_TIMEOUT - 5
    threads = [threading.Thread(target=worker, args=(conn, i, transfers, accounts, tally, deadline), daemon=True)
               for i, conn in enumerate(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a worker thread did not finish in time"
    assert tally.problems == []
    return tally


def check_invariants(connect: Connect, tally: Tally, accounts: int, transfers: int) -> None:
    for formulation in ("rank", "scan"):
        reader = connect(snapshot=formulation)
        balances = dict(rows(reader, "SELECT id, bal FROM accounts"))
        ledger = rows(reader, "SELECT id, src, dst, amount FROM ledger")
        reader.close()
        assert sorted(balances) == list(range(accounts)), "an account vanished or appeared"
        assert sum(balances.values()) == accounts * OPENING, "money was created or destroyed"
        assert min(balances.values()) >= 0
        # The ledger is exactly the transfers whose commit returned ...
        assert sorted(r[0] for r in ledger) == sorted(tally.committed)
        assert len(tally.committed) + tally.gave_up == THREADS * transfers
        # ... and explains every balance: no update was lost.
        expected = {i: OPENING for i in range(accounts)}
        for _, src, dst, amount in ledger:
            expected[src] -= amount
            expected[dst] += amount
        assert balances == expected
    # Every abort was a genuine first-committer-wins conflict: nobody held a commit
    # timestamp past the commit timeout in this test.
    assert all(m.startswith("could not serialize") for m in tally.abort_messages), tally.abort_messages


@pytest.mark.parametrize("accounts,transfers", [(20, 20), (2, 12)], ids=["spread", "hot-spot"])
def test_concurrent_transfers_keep_invariants(connect: Connect, native: Native, accounts: int, transfers: int) -> None:
    admin = open_bank(connect, accounts)
    tally = run_load([connect() for _ in range(THREADS)], transfers, accounts)
    check_invariants(connect, tally, accounts, transfers)
    if accounts == 2:
        # Two accounts, four writers: conflicts are certain, so certification must abort some.
        assert tally.aborts > 0
    # Checkpointing the result changes nothing a reader sees, and purges the cache.
    checkpoint(admin)
    check_invariants(connect, tally, accounts, transfers)
    assert native("SELECT count(*) FROM accounts_cache") == [(0,)]
    assert native("SELECT count(*), sum(bal) FROM accounts_storage") == [(accounts, accounts * OPENING)]


def test_concurrent_transfers_with_background_checkpointer(connect: Connect, native: Native, monkeypatch: pytest.MonkeyPatch) -> None:
    # Rounds every 20 ms as configured: the pacing that stretches the wait after a slow
    # round would make how much the caches hold depend on the machine's speed.
    monkeypatch.setattr(tique.checkpoint, "MAX_BUSY_SHARE", 1.0)
    accounts, transfers = 6, 20
    admin = open_bank(connect, accounts)
    connections = [connect(checkpoint_interval_ms=20) for _ in range(THREADS)]
    background = ensure_background_checkpointer(admin.backend, 0.02)  # the one the connections started
    runs_before = background.runs
    tally = run_load(connections, transfers, accounts)
    runs_during = background.runs - runs_before
    left_after_load = native("SELECT count(*) FROM accounts_cache")[0][0]
    assert runs_during > 0, "the background checkpointer never ran during the load"
    # Every attempt wrote two account versions; the checkpointer purged as it went.
    assert left_after_load < 2 * (len(tally.committed) + tally.aborts)
    assert background.last_error is None, f"background checkpoint failed: {background.last_error!r}"
    check_invariants(connect, tally, accounts, transfers)
    # Once the load is over, the checkpointer drains the caches on its own.
    wait_for(lambda: native("SELECT (SELECT count(*) FROM accounts_cache) + (SELECT count(*) FROM ledger_cache)")[0][0] == 0,
             poll=0.05)
    assert native("SELECT count(*) FROM accounts_cache") == [(0,)]
    assert native("SELECT count(*) FROM ledger_cache") == [(0,)]
    assert native("SELECT count(*), sum(bal) FROM accounts_storage") == [(accounts, accounts * OPENING)]
    assert native("SELECT count(*) FROM ledger_storage") == [(len(tally.committed),)]
    assert background.last_error is None, f"background checkpoint failed: {background.last_error!r}"
    check_invariants(connect, tally, accounts, transfers)

"""Recovery (paper, section 2.4.2): unfinished transactions become aborts, and the oracle
is re-seeded from the committed log. Idempotent: running it twice changes nothing more."""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from tique.backends.base import Backend
from tique.catalog import TableDef
from tique.oracle.local import LocalOracle


def recover(backend: Backend, raw: Any, tables: list[TableDef], *, force: bool, first_open: bool) -> bool:
    """Runs recovery if the engine restarted (server backends) or the database was just
    opened by this process (embedded backends), or always when `force`."""
    if isinstance(backend.oracle, LocalOracle):
        if not (first_open or force):
            return False
        _recover_local(backend, raw, tables)
        return True
    return backend.oracle.recover(raw, force)


def _recover_local(backend: Backend, raw: Any, tables: list[TableDef]) -> None:
    next_txid, last_cts = recover_from_log(backend, raw, tables)
    oracle = backend.oracle
    assert isinstance(oracle, LocalOracle)
    oracle.seed(next_txid, last_cts)


def recover_from_log(backend: Backend, raw: Any, tables: list[TableDef] | None = None) -> tuple[int, int]:
    """For an oracle whose state died with its process (embedded, or MonetDB's UDFs):
    abort every commit timestamp without an outcome, mark the cache rows of transactions
    that never committed as rolled back, and return (next txid, last commit timestamp)
    to seed the oracle with. Nobody runs transactions meanwhile."""
    if tables is None:
        tables = list(backend.catalog_tables(raw, backend.rows(raw, "SELECT name, ddl FROM tq_tables", [])).values())
    q = lambda n: exp.to_identifier(n, quoted=True).sql(backend.dialect)  # noqa: E731
    # Everything that held a commit timestamp without an outcome is aborted: its write-set,
    # or its read-set (a SERIALIZABLE writer whose writes wrote no row), says it held one.
    backend.execute(raw, """INSERT INTO tq_outcome (cts, txid, did_commit)
        SELECT DISTINCT w.cts, w.txid, FALSE FROM (SELECT cts, txid FROM tq_write_sets UNION SELECT cts, txid FROM tq_read_sets) w
        WHERE NOT EXISTS (SELECT 1 FROM tq_outcome o WHERE o.cts = w.cts)""", [])
    # Cache rows of transactions that never got a commit marker will never be visible;
    # record them as rolled back so the checkpointer purges them.
    highest = 0
    for table in tables:
        backend.execute(raw, f"""INSERT INTO tq_rolled_back (txid)
            SELECT DISTINCT c.tq_txid FROM {q(table.cache)} c
            WHERE NOT EXISTS (SELECT 1 FROM tq_outcome o WHERE o.txid = c.tq_txid)
              AND NOT EXISTS (SELECT 1 FROM tq_rolled_back r WHERE r.txid = c.tq_txid)""", [])
        (row,) = backend.rows(raw, f"SELECT coalesce(max(tq_txid), 0) FROM {q(table.cache)}", [])
        highest = max(highest, int(row[0]))
    (row,) = backend.rows(raw, """SELECT
        coalesce((SELECT max(cts) FROM tq_write_sets), 0),
        coalesce((SELECT max(cts) FROM tq_outcome), 0),
        coalesce((SELECT max(txid) FROM tq_write_sets), 0),
        coalesce((SELECT max(txid) FROM tq_outcome), 0),
        coalesce((SELECT max(txid) FROM tq_rolled_back), 0),
        coalesce((SELECT max(cts) FROM tq_read_sets), 0),
        coalesce((SELECT max(txid) FROM tq_read_sets), 0)""", [])
    last_cts = max(int(row[0]), int(row[1]), int(row[5]))
    highest = max(highest, int(row[2]), int(row[3]), int(row[4]), int(row[6]))
    return highest + 1, last_cts

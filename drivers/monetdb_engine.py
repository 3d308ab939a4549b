"""MonetDB: a schema on a server given by URL (or TIQUE_MONETDB_URL), or on an
`mserver5 --set embedded_c=true` we start from PATH."""
from __future__ import annotations

import datetime
import itertools
import os
from typing import Any, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pymonetdb

from drivers.base import Engine, quote
from drivers.qmark import ConnectionAdapter, qmark_to_format
import tique.dialects.monetdb  # noqa: F401  (registers the dialect the tokenizer uses)

_names = itertools.count(1)


def _translate(sql: str, params: Sequence[Any]) -> tuple[str, Sequence[Any] | None]:
    if not params:
        return sql, None  # pymonetdb applies %-formatting only when given parameters
    text, order = qmark_to_format(sql, "monetdb")
    return text, [params[i] for i in order]


def _copy_value(value: Any) -> str:
    """One field of MonetDB's COPY text format: NULL as the null string, text quoted with
    backslash escapes (COPY INTO's default escape character)."""
    if value is None or (isinstance(value, float) and value != value):
        return "NULL"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def connect_args(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return dict(hostname=parts.hostname or "127.0.0.1", port=parts.port or 50000,
                username=unquote(parts.username or "monetdb"), password=unquote(parts.password or "monetdb"),
                database=parts.path.lstrip("/") or "demo")


class MonetDBEngine(Engine):
    name = "monetdb"
    executemany_batches = False  # pymonetdb's executemany runs execute once per row

    def __init__(self, url: str | None = None) -> None:
        self.server: Any = None
        url = url or os.environ.get("TIQUE_MONETDB_URL")
        if url is None:
            from drivers.monetdb_server import MonetDBServer

            self.server = MonetDBServer()  # FileNotFoundError with the reason when there is none
            url = self.server.url
        parts = urlsplit(url)
        schema = (parse_qs(parts.query).get("schema") or [None])[0]
        if schema is None:
            schema = f"bench_{os.getpid()}_{next(_names)}"
            url = f"{url}{'&' if parts.query else '?'}schema={schema}"
        self.url = url
        self.schema = schema
        self.args = connect_args(url)

    @property
    def tique_url(self) -> str:
        return self.url

    def native_connect(self) -> ConnectionAdapter:
        conn = pymonetdb.connect(autocommit=True, **self.args)
        cur = conn.cursor()
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.schema, 'monetdb')}")
        cur.execute(f"SET SCHEMA {quote(self.schema, 'monetdb')}")
        conn.set_autocommit(False)
        return ConnectionAdapter(conn, _translate)

    def version(self) -> str:
        conn = pymonetdb.connect(autocommit=True, **self.args)
        try:
            cur = conn.cursor()
            cur.execute("SELECT value FROM sys.environment WHERE name = 'monet_version'")
            row = cur.fetchone()
        finally:
            conn.close()
        return f"MonetDB {row[0] if row else '?'}"

    def is_abort(self, error: BaseException) -> bool:
        """MonetDB aborts a transaction that lost a write-write conflict at COMMIT (40000)
        or at the conflicting statement (42000 'transaction is aborted')."""
        text = str(error).lower()
        return isinstance(error, (pymonetdb.exceptions.OperationalError, pymonetdb.exceptions.IntegrityError)) and (
            "conflict" in text or "aborted" in text)

    def bulk_load(self, raw: Any, table: str, columns: Sequence[str], batch: Sequence[np.ndarray]) -> int:
        """COPY INTO with the rows inline in the statement: MonetDB's bulk path, no file
        on the server's side needed."""
        count = len(batch[0]) if len(batch) else 0
        if not count:
            return 0
        names = ", ".join(quote(c, "monetdb") for c in columns)
        lines = ["|".join(_copy_value(v) for v in row) for row in zip(*(a.tolist() for a in batch))]
        statement = (f"COPY {count} RECORDS INTO {quote(table, 'monetdb')} ({names}) FROM STDIN "
                     f"USING DELIMITERS '|', E'\\n', '\"' NULL AS 'NULL';\n" + "\n".join(lines) + "\n")
        conn = raw._conn if isinstance(raw, ConnectionAdapter) else raw
        conn.cursor().execute(statement)
        return count

    def restart(self) -> None:
        if self.server is None:
            super().restart()
        self.server.restart()

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

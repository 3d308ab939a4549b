"""MonetDB through pymonetdb, with the oracle in C UDFs.

Per connection it keeps server-side prepared statements for rewritten statements that
repeat (like psycopg's prepare threshold) and switches the optimizer pipeline only when
a statement needs the other one: `minimal_fast` for point and commit-path statements,
`default_pipe` for analytical ones (paper, section 3.2.1).
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import pymonetdb
from sqlglot import exp

import tique.dialects.monetdb  # noqa: F401  (registers the dialect)
from tique import errors
from tique.backends.base import Backend
from tique.oracle.monetdb import MonetDBOracle
from tique.rewrite.params import Compiled
from tique.rewrite.templates import template_text

PREPARE_THRESHOLD = 2  # executions of one text before it is prepared server-side
OLTP_PIPE, OLAP_PIPE = "minimal_fast", "default_pipe"
_DOLLAR = re.compile(r"\$(\d+)")
_TOKEN = re.compile(r"__tqp_(\w+?)__")
# MonetDB aborts an INSERT ... SELECT that reads a table others append to, but never a
# plain INSERT ... VALUES: tique's own INSERT ... SELECTs run as a read, then the insert.
_INTERNAL_INSERT = re.compile(r'^INSERT INTO ("?(?:tq_\w+|\w+_cache|\w+_storage)"?) (\([^)]*\)) ((?:SELECT|WITH|\().*)$', re.DOTALL)


@dataclass
class Session:
    """One pymonetdb connection and what tique caches on it."""
    conn: Any
    uses: dict[str, int] = field(default_factory=dict)
    prepared: dict[str, tuple[int, int]] = field(default_factory=dict)  # text -> (id, markers)
    pipeline: str = "default_pipe"

    def cursor(self) -> Any:
        return self.conn.cursor()


def _dollar_to_format(sql: str, params: Sequence[Any]) -> tuple[str, list]:
    """Fixed metadata statements use $n markers; pymonetdb binds %s in text order."""
    order = [int(m) - 1 for m in _DOLLAR.findall(sql)]
    return _DOLLAR.sub("%s", sql.replace("%", "%%")), [params[i] for i in order]


class MonetDBBackend(Backend):
    dialect = "monetdb"
    supports_returning = False

    def __init__(self, url: str, prepare_threshold: int = PREPARE_THRESHOLD, **_: object) -> None:
        super().__init__()
        self.url = url
        parts = urlsplit(url)
        self._connect_args = dict(
            hostname=parts.hostname or "127.0.0.1", port=parts.port or 50000,
            username=unquote(parts.username or "monetdb"), password=unquote(parts.password or "monetdb"),
            database=parts.path.lstrip("/") or "demo",
        )
        self.schema = (parse_qs(parts.query).get("schema") or [None])[0]
        self.prepare_threshold = prepare_threshold
        self.supports_unlogged = True
        self.oracle = MonetDBOracle(self.rows, self._recover_from_log, self.insert_abort_outcome)

    # -- connections -----------------------------------------------------------
    def open(self) -> Session:
        conn = pymonetdb.connect(autocommit=True, **self._connect_args)
        if self.schema:
            cur = conn.cursor()
            q = exp.to_identifier(self.schema, quoted=True).sql(self.dialect)
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
            cur.execute(f"SET SCHEMA {q}")
        return Session(conn)

    def close_raw(self, raw: Session) -> None:
        raw.conn.close()

    def _set_pipeline(self, raw: Session, pipeline: str) -> None:
        if raw.pipeline != pipeline:
            raw.cursor().execute(f"SET optimizer = '{pipeline}'")
            raw.pipeline = pipeline

    def execute(self, raw: Session, sql: str, params: Sequence[Any], analytic: bool = False) -> Any:
        self._set_pipeline(raw, OLAP_PIPE if analytic else OLTP_PIPE)
        cur = raw.cursor()
        if "$" in sql and _DOLLAR.search(sql):
            text, values = _dollar_to_format(sql, params)
        else:
            text, values = sql, list(params)
        split = _INTERNAL_INSERT.match(text)
        if split is not None:
            return self._insert_via_client(raw, split, values)
        if not values:
            cur.execute(text.replace("%%", "%") if "%%" in text else text)
            return cur
        prepared = raw.prepared.get(text)
        if prepared is None:
            uses = raw.uses.get(text, 0) + 1
            raw.uses[text] = uses
            if uses >= self.prepare_threshold:
                prepared = self._prepare(raw, text)
        if prepared is not None:
            ident, markers = prepared
            try:
                cur.execute(f"EXEC {ident}({', '.join(['%s'] * markers)})", values)
                return cur
            except pymonetdb.exceptions.Error:
                raw.prepared.pop(text, None)  # e.g. a table it used was dropped: run it plainly
                cur = raw.cursor()
        cur.execute(text, values)
        return cur

    def _insert_via_client(self, raw: Session, split: re.Match[str], values: list) -> Any:
        target, columns, query = split.groups()
        rows = self.execute(raw, query, values).fetchall()
        cur = raw.cursor()
        if rows:
            marks = "(" + ", ".join(["%s"] * len(rows[0])) + ")"
            cur.execute(f"INSERT INTO {target} {columns.replace('%', '%%')} VALUES {', '.join([marks] * len(rows))}",
                        [v for row in rows for v in row])
        return _Inserted(len(rows))

    def _prepare(self, raw: Session, text: str) -> tuple[int, int] | None:
        plain = text.replace("%s", "?").replace("%%", "%")
        cur = raw.cursor()
        try:
            cur.execute(f"PREPARE {plain}")
        except pymonetdb.exceptions.Error:
            return None
        if cur.lastrowid is None:
            return None
        raw.prepared[text] = (int(cur.lastrowid), text.count("%s"))
        return raw.prepared[text]

    def affected(self, cursor: Any) -> int:
        return int(cursor.rowcount)

    @contextlib.contextmanager
    def atomic(self, raw: Session) -> Iterator[None]:
        raw.conn.set_autocommit(False)
        try:
            yield
        except BaseException:
            raw.conn.rollback()
            raw.conn.set_autocommit(True)
            raise
        raw.conn.commit()
        raw.conn.set_autocommit(True)

    def run_script(self, raw: Session, script: str) -> None:
        cur = raw.cursor()
        for statement in _split(script):
            cur.execute(statement)

    # -- SQL generation ----------------------------------------------------------
    def param_node(self, n: int) -> exp.Expression:
        raise NotImplementedError("MonetDB markers are positional; see compile()")

    def compile(self, tree: exp.Expression) -> Compiled:
        """pymonetdb binds %s markers in text order, so the names follow the rendered text."""
        tree = tree.copy()
        for node in list(tree.find_all(exp.Placeholder)):
            node.replace(exp.column(f"__tqp_{node.this}__"))
        text = tree.sql(self.dialect).replace("%", "%%")
        names = tuple(_TOKEN.findall(text))
        return Compiled(_TOKEN.sub("%s", text), names)

    def key_hash(self, table_name: str, keys: list[exp.Expression]) -> exp.Expression:
        parts: exp.Expression = exp.Literal.string(table_name)
        for k in keys:
            parts = exp.DPipe(this=exp.DPipe(this=parts, expression=exp.Literal.string("|")), expression=exp.cast(k, "TEXT"))
        return exp.Anonymous(this="tq_hash", expressions=[parts])

    def metadata_script(self) -> str:
        script = template_text("monetdb/metadata.sql")
        if not self.supports_unlogged:
            script = script.replace("CREATE UNLOGGED TABLE", "CREATE TABLE")
        return script

    def oracle_script(self) -> str:
        namespace = f"{self._connect_args['database']}.{self.schema or 'sys'}"
        return template_text("monetdb/oracle.sql").replace("TQ_NAMESPACE", namespace.replace("*/", ""))

    def install(self, raw: Session) -> None:
        """Capabilities are probed, never assumed from a version number."""
        cur = raw.cursor()
        try:
            cur.execute("CREATE UNLOGGED TABLE tq_probe_unlogged (x INT)")
            cur.execute("DROP TABLE tq_probe_unlogged")
        except pymonetdb.exceptions.Error:
            self.supports_unlogged = False
        try:
            self.run_script(raw, self.metadata_script())
            cur.execute("SELECT count(*) FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id "
                        "WHERE f.name IN ('tq_oracle', 'tq_hash') AND s.name = current_schema")
            if cur.fetchone()[0] < 2:
                self.run_script(raw, self.oracle_script())
            cur.execute("SELECT r1 FROM tq_oracle(9, 0, 0)")
            cur.fetchall()
        except pymonetdb.exceptions.Error as error:
            text = str(error)
            if "embedded_c" in text or "language c" in text.lower() or "embedded C" in text:
                raise errors.OperationalError(
                    "tique needs MonetDB's C UDFs for its timestamp oracle, and this server was not started with "
                    "embedded_c=true. Start it as `mserver5 --set embedded_c=true ...`, or with monetdbd run "
                    f"`monetdb set embedc=true <database>` and restart the database. (server said: {text.strip()})") from error
            raise

    def drop_ddl(self, table: Any) -> list[str]:
        # MonetDB has no DROP SEQUENCE IF EXISTS; the catalog says whether there is one.
        return [d.replace("DROP SEQUENCE IF EXISTS", "DROP SEQUENCE") for d in super().drop_ddl(table)]

    def refine(self, error: BaseException, target: type[errors.Error]) -> type[errors.Error]:
        text = str(error)
        if "constraint" in text.lower() and "violated" in text.lower():
            return errors.IntegrityError
        if "division by zero" in text.lower():
            return errors.DataError
        return target

    def is_unique_violation(self, error: BaseException) -> bool:
        text = str(error).upper()
        return "PRIMARY KEY CONSTRAINT" in text or "UNIQUE CONSTRAINT" in text

    def not_null_column(self, error: BaseException) -> str | None:
        found = re.search(r"NOT NULL constraint violated for column [^.\s]+\.(\S+)", str(error))
        return found.group(1).strip("'\"") if found else None

    def insert_abort_outcome(self, raw: Any, cts: int, txid: int | None) -> None:
        """Callers hold the oracle's decision for cts (expired, or its owner dead)."""
        self.execute(raw, "INSERT INTO tq_outcome (cts, txid, did_commit) VALUES ($1, $2, FALSE)", [cts, txid])

    def try_checkpoint_latch(self, raw: Any) -> bool:
        return self.oracle.try_latch(raw, 60_000)

    def release_checkpoint_latch(self, raw: Any) -> None:
        self.oracle.release_latch(raw)

    def _recover_from_log(self, raw: Any) -> tuple[int, int]:
        from tique.recovery import recover_from_log

        return recover_from_log(self, raw)


class _Inserted:
    """The result of an insert sent as read-then-insert: only its row count."""
    description = None

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount


def _split(script: str) -> list[str]:
    """Splits on `;` at line ends, keeping C UDF bodies (which end in `};`) whole."""
    statements, current, depth = [], [], 0
    for line in script.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("--")):
            continue
        current.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and stripped.endswith(";"):
            statements.append("\n".join(current).rstrip().rstrip(";"))
            current = []
    if current and "".join(current).strip():
        statements.append("\n".join(current))
    return statements

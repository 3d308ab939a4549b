"""Bad input: a clear PEP 249 exception naming the statement and the cause, nothing
half-written, and the transaction still usable afterwards. Every engine.

The pattern of most tests: open a transaction, make an earlier write of its own,
send the bad statement, then check (from inside the transaction and physically, via
`native`) that the table is exactly as before that statement, and that the
transaction still commits with its earlier write.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest

import tique
from sqlhelp import rows, run, table_names
from tique.checkpoint import checkpoint

Connect = Callable[..., tique.Connection]
Native = Callable[[str], list[tuple]]

SEED = [(1, "a", 10), (2, "b", 20), (3, "c", 30)]
OWN = (10, "own", 100)  # the transaction's own earlier write




def content(conn: tique.Connection) -> list[tuple]:
    return rows(conn, "SELECT id, v, n FROM t ORDER BY id")


def names_statement(error: BaseException, statement: str) -> bool:
    return " ".join(statement.split()) in str(error)


def seeded_autocommit(connect: Connect) -> tique.Connection:
    """Table t with the SEED rows committed, on an autocommit connection."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR NOT NULL, n INTEGER)")
    conn.cursor().executemany("INSERT INTO t VALUES (?, ?, ?)", SEED)
    return conn


def seeded(connect: Connect) -> tique.Connection:
    """Table t with committed rows, and a transaction that has written OWN."""
    conn = seeded_autocommit(connect)
    conn.autocommit = False
    run(conn, "INSERT INTO t VALUES (?, ?, ?)", OWN)
    return conn


def rejected(conn: tique.Connection, native: Native, error: type[tique.Error], statement: str, params: Sequence[Any] = ()) -> BaseException:
    """Runs a bad statement: it raises `error` naming the statement. As natively, a failed
    statement aborts its transaction: later statements raise InFailedTransaction until
    rollback(), after which nothing of the transaction is left, logically or physically
    (no cache rows). Then OWN is written again, so the next case starts where this one did.
    A wrong parameter count is caught before anything runs and aborts nothing (as in psycopg)."""
    before, cache_before = content(conn), native("SELECT count(*) FROM t_cache")
    with pytest.raises(error) as raised:
        run(conn, statement, params)
    assert names_statement(raised.value, statement), str(raised.value)
    if conn.transaction_failed:
        with pytest.raises(tique.InFailedTransaction):
            content(conn)
        conn.rollback()
        assert content(conn) == [r for r in before if r != OWN], statement
        run(conn, "INSERT INTO t VALUES (?, ?, ?)", OWN)
    assert content(conn) == before, statement
    assert native("SELECT count(*) FROM t_cache") == cache_before, statement
    return raised.value


def still_usable(conn: tique.Connection, connect: Connect) -> None:
    """After its failed statements were rolled back, the connection's transaction writes and commits."""
    assert conn.in_transaction
    run(conn, "UPDATE t SET n = n + 1 WHERE id = ?", (OWN[0],))
    conn.commit()
    assert content(connect()) == sorted(SEED + [(OWN[0], OWN[1], OWN[2] + 1)])


# -- syntax -------------------------------------------------------------------------------

SYNTAX_ERRORS = [  # statement, line, column
    ("SELEC id FROM t", 1, 13),  # where the parser gives up
    ("SELECT id FROM t WHERE", 1, 22),
    ("SELECT id,\n  v\nFROM t\nWHERE id = = 1", 4, 12),
    ("SELECT id FROM t WHERE id IN (?, ?, ? FROM t", 1, 42),  # columns count the application's `?`, not rewritten markers
    ("INSERT INTO t VALUES (1, 'x'", 1, 28),
    ("UPDATE t SET n = WHERE id = 1", 1, 22),
    ("DELETE t WHERE id = 1 1", 1, 23),
    ("SELECT 'unterminated FROM t", 1, 8),  # where the string starts
    ("SELECT id\nFROM t WHERE v = \"x", 2, 18),
    ("SELECT id FROM t /* open", 1, 25),  # the end
]


def test_syntax_errors_name_statement_and_position(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, line, column in SYNTAX_ERRORS:
        params = (1, 2, 3) if "?" in statement else ()
        error = rejected(conn, native, tique.ProgrammingError, statement, params)
        assert "syntax error" in str(error), str(error)
        assert f"at line {line}, column {column}" in str(error), str(error)
    still_usable(conn, connect)


INTERNAL_WORDS = ("_storage", "_cache", "tq_", "Candidate", "LINE ", "sqlglot", "<class", "Required keyword", "Values list")


def in_user_terms(error: BaseException, statement: str) -> str:
    """The message, checked to show none of tique's rewritten SQL or internal names
    (other than those the application itself wrote)."""
    message = str(error)
    assert not [w for w in INTERNAL_WORDS if w in message and w not in statement], message
    return message


def test_misspelled_keyword_is_a_syntax_error_in_the_users_text(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, where in [("SELEC * FROM t", "at line 1, column 12: unexpected 'FROM'"),
                             ("SELECT * FROM t WHERE id = ? +", "at line 1, column 30"),
                             ("SELECT id FROM t WHERE id IN (?,?,? FROM t", "at line 1, column 40")]:
        message = in_user_terms(rejected(conn, native, tique.ProgrammingError, statement, (1, 2, 3)[:statement.count("?")]), statement)
        assert f"syntax error {where}" in message, message
    still_usable(conn, connect)


def test_missing_columns_and_tables_are_named_in_the_statements_terms(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    run(conn, "SELECT 1")
    for statement, cause in [
        ("SELECT nocol FROM t", "table t has no column 'nocol'"),
        ("SELECT x.nocol FROM t AS x", "table t has no column 'nocol'"),
        ("SELECT v FROM t WHERE nocol = 1", "table t has no column 'nocol'"),
        ("UPDATE t SET n = 1 WHERE nocol = 1", "table t has no column 'nocol'"),
        ("DELETE FROM t WHERE nocol = 1", "table t has no column 'nocol'"),
        ("SELECT nocol FROM t AS a JOIN t AS b ON a.id = b.id", "table t has no column 'nocol'"),
        ("SELECT * FROM tt", "table 'tt' does not exist"),
        ("SELECT * FROM tq_outcom", "table 'tq_outcom' does not exist"),  # no hint at tique's own tables
    ]:
        message = in_user_terms(rejected(conn, native, tique.ProgrammingError, statement), statement)
        assert message.startswith(cause) and "tq_outcome" not in message, message
    still_usable(conn, connect)


def test_statement_count_and_bad_markers(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, params, cause in [
        ("", (), "empty statement"),
        ("DELETE FROM t; DROP TABLE t", (), "one statement per execute"),
        ("SELECT $0 FROM t", (1,), "$0"),
        ("SELECT $0 + $1 FROM t", (1,), "$0"),
        ("UPDATE t SET WHERE id = 1", (), "UPDATE without SET"),
    ]:
        assert cause in str(rejected(conn, native, tique.ProgrammingError, statement, params))
    with pytest.raises(tique.ProgrammingError):
        conn.cursor().execute(b"SELECT 1")  # type: ignore[arg-type]
    still_usable(conn, connect)


# -- unsupported statements -----------------------------------------------------------------


def test_failed_ddl_inside_open_transaction_says_so_in_user_terms(connect: Connect, native: Native, engine: str) -> None:
    conn = seeded(connect)
    error = rejected(conn, native, tique.ProgrammingError, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    assert "'t' already exists" in str(error)
    assert {name for (name,) in native("SELECT name FROM tq_tables")} == {"t"}
    still_usable(conn, connect)


def test_unsupported_constructs_on_tique_tables(connect: Connect, native: Native) -> None:
    conn = seeded_autocommit(connect)
    run(conn, "CREATE VIEW tv AS SELECT * FROM t")
    conn.autocommit = False
    run(conn, "INSERT INTO t VALUES (?, ?, ?)", OWN)
    for statement, what in [
        ("INSERT INTO t (id, v) VALUES (20, 'x') ON CONFLICT DO NOTHING", "CONFLICT"),
        ("INSERT INTO t (id, v) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET v = 'y'", "CONFLICT"),
        ("INSERT INTO t (id, v) VALUES (20, 'x') RETURNING id", "RETURNING"),
        ("UPDATE t SET n = 0 RETURNING id", "RETURNING"),
        ("DELETE FROM t WHERE id = 1 RETURNING v", "RETURNING"),
        ("ALTER TABLE t ADD COLUMN z INTEGER", "ALTER"),
        ("ALTER TABLE t RENAME TO t2", "ALTER"),
        ("TRUNCATE t", "TRUNCATE"),
        ("CREATE UNIQUE INDEX t_v ON t (v)", "UNIQUE INDEX"),
        ("INSERT INTO tv VALUES (1, 'x', 1)", "view 'tv'"),
    ]:
        error = rejected(conn, native, tique.NotSupportedError, statement)
        assert what in str(error) and "not supported" in str(error), str(error)
    still_usable(conn, connect)


def test_unsupported_ddl_between_transactions(connect: Connect, native: Native, engine: str) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR NOT NULL, n INTEGER)")
    for statement, what in [
        ("CREATE TABLE c (id INTEGER) AS SELECT id FROM t", "column list AS SELECT"),
        ("CREATE TABLE u (id INTEGER, FOREIGN KEY (id) REFERENCES t (id))", "FOREIGN KEY"),
        ("DROP TABLE t, t_other", "one tique table"),
    ]:
        with pytest.raises(tique.NotSupportedError, match=what) as raised:
            run(conn, statement)
        assert names_statement(raised.value, statement)
    assert {name for (name,) in native("SELECT name FROM tq_tables")} == {"t"}
    assert not table_names(native, engine) & {"c", "u", "u_storage"}
    run(conn, "INSERT INTO t VALUES (1, 'a', 1)")
    conn.commit()


def test_reserved_column_prefix_is_refused(connect: Connect) -> None:
    conn = connect()
    with pytest.raises(tique.ProgrammingError, match="tq_"):
        run(conn, "CREATE TABLE u (id INTEGER PRIMARY KEY, tq_seq INTEGER)")
    with pytest.raises(tique.ProgrammingError, match="primary key column"):
        run(conn, "CREATE TABLE u (id INTEGER, PRIMARY KEY (nope))")
    assert conn.tables == {}


# -- parameters, names ----------------------------------------------------------------------


def test_wrong_number_of_parameters(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, params in [
        ("SELECT id FROM t WHERE id = ?", ()),
        ("SELECT id FROM t WHERE id = ?", (1, 2)),
        ("SELECT id FROM t WHERE id = $2", (1,)),
        ("INSERT INTO t VALUES (?, ?, ?)", (20, "x")),
        ("UPDATE t SET n = ? WHERE id = ?", (1, 2, 3)),
        ("DELETE FROM t WHERE id = ?", ()),
        ("SELECT ? + 1", ()),  # no tique table: checked all the same
    ]:
        error = rejected(conn, native, tique.ProgrammingError, statement, params)
        assert f"{len(params)} value(s)" in str(error)
    still_usable(conn, connect)


def test_executemany_stops_at_a_bad_parameter_row(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    cur = conn.cursor()
    with pytest.raises(tique.ProgrammingError):
        cur.executemany("INSERT INTO t VALUES (?, ?, ?)", [(20, "x", 1), (21, "y"), (22, "z", 3)])
    assert [r[0] for r in content(conn)] == [1, 2, 3, 10, 20]  # executemany is a loop of executes
    run(conn, "DELETE FROM t WHERE id = 20")
    still_usable(conn, connect)


def test_unknown_column_or_table(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement in [
        "SELECT nope FROM t",
        "SELECT id FROM t WHERE nope = 1",
        "SELECT * FROM nope",
        "SELECT t.id FROM t JOIN nope ON nope.id = t.id",
        "INSERT INTO t (id, nope) VALUES (20, 'x')",
        "INSERT INTO t VALUES (20, 'x', 1, 'nope')",
        "INSERT INTO t SELECT id FROM nope",
        "INSERT INTO nope VALUES (1)",
        "UPDATE t SET nope = 1",
        "UPDATE t SET n = nope + 1",
        "UPDATE t SET n = 1 WHERE nope = 1",
        "DELETE FROM t WHERE nope = 1",
        "DELETE FROM nope",
    ]:
        error = rejected(conn, native, tique.ProgrammingError, statement)
        assert "nope" in str(error).split("statement:")[0] or "4 values for 3 columns" in str(error), str(error)
    still_usable(conn, connect)


# -- constraints ------------------------------------------------------------------------------


def test_primary_key_violations(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, params in [
        ("INSERT INTO t VALUES (?, ?, ?)", (2, "again", 0)),  # a committed key
        ("INSERT INTO t VALUES (?, ?, ?)", (OWN[0], "again", 0)),  # the transaction's own earlier write
        ("INSERT INTO t VALUES (20, 'p', 0), (21, 'q', 0), (20, 'r', 0)", ()),  # within one statement
        ("INSERT INTO t (id, v, n) SELECT id, v, n FROM t WHERE id <= 2", ()),
        ("UPDATE t SET id = 3 WHERE id = 1", ()),  # moves a key onto a committed key
        ("UPDATE t SET id = ? WHERE id = 2", (OWN[0],)),  # ... onto an own write
        ("UPDATE t SET id = 7 WHERE id IN (1, 2)", ()),  # two rows onto one new key
        ("UPDATE t SET id = id + 1 WHERE id < 3", ()),  # 2 -> 3 collides; 1 -> 2 alone would not
    ]:
        error = rejected(conn, native, tique.IntegrityError, statement, params)
        assert "duplicate primary key (id)" in str(error), str(error)
    still_usable(conn, connect)


def test_key_checks_are_per_statement(connect: Connect, native: Native) -> None:
    """Keys only have to be unique once the statement is done: swapping and shifting keys is fine."""
    conn = seeded(connect)
    assert run(conn, "UPDATE t SET id = 4 - id WHERE id IN (1, 3)") == 2
    assert run(conn, "UPDATE t SET id = id + 1 WHERE id IN (1, 2, 3)") == 3
    assert content(conn) == [(2, "c", 30), (3, "b", 20), (4, "a", 10), OWN]
    run(conn, "DELETE FROM t WHERE id = 4")
    run(conn, "INSERT INTO t VALUES (4, 'new', 0)")  # a key freed in this transaction can be reused
    conn.commit()
    assert content(connect()) == [(2, "c", 30), (3, "b", 20), (4, "new", 0), OWN]


def test_primary_key_violation_in_autocommit_mode(connect: Connect, native: Native) -> None:
    conn = seeded_autocommit(connect)
    with pytest.raises(tique.IntegrityError):
        run(conn, "INSERT INTO t VALUES (4, 'd', 0), (1, 'dup', 0)")
    assert not conn.in_transaction
    assert content(connect()) == SEED
    run(conn, "INSERT INTO t VALUES (4, 'd', 0)")
    assert content(connect()) == SEED + [(4, "d", 0)]


def test_not_null_violations(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, params in [
        ("INSERT INTO t VALUES (20, NULL, 1)", ()),
        ("INSERT INTO t VALUES (?, ?, ?)", (20, None, 1)),
        ("INSERT INTO t (id, n) VALUES (20, 1)", ()),  # omitted, no default
        ("INSERT INTO t VALUES (20, 'ok', 1), (21, NULL, 1)", ()),  # one bad row: none written
        ("INSERT INTO t (id, v) SELECT id + 50, CASE WHEN id = 2 THEN NULL ELSE v END FROM t", ()),
        ("UPDATE t SET v = NULL WHERE id = 2", ()),
        ("UPDATE t SET v = ? WHERE id >= 1", (None,)),
        ("UPDATE t SET id = NULL WHERE id = 1", ()),  # key columns are NOT NULL
    ]:
        error = rejected(conn, native, tique.IntegrityError, statement, params)
        assert "NULL in a NOT NULL column of t" in str(error), str(error)
    still_usable(conn, connect)


# -- injection and quoting ----------------------------------------------------------------------

NASTY = [
    "x'); DROP TABLE t; --",
    "1 OR 1=1",
    "' OR '1'='1",
    "it's",
    "''",
    'double "quotes"',
    "back\\slash",
    "trailing backslash \\",
    "\\'",
    "$1",
    "$2 $1",
    "?",
    "? ?",
    "%s",
    "%(name)s",
    ":name",
    "$$dollar$$",
    "$tag$ x $tag$",
    "E'\\x41'",
    "-- comment",
    "/* comment",
    "unicode: ünïcödé ☃ 🎉 中文 עברית",
    "new\nline\ttab\rcr",
    "",
    "   ",
]


def test_values_are_stored_verbatim_and_never_become_sql(connect: Connect, native: Native) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR NOT NULL, n INTEGER)")
    run(conn, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR, tag VARCHAR)")
    cur = conn.cursor()
    cur.executemany("INSERT INTO notes (id, body) VALUES (?, ?)", list(enumerate(NASTY)))
    assert cur.rowcount == len(NASTY)
    for i, value in enumerate(NASTY):
        # as a bound value in WHERE and SET, with both marker styles
        assert rows(conn, "SELECT id FROM notes WHERE body = $1", (value,)) == [(i,)], value
        assert run(conn, "UPDATE notes SET tag = ? WHERE body = ?", (value, value)) == 1
    assert run(conn, "DELETE FROM notes WHERE body = ?", ("1 OR 1=1",)) == 1
    conn.commit()
    reader = connect()
    expected = [(i, v, v) for i, v in enumerate(NASTY) if v != "1 OR 1=1"]
    assert rows(reader, "SELECT id, body, tag FROM notes ORDER BY id") == expected
    assert rows(reader, "SELECT count(*) FROM t") == [(0,)]  # t still exists
    assert {name for (name,) in native("SELECT name FROM tq_tables")} == {"t", "notes"}
    # a string where a number belongs is a data error, not a predicate
    with pytest.raises(tique.DataError):
        rows(reader, "SELECT body FROM notes WHERE id = ?", ("1 OR 1=1",))
    reader.rollback()
    # and values reach storage unchanged when the checkpointer moves them
    checkpoint(reader)
    assert sorted(native("SELECT id, body, tag FROM notes_storage")) == expected


def test_one_numeric_marker_in_set_and_where(connect: Connect, engine: str, request: pytest.FixtureRequest) -> None:
    conn = connect()
    run(conn, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR, tag VARCHAR)")
    run(conn, "INSERT INTO notes (id, body) VALUES (1, 'x')")
    assert run(conn, "UPDATE notes SET tag = $1 WHERE body = $1", ("x",)) == 1
    assert rows(conn, "SELECT tag FROM notes") == [("x",)]


def test_markers_inside_literals_and_comments_are_text(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR)")
    assert run(conn, "INSERT INTO notes VALUES (?, '? and $1 stay text') -- a ? in a comment", (1,)) == 1
    assert run(conn, "INSERT INTO notes VALUES (?, /* ? */ ?)", (2, "'?'")) == 1
    assert rows(conn, "SELECT body FROM notes WHERE body LIKE '%?%' ORDER BY id") == [("? and $1 stay text",), ("'?'",)]
    conn.commit()


def test_reserved_words_and_odd_characters_as_identifiers(connect: Connect, native: Native) -> None:
    conn = connect()
    ddl = 'CREATE TABLE "select" ("order" INTEGER, "from" VARCHAR NOT NULL, "group" INTEGER DEFAULT 5, "we""ird col" VARCHAR, PRIMARY KEY ("order"))'
    run(conn, ddl)
    run(conn, 'CREATE TABLE "table" ("select" VARCHAR, "where" INTEGER)')  # no key: hidden row id
    assert run(conn, 'INSERT INTO "select" ("order", "from", "we""ird col") VALUES (?, ?, ?), (?, ?, ?)', (1, "a", "x", 2, "b", "y")) == 2
    assert run(conn, 'INSERT INTO "table" VALUES (?, ?), (?, ?)', ("s", 1, "s", 1)) == 2
    conn.commit()
    assert run(conn, 'UPDATE "select" SET "group" = "group" + "order", "from" = "from" || ? WHERE "order" = ?', ("!", 2)) == 1
    assert run(conn, 'UPDATE "select" SET "order" = "order" + 10 WHERE "from" = ?', ("a",)) == 1
    assert run(conn, 'UPDATE "table" SET "where" = "where" + 1 WHERE "select" = ?', ("s",)) == 2
    conn.commit()
    with pytest.raises(tique.IntegrityError):
        run(conn, 'INSERT INTO "select" ("order", "from") VALUES (11, ?)', ("dup",))
    conn.rollback()
    assert rows(conn, 'SELECT s."order", s."from", s."group", s."we""ird col" FROM "select" AS s ORDER BY 1') == [(2, "b!", 7, "y"), (11, "a", 5, "x")]
    assert rows(conn, 'SELECT "order" FROM "select" WHERE "order" = ?', (11,)) == [(11,)]
    assert rows(conn, 'SELECT count(*), sum("where") FROM "table" JOIN "select" ON "table"."where" = "select"."order" - 9') == [(2, 4)]
    assert run(conn, 'DELETE FROM "table" WHERE "where" = 2') == 2
    conn.commit()
    fresh = connect()  # a connection that reads both definitions back from the catalog
    assert fresh.tables["select"].key == ("order",)
    assert rows(fresh, 'SELECT "order", "from" FROM "select" ORDER BY "order"') == [(2, "b!"), (11, "a")]
    fresh.rollback()
    checkpoint(fresh)
    assert sorted(native('SELECT "order", "from" FROM "select_storage"')) == [(2, "b!"), (11, "a")]
    run(fresh, 'DROP TABLE "select"')
    run(fresh, 'DROP TABLE "table"')
    assert native("SELECT count(*) FROM tq_tables") == [(0,)]


# -- closed objects --------------------------------------------------------------------------------


CURSOR_OPERATIONS: dict[str, Callable[[tique.Cursor], object]] = {
    "execute": lambda cur: cur.execute("SELECT 1"),
    "executemany": lambda cur: cur.executemany("SELECT ?", [(1,)]),
    "fetchone": lambda cur: cur.fetchone(),
    "fetchmany": lambda cur: cur.fetchmany(1),
    "fetchall": lambda cur: cur.fetchall(),
    "iterate": lambda cur: list(cur),
}
CONNECTION_OPERATIONS: dict[str, Callable[[tique.Connection], object]] = {
    "cursor": lambda conn: conn.cursor(),
    "commit": lambda conn: conn.commit(),
    "rollback": lambda conn: conn.rollback(),
    "autocommit": lambda conn: setattr(conn, "autocommit", True),
}


def _with_pending_result(connect: Connect) -> tuple[tique.Connection, tique.Cursor]:
    conn = connect()
    run(conn, "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY)")
    run(conn, "INSERT INTO t VALUES (1), (2)")
    cur = conn.cursor()
    cur.execute("SELECT id FROM t ORDER BY id")
    return conn, cur


def _interface_error(operation: Callable[[], object], name: str) -> None:
    with pytest.raises(tique.InterfaceError, match="closed") as raised:
        operation()
        pytest.fail(f"{name} on a closed object did not raise")
    assert not isinstance(raised.value, tique.DatabaseError)


def test_closed_connection_raises_interface_error(connect: Connect) -> None:
    for name in [*CURSOR_OPERATIONS, *CONNECTION_OPERATIONS]:
        conn, cur = _with_pending_result(connect)
        conn.close()
        if name in CURSOR_OPERATIONS:
            _interface_error(lambda: CURSOR_OPERATIONS[name](cur), name)
        else:
            _interface_error(lambda: CONNECTION_OPERATIONS[name](conn), name)
    assert rows(connect(), "SELECT count(*) FROM t") == [(0,)]  # closing rolled the open transactions back


def test_closed_cursor_raises_interface_error(connect: Connect) -> None:
    for name, operation in CURSOR_OPERATIONS.items():
        conn, cur = _with_pending_result(connect)
        cur.close()
        _interface_error(lambda: operation(cur), name)
        assert rows(conn, "SELECT count(*) FROM t") == [(2,)], name  # the connection and its transaction carry on
        conn.rollback()


def test_closing_a_cursor_keeps_the_transaction(connect: Connect) -> None:
    conn = connect()
    run(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    cur = conn.cursor()
    cur.execute("INSERT INTO t VALUES (1)")
    cur.close()
    assert conn.in_transaction
    conn.commit()
    assert rows(connect(), "SELECT id FROM t") == [(1,)]


def test_connect_to_bad_urls() -> None:
    with pytest.raises(tique.InterfaceError, match="scheme"):
        tique.connect("nosuchdb:///x")


# -- engine errors ----------------------------------------------------------------------------------


def test_engine_errors_become_data_errors(connect: Connect, native: Native) -> None:
    conn = seeded(connect)
    for statement, params in [
        ("SELECT id % (n - n) FROM t", ()),  # division by zero
        ("SELECT CAST(v AS INTEGER) FROM t", ()),
        ("SELECT id FROM t WHERE id = ?", ("not a number",)),
        ("UPDATE t SET n = CAST(v AS INTEGER) WHERE id >= 1", ()),
        ("UPDATE t SET n = n % (n - n)", ()),
        ("UPDATE t SET id = id + 100, n = CAST(v AS INTEGER)", ()),  # fails after the tombstones of the moved keys
        ("UPDATE t SET n = ? WHERE id = 1", ("not a number",)),
        ("INSERT INTO t (id, v, n) SELECT id + 50, v, CAST(v AS INTEGER) FROM t", ()),
        ("INSERT INTO t (id, v, n) SELECT id + 50, v, n % (n - n) FROM t", ()),
        ("DELETE FROM t WHERE CAST(v AS INTEGER) = 1", ()),
    ]:
        error = rejected(conn, native, tique.DataError, statement, params)
        assert error.__cause__ is not None  # the engine's own exception stays attached
    still_usable(conn, connect)


@pytest.mark.parametrize("how", ["method", "statement"])
def test_commit_after_another_client_dropped_a_written_table(connect: Connect, how: str) -> None:
    """Either the drop waits for the writer's open transaction and gives up with a clear
    error (PostgreSQL: the writer's engine transaction holds the table, as natively),
    and the writer commits; or the drop goes through, and the commit fails with a tique
    error (never reports success) and leaves the connection usable. Nothing hangs."""
    writer, dropper = connect(), connect()
    run(writer, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    run(writer, "CREATE TABLE keep (id INTEGER PRIMARY KEY)")
    run(writer, "INSERT INTO t VALUES (1)")
    run(writer, "INSERT INTO keep VALUES (1)")
    try:
        run(dropper, "DROP TABLE t")
    except tique.OperationalError as error:
        assert "lock" in str(error).lower(), str(error)
        writer.commit() if how == "method" else run(writer, "COMMIT")
        assert rows(dropper, "SELECT id FROM keep") == [(1,)]
        return
    try:
        writer.commit() if how == "method" else run(writer, "COMMIT")
    except tique.DatabaseError:
        kept = [(0,)]  # nothing of it
    else:
        kept = [(1,)]  # all of it, as if it committed before the drop (MonetDB)
    assert not writer.in_transaction
    assert rows(dropper, "SELECT count(*) FROM keep") == kept  # all or nothing
    dropper.rollback()
    run(writer, "INSERT INTO keep VALUES (2)")
    writer.commit()
    assert rows(dropper, "SELECT count(*) FROM keep WHERE id = 2") == [(1,)]


def test_engine_error_in_autocommit_mode_writes_nothing(connect: Connect) -> None:
    conn = seeded_autocommit(connect)
    with pytest.raises(tique.DataError):
        run(conn, "UPDATE t SET id = id + 100, n = CAST(v AS INTEGER)")
    assert not conn.in_transaction
    assert content(connect()) == SEED
    assert run(conn, "UPDATE t SET n = n + 1 WHERE id = 1") == 1
    assert content(connect())[0] == (1, "a", 11)

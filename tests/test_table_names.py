"""Table names, and the column lists of a table's constraints, mean what they mean natively:
PostgreSQL and MonetDB fold an unquoted name to lower case and keep a quoted one, so
"MixedT" and mixedt are two tables (and "Id" and id two columns); DuckDB keeps a name as
written and compares names without case, so they are one. Each statement runs natively
and through tique on every engine; both must fail, or both give the same answer."""
from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

import tique
from fuzz.compare import same_rows
from fuzz.engines import Native, run_tique
from native_pair import native_pair
from tique.checkpoint import checkpoint
from tique.recovery import recover

# (statement, parameters), run in order
TABLE_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY, v INTEGER)', ()),
    ('CREATE TABLE mixedt (k INTEGER PRIMARY KEY, v INTEGER)', ()),  # a second table, except on DuckDB
    ('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY)', ()),  # exists everywhere
    ('INSERT INTO "MixedT" VALUES (?, ?), (?, ?)', (1, 10, 2, 20)),
    ('INSERT INTO mixedt VALUES (?, ?)', (1, 100)),
    ('INSERT INTO MixedT VALUES (?, ?)', (3, 300)),  # unquoted: mixedt, except on DuckDB
    ('SELECT k, v FROM "MixedT" ORDER BY k', ()),
    ('SELECT k, v FROM mixedt ORDER BY k', ()),
    ('SELECT k, v FROM MIXEDT ORDER BY k', ()),
    ('SELECT "MixedT".v FROM "MixedT" WHERE "MixedT".k = ?', (2,)),
    ('SELECT v FROM "MixedT" WHERE k = ?', (1,)),
    ('SELECT v FROM mixedt WHERE k = ?', (1,)),
    ('SELECT a.k, a.v, b.v FROM "MixedT" AS a JOIN mixedt AS b ON a.k = b.k ORDER BY a.k', ()),
    # Unaliased, each qualifier names its own table: a key pinned on one is not the other's.
    ('SELECT "MixedT".k, "MixedT".v, mixedt.v FROM "MixedT", mixedt WHERE mixedt.k = ? ORDER BY 1', (1,)),
    ('SELECT "MixedT".v FROM "MixedT" JOIN mixedt ON "MixedT".k = mixedt.k WHERE MixedT.k = ? ORDER BY 1', (3,)),
    ('SELECT k, v FROM "MixedT" WHERE k IN (SELECT k FROM mixedt) ORDER BY k', ()),
    # A CTE hides the tables its name names, as the engine compares names.
    ('WITH mixedt AS (SELECT 5 AS k, 50 AS v) SELECT k, v FROM "MixedT" ORDER BY k', ()),
    ('WITH "MixedT" AS (SELECT 5 AS k, 50 AS v) SELECT k, v FROM mixedt ORDER BY k', ()),
    ('WITH "MixedT" AS (SELECT 5 AS k, 50 AS v) SELECT k, v FROM "MixedT" ORDER BY k', ()),
    ('UPDATE "MixedT" SET v = v + ? WHERE k = ?', (1, 1)),
    ('UPDATE "MixedT" SET v = "MixedT".v + ? WHERE "MixedT".k = ?', (1, 2)),
    ('UPDATE mixedt SET v = v * ? WHERE k > ?', (2, 0)),
    ('UPDATE "MixedT" SET v = mixedt.v FROM mixedt WHERE "MixedT".k = mixedt.k', ()),
    ('DELETE FROM mixedt WHERE k = ?', (3,)),
    ('SELECT k, v FROM "MixedT" ORDER BY k', ()),
    ('SELECT k, v FROM mixedt ORDER BY k', ()),
    ('CREATE TABLE "MixedC" AS SELECT k, v FROM "MixedT" WHERE k < ?', (3,)),
    ('SELECT k, v FROM "MixedC" ORDER BY k', ()),
    ('SELECT k, v FROM mixedc ORDER BY k', ()),  # no such table, except on DuckDB
    ('DROP TABLE "MixedC"', ()),
    ('CREATE INDEX "MixedI" ON "MixedT" (v)', ()),
    ('CREATE INDEX mixedi ON mixedt (v)', ()),
    ('CREATE VIEW "MixedV" AS SELECT k, v FROM "MixedT" WHERE v > 10', ()),
    ('SELECT k, v FROM "MixedV" ORDER BY k', ()),
    ('SELECT k, v FROM mixedv ORDER BY k', ()),  # no such view, except on DuckDB
    ('CREATE TABLE "NoKey" (a INTEGER)', ()),  # a hidden row id, drawn from the table's own sequence
    ('CREATE TABLE nokey (a INTEGER)', ()),
    ('INSERT INTO "NoKey" VALUES (?), (?)', (1, 2)),
    ('INSERT INTO nokey VALUES (?)', (3,)),
    ('SELECT a FROM "NoKey" ORDER BY a', ()),
    ('SELECT a FROM nokey ORDER BY a', ()),
    ('DROP VIEW "MixedV"', ()),
    ('DROP INDEX "MixedI"', ()),
    ('DROP TABLE mixedt', ()),  # the lower-case table; on DuckDB the one table
    ('SELECT k, v FROM "MixedT" ORDER BY k', ()),
    ('SELECT k, v FROM mixedt ORDER BY k', ()),
    ('DROP TABLE "MixedT"', ()),
    ('SELECT k, v FROM "MixedT" ORDER BY k', ()),
]

# Constraint column lists name columns as the engine resolves names.
CONSTRAINT_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE kc ("Id" INTEGER, id INTEGER NOT NULL, PRIMARY KEY ("Id"), UNIQUE (id))', ()),  # two columns, except on DuckDB
    ('INSERT INTO kc VALUES (?, ?)', (1, 1)),
    ('INSERT INTO kc VALUES (?, ?)', (1, 2)),  # repeats the key "Id"
    ('INSERT INTO kc VALUES (?, ?)', (2, 1)),  # repeats the unique id
    ('INSERT INTO kc VALUES (?, ?), (?, ?)', (4, 5, 5, 4)),
    ('SELECT "Id", id FROM kc ORDER BY 1', ()),
    ('SELECT "Id", id FROM kc WHERE id = ?', (4,)),  # id is not the key
    ('SELECT "Id", id FROM kc WHERE "Id" = ?', (4,)),
    ('UPDATE kc SET id = id + ? WHERE "Id" = ?', (10, 4)),
    ('UPDATE kc SET id = id + ? WHERE id = ?', (100, 4)),
    ('DELETE FROM kc WHERE id = ?', (1,)),
    ('SELECT "Id", id FROM kc ORDER BY 1', ()),
    ('CREATE TABLE kd ("Id" INTEGER, v INTEGER, PRIMARY KEY (id))', ()),  # no column id, except on DuckDB
    ('CREATE TABLE ke ("Id" INTEGER PRIMARY KEY, v INTEGER, UNIQUE ("V"))', ()),  # no column "V", except on DuckDB
    ('CREATE TABLE kf ("Id" INTEGER PRIMARY KEY, "V" INTEGER, UNIQUE ("V"), UNIQUE (v))', ()),  # v is "V" on DuckDB only
]
# MonetDB (11.45 here) has no CHECK constraints natively; tique's are compared on the others.
CHECK_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE kg ("Low" INTEGER PRIMARY KEY, "High" INTEGER, CHECK ("High" > "Low"))', ()),
    ('INSERT INTO kg VALUES (?, ?)', (1, 2)),
    ('INSERT INTO kg VALUES (?, ?)', (3, 2)),  # breaks the CHECK
    ('SELECT "Low", "High" FROM kg ORDER BY 1', ()),
    ('CREATE TABLE kh ("Low" INTEGER PRIMARY KEY, "High" INTEGER, CHECK (high > low))', ()),  # no such columns, except on DuckDB
]


# Constraint names are kept and compared as the engine keeps and compares them: a quoted
# name keeps its case, unquoted ones fold on PostgreSQL and MonetDB; a name the engine
# already holds is refused where the engine refuses it (CHECK names per table and UNIQUE
# names per schema on PostgreSQL, UNIQUE names per schema on MonetDB; DuckDB never); and an
# unnamed constraint is named as the engine names it.
UNIQUE_NAME_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE na (a INTEGER, b INTEGER, CONSTRAINT "MyU" UNIQUE (a))', ()),
    ('INSERT INTO na VALUES (?, ?), (?, ?)', (1, 1, 1, 2)),  # breaks "MyU"
    ('CREATE TABLE nb (a INTEGER, b INTEGER, CONSTRAINT u UNIQUE (a), CONSTRAINT U UNIQUE (b))', ()),  # one name, except on DuckDB
    ('CREATE TABLE nc (a INTEGER, b INTEGER, CONSTRAINT u UNIQUE (a), CONSTRAINT "U" UNIQUE (b))', ()),  # two names everywhere
    ('INSERT INTO nc VALUES (?, ?), (?, ?)', (1, 1, 2, 1)),  # breaks "U"
    ('CREATE TABLE nd (a INTEGER, CONSTRAINT u UNIQUE (a))', ()),  # nc holds u, except on DuckDB
    ('CREATE TABLE IF NOT EXISTS nc (a INTEGER, CONSTRAINT u UNIQUE (a))', ()),  # exists: nothing to do
    ('CREATE TABLE ne (a INTEGER, b INTEGER, UNIQUE (a), UNIQUE (a, b))', ()),
    ('INSERT INTO ne VALUES (?, ?), (?, ?)', (1, 1, 1, 2)),  # ne_a_key (ne_a_unique on MonetDB)
    ('CREATE TABLE nf (a INTEGER, b INTEGER, CONSTRAINT ne_a_unique UNIQUE (b))', ()),  # MonetDB's name of ne's
    ('CREATE TABLE ng (a INTEGER, b INTEGER, CONSTRAINT ne_a_key UNIQUE (b))', ()),  # PostgreSQL's
    ('CREATE TABLE nh (a INTEGER, b INTEGER, UNIQUE (a), CONSTRAINT nh_a_key UNIQUE (b))', ()),  # the unnamed one took it on PostgreSQL
    ('CREATE TABLE ni (a INTEGER, b INTEGER, CONSTRAINT ni_a_key UNIQUE (b), UNIQUE (a))', ()),
    ('INSERT INTO ni VALUES (?, ?), (?, ?)', (1, 1, 1, 2)),  # ni_a_key1 on PostgreSQL
    ('CREATE TABLE nj (a INTEGER, UNIQUE (a), CONSTRAINT nj_a_key UNIQUE (a))', ()),  # one index on PostgreSQL
    ('INSERT INTO nj VALUES (?), (?)', (1, 1)),
    ('CREATE TABLE nk (k INTEGER PRIMARY KEY, b INTEGER, CONSTRAINT nc UNIQUE (b))', ()),  # the table nc is a relation on PostgreSQL
    ('CREATE TABLE nl (k INTEGER PRIMARY KEY, b INTEGER, CONSTRAINT nl UNIQUE (b))', ()),  # so is the table itself
    ('CREATE TABLE nm (k INTEGER PRIMARY KEY, b INTEGER, CONSTRAINT "Nm" UNIQUE (b))', ()),
    ('INSERT INTO nm VALUES (?, ?), (?, ?)', (1, 1, 2, 1)),
    ('DROP TABLE ne', ()),
    ('CREATE TABLE nn (a INTEGER, CONSTRAINT ne_a_key UNIQUE (a))', ()),  # free again
    ('INSERT INTO nn VALUES (?), (?)', (1, 1)),
    ('CREATE TABLE np (a INTEGER, b INTEGER, UNIQUE (a, b))', ()),
    ('INSERT INTO np VALUES (?, ?), (?, ?)', (1, 1, 1, 1)),  # np_a_b_key (np_a_b_unique on MonetDB)
]
CHECK_NAME_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE ca (a INTEGER, CONSTRAINT "MyC" CHECK (a > 0))', ()),
    ('INSERT INTO ca VALUES (?)', (-1,)),
    ('CREATE TABLE cb (a INTEGER, CONSTRAINT c CHECK (a > 0), CONSTRAINT C CHECK (a < 10))', ()),  # one name, except on DuckDB
    ('CREATE TABLE cc (a INTEGER, CONSTRAINT c CHECK (a > 0), CONSTRAINT "C" CHECK (a < 10))', ()),
    ('INSERT INTO cc VALUES (?)', (11,)),  # breaks "C"
    ('CREATE TABLE cd (a INTEGER, CHECK (a > 0), CONSTRAINT cd_a_check CHECK (a < 10))', ()),  # the unnamed one took it
    ('CREATE TABLE ce (a INTEGER, CONSTRAINT ce_a_check CHECK (a < 10), CHECK (a > 0))', ()),
    ('INSERT INTO ce VALUES (?)', (-1,)),  # ce_a_check1
    ('CREATE TABLE cf (a INTEGER, b INTEGER, CONSTRAINT x UNIQUE (a), CONSTRAINT x CHECK (b > 0))', ()),
    ('CREATE TABLE cg (a INTEGER, CONSTRAINT cg_a_key CHECK (a > 0), UNIQUE (a))', ()),
    ('INSERT INTO cg VALUES (?), (?)', (1, 1)),  # cg_a_key1
    ('CREATE TABLE ch (a INTEGER, CONSTRAINT nc CHECK (a > 0))', ()),  # a CHECK's name is its table's own
]
# CREATE TABLE ... AS: result columns repeat a name as the engine compares names.
CREATE_AS_STATEMENTS: list[tuple[str, tuple]] = [
    ('CREATE TABLE xa AS SELECT 1 AS a, 2 AS "A"', ()),  # two columns (DuckDB renames the second)
    ('SELECT * FROM xa', ()),
    ('CREATE TABLE xb AS SELECT 1 AS a, 2 AS A', ()),  # one name repeated, except on DuckDB
    ('SELECT * FROM xb', ()),
    ('CREATE TABLE xc AS SELECT 1 AS "Ab", 2 AS "aB", 3 AS ab', ()),
    ('SELECT * FROM xc', ()),
]


@pytest.fixture
def pair(engine: str, connect: Any, request: pytest.FixtureRequest) -> Iterator[tuple[tique.Connection, Native]]:
    yield from native_pair(engine, connect, request, [], "tnames")


# The constraint a native error names: PostgreSQL's "name", MonetDB's 'table.name'.
_NAMED_CONSTRAINT = re.compile(r'constraint "(?P<pg>[^"]+)"|constraint \'[^.\']+\.(?P<monetdb>[^\']+)\'')


def _run_alike(conn: tique.Connection, native: Native, statements: list[tuple[str, tuple]]) -> None:
    for statement, params in statements:
        reads = statement.startswith(("SELECT", "WITH"))
        want = native.execute(statement, params, write=not reads)
        got = run_tique(conn, statement, params)
        said = f"{statement}: natively {want.brief()}, through tique {got.brief()}"
        if want.kind == "error":
            assert got.kind == "error", said
            named = _NAMED_CONSTRAINT.search(str(want.error))
            constraint = named.group("pg") or named.group("monetdb") if named else ""
            if constraint and not constraint.endswith("_pkey"):  # tique's key errors name the key's columns
                assert f'constraint "{constraint}"' in str(got.error), said
            continue
        assert got.kind == want.kind, said
        if reads:
            assert got.names == want.names, said
            assert same_rows(want.rows, got.rows, ordered="ORDER BY" in statement), said


def test_quoted_table_names_keep_their_case(engine: str, pair: tuple[tique.Connection, Native]) -> None:
    conn, native = pair
    _run_alike(conn, native, TABLE_STATEMENTS)


def test_constraint_columns_resolve_as_natively(engine: str, pair: tuple[tique.Connection, Native]) -> None:
    conn, native = pair
    _run_alike(conn, native, CONSTRAINT_STATEMENTS + (CHECK_STATEMENTS if engine != "monetdb" else []))


def test_constraint_names_are_kept_and_compared_as_natively(engine: str, pair: tuple[tique.Connection, Native]) -> None:
    conn, native = pair
    _run_alike(conn, native, UNIQUE_NAME_STATEMENTS + (CHECK_NAME_STATEMENTS if engine != "monetdb" else []))


def test_create_as_repeats_a_column_name_as_natively(engine: str, pair: tuple[tique.Connection, Native]) -> None:
    conn, native = pair
    _run_alike(conn, native, CREATE_AS_STATEMENTS)


def test_catalog_and_errors_name_a_table_as_declared(engine: str, connect: Any) -> None:
    """The catalog keeps the name the engine gives the table; an error names it so."""
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY, v INTEGER)')
    assert "MixedT" in conn.tables
    cur.execute('INSERT INTO "MixedT" VALUES (1, 1)')
    with pytest.raises(tique.IntegrityError) as raised:
        cur.execute('INSERT INTO "MixedT" VALUES (1, 2)')
    assert "MixedT" in str(raised.value)
    with pytest.raises(tique.ProgrammingError) as raised:
        cur.execute('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY)')
    assert "MixedT" in str(raised.value)


def test_two_tables_apart_by_case_through_checkpoint_and_recovery(engine: str, connect: Any) -> None:
    """Checkpoint and recovery enumerate the tables by the catalog's names: on PostgreSQL
    and MonetDB "MixedT" and mixedt each keep their own rows through both."""
    if engine == "duckdb":
        pytest.skip("DuckDB names one table by both spellings")
    conn = connect()
    cur = conn.cursor()
    cur.execute('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY, v INTEGER)')
    cur.execute('CREATE TABLE mixedt (k INTEGER PRIMARY KEY, v INTEGER)')
    conn.commit()
    cur.executemany('INSERT INTO "MixedT" VALUES (?, ?)', [(i, i) for i in range(5)])
    cur.executemany('INSERT INTO mixedt VALUES (?, ?)', [(i, -i) for i in range(3)])
    conn.commit()
    cur.execute('UPDATE "MixedT" SET v = v + 100 WHERE k = 1')
    cur.execute('DELETE FROM mixedt WHERE k = 2')
    conn.commit()
    report = checkpoint(conn)
    assert report.moved >= 7  # the rows of both tables, the deleted one aside
    backend = conn.backend
    assert sorted(backend.rows(conn._raw, 'SELECT k, v FROM "MixedT_storage"', [])) == [(0, 0), (1, 101), (2, 2), (3, 3), (4, 4)]
    assert sorted(backend.rows(conn._raw, 'SELECT k, v FROM "mixedt_storage"', [])) == [(0, 0), (1, -1)]
    conn.commit()
    cur.execute('UPDATE mixedt SET v = 7 WHERE k = 0')
    conn.commit()
    assert recover(backend, conn._raw, list(conn.tables.values()), force=True, first_open=False) in (True, False)
    other = connect()
    c = other.cursor()
    c.execute('SELECT k, v FROM "MixedT" ORDER BY k')
    assert c.fetchall() == [(0, 0), (1, 101), (2, 2), (3, 3), (4, 4)]
    c.execute('SELECT k, v FROM mixedt ORDER BY k')
    assert c.fetchall() == [(0, 7), (1, -1)]
    other.commit()


def test_adopt_keeps_a_quoted_name(engine: str, connect: Any) -> None:
    """A native table named "Native" is adopted under that name, beside a native table
    native on PostgreSQL and MonetDB."""
    from tique.adopt import adopt

    setup = connect(static_tables=["native"])
    cur = setup.cursor()
    cur.execute('CREATE TABLE "Native" (k INTEGER PRIMARY KEY, v INTEGER)')
    cur.execute('INSERT INTO "Native" VALUES (1, 10), (2, 20)')
    setup.commit()
    admin = connect(autocommit=True)
    assert adopt(admin, ["Native"]) == {"Native": 2}
    conn = connect()
    c = conn.cursor()
    assert "Native" in conn.tables
    c.execute('UPDATE "Native" SET v = v + 1 WHERE k = 1')
    c.execute('SELECT k, v FROM "Native" ORDER BY k')
    assert c.fetchall() == [(1, 11), (2, 20)]
    conn.commit()


def test_another_connection_finds_a_new_table_by_its_engine_name(engine: str, connect: Any) -> None:
    """A connection that loaded the catalog before the table existed finds it by any name
    the engine takes for it (DuckDB: any case), and by no other."""
    other = connect(autocommit=True)
    other.cursor().execute("SELECT 1")
    creator = connect(autocommit=True)
    creator.cursor().execute('CREATE TABLE "MixedT" (k INTEGER PRIMARY KEY, v INTEGER)')
    creator.cursor().execute('INSERT INTO "MixedT" VALUES (1, 10)')
    cur = other.cursor()
    if engine == "duckdb":
        cur.execute("SELECT v FROM mixedt")
        assert cur.fetchall() == [(10,)]
    else:
        with pytest.raises(tique.ProgrammingError):
            cur.execute("SELECT v FROM mixedt")
    cur.execute('SELECT v FROM "MixedT"')
    assert cur.fetchall() == [(10,)]

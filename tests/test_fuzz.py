"""The differential fuzzer (fuzz/): a fixed-seed run per engine must find no wrong result;
TLP's partitioning must hold on the native engines themselves; the shrinker must reduce a
genuine difference to a small script; and the bugs the fuzzer found stay fixed."""
from __future__ import annotations

import datetime
import random
from decimal import Decimal
from typing import Any, Iterator

import pytest
import sqlglot
from sqlglot import exp

import tique
from progress import wait_for
from fuzz.compare import same_rows
from fuzz.departures import DUPLICATE_KEY
from fuzz.engines import Environment, Native, NativeDuckDB, NativePostgres, render
from fuzz.exclusions import default_features
from fuzz.generate import Generator, Statement
from fuzz.runner import Case, Config, load_native, fuzz_engine, native_pass, random_case, run_case
from fuzz.schema import Column, Schema, Table
from fuzz.shrink import reproduction, script, shrink
from sqlhelp import rows, run

# Statements per engine in the default suite: a minute or so in all on a loaded 2-core
# machine (tique on PostgreSQL costs several engine round trips per write).
STATEMENTS = {"duckdb": 200, "postgres": 60, "monetdb": 60}


@pytest.fixture
def environment(engine: str, request: pytest.FixtureRequest) -> Iterator[Environment]:
    if engine == "postgres":
        env = Environment("postgres", pg_cluster=request.getfixturevalue("pg_cluster"))
    elif engine == "monetdb":
        env = Environment("monetdb", monetdb_url=request.getfixturevalue("monetdb_server").url)
    else:
        env = Environment("duckdb")
    yield env
    env.close()


def test_fixed_seed_run_finds_no_wrong_result(engine: str, environment: Environment) -> None:
    summary = fuzz_engine(environment, Config(seed=20261124, statements=STATEMENTS[engine], statements_per_case=10))
    assert summary.compared > STATEMENTS[engine] // 2, "too few statements reached the comparison to prove much"
    reports = [reproduction(environment, case, difference, budget=60)[1] for case, difference in summary.failures]
    assert not reports, "\n\n".join(reports)


def _native(engine: str, request: pytest.FixtureRequest) -> Native:
    if engine == "duckdb":
        return NativeDuckDB()
    return NativePostgres(request.getfixturevalue("pg_cluster").create_database(f"tlp_{random.getrandbits(40):x}"))


@pytest.mark.parametrize("native_engine", ["duckdb", "postgres"])
def test_tlp_partitioning_holds_natively(native_engine: str, request: pytest.FixtureRequest) -> None:
    """Q and its three partitions recombined (TLP), and a COUNT under WHERE p and the count
    of rows p holds for (NoREC), return the same rows on the engine itself: the metamorphic
    relations, not tique, are what this checks."""
    checked = 0
    for seed in range(12):
        case = random_case(seed, 0)
        generator = Generator(random.Random(seed), case.schema, default_features())
        native = _native(native_engine, request)
        try:
            load_native(native, case, native_engine, None)
            for i in range(15):
                statement = generator.tlp_query() if i % 3 else generator.norec_query()
                whole = native.execute(*render(statement.tree, native_engine), write=False)
                if whole.kind != "rows":
                    continue  # a type error, say: nothing to partition
                parts = native.execute(*render(statement.partitioned, native_engine), write=False)
                assert parts.kind == "rows" and same_rows(whole.rows, parts.rows, typed=False), \
                    f"{render(statement.tree, native_engine)[0]}\n{whole.brief()}\n{parts.brief()}"
                checked += 1
        finally:
            native.close()
    assert checked > 60


def test_shrinker_reduces_a_genuine_engine_disagreement(request: pytest.FixtureRequest) -> None:
    """DuckDB's `/` on integers divides exactly, PostgreSQL's truncates: the same text
    (`typed` keeps sqlglot from spelling PostgreSQL's side as a float division) means two
    things, a real difference, buried in a case with several tables, rows and statements."""
    cluster = request.getfixturevalue("pg_cluster")
    rng = random.Random(7)
    schema = Schema((Table("t0", (Column("c0", "INTEGER", True), Column("c1", "VARCHAR"), Column("c2", "DATE")), ("c0",)),
                     Table("t1", (Column("c0", "INTEGER"), Column("c1", "DOUBLE")))))
    case = Case(schema, {"t0": [(i, f"s{i % 3}", None) for i in range(8)], "t1": [(i % 4, i / 4) for i in range(9)]}, [], seed=7)
    generator = Generator(rng, schema, default_features())
    statements = [generator.query() for _ in range(5)]
    division = exp.select(exp.alias_(exp.Div(this=exp.column("c0", table="s"), expression=exp.Literal.number(2), typed=True), "half"),
                          exp.alias_(exp.Upper(this=exp.column("c1", table="s")), "name")).from_("t0 AS s").where(
        exp.GTE(this=exp.column("c0", table="s"), expression=exp.Literal.number(0)))
    statements.insert(3, Statement(division))
    case.statements = statements

    def disagree(candidate: Case) -> bool:
        duck = NativeDuckDB()
        pg = NativePostgres(cluster.create_database(f"shrink_{random.getrandbits(40):x}"))
        try:
            load_native(duck, candidate, "duckdb", None)
            load_native(pg, candidate, "postgres", None)
            for statement in candidate.statements:
                a = duck.execute(*render(statement.tree, "duckdb"), write=False)
                b = pg.execute(*render(statement.tree, "postgres"), write=False)
                if a.kind == b.kind == "rows" and not same_rows(a.rows, b.rows, typed=False):
                    return True
            return False
        except Exception:
            return False
        finally:
            duck.close()
            pg.close()

    assert disagree(case)
    small = shrink(case, disagree, budget=150)
    assert disagree(small)
    assert len(small.statements) == 1
    assert sum(len(r) for r in small.rows.values()) <= 2
    assert len(small.schema.tables) == 1
    text = script(small, "duckdb")
    assert "/ 2" in text and text.count(";") <= 3, text


# -- wrong results the fuzzer found, fixed -------------------------------------------------------

@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_delete_using_counts_each_deleted_row_once(connect: Any) -> None:
    """A target row that several USING rows match is deleted once and counted once
    (fuzzer reproduction: `DELETE FROM t0 USING t0 AS s0` on two equal rows wrote 4)."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t0 (c1 VARCHAR NOT NULL)")
    run(conn, "INSERT INTO t0 VALUES ('z'), ('z')")
    assert run(conn, "DELETE FROM t0 USING t0 AS s0") == 2
    assert rows(conn, "SELECT COUNT(*) FROM t0") == [(0,)]
    run(conn, "CREATE TABLE k (id INTEGER PRIMARY KEY, v INTEGER)")
    run(conn, "INSERT INTO k VALUES (1, 1), (2, 1), (3, 2)")
    assert run(conn, "DELETE FROM k USING k AS o WHERE o.v = k.v") == 3


@pytest.mark.parametrize("engine", ["postgres"])
def test_statements_after_a_failed_pipeline_still_run(connect: Any) -> None:
    """A statement that fails in a psycopg pipeline (here a syntax error only PostgreSQL
    sees) left psycopg believing in prepared statements the server never made: every later
    statement failed with 'prepared statement "_pg3_N" does not exist'."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)")
    run(conn, "INSERT INTO t VALUES (1, 1), (2, 2)")
    for _ in range(7):
        with pytest.raises(tique.Error):
            rows(conn, "SELECT x.a FROM t AS x CROSS JOIN t AS y INTERSECT ALL WITH w AS (SELECT 1 AS a) SELECT w.a FROM w")
        assert rows(conn, "SELECT SUM(x.a) FROM t AS x JOIN t AS y ON x.a = y.b") == [(3,)]


@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_a_parameter_before_a_trailing_empty_string_literal(connect: Any) -> None:
    """sqlglot's tokenizer failed on a statement with a marker that ends in '' (fuzzer
    reproduction: UPDATE ... WHERE t0.c1 BETWEEN ? AND '' was refused as a syntax error)."""
    conn = connect(autocommit=True)
    run(conn, "CREATE TABLE t0 (c0 VARCHAR, c1 VARCHAR)")
    run(conn, "INSERT INTO t0 VALUES ('a', ''), ('b', 'x')")
    assert rows(conn, "SELECT c0 FROM t0 WHERE t0.c1 BETWEEN ? AND ''", ("",)) == [("a",)]
    assert rows(conn, "SELECT ?, ''", ("p",)) == [("p", "")]
    assert run(conn, "UPDATE t0 SET c0 = ? WHERE c1 = ''", ("z",)) == 1


# -- where native MonetDB departs from SQL, tique is compared with SQL's meaning ---------------------

def _departure_case(statement: exp.Expression, schema: Schema, rows: dict[str, list[tuple]]) -> Case:
    return Case(schema, rows, [Statement(statement)], seed=11)


_KEYED = Schema((Table("t0", (Column("c0", "INTEGER", True), Column("c1", "BIGINT", True)), ("c0", "c1")),))
_PLAIN = Schema((Table("t0", (Column("c0", "DECIMAL(10, 2)", True), Column("c1", "BOOLEAN"), Column("c3", "INTEGER", True))),))
_PAIR = Schema((Table("t0", (Column("c0", "INTEGER"), Column("c1", "INTEGER"))),))
_TEXTS = Schema((Table("t0", (Column("c0", "VARCHAR"), Column("c1", "VARCHAR", True)), ("c1",)),))
_SUMMED = Schema((Table("t0", (Column("c2", "DOUBLE"), Column("c3", "INTEGER", True)), ("c3",)),))
_PADDED = Schema((Table("t0", (Column("c0", "INTEGER"),)), Table("t1", (Column("c0", "INTEGER"),))))
_DATES = Schema((Table("t0", (Column("c0", "DATE"), Column("c1", "DATE"))),))
_WIDE = Schema((Table("t0", (Column("c0", "BIGINT"), Column("c1", "INTEGER"))),))
_DOUBLES = Schema((Table("t0", (Column("c0", "DOUBLE", True), Column("c1", "BOOLEAN"))),))


@pytest.mark.parametrize("engine", ["monetdb"])
@pytest.mark.parametrize("name, statement, schema, rows, standard", [
    # MonetDB stores two rows with one key (0,1) -> (1,1) beside (19,1) -> (1,1); SQL fails the UPDATE
    (DUPLICATE_KEY, "UPDATE t0 SET c0 = t0.c1 WHERE t0.c1 IN (1, 25, 85)", _KEYED,
     {"t0": [(5, 0), (0, 1), (19, 1)]}, "error"),
    # MonetDB refuses a select list repeating a name; SQL inserts by position
    ("monetdb-insert-select-repeated-names", "INSERT INTO t0 (c0, c1, c3) SELECT s.c0, s.c1, s.c0 FROM t0 AS s", _PLAIN,
     {"t0": [(1, True, 4), (2, None, 5)]}, 2),
    # MonetDB refuses a target row that several source rows match; SQL updates it once
    ("monetdb-update-from-several-matches", "UPDATE t0 SET c3 = t0.c3 + 1 FROM t0 AS s WHERE s.c3 > 0", _PLAIN,
     {"t0": [(1, True, 4), (2, None, 5)]}, 2),
    # silent ones: MonetDB answers, but otherwise than SQL
    # MonetDB's swap leaves both columns equal; SQL swaps them
    ("monetdb-update-reads-assigned-column", "UPDATE t0 SET c0 = t0.c1, c1 = t0.c0", _PAIR,
     {"t0": [(1, 2), (3, None)]}, 2),
    # MonetDB reads the new c0 for c1 ('aabcaa'); SQL the old one ('aabca')
    ("monetdb-update-reads-assigned-column", "UPDATE t0 SET c0 = LOWER(t0.c0 || t0.c0), c1 = (t0.c0 || t0.c1) || t0.c0",
     _TEXTS, {"t0": [("a", "abc"), ("x ", " x")]}, 2),
    # MonetDB drops the group a LEFT JOIN padded from an empty t1 in a set operation's branch; SQL keeps it
    ("monetdb-set-operation-loses-outer-join-null-group",
     "SELECT MAX(a.c0) AS m FROM t0 AS a LEFT JOIN t1 AS b ON TRUE GROUP BY b.c0 UNION ALL SELECT 7 ORDER BY 1", _PADDED,
     {"t0": [(1,)], "t1": []}, [(1,), (7,)]),
    # MonetDB takes SUM of a NOT NULL column for never NULL and drops the row; SQL returns it
    ("monetdb-is-null-of-aggregate-folded",
     "WITH w AS (SELECT SUM(s.c3) < 5 AS o FROM t0 AS s WHERE -0 = s.c2 + 1) SELECT d.o AS p FROM w AS d WHERE d.o IS NULL",
     _SUMMED, {"t0": [(0.0, 17)]}, [(None,)]),
    # MonetDB compares MAX('abc') over no rows as 'abc' and writes the row; SQL's comparison is NULL
    ("monetdb-extreme-of-no-rows-compared",
     "UPDATE t0 SET c1 = 60 WHERE 'z%' <> (SELECT MAX('abc') FROM t0 AS s WHERE s.c0 IN (2, 0, 41))",
     _WIDE, {"t0": [(92, 0)]}, 0),
    # MonetDB answers a row where MAX of a column over no rows is compared; SQL's comparison is NULL
    ("monetdb-extreme-of-no-rows-compared",
     "SELECT TRUE AS o FROM t0 AS a WHERE CAST('2023-12-13' AS DATE) < (SELECT MAX(s.c1) FROM t0 AS s WHERE "
     "s.c0 = CAST('2023-12-31' AS DATE) AND s.c1 BETWEEN s.c1 AND CAST('2024-01-03' AS DATE))",
     _DATES, {"t0": [(None, datetime.date(2023, 12, 16))]}, []),
    # MonetDB accepts a NULL for a NOT NULL column (and keeps the old value); SQL fails the UPDATE
    ("monetdb-update-accepts-null-into-not-null",
     "UPDATE t0 SET c1 = CASE WHEN FALSE THEN t0.c1 ELSE (SELECT MAX(s.c1) FROM t0 AS s WHERE s.c0 = t0.c0 AND NOT TRUE) END",
     _TEXTS, {"t0": [("a", "b")]}, "error"),
])
def test_a_departure_is_compared_with_the_standard_meaning(engine: str, environment: Environment, name: str, statement: str,
                                                           schema: Schema, rows: dict[str, list[tuple]], standard: Any) -> None:
    """The statement's native outcome violates SQL; the run counts the departure, takes SQL's
    meaning as the reference (an error, or the row count and tables of an equivalent
    statement MonetDB runs by the standard), and tique, which gives SQL's meaning, agrees."""
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), schema, rows)
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {name: 1} and undefined == 0
    want = expected[0]
    assert want is not None and want.departure and want.departure.startswith(name)
    if standard == "error":
        assert want.outcome.kind == "error"
    elif isinstance(standard, list):
        assert want.outcome.kind == "rows" and list(want.outcome.rows) == standard
    else:
        assert want.outcome.kind == "count" and want.outcome.count == standard
    report, _ = run_case(environment, case)
    assert report.departures == {name: 1}
    assert report.compared == (1 if standard == "error" else 2) and not report.differences, report.differences


@pytest.mark.parametrize("engine", ["monetdb"])
def test_a_silent_departure_is_counted_only_where_the_engine_answers_otherwise(engine: str, environment: Environment) -> None:
    """The equivalent runs for every statement of the departure's shape, but where the
    native answer is SQL's already (a row to aggregate), no departure is counted."""
    case = _departure_case(sqlglot.parse_one("SELECT SUM(s.c3) AS o FROM t0 AS s WHERE s.c3 IS NULL OR s.c3 > 0", read="duckdb"),
                           _SUMMED, {"t0": [(0.0, 17)]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {} and undefined == 0
    assert expected[0] is not None and expected[0].departure is None and expected[0].outcome.rows == ((17,),)


@pytest.mark.parametrize("engine", ["monetdb"])
def test_ungrouped_min_is_compared_with_the_reversed_max(engine: str, environment: Environment) -> None:
    """MonetDB's MIN over a FULL JOIN's padded column (1, then NULL: sorted descending) says
    NULL where SQL (and tique) say 1; the run takes the reverse of MAX of the reversed
    values as SQL's meaning, and compares tique's answer with it."""
    tree = sqlglot.parse_one("SELECT MIN(a.c3) AS m FROM t0 AS a FULL JOIN t0 AS b ON FALSE", read="duckdb")
    minimum = tree.find(exp.Min)
    assert minimum is not None
    minimum.meta["family"] = "num"  # as the generator records it
    case = _departure_case(tree, _PLAIN, {"t0": [(1, True, 1)]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-ungrouped-min-of-descending-values": 1} and undefined == 0, "MonetDB answers by the standard here now"
    assert expected[0] is not None and expected[0].outcome.rows == ((1,),)
    report, _ = run_case(environment, case)
    assert report.compared == 2 and not report.differences, report


@pytest.mark.parametrize("engine", ["duckdb"])
def test_row_number_over_ties_is_not_compared(engine: str, environment: Environment) -> None:
    """ROW_NUMBER over peers numbers them in whatever order a plan meets them; the fuzzer
    met DuckDB numbering two tied rows one way natively and the other through tique."""
    tied = sqlglot.parse_one("SELECT s.c1, ROW_NUMBER() OVER (PARTITION BY s.c0 ORDER BY s.c0) AS n FROM t0 AS s", read="duckdb")
    distinct = sqlglot.parse_one("SELECT s.c1, ROW_NUMBER() OVER (ORDER BY s.c1) AS n FROM t0 AS s", read="duckdb")
    case = Case(_PAIR, {"t0": [(1, 2), (1, 3), (2, 4)]}, [Statement(tied), Statement(distinct)], seed=11)
    expected, _, undefined, _ = native_pass(environment, case)
    assert expected[0] is None and expected[1] is not None and undefined == 1


@pytest.mark.parametrize("engine", ["monetdb"])
def test_negative_zero_joins_zero_by_the_standard(engine: str, environment: Environment) -> None:
    """MonetDB's join over stored doubles (the fuzzer's case) missed -0.0 = 0.0: 10 rows
    natively, 14 by SQL and through tique; the departure's equivalent (d + 0) gives 14."""
    statements = ["UPDATE t0 SET c0 = 0 * t0.c0 WHERE t0.c1", "INSERT INTO t0 (c0) SELECT a.c0 - b.c0 FROM t0 AS a LEFT JOIN t0 AS b ON TRUE",
                  "SELECT 'x' AS o FROM t0 AS a FULL JOIN t0 AS b ON b.c0 = a.c0"]
    case = Case(_DOUBLES, {"t0": [(-9.25, True), (-0.5, False)]},
                [Statement(sqlglot.parse_one(s, read="duckdb")) for s in statements], seed=11)
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-join-negative-zero": 1} and undefined == 0, departures
    assert expected[2] is not None and len(expected[2].outcome.rows) == 14
    report, _ = run_case(environment, case)
    assert not report.differences, report.differences


_FROM_TWO = Schema((Table("t1", (Column("c2", "VARCHAR", True), Column("c3", "VARCHAR", True)), ("c3",)),
                    Table("t2", (Column("c3", "VARCHAR", True),))))


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_from_made_standard_is_checked_for_reading_assigned_columns(engine: str, environment: Environment) -> None:
    """Two rows of t2 match the one of t1, which MonetDB refuses; its standard equivalent
    (UPDATE ... WHERE EXISTS) then reads the c2 it assigns for the second t1.c2 ('abcb');
    SQL reads the row as it was ('abcabc'), as tique does (fuzz case seed 31029093136)."""
    statement = "UPDATE t1 SET c3 = COALESCE(t1.c2, t1.c3) || t1.c2, c2 = t1.c3 FROM t2 AS s"
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), _FROM_TWO,
                           {"t1": [("abc", "b")], "t2": [("b",), ("b",)]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-update-from-several-matches": 1, "monetdb-update-reads-assigned-column": 1}
    want = expected[0]
    assert undefined == 0 and want is not None and want.tables is not None
    assert want.outcome.count == 1 and want.tables["t1"].rows == (("b", "abcabc"),)
    report, _ = run_case(environment, case)
    assert report.compared == 2 and not report.differences, report.differences


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_assigning_no_null_to_a_not_null_column_stands(engine: str, environment: Environment) -> None:
    """The NOT NULL check reads the values an UPDATE assigns; where none is NULL the native
    write stands and nothing is counted."""
    statement = "UPDATE t0 SET c1 = CASE WHEN FALSE THEN t0.c1 ELSE (SELECT MAX(s.c1) FROM t0 AS s WHERE s.c0 = t0.c0) END || 'x'"
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), _TEXTS, {"t0": [("a", "b"), ("d", "c")]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {} and undefined == 0
    want = expected[0]
    assert want is not None and want.outcome.count == 2 and want.tables is not None
    assert sorted(want.tables["t0"].rows) == [("a", "bx"), ("d", "cx")]


def test_a_statement_monetdb_never_answers_stops_the_run() -> None:
    """MonetDB can loop forever on a statement; the run must stop with the statement, not
    wait forever, whether it waits natively or through tique (on any of the sessions tique
    opens). A stopped server never answers, however fast the machine."""
    import os
    import signal

    from drivers.monetdb_server import MonetDBServer
    from fuzz.engines import bounded_waits, run_tique

    try:
        server = MonetDBServer()
    except FileNotFoundError as reason:
        pytest.skip(str(reason))
    try:
        with bounded_waits(5):
            conn = tique.connect(server.url, autocommit=True)
            assert run_tique(conn, "CREATE TABLE t (a INT)", ()).kind == "count"
            os.kill(server.process.pid, signal.SIGSTOP)
            try:
                with pytest.raises(RuntimeError, match="no answer in 5.0 s to: SELECT a FROM t"):
                    run_tique(conn, "SELECT a FROM t", ())
            finally:
                os.kill(server.process.pid, signal.SIGCONT)
    finally:
        server.stop()


def _process_state(pid: int) -> str:
    """The state letter of process `pid` (/proc/<pid>/stat): T once it is stopped."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("control", ["rollback", "begin", "commit"])
def test_a_transaction_control_native_monetdb_never_answers_names_itself(control: str) -> None:
    """The fuzzer's native MonetDB sessions stop a run on a statement MonetDB never answers
    with that statement's text, transaction control included (a run once stopped with a
    bare "timed out" between a case's statements)."""
    import os
    import signal

    from drivers.monetdb_server import MonetDBServer
    from fuzz.engines import NativeMonetDB

    try:
        server = MonetDBServer()
    except FileNotFoundError as reason:
        pytest.skip(str(reason))
    try:
        native = NativeMonetDB(server.url.split("?", 1)[0], "native_control", timeout_s=3)
        if control != "begin":
            native.begin()
        os.kill(server.process.pid, signal.SIGSTOP)
        # kill() returns before every thread of the server has stopped: wait until it has.
        assert wait_for(lambda: _process_state(server.process.pid) == "T"), "the server never stopped"
        try:
            statement = {"rollback": "ROLLBACK", "begin": "START TRANSACTION", "commit": "COMMIT"}[control]
            with pytest.raises(RuntimeError, match=f"no answer in 3 s to: {statement}$"):
                getattr(native, control)()
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
    finally:
        server.stop()


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_assigning_columns_is_compared_with_its_computed_outcome(engine: str, environment: Environment) -> None:
    """MonetDB's UPDATE fails here by the key as SQL does, but the equivalent that reads
    every assigned column wrapped (COALESCE(t0.c2, t0.c2)) gives c2 UPPER of the old c1 and
    writes 2 rows (fuzz case seed 34003102134); SQL's outcome is computed from the values a
    query reads: both rows become (' x', ' X'), a duplicate key."""
    statement = "UPDATE t0 SET c1 = t0.c2, c2 = UPPER(COALESCE(t0.c2, t0.c2)) WHERE t0.c1 BETWEEN t0.c1 AND 'B' OR NOT FALSE"
    keyed = Schema((Table("t0", (Column("c1", "VARCHAR", True), Column("c2", "VARCHAR", True)), ("c1", "c2")),))
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), keyed, {"t0": [("ba", " x"), ("ab", " x")]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-update-reads-assigned-column": 1} and undefined == 0
    assert expected[0] is not None and expected[0].outcome.kind == "error"
    # where it succeeds, the natives hold the computed table: the swap, by SQL
    swap = _departure_case(sqlglot.parse_one("UPDATE t0 SET c0 = t0.c1, c1 = t0.c0 WHERE t0.c0 > 1", read="duckdb"), _PAIR,
                           {"t0": [(1, 2), (3, None), (3, None), (5, 6)]})
    expected, _, undefined, departures = native_pass(environment, swap)
    want = expected[0]
    assert want is not None and want.outcome.count == 3 and want.tables is not None
    assert sorted(want.tables["t0"].rows, key=repr) == sorted([(1, 2), (None, 3), (None, 3), (6, 5)], key=repr)
    report, _ = run_case(environment, case)
    assert report.compared == 1 and not report.differences, report.differences


def test_except_all_of_a_constant_column_is_not_generated_for_monetdb() -> None:
    """Native MonetDB answers such an EXCEPT ALL at random, or never (fuzz case seed
    31029093303); other engines keep it, and EXCEPT ALL of columns stays on MonetDB."""
    from fuzz.exclusions import rejected

    hangs = sqlglot.parse_one("SELECT TRUE AS o2, s0.c1 FROM t0 AS s0 JOIN t0 AS s1 ON s1.c0 = s0.c0 EXCEPT ALL "
                              "SELECT DISTINCT COUNT(*) < 1 AS o8, MAX(s6.c1) AS o10 FROM t0 AS s6", read="duckdb")
    found = rejected(hangs, engine="monetdb")
    assert found is not None and found.name == "monetdb-except-all-of-a-constant-column"
    assert rejected(hangs, engine="duckdb") is None
    assert rejected(sqlglot.parse_one("SELECT c1 FROM t0 EXCEPT ALL SELECT c1 FROM t0 WHERE c0 > 0", read="duckdb"),
                    engine="monetdb") is None


_DECIMALS = Schema((Table("t0", (Column("c0", "DECIMAL(10, 2)", True), Column("c1", "DECIMAL(10, 2)"), Column("c3", "VARCHAR"))),))


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_assigning_a_subquery_is_compared_with_its_computed_outcome(engine: str, environment: Environment) -> None:
    """MonetDB counts the row but keeps c3 = 'a' where the correlated subquery matches no row
    and SQL (and tique) write NULL into the nullable column (fuzz case seed 34033102453); SQL's
    outcome is computed from the values a query reads. (A match does not help: 'b' is kept
    where the subquery says 'a'.) Without the CASE the native write is SQL's, and nothing is
    counted."""
    statement = "UPDATE t0 SET c3 = CASE WHEN TRUE THEN (SELECT MAX(s1.c3) FROM t0 AS s1 WHERE s1.c0 = t0.c1) ELSE t0.c3 END"
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), _DECIMALS,
                           {"t0": [(Decimal("2.85"), Decimal("17.29"), "a")]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-update-keeps-old-value-for-subquery": 1} and undefined == 0, departures
    want = expected[0]
    assert want is not None and want.outcome.count == 1 and want.tables is not None
    assert want.tables["t0"].rows == ((Decimal("2.85"), Decimal("17.29"), None),)
    report, _ = run_case(environment, case)
    assert report.compared == 2 and not report.differences, report.differences
    matched = {"t0": [(Decimal("2.85"), Decimal("2.85"), "a"), (Decimal("1"), Decimal("2.85"), "b")]}
    expected, _, undefined, departures = native_pass(environment, _departure_case(sqlglot.parse_one(statement, read="duckdb"),
                                                                                  _DECIMALS, matched))
    assert departures == {"monetdb-update-keeps-old-value-for-subquery": 1} and undefined == 0, departures
    assert expected[0] is not None and expected[0].tables is not None
    assert sorted(expected[0].tables["t0"].rows) == [(Decimal("1.00"), Decimal("2.85"), "a"), (Decimal("2.85"), Decimal("2.85"), "a")]
    plain = "UPDATE t0 SET c3 = (SELECT MAX(s1.c3) FROM t0 AS s1 WHERE s1.c0 = t0.c1) || 'x'"
    expected, _, undefined, departures = native_pass(environment, _departure_case(sqlglot.parse_one(plain, read="duckdb"),
                                                                                  _DECIMALS, matched))
    assert departures == {} and undefined == 0, departures
    assert expected[0] is not None and expected[0].tables is not None
    assert sorted(expected[0].tables["t0"].rows) == [(Decimal("1.00"), Decimal("2.85"), "ax"), (Decimal("2.85"), Decimal("2.85"), "ax")]


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_is_null_of_no_aggregate_is_left_alone(engine: str, environment: Environment) -> None:
    """`1 IS NULL` reads no aggregate, so monetdb-is-null-of-aggregate-folded does not touch
    it: its stand-in (`OR COALESCE(1 IS NULL, FALSE)`, like `OR FALSE`) made MonetDB drop the
    row of the NOT EXISTS over a FULL JOIN that SQL, native MonetDB and tique return (fuzz
    case seed 34043102494)."""
    statement = ("SELECT (SELECT MAX(s5.c1) FROM t0 AS s5) AS o4 FROM t0 AS s2 INTERSECT ALL SELECT s6.c1 AS o8 FROM t0 AS s6 "
                 "FULL JOIN t0 AS s7 ON TRUE WHERE NOT EXISTS(SELECT 1 FROM t0 AS s9 WHERE s9.c3 = s7.c3) OR 1 IS NULL")
    schema = Schema((Table("t0", (Column("c1", "VARCHAR"), Column("c3", "DATE"))),))
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), schema, {"t0": [("ab", None)]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {} and undefined == 0, departures
    assert expected[0] is not None and list(expected[0].outcome.rows) == [("ab",)]
    report, _ = run_case(environment, case)
    assert report.compared == 2 and not report.differences, report.differences


@pytest.mark.parametrize("engine", ["monetdb"])
def test_negative_zero_compared_with_a_bigint_by_the_standard(engine: str, environment: Environment) -> None:
    """After c0 = -c0 stores -0.0, MonetDB's correlated s55.c2 = s49.c0 (BIGINT against
    DOUBLE) misses the rows with c2 = 0, and folds the departure's old d + 0 to d, so it was
    not caught (fuzz case seed 34043102496); SQL (and tique) match them."""
    schema = Schema((Table("t0", (Column("c0", "DOUBLE", True), Column("c2", "BIGINT", True), Column("c3", "DOUBLE", True))),))
    statements = ["UPDATE t0 SET c0 = -t0.c0",
                  "SELECT s49.c2 <> (SELECT COUNT(DISTINCT ABS(s55.c3)) FROM t0 AS s55 WHERE s55.c2 = s49.c0) AS o52 FROM t0 AS s49"]
    case = Case(schema, {"t0": [(0.0, 0, 1.5), (0.0, 1, -9.75), (0.0, 0, 1.5), (-0.5, 0, -0.5), (0.0, 0, 7.75)]},
                [Statement(sqlglot.parse_one(s, read="duckdb")) for s in statements], seed=11)
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-join-negative-zero": 1} and undefined == 0, departures
    assert expected[1] is not None and sorted(expected[1].outcome.rows) == [(False,), (True,), (True,), (True,), (True,)]
    report, _ = run_case(environment, case)
    assert not report.differences, report.differences


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_keeping_keys_after_a_delete_is_compared_with_its_computed_outcome(engine: str, environment: Environment) -> None:
    """After a DELETE, MonetDB fails an UPDATE of some rows that assigns the key its own
    value with 'PRIMARY KEY constraint violated' (fuzz case seed 37003111110), although
    no two rows end with one key; SQL (and tique) write the row. The outcome is computed
    from the rows a query reads, which still fails an UPDATE that really duplicates a key."""
    schema = Schema((Table("t0", (Column("c0", "DATE", True), Column("c1", "DATE"), Column("c2", "BIGINT", True)), ("c0",)),))
    rows = {"t0": [(datetime.date(2024, 1, 1), datetime.date(2024, 1, 13), 0), (datetime.date(2023, 12, 12), None, 1),
                   (datetime.date(2024, 1, 4), datetime.date(2024, 1, 4), -65)]}
    statements = ["DELETE FROM t0 WHERE t0.c2 IN (SELECT LENGTH('') FROM t0 AS s8)",
                  "UPDATE t0 SET c0 = t0.c0 WHERE t0.c2 BETWEEN -1 AND 3",
                  "UPDATE t0 SET c0 = CAST('2024-01-04' AS DATE) WHERE t0.c2 = 1"]
    case = Case(schema, rows, [Statement(sqlglot.parse_one(s, read="duckdb")) for s in statements], seed=11)
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-update-false-key-violation": 1} and undefined == 0, departures
    assert expected[1] is not None and expected[1].outcome.kind == "count" and expected[1].outcome.count == 1
    assert expected[1].tables is not None
    assert sorted(expected[1].tables["t0"].rows) == [(datetime.date(2023, 12, 12), None, 1),
                                                     (datetime.date(2024, 1, 4), datetime.date(2024, 1, 4), -65)]
    assert expected[2] is not None and expected[2].outcome.kind == "error"  # a real duplicate: SQL fails it too
    report, _ = run_case(environment, case)
    assert report.departures == {"monetdb-update-false-key-violation": 1}
    assert not report.differences, report.differences


@pytest.mark.parametrize("engine", ["monetdb"])
def test_a_case_of_a_correlated_subquery_over_a_null_condition_by_the_standard(engine: str, environment: Environment) -> None:
    """MonetDB answers NULL for a CASE holding a correlated subquery where its WHEN
    condition is NULL; SQL (and tique) take the ELSE. With a FALSE condition the native
    answer is SQL's, and nothing is counted."""
    schema = Schema((Table("t0", (Column("c0", "INTEGER", True), Column("c1", "DECIMAL(10, 2)"), Column("c2", "VARCHAR")), ("c0",)),))
    statement = ("SELECT s1.c0 AS o, CASE WHEN s1.c2 LIKE '_' THEN s1.c1 ELSE (SELECT MAX(s2.c1) FROM t0 AS s2 "
                 "WHERE s2.c0 = s1.c0) END AS p FROM t0 AS s1")
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), schema, {"t0": [(1, Decimal("1.25"), None)]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {"monetdb-case-of-subquery-null-condition": 1} and undefined == 0, departures
    assert expected[0] is not None and list(expected[0].outcome.rows) == [(1, Decimal("1.25"))]
    report, _ = run_case(environment, case)
    assert not report.differences, report.differences
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), schema, {"t0": [(1, Decimal("1.25"), "ab")]})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {} and undefined == 0, departures


@pytest.mark.parametrize("engine", ["monetdb"])
def test_an_update_whose_outcome_query_monetdb_refuses_is_compared_with_native(engine: str, environment: Environment) -> None:
    """SQL's outcome of an UPDATE assigning a subquery is computed from a query; MonetDB
    refuses that query's form (an aggregate of a subquery correlated to the aggregated rows:
    'subquery uses ungrouped column') where its UPDATE of an empty table writes nothing, as
    SQL and tique do. The refusal is no answer by SQL, so the native outcome stands (fuzz
    case seed 39013118058 flagged tique's 0 rows against that refusal)."""
    schema = Schema((Table("t0", (Column("c0", "DATE"), Column("c3", "DECIMAL(10, 2)"))), Table("t1", (Column("c3", "DATE"),)),
                     Table("t2", (Column("c2", "DOUBLE"),))))
    statement = "UPDATE t1 SET c3 = (SELECT MAX((SELECT MAX(s26.c0) FROM t0 AS s26 WHERE s26.c3 = s25.c2)) FROM t2 AS s25)"
    case = _departure_case(sqlglot.parse_one(statement, read="duckdb"), schema, {"t0": [], "t1": [], "t2": []})
    expected, _, undefined, departures = native_pass(environment, case)
    assert departures == {} and undefined == 0, departures
    assert expected[0] is not None and expected[0].outcome.kind == "count" and expected[0].outcome.count == 0
    report, _ = run_case(environment, case)
    assert report.compared == 2 and not report.differences, report.differences

"""A case (schema, rows, statements) run natively and through tique, and the fuzzing loop.

Per case and engine:
1. natively, twice: on the rows as given (the reference) and on the same rows stored in
   another order. Each statement runs in its own native transaction on both; where the two
   disagree (rows, row count, error, or the tables afterwards) the statement's result
   depends on something SQL leaves undefined, and it is undone on both and skipped.
2. through tique in autocommit: every kept statement, compared with the reference
   (rows, row counts, errors, and all tables after each write). A TLP statement also runs
   partitioned, and must give the unpartitioned query's rows.
3. through tique in transactions: the kept statements that succeeded natively, grouped
   into transactions that commit at the case's commit points; tables compared at each.
A tique NotSupportedError is a refusal, counted; a refused write is dropped from the case
and the case re-run, so the reference never holds a write tique did not make.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from sqlglot import exp

import tique
from fuzz.compare import same_outcome, same_rows, same_tables
from fuzz.departures import (DEPARTURES, Departure, DUPLICATE_KEY, DUPLICATE_KEY_ENGINES, NO_RESULT_SET, NULL_INTO_NOT_NULL,
                             NULL_INTO_NOT_NULL_ENGINES, UpdateComputation, departure_of, duplicate_key_queries,
                             UPDATE_KEEPS_SUBQUERY_VALUE, UPDATE_KEEPS_SUBQUERY_VALUE_ENGINES, null_assignment_probe,
                             silent_departures, subquery_update_computation, update_computation)
from fuzz.engines import Environment, Native, Outcome, bounded_waits, render, run_tique, timed_out
from fuzz.exclusions import Features, default_features, rejected
from fuzz.generate import Generator, Statement
from fuzz.schema import Schema, SchemaOptions, Table, create_table, random_schema, random_value


@dataclass
class Case:
    schema: Schema
    rows: dict[str, list[tuple]]
    statements: list[Statement]
    commit_after: frozenset[int] = frozenset()  # transaction pass: commit after these statement indexes
    seed: int = 0

    def copy(self) -> "Case":
        return Case(self.schema, {t: list(r) for t, r in self.rows.items()}, [s.copy() for s in self.statements],
                    self.commit_after, self.seed)


@dataclass
class Difference:
    engine: str
    mode: str  # "autocommit" | "transaction" | "tlp"
    index: int  # statement index in the case
    what: str  # "result" | "tables" | "error"
    sql: str
    params: tuple
    expected: str
    got: str

    @property
    def signature(self) -> tuple[str, str, str]:
        return (self.engine, self.mode, self.what)


@dataclass
class CaseReport:
    compared: int = 0  # statements compared through tique, both modes
    refused: int = 0
    undefined: int = 0  # skipped: the two native runs disagreed
    departures: dict[str, int] = field(default_factory=dict)  # compared with SQL's meaning, not the engine's (fuzz/departures.py)
    statements: int = 0
    refusals: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)


# -- random cases ------------------------------------------------------------------------------

def random_rows(rng: random.Random, table: Table) -> list[tuple]:
    """0..8 rows: NULLs, duplicates (exact ones where no key forbids them), negatives, ''."""
    rows: list[tuple] = []
    keys: set[tuple] = set()
    for _ in range(rng.randint(0, 8)):
        if rows and not table.key and not table.uniques and rng.random() < 0.15:
            rows.append(rng.choice(rows))
            continue
        row = tuple(random_value(rng, c.type, nulls=not (c.not_null or c.name in table.key)) for c in table.columns)
        names = [c.name for c in table.columns]
        if table.key:
            key = tuple(row[names.index(k)] for k in table.key)
            if key in keys:
                continue
            keys.add(key)
        def folded(value: Any) -> Any:  # a case-insensitive collation makes 'B' and 'b' one value
            return value.lower() if isinstance(value, str) else value

        if any(row[names.index(u[0])] is not None
               and folded(row[names.index(u[0])]) in [folded(r[names.index(u[0])]) for r in rows]
               for u in table.uniques):
            continue
        if not all(_satisfies(check, dict(zip(names, row))) for check in table.checks):
            continue
        rows.append(row)
    return rows


def _satisfies(check: exp.Expression, row: dict[str, Any]) -> bool:
    """The generated CHECKs are `column > constant`; NULL satisfies a CHECK."""
    assert isinstance(check, exp.GT)
    value = row[check.this.name]
    bound = check.expression
    limit = -float(bound.this.this) if isinstance(bound, exp.Neg) else float(bound.this)
    return value is None or float(value) > limit


def engine_features(engine: str, include_excluded: bool) -> Features:
    """What the generator may use on `engine`: MonetDB has no DELETE ... USING, so there
    is no native answer to compare tique's (PostgreSQL's meaning) with."""
    features = default_features(include_excluded=include_excluded)
    return replace(features, delete_using=False) if engine == "monetdb" else features


def random_case(seed: int, statements: int, options: SchemaOptions = SchemaOptions(),
                features: Features | None = None, include_excluded: bool = False, engine: str | None = None) -> Case:
    rng = random.Random(seed)
    schema = random_schema(rng, options)
    rows = {t.name: random_rows(rng, t) for t in schema.tables}
    generator = Generator(rng, schema, features or default_features(include_excluded=include_excluded))
    made: list[Statement] = []
    while len(made) < statements:
        statement = generator.statement()
        if all(rejected(tree, include_excluded=include_excluded, engine=engine) is None
               for tree in (statement.tree, statement.partitioned) if tree is not None):
            made.append(statement)
    commit_after = frozenset(i for i in range(statements) if rng.random() < 0.25)
    return Case(schema, rows, made, commit_after, seed)


# -- running one case ----------------------------------------------------------------------------

def insert_rows(table: Table, rows: list[tuple]) -> exp.Insert:
    from fuzz.generate import param

    return exp.Insert(this=exp.Schema(this=exp.to_table(table.name), expressions=[exp.to_identifier(c.name) for c in table.columns]),
                      expression=exp.Values(expressions=[exp.Tuple(expressions=[param(v) for v in row]) for row in rows]))


def _tables_native(native: Native, schema: Schema, engine: str) -> dict[str, Outcome]:
    return {t.name: native.execute(f"SELECT * FROM {t.name}", (), write=False) for t in schema.tables}


def _holds_duplicate_keys(native: Native, schema: Schema) -> bool:
    for table in schema.tables:
        for query in duplicate_key_queries(table):
            outcome = native.execute(query, (), write=False)
            if outcome.kind != "rows":
                raise RuntimeError(f"native duplicate-key check failed: {outcome.error}")
            if outcome.rows[0][0]:
                return True
    return False


def _tables_tique(conn: tique.Connection, schema: Schema, engine: str) -> dict[str, Outcome]:
    return {t.name: run_tique(conn, f"SELECT * FROM {t.name}", ()) for t in schema.tables}


def load_native(native: Native, case: Case, engine: str, shuffle: random.Random | None) -> None:
    for table in case.schema.tables:
        outcome = native.execute(*render(create_table(table, engine), engine), write=True)
        if outcome.kind == "error":
            raise RuntimeError(f"native CREATE TABLE failed: {outcome.error}")
        rows = list(case.rows[table.name])
        if shuffle is not None:
            rows.reverse()
            shuffle.shuffle(rows)
        if rows:
            outcome = native.execute(*render(insert_rows(table, rows), engine), write=True)
            if outcome.kind == "error":
                raise RuntimeError(f"native INSERT of the case's rows failed: {outcome.error}")


def _open_tique(env: Environment, case: Case) -> tuple[str, tique.Connection]:
    url = env.tique_url()
    conn = tique.connect(url, autocommit=True)
    try:
        for table in case.schema.tables:
            conn.cursor().execute(*render(create_table(table, env.engine), env.engine))
        conn.autocommit = False
        for table in case.schema.tables:
            if case.rows[table.name]:
                conn.cursor().execute(*render(insert_rows(table, case.rows[table.name]), env.engine))
        conn.commit()
    except BaseException:
        conn.close()
        env.release(url)
        raise
    return url, conn


@dataclass
class Expected:
    sql: str
    params: tuple
    outcome: Outcome
    tables: dict[str, Outcome] | None  # after a successful write
    departure: str | None = None  # the outcome is SQL's meaning, where the engine departs from it
    suspect: str | None = None  # a silent departure with no equivalent known: a difference is not compared

    def brief(self) -> str:
        shown = self.outcome.brief()
        return f"{shown} (SQL's meaning; natively: {self.departure})" if self.departure else shown


def native_pass(env: Environment, case: Case) -> tuple[list[Expected | None], dict[str, Outcome], int, dict[str, int]]:
    """The reference outcome of every statement (None where undefined), the tables as
    loaded, how many statements were undefined, and how many statements met each of the
    engine's departures from SQL (fuzz/departures.py), compared with the standard meaning."""
    engine = env.engine
    first, second = env.native(), env.native()
    try:
        load_native(first, case, engine, None)
        load_native(second, case, engine, random.Random(case.seed))
        initial = _tables_native(first, case.schema, engine)
        expected: list[Expected | None] = []
        undefined = 0
        departures: dict[str, int] = {}
        for statement in case.statements:
            sql, params = statement.sql(engine)
            first.begin()
            second.begin()
            a = first.execute(sql, params, write=statement.is_write)
            b = second.execute(sql, params, write=statement.is_write)
            departure = next((d for d in (departure_of(engine, o.error) for o in (a, b) if o.kind == "error") if d), None)
            meaning = None
            computation = update_computation(_other_standards(statement.tree, case.schema, engine, None), case.schema) \
                if departure is not None and departure.computed else None
            if computation is not None:
                # the engine refuses what SQL may allow: SQL's outcome computed from the rows
                # as they were, which fails where SQL fails the statement too
                first.rollback()
                second.rollback()
                first.begin()
                second.begin()
                computed = _computed_update(first, second, computation, engine)
                if computed.kind == "error":
                    # SQL fails the statement too: the native error stands, checked as any other's
                    first.rollback()
                    second.rollback()
                    first.begin()
                    second.begin()
                    a = first.execute(sql, params, write=statement.is_write)
                    b = second.execute(sql, params, write=statement.is_write)
                    departure = computation = None
                else:
                    departures[departure.name] = departures.get(departure.name, 0) + 1
                    meaning = f"{departure.name}: {(a if a.kind == 'error' else b).error}"
                    a = b = computed
            if computation is not None:
                counted, ran = [], None
            elif departure is not None:
                # the engine refuses what SQL means: its answer to an equivalent statement it runs by the standard
                first.rollback()
                second.rollback()
                standard = departure.standard(statement.tree, case.schema)
                if standard is None:
                    departures[f"{departure.name} (not compared)"] = departures.get(f"{departure.name} (not compared)", 0) + 1
                    expected.append(None)
                    continue
                departures[departure.name] = departures.get(departure.name, 0) + 1
                meaning = f"{departure.name}: {(a if a.kind == 'error' else b).error}"
                first.begin()
                second.begin()
                a = first.execute(*render(standard, engine), write=statement.is_write)
                b = second.execute(*render(standard, engine), write=statement.is_write)
                # the equivalent may meet a silent departure of its own (an UPDATE ... FROM
                # made an UPDATE ... WHERE EXISTS that reads a column it assigns)
                a, b, silently, counted, ran = _silent_departures(first, second, replace(statement, tree=standard, _rendered={}),
                                                                  case.schema, engine, a, b)
                meaning = f"{meaning}; then {silently}" if silently else meaning
            else:
                a, b, meaning, counted, ran = _silent_departures(first, second, statement, case.schema, engine, a, b)
            for name in counted:
                departures[name] = departures.get(name, 0) + 1
            probe = null_assignment_probe(ran, case.schema) if engine in NULL_INTO_NOT_NULL_ENGINES and ran is not None else None
            if probe is not None and any(o.kind == "count" and o.count > 0 for o in (a, b)):
                kept = _rerun_unless_null_assigned(first, second, ran, probe, engine)
                if kept is not None:
                    a, b = kept
                else:
                    departures[NULL_INTO_NOT_NULL] = departures.get(NULL_INTO_NOT_NULL, 0) + 1
                    failed = Outcome("error", error="IntegrityError: NULL in a NOT NULL column")
                    expected.append(Expected(sql, params, failed, None, f"{NULL_INTO_NOT_NULL}: accepted, {a.brief()}"))
                    continue
            # computed by a query that meets none of the engine's silent departures either
            computation = subquery_update_computation(_other_standards(ran, case.schema, engine, None), case.schema) \
                if engine in UPDATE_KEEPS_SUBQUERY_VALUE_ENGINES and ran is not None and a.kind == b.kind == "count" else None
            if computation is not None:
                # the native UPDATE may have kept old values where SQL writes the subquery's:
                # SQL's outcome computed on the rows as they were, and the natives given it
                native_tables = _tables_native(first, case.schema, engine)
                first.rollback()
                second.rollback()
                first.begin()
                second.begin()
                computed = _computed_update(first, second, computation, engine)
                if computed.kind == "error" and _refused_to_compile(computed, engine):
                    # the engine refuses the computing query's form where it ran the UPDATE
                    # (MonetDB: an aggregate of a subquery correlated to the aggregated rows,
                    # fuzz case seed 39013118058): no answer by SQL; the native outcome stands
                    a, b = _rerun(first, second, ran, engine, statement, a, b)
                else:
                    if not same_outcome(a, computed, ordered=False) or (
                            computed.kind == "count" and not same_tables(native_tables, _tables_native(first, case.schema, engine))):
                        departures[UPDATE_KEEPS_SUBQUERY_VALUE] = departures.get(UPDATE_KEEPS_SUBQUERY_VALUE, 0) + 1
                        note = f"{UPDATE_KEEPS_SUBQUERY_VALUE}: natively {a.brief()}"
                        meaning = f"{meaning}; then {note}" if meaning else note
                    a = b = computed
            if statement.is_write and engine in DUPLICATE_KEY_ENGINES and any(o.kind == "count" and o.count < 0 for o in (a, b)):
                # MonetDB wrote without saying how many rows: an INSERT ... SELECT whose SELECT
                # gives no result set (see the departure); what it wrote is unknown
                first.rollback()
                second.rollback()
                departures[f"{NO_RESULT_SET} (not compared)"] = departures.get(f"{NO_RESULT_SET} (not compared)", 0) + 1
                expected.append(None)
                continue
            if statement.is_write and engine in DUPLICATE_KEY_ENGINES and (
                    (a.kind == "count" and _holds_duplicate_keys(first, case.schema))
                    or (b.kind == "count" and _holds_duplicate_keys(second, case.schema))):
                # the engine accepted a write that leaves a duplicate key: SQL fails it
                first.rollback()
                second.rollback()
                departures[DUPLICATE_KEY] = departures.get(DUPLICATE_KEY, 0) + 1
                failed = Outcome("error", error="IntegrityError: duplicate key")
                expected.append(Expected(sql, params, failed, None, f"{DUPLICATE_KEY}: accepted, leaving a duplicate key"))
                continue
            defined = same_outcome(a, b, ordered=statement.ordered)
            tables = None
            if defined and statement.is_write and a.kind == "count":
                tables = _tables_native(first, case.schema, engine)
                defined = same_tables(tables, _tables_native(second, case.schema, engine))
            if defined and statement.partitioned is not None and a.kind == "rows":
                # the engine itself must agree with the partitioning, or the predicate is
                # not a function of the row (nothing generated is, but say so if it happens)
                p = first.execute(*statement.sql(engine, partitioned=True), write=False)
                defined = p.kind == "rows" and same_rows(a.rows, p.rows, typed=False)
            if defined and statement.is_write is False and statement.tree.find(exp.RowNumber) is not None and a.kind == "rows":
                # ROW_NUMBER numbers peers (ties) in whatever order a plan meets them, and
                # the reordered copy may agree by chance: where RANK, which numbers peers
                # alike, gives other rows, the numbering met a tie and the rows are undefined
                ranked = statement.tree.copy()
                for number in list(ranked.find_all(exp.RowNumber)):
                    number.replace(exp.Anonymous(this="RANK"))
                r = first.execute(*render(ranked, engine), write=False)
                defined = r.kind == "rows" and same_rows(a.rows, r.rows, ordered=statement.ordered)
            elif defined and statement.is_write and statement.tree.find(exp.RowNumber) is not None:
                defined = False  # a write numbering rows: not checked for ties, so not compared
            if defined and a.kind != "error":
                first.commit()
                second.commit()
            else:
                first.rollback()
                second.rollback()
            if not defined:
                undefined += 1
            suspect = next((d.name for d in DEPARTURES if engine in d.engines and d.suspect is not None
                            and d.suspect(statement.tree)), None)
            expected.append(Expected(sql, params, a, tables, meaning, suspect) if defined else None)
        return expected, initial, undefined, departures
    finally:
        first.close()
        second.close()


def _computed_update(first: Native, second: Native, computation: UpdateComputation, engine: str) -> Outcome:
    """The outcome SQL gives the UPDATE `computation` stands for (fuzz/departures.py), on
    the rows the natives' open transactions hold: the count of rows it writes, or an error
    where the table it leaves breaks NOT NULL, the primary key or a UNIQUE. Where it
    succeeds, both natives' transactions are left holding that table."""
    table = computation.table
    names = [c.name for c in table.columns]
    listed = ", ".join(names)
    before = first.execute(f"SELECT {listed} FROM {table.name}", (), write=False)
    read = first.execute(*render(computation.query, engine), write=False)
    if read.kind != "rows" or before.kind != "rows":
        return read if read.kind == "error" else before  # the values fail to compute: so does the UPDATE
    remaining = Counter(before.rows)
    written = []
    for row in read.rows:
        old, new = tuple(row[:len(names)]), list(row[:len(names)])
        for name, value in zip(computation.assigned, row[len(names):]):
            new[names.index(name)] = value
        remaining[old] -= 1
        written.append(tuple(new))
    after = list(remaining.elements()) + written
    required = [i for i, c in enumerate(table.columns) if c.not_null or c.name in table.key]
    if any(row[i] is None for row in written for i in required):
        return Outcome("error", error="IntegrityError: NULL in a NOT NULL column")
    for columns, nulls_exempt in [(table.key, False)] * bool(table.key) + [(u, True) for u in table.uniques]:
        keys = [tuple(row[names.index(c)] for c in columns) for row in after]
        if nulls_exempt:
            keys = [k for k in keys if None not in k]
        if len(set(keys)) != len(keys):
            return Outcome("error", error="IntegrityError: duplicate key")
    for native in (first, second):
        native.execute(f"DELETE FROM {table.name}", (), write=True)
        if after:
            outcome = native.execute(*render(insert_rows(table, after), engine), write=True)
            if outcome.kind != "count":
                raise RuntimeError(f"native INSERT of an UPDATE's computed rows failed: {outcome.error}")
    return Outcome("count", count=len(read.rows))


def _rerun_unless_null_assigned(first: Native, second: Native, tree: exp.Expression, probe: exp.Select,
                                engine: str) -> tuple[Outcome, Outcome] | None:
    """Whether the UPDATE `tree`, which the natives' open transactions hold, assigns NULL
    to a NOT NULL column (fuzz/departures.py, NULL_INTO_NOT_NULL): the transactions are
    undone, `probe` reads the values it assigns on the rows as they were, and where none is
    NULL the UPDATE runs again; returns its outcomes then, None where SQL fails it (the
    natives left with nothing open)."""
    first.rollback()
    second.rollback()
    assigned = first.execute(*render(probe, engine), write=False)
    if assigned.kind != "rows":
        raise RuntimeError(f"native probe of an UPDATE's assigned values failed: {assigned.error}")
    if any(value is None for row in assigned.rows for value in row):
        return None
    first.begin()
    second.begin()
    sql, params = render(tree, engine)
    return first.execute(sql, params, write=True), second.execute(sql, params, write=True)


def _other_standards(tree: exp.Expression, schema: Schema, engine: str, computed: Departure | None) -> exp.Expression:
    """`tree` with the equivalents by the standard of every silent departure but `computed`
    (all, where None) applied: the query that computes an UPDATE's outcome must not meet
    them either."""
    for departure in silent_departures(engine):
        if departure is not computed:
            tree = departure.standard(tree, schema) or tree
    return tree


def _silent_departures(first: Native, second: Native, statement: Statement, schema: Schema, engine: str,
                       a: Outcome, b: Outcome) -> tuple[Outcome, Outcome, str | None, list[str], exp.Expression | None]:
    """Where a silent departure's shape matches, the statement's equivalent by the standard
    runs too (undoing the statement first); where the native answers differ, the
    equivalent's is SQL's meaning. Returns the outcomes to take (on the natives' open
    transactions, which hold the writes of the statement taken), what the engine answered
    where it departs, the departures met, and the statement taken (None where the outcome
    was computed: the natives hold the tables SQL's UPDATE leaves)."""
    tree = statement.tree
    meaning = None
    counted: list[str] = []
    for departure in silent_departures(engine):
        standard = departure.standard(tree, schema)
        if standard is None:
            continue
        before = _tables_native(first, schema, engine) if statement.is_write and a.kind == "count" else None
        first.rollback()
        second.rollback()
        first.begin()
        second.begin()
        computation = update_computation(_other_standards(tree, schema, engine, departure), schema) if departure.computed else None
        if computation is not None:
            # SQL's outcome computed, and the natives given the tables it leaves
            computed = _computed_update(first, second, computation, engine)
            return computed, computed, f"{departure.name}: natively {a.brief()}", counted + [departure.name], None
        sql, params = render(standard, engine)
        sa = first.execute(sql, params, write=statement.is_write)
        sb = second.execute(sql, params, write=statement.is_write)
        # the equivalent's columns keep the statement's names (a rewritten expression may be
        # named otherwise by the engine)
        sa, sb = (replace(s, names=o.names) if s.kind == o.kind == "rows" and len(s.names) == len(o.names) else s
                  for s, o in ((sa, a), (sb, b)))
        if "error" in (sa.kind, sb.kind) and a.kind != "error":
            # the equivalent met another of the engine's limits (an UPDATE ... FROM that
            # now matches several rows, say): no answer by the standard; the statement stands
            a, b = _rerun(first, second, tree, engine, statement, a, b)
            continue
        after = _tables_native(first, schema, engine) if statement.is_write and sa.kind == "count" else None
        if departure.counted_always or not same_outcome(a, sa, ordered=statement.ordered, names=False) or (
                before is not None and after is not None and not same_tables(before, after)):
            counted.append(departure.name)
            meaning = f"{departure.name}: natively {a.brief()}"
        a, b, tree = sa, sb, standard
    return a, b, meaning, counted, tree


def _refused_to_compile(outcome: Outcome, engine: str) -> bool:
    """Whether `outcome` is the engine refusing a query's form before running it (MonetDB's
    SQLSTATE 42000: syntax or binding), not a value failing to compute."""
    return engine == "monetdb" and "42000!" in (outcome.error or "")


def _rerun(first: Native, second: Native, tree: exp.Expression, engine: str, statement: Statement,
           a: Outcome, b: Outcome) -> tuple[Outcome, Outcome]:
    """The statement `tree` run again on fresh transactions of both natives (after a
    departure's equivalent or computation gave no answer), keeping the first answers' names."""
    first.rollback()
    second.rollback()
    first.begin()
    second.begin()
    sql, params = render(tree, engine)
    ra, rb = (first.execute(sql, params, write=statement.is_write), second.execute(sql, params, write=statement.is_write))
    return tuple(replace(r, names=o.names) if r.kind == o.kind == "rows" and len(r.names) == len(o.names) else r  # type: ignore[return-value]
                 for r, o in ((ra, a), (rb, b)))


def _compare(engine: str, mode: str, index: int, want: Expected, got: Outcome, statement: Statement) -> Difference | None:
    if same_outcome(want.outcome, got, ordered=statement.ordered):
        return None
    what = "error" if "error" in (want.outcome.kind, got.kind) else "result"
    return Difference(engine, mode, index, what, want.sql, want.params, want.brief(), got.brief())


def _compare_tables(engine: str, mode: str, index: int, want: dict[str, Outcome], got: dict[str, Outcome],
                    sql: str, params: tuple) -> Difference | None:
    if same_tables(want, got):
        return None
    bad = [t for t in want if not same_outcome(want[t], got.get(t, Outcome("error")))]
    return Difference(engine, mode, index, "tables", sql, params,
                      "; ".join(f"{t}: {want[t].brief()}" for t in bad), "; ".join(f"{t}: {got[t].brief()}" for t in bad))


def autocommit_pass(env: Environment, case: Case, expected: list[Expected | None], report: CaseReport) -> int | None:
    """Returns the index of a refused write (the case must be re-run without it), else None."""
    url, conn = _open_tique(env, case)
    try:
        conn.autocommit = True
        for i, (statement, want) in enumerate(zip(case.statements, expected)):
            if want is None:
                continue
            got = run_tique(conn, want.sql, want.params)
            if got.kind == "refused":
                if statement.is_write:
                    return i
                report.refused += 1
                report.refusals.append(got.error)
                continue
            difference = _compare(env.engine, "autocommit", i, want, got, statement)
            if difference is not None and want.suspect is not None and not statement.is_write:
                _not_compared(report, want.suspect)
                continue
            report.compared += 1
            if difference is None and statement.partitioned is not None and want.outcome.kind == "rows":
                sql, params = statement.sql(env.engine, partitioned=True)
                tlp = run_tique(conn, sql, params)
                if tlp.kind != "refused" and not (tlp.kind == "rows" and same_rows(want.outcome.rows, tlp.rows, typed=False)):
                    difference = Difference(env.engine, "tlp", i, "result", sql, params, want.outcome.brief(), tlp.brief())
            if difference is None and want.tables is not None:
                difference = _compare_tables(env.engine, "autocommit", i, want.tables, _tables_tique(conn, case.schema, env.engine),
                                             want.sql, want.params)
            if difference is not None:
                report.differences.append(difference)
                if statement.is_write:
                    return None  # the states have parted; later statements would only echo this
        return None
    finally:
        conn.close()
        env.release(url)


def _not_compared(report: CaseReport, departure: str) -> None:
    """tique differs from the native answer where the engine may depart from SQL silently
    and no equivalent by the standard is known: counted, never reported as wrong."""
    name = f"{departure} (not compared)"
    report.departures[name] = report.departures.get(name, 0) + 1


def transaction_pass(env: Environment, case: Case, expected: list[Expected | None], initial: dict[str, Outcome],
                     report: CaseReport) -> None:
    url, conn = _open_tique(env, case)
    try:
        state = initial
        pending = False
        last = None
        for i, (statement, want) in enumerate(zip(case.statements, expected)):
            if want is not None and want.outcome.kind != "error":
                got = run_tique(conn, want.sql, want.params)
                if got.kind == "refused":
                    report.refused += 1
                    report.refusals.append(got.error)
                    if statement.is_write or conn.transaction_failed:
                        conn.rollback()  # the rest would run on a state the reference never had
                        return
                else:
                    difference = _compare(env.engine, "transaction", i, want, got, statement)
                    if difference is not None and want.suspect is not None and not statement.is_write:
                        _not_compared(report, want.suspect)
                        difference = None
                    else:
                        report.compared += 1
                    pending = True
                    last = want
                    if difference is not None:
                        report.differences.append(difference)
                        return
                    if want.tables is not None:
                        state = want.tables
            if i in case.commit_after and pending and last is not None:
                try:
                    conn.commit()
                except tique.Error as error:
                    if timed_out(error):
                        raise RuntimeError("tique gave no answer to COMMIT") from error
                    report.differences.append(Difference(env.engine, "transaction", i, "error", "COMMIT", (), "commits",
                                                         f"{type(error).__name__}: {error}"))
                    return
                pending = False
                difference = _compare_tables(env.engine, "transaction", i, state, _tables_tique(conn, case.schema, env.engine),
                                             "COMMIT", ())
                if difference is not None:
                    report.differences.append(difference)
                    return
        if pending and last is not None:
            conn.commit()
            difference = _compare_tables(env.engine, "transaction", len(case.statements) - 1, state,
                                         _tables_tique(conn, case.schema, env.engine), "COMMIT", ())
            if difference is not None:
                report.differences.append(difference)
    finally:
        try:
            conn.close()
        finally:
            env.release(url)


def run_case(env: Environment, case: Case, *, transactions: bool = True) -> tuple[CaseReport, Case]:
    """Runs a case; returns its report and the case as run (refused writes dropped)."""
    refused_writes: list[str] = []
    for _ in range(len(case.statements) + 1):
        report = CaseReport(statements=len(case.statements))
        expected, initial, report.undefined, report.departures = native_pass(env, case)
        try:
            refused_at = autocommit_pass(env, case, expected, report)
        except tique.NotSupportedError as error:  # the schema itself (a constraint, say)
            report.refused = sum(e is not None for e in expected)
            report.refusals = [f"schema: {str(error).splitlines()[0][:200]}"] * report.refused
            return report, case
        if refused_at is None:
            break
        refused_writes.append(f"refused write: {expected[refused_at].sql if expected[refused_at] else ''}")
        case = replace(case, statements=case.statements[:refused_at] + case.statements[refused_at + 1:],
                       commit_after=frozenset(i if i < refused_at else i - 1 for i in case.commit_after if i != refused_at))
    report.refused += len(refused_writes)
    report.refusals += refused_writes
    report.statements += len(refused_writes)
    if transactions and not report.differences:
        transaction_pass(env, case, expected, initial, report)
    return report, case


# -- the loop ----------------------------------------------------------------------------------

@dataclass
class EngineSummary:
    engine: str
    cases: int = 0
    statements: int = 0
    compared: int = 0
    refused: int = 0
    undefined: int = 0
    departures: dict[str, int] = field(default_factory=dict)
    refusal_reasons: dict[str, int] = field(default_factory=dict)
    slowest_case: tuple[float, int] = (0.0, 0)  # seconds, seed
    failures: list[tuple[Case, Difference]] = field(default_factory=list)

    @property
    def refused_fraction(self) -> float:
        return self.refused / max(1, self.refused + self.compared)


@dataclass(frozen=True)
class Config:
    seed: int = 0
    statements: int | None = 200  # per engine: stop after this many statements were generated
    seconds: float | None = None  # per engine: or after this long (the CLI's --minutes)
    statements_per_case: int = 10
    schema_options: SchemaOptions = SchemaOptions()
    include_excluded: bool = False
    max_failures: int = 3


def fuzz_engine(env: Environment, config: Config, progress: Callable[[str], None] | None = None) -> EngineSummary:
    with bounded_waits():
        return _fuzz_engine(env, config, progress)


def _fuzz_engine(env: Environment, config: Config, progress: Callable[[str], None] | None) -> EngineSummary:
    summary = EngineSummary(env.engine)
    started = time.monotonic()
    case_number = 0
    while True:
        if config.statements is not None and summary.statements >= config.statements:
            break
        if config.seconds is not None and time.monotonic() - started >= config.seconds:
            break
        if len(summary.failures) >= config.max_failures:
            break
        seed = config.seed * 1_000_003 + case_number
        case_number += 1
        case = random_case(seed, config.statements_per_case, config.schema_options,
                           features=engine_features(env.engine, config.include_excluded), include_excluded=config.include_excluded,
                           engine=env.engine)
        case_started = time.monotonic()
        try:
            report, ran = run_case(env, case)
        except Exception as error:  # the engine failed beneath the run (a crash, a hang): say which case
            raise RuntimeError(f"{env.engine}: case seed {seed}: {type(error).__name__}: {error}") from error
        summary.slowest_case = max(summary.slowest_case, (time.monotonic() - case_started, seed))
        summary.cases += 1
        summary.statements += report.statements
        summary.compared += report.compared
        summary.refused += report.refused
        summary.undefined += report.undefined
        for name, count in report.departures.items():
            summary.departures[name] = summary.departures.get(name, 0) + count
        for reason in report.refusals:
            key = reason.split(":", 1)[-1].strip()[:80] if reason.startswith("refused write") else reason[-80:]
            summary.refusal_reasons[key] = summary.refusal_reasons.get(key, 0) + 1
        if report.differences:
            summary.failures.append((ran, report.differences[0]))
            if progress:
                progress(f"{env.engine}: case seed {seed}: {report.differences[0].mode} {report.differences[0].what} difference")
    return summary

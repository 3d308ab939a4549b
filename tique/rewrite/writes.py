"""Writes: INSERT, UPDATE and DELETE on a tique table become INSERTs into its cache.

Each write statement owns two statement sequence numbers: `tq_seq_tomb` for the
tombstones of keys it moves away from and `tq_seq_write` for the versions it writes.
Reads inside the statement see the transaction's own writes before it (`tq_seq_limit`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from tique.catalog import CatalogSnapshot, PACKED, ROWID, TableDef, alias_of, generated_expression, qualifier_of, written_name
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.rewrite import facts
from tique.rewrite.monetdb_case import hoist_scalars, scalars_table
from tique.rewrite.reads import replace_tables
from tique.rewrite.snapshot import Formulation, formulation_for, pinned_key, snapshot
from tique.rewrite.storage_reads import flat_storage, storage_table
from tique.rewrite.params import USER_PREFIX, Compiled, RowTemplate, holds_mark
from tique.rewrite.templates import KeyHash, column, data_type, packed_key, quoted
from tique.rewrite.union_fence import NO_LIMIT

NEW = "tq_new"


@dataclass(frozen=True)
class WritePlan:
    """One write to a tique table: the cache inserts that append its versions, and how it
    is checked and undone. The rewriters below make it with the inserts as trees and
    nothing compiled; the planner (tique/planner.py, _write_plan) completes it into the
    plan that runs, with the inserts compiled, the validating read, the undo and the
    parameter count. The key check and the undo are the same for every write to a table
    (see validation and undo), so the planner compiles them once per table."""

    table: TableDef
    inserts: tuple[Any, ...]  # exp.Expression as rewritten; Compiled once planned
    checks_keys: bool  # writes new keys: needs the key check
    # INSERT ... VALUES: where each row's integer key values come from (see KeyCheck), so
    # the key check can be narrowed to the keys written; None for other writes.
    written_keys: "tuple[tuple[KeySource, ...], ...] | None" = None
    # (rows, width): the insert's VALUES holds the statement's first row only, and the
    # statement is that row `rows` times, each next one taking the next `width` of the
    # application's parameters (see same_shape); None when it holds every row.
    repeat: tuple[int, int] | None = None
    # The columns the write gives values, for the constraints it must check: None for
    # every column (INSERT), the assigned ones for an UPDATE, none for a DELETE.
    assigned: frozenset[str] | None = None
    # -- set by the planner --------------------------------------------------------------
    # One row of counts: (duplicate keys, existing keys) when `checks_keys`, then one
    # count per entry of `violations`, which says what a non-zero count means.
    validation: Compiled | None = None
    undo: Compiled | None = None
    params: int = 0
    violations: tuple[tuple[str, str], ...] = ()  # (CHECK or UNIQUE, message)
    # A one-row INSERT ... VALUES taking all `params` in its row: the template that makes
    # the many-row insert executemany sends per batch (planner.batched); None for other writes.
    rows: RowTemplate | None = None
    batches: dict[int, "WritePlan"] = field(default_factory=dict, compare=False, hash=False)
    reads: Any = field(default_factory=lambda: _read_nothing())  # ReadShape: what it reads besides the keys it writes (tique/read_sets.py)
    # MonetDB: this plan with inserts whose snapshots join committed transactions only,
    # and the caches they so read, for a transaction that has written none of them in an
    # earlier statement (tique/rewrite/own_versions.py); None where there is none.
    committed: "tuple[WritePlan, frozenset[str]] | None" = field(default=None, compare=False, hash=False)


def _read_nothing() -> Any:
    from tique.read_sets import NOTHING  # imported late: tique.read_sets imports the rewrite modules
    return NOTHING


def _param(name: str, type_: str = "BIGINT") -> exp.Expression:
    return exp.cast(exp.Placeholder(this=name), data_type(type_))


def metadata(seq_param: str, deleted: bool) -> list[exp.Expression]:
    return [_param("tq_txid"), _param(seq_param, "INTEGER"), exp.Boolean(this=deleted)]


def cache_insert(table: TableDef, source: exp.Select) -> exp.Insert:
    columns = [quoted(c) for c in table.physical_columns] + [quoted("tq_txid"), quoted("tq_seq"), quoted("tq_deleted")]
    target = exp.Schema(this=exp.Table(this=quoted(table.cache)), expressions=columns)
    return facts.internal_insert(exp.Insert(this=target, expression=source))


def _rowid_default(table: TableDef) -> exp.Expression:
    # nextval reads its argument as a name, folded unless quoted: quoted, "MixedT_rowid_seq" stays itself.
    return exp.Anonymous(this="nextval", expressions=[exp.Literal.string(exp.to_identifier(table.rowid_sequence, quoted=True).sql())])


def undo(table: TableDef) -> exp.Expression:
    return exp.delete(exp.Table(this=quoted(table.cache))).where(
        exp.and_(
            exp.EQ(this=column("tq_txid"), expression=_param("tq_txid")),
            exp.In(this=column("tq_seq"), expressions=[_param("tq_seq_tomb", "INTEGER"), _param("tq_seq_write", "INTEGER")]),
        )
    )


def _written_rows(table: TableDef, alias: str) -> exp.Select:
    return (
        exp.select(exp.Star())
        .from_(exp.Table(this=quoted(table.cache), alias=exp.TableAlias(this=quoted(alias))), copy=False)
        .where(exp.and_(
            exp.EQ(this=column("tq_txid", alias), expression=_param("tq_txid")),
            exp.EQ(this=column("tq_seq", alias), expression=_param("tq_seq_write", "INTEGER")),
            copy=False,
        ), copy=False)
    )


def _count(query: exp.Select) -> exp.Subquery:
    return exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=quoted("tq_counted"))), copy=False))


# Where a written key value comes from: the application's n-th parameter (an int), a
# literal's value (in a 1-tuple), or an expression whose value is known only to the engine.
KeySource = "int | tuple[object] | None"

_INTEGER_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                 exp.DataType.Type.BIGINT: 64}


def ranged_key(table: TableDef, dialect: str) -> tuple[tuple[str, int, int], ...]:
    """The integer key columns, each with its type's whole range: the columns a key check
    narrows by the range of the values a statement writes. Integers compare the same in
    Python and in every engine; text would not (collations), so other columns are left
    to the semi-join."""
    if table.hidden_rowid:
        return ()
    # MonetDB keeps each integer type's minimum for NULL: no key holds it, nor may a cast make it.
    reserved = 1 if dialect == "monetdb" else 0
    ranged = []
    for name in table.key:
        bits = _INTEGER_BITS.get(data_type(table.column(name).type_sql, dialect).this)
        if bits is not None:
            ranged.append((name, -(2 ** (bits - 1)) + reserved, 2 ** (bits - 1) - 1))
    return tuple(ranged)


def _key_source(value: exp.Expression) -> "KeySource":
    # A cast to an integer type keeps an integer's value (or fails the insert).
    while isinstance(value, exp.Paren) or (isinstance(value, exp.Cast) and value.to.this in _INTEGER_BITS):
        value = value.this
    if isinstance(value, exp.Placeholder) and str(value.this).startswith(USER_PREFIX):
        return int(str(value.this)[len(USER_PREFIX):])
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            return (int(value.this),)
        except ValueError:
            return None
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal) and not value.this.is_string:
        try:
            return (-int(value.this.this),)
        except ValueError:
            return None
    return None


def written_key_sources(table: TableDef, listed: list[str], rows: list[exp.Tuple], dialect: str) -> "tuple[tuple[KeySource, ...], ...] | None":
    """Each VALUES row's ranged key values (see ranged_key), as KeySources; None when the
    table has no such column or the statement leaves one to its default."""
    ranged = ranged_key(table, dialect)
    if not ranged or not all(name in listed for name, _, _ in ranged):
        return None
    positions = [listed.index(name) for name, _, _ in ranged]
    return tuple(tuple(_key_source(row.expressions[i]) for i in positions) for row in rows)


def _bound(name: str) -> exp.Expression:
    return exp.Placeholder(this=name)


def _range_filter(table: TableDef, side: str, ranged: tuple[tuple[str, int, int], ...], storage: bool, dialect: str) -> exp.Expression | None:
    """A filter keeping `side`'s rows whose ranged key columns lie within the bounds of the
    keys written (parameters tq_lo_i, tq_hi_i, computed per call by KeyCheck), applied
    before anything is ranked; the semi-join beside it keeps the check exact. One text
    for any number of rows. A packed table filters its cache by the packed key, which
    orders keys as the columns do; its storage is left to the semi-join alone, as MonetDB
    would compare every row's 128-bit packed key. Never equality on every key column of
    storage: MonetDB answers that through the PRIMARY KEY's index, which still finds rows
    the checkpointer deleted, so a key deleted and checkpointed would count as present
    (see snapshot.snapshot)."""
    if storage and dialect == "postgres":
        # PostgreSQL probes storage's primary key per written row through the semi-join.
        # Given the ranges instead, it may drive the check from storage (it estimates
        # them at a row), and a B-tree stops a multi-column range scan only at the first
        # column's bound: TPC-C's order-line check then read the rest of its warehouse,
        # up to 74 ms where the probes take 0.1.
        return None
    casts = [(name, exp.cast(_bound(f"tq_lo_{i}"), data_type(table.column(name).type_sql, dialect)),
              exp.cast(_bound(f"tq_hi_{i}"), data_type(table.column(name).type_sql, dialect)))
             for i, (name, _, _) in enumerate(ranged)]
    if table.packed:
        if storage or len(ranged) != len(table.key):
            return None
        return exp.Between(this=column(PACKED, side), low=packed_key(table, [lo for _, lo, _ in casts]),
                           high=packed_key(table, [hi for _, _, hi in casts]))
    return exp.and_(*[exp.Between(this=column(name, side), low=lo, high=hi) for name, lo, hi in casts])


def validation(table: TableDef, key_hash: KeyHash, dialect: str | None = None, ranged: bool = False,
               from_storage: bool = False) -> exp.Expression | None:
    """One query counting (duplicate keys written, keys already present) for a statement
    that writes new keys: it reads the rows the statement wrote (by transaction and
    sequence number), so one text serves every statement writing the table. NOT NULL
    needs no query: the cache columns carry it.

    `ranged` also filters each branch by the range of the integer key values written
    (see _range_filter), which engines evaluate far more cheaply than the semi-join
    against the written rows that keeps the check exact.

    `from_storage`: the keys written had no versions in the cache (tique/cache_state.py),
    so the keys already present are storage's."""
    if table.hidden_rowid:
        return None
    # Every builder below works in place (copy=False) on nodes built here for this query.
    grouped = (_written_rows(table, "n").select(exp.Literal.number(1), append=False, copy=False)
               .where(exp.not_(column("tq_deleted", "n"), copy=False), copy=False)
               .group_by(*[column(k, "n") for k in table.key], copy=False)
               .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)), copy=False))
    duplicates = _count(grouped)
    before = snapshot(table, Formulation.STORAGE if from_storage else Formulation.RANK, key_hash, physical=True)
    for p in before.find_all(exp.Placeholder):
        if p.this == "tq_seq_limit":  # the snapshot just before this statement's new versions
            p.set("this", "tq_seq_write")
    bounds = ranged_key(table, dialect or "") if ranged else ()
    # Only the written keys' versions are ranked: without this semi-join in each branch the
    # engine would rank the whole table, as the key it looks up comes from a correlated
    # reference that no optimizer pushes below a window.
    for ref in list(before.find_all(exp.Table)):
        if ref.name in (table.storage, table.cache):
            branch = ref.find_ancestor(exp.Select)
            assert branch is not None
            side = ref.alias_or_name
            written = _written_rows(table, "w").select(exp.Literal.number(1), append=False, copy=False).where(
                exp.and_(*[exp.EQ(this=column(k, "w"), expression=column(k, side)) for k in table.match_key], copy=False), copy=False)
            narrowed = _range_filter(table, side, bounds, ref.name == table.storage, dialect or "") if bounds else None
            if narrowed is not None:
                branch.where(narrowed, copy=False)
            branch.where(exp.Exists(this=written), copy=False)
    present = exp.Exists(this=exp.select(exp.Literal.number(1))
                         .from_(exp.Subquery(this=before, alias=exp.TableAlias(this=quoted("s"))), copy=False)
                         .where(exp.and_(*[exp.EQ(this=column(k, "s"), expression=column(k, "n")) for k in table.key], copy=False), copy=False))
    existing = _count(_written_rows(table, "n").select(exp.Literal.number(1), append=False, copy=False)
                      .where(exp.not_(column("tq_deleted", "n"), copy=False), copy=False).where(present, copy=False))
    return exp.select(exp.alias_(duplicates, "duplicate_keys", copy=False), exp.alias_(existing, "existing_keys", copy=False))


def _placeholder_index(node: exp.Placeholder) -> int | None:
    name = str(node.this)
    return int(name[len(USER_PREFIX):]) if name.startswith(USER_PREFIX) else None


def _same_shape(a: object, b: object, shift: int) -> bool:
    """Whether `b` is `a` with each of the application's parameters n replaced by n + shift."""
    if isinstance(a, exp.Expression):
        if type(a) is not type(b):
            return False
        assert isinstance(b, exp.Expression)
        if isinstance(a, exp.Placeholder):
            first, other = _placeholder_index(a), _placeholder_index(b)
            return first is not None and other == first + shift
        a_args = {k: v for k, v in a.args.items() if v is not None and v != []}
        b_args = {k: v for k, v in b.args.items() if v is not None and v != []}
        return a_args.keys() == b_args.keys() and all(_same_shape(v, b_args[k], shift) for k, v in a_args.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_shape(x, y, shift) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def row_width(rows: list[exp.Tuple]) -> int | None:
    """How many of the application's parameters each row takes when every row is the
    first with its parameters shifted by that many per row (`(?, ?), (?, ?)`); None when
    the rows differ otherwise, or hold a query (which the rewrite must see row by row)."""
    first = rows[0]
    if any(isinstance(node, (exp.Query, exp.Table)) for row in rows for node in row.walk()):
        return None
    indexes = [i for i in (_placeholder_index(p) for p in first.find_all(exp.Placeholder)) if i is not None]
    width = max(indexes) - min(indexes) + 1 if indexes else 0
    if all(_same_shape(first, row, k * width) for k, row in enumerate(rows[1:], start=1)):
        return width
    return None


def _typed(value: exp.Expression, table: TableDef, name: str, dialect: str, *, text_parameters: bool = False) -> exp.Expression:
    """Casts a bare parameter or NULL to its column's type, unless the column holds text.

    The values land in a derived table before the cache, and PostgreSQL types an
    untyped parameter or NULL there as text, which no non-text column accepts. A
    direct INSERT would type it from the column; the cast does the same. Text columns
    are left to the engine's assignment cast, which rejects over-long values where an
    explicit cast to VARCHAR(n) would silently truncate them.
    """
    bare = value.unalias() if isinstance(value, exp.Alias) else value
    if not isinstance(bare, (exp.Placeholder, exp.Null)) and not (isinstance(bare, exp.Literal) and bare.is_string):
        return _assignment_cast_of_decimal(value, bare, table, name, dialect)
    try:
        kind = data_type(table.column(name).type_sql, dialect)
    except Exception:  # a type sqlglot cannot read: leave the value to the engine
        return value
    if kind.is_type(*exp.DataType.TEXT_TYPES):
        if isinstance(bare, exp.Placeholder) and text_parameters:
            # Fixes the parameter's type as text where it could otherwise be read two ways.
            cast = exp.cast(bare.copy(), data_type("TEXT"))
            return exp.alias_(cast, value.alias) if isinstance(value, exp.Alias) else cast
        return value
    cast = exp.cast(bare.copy(), kind)
    return exp.alias_(cast, value.alias) if isinstance(value, exp.Alias) else cast


def _assignment_cast_of_decimal(value: exp.Expression, bare: exp.Expression, table: TableDef, name: str, dialect: str) -> exp.Expression:
    """On MonetDB, a computed value bound for a DECIMAL column, cast to that column's type.

    MonetDB 11.45 computes `price * 1000` for a DECIMAL(6,2) price of 1.50 as 1.50 in a
    SELECT's projection (its optimizer drops the constant's trailing zeros: `* 2000` gives
    3.00), yet right when the product is assigned to a column, as its own UPDATE, INSERT
    ... SELECT and INSERT ... VALUES do. tique computes new rows in a SELECT, so it casts
    to the column's type as the assignment would, which MonetDB then computes right."""
    if dialect != "monetdb" or isinstance(bare, exp.Literal):
        return value
    try:
        kind = data_type(table.column(name).type_sql, dialect)
    except Exception:  # a type sqlglot cannot read: leave the value to the engine
        return value
    if not kind.is_type(exp.DataType.Type.DECIMAL):
        return value
    # Without a subquery (rewrite_update computes the uncorrelated ones apart) the CASE is
    # computed as SQL says: its common type, then the assignment's conversion.
    cast = _cast_branches(bare.copy(), kind) if bare.find(exp.Subquery) is not None else exp.cast(bare.copy(), kind)
    return exp.alias_(cast, value.alias) if isinstance(value, exp.Alias) else cast


def _cast_branches(value: exp.Expression, kind: exp.DataType) -> exp.Expression:
    """`value` cast to `kind`, a CASE by casting each of its results instead.

    MonetDB 11.45 fails a SELECT over a scan snapshot whose CASE mixes a DECIMAL(p <= 18)
    column with a BIGINT (`CASE WHEN c THEN t.dec ELSE (SELECT COUNT(*) FROM u) END`): it
    widens the result to a 128-bit decimal but leaves the column's values 64-bit, and
    cannot append one to the other ('bat.append' undefined). Each result cast to the
    column's type gives the CASE one type. For exact numbers the value is the one the
    assignment of the CASE's common type gives, as that type holds each result exactly."""
    while isinstance(value, exp.Paren):
        value = value.this
    if not isinstance(value, exp.Case):
        return exp.cast(value, kind)
    for branch in value.args.get("ifs") or []:
        branch.set("true", _cast_branches(branch.args["true"], kind))
    if value.args.get("default") is not None:
        value.set("default", _cast_branches(value.args["default"], kind))
    return value


def _is_default(value: exp.Expression) -> bool:
    """The DEFAULT keyword standing for a value (sqlglot reads it as a variable or, in an
    assignment, as an unquoted column named DEFAULT)."""
    if isinstance(value, exp.Var):
        return value.name.upper() == "DEFAULT"
    return (isinstance(value, exp.Column) and not value.table and isinstance(value.this, exp.Identifier)
            and not value.this.quoted and value.name.upper() == "DEFAULT")


def _default_value(table: TableDef, name: str, dialect: str, statement: str, verb: str) -> exp.Expression:
    """What DEFAULT stands for in column `name`: its default, typed as the column, or NULL.
    MonetDB refuses DEFAULT for a column that declares none, so tique does there too."""
    col = table.column(name)
    if col.default is None:
        if dialect == "monetdb":
            raise ProgrammingError(describe(statement, f"{verb}: column {name!r} has no valid default value"))
        return _typed(exp.Null(), table, name, dialect)
    value = col.default.copy()
    try:
        kind = data_type(col.type_sql, dialect)
    except Exception:  # a type sqlglot cannot read: the cache's own column types the value
        return value
    return value if kind.is_type(*exp.DataType.TEXT_TYPES) else exp.cast(value, kind)


def _positional_columns(table: TableDef, dialect: str) -> tuple[str, ...]:
    """The columns an INSERT without a column list fills, in order: DuckDB leaves its
    generated columns out; PostgreSQL counts them (and takes only DEFAULT for them)."""
    return table.writable_columns if dialect == "duckdb" else table.user_columns


def _without_generated(table: TableDef, listed: list[str], source: exp.Expression | None, dialect: str, statement: str) -> list[str]:
    """Checks what an INSERT gives generated columns, and drops them from `listed` and
    `source`'s rows: their values are computed (_physical_row). PostgreSQL takes DEFAULT
    for one, DuckDB not even that."""
    generated = [i for i, c in enumerate(listed) if table.column(c).generated is not None]
    if not generated:
        return listed
    rows = list(source.expressions) if isinstance(source, exp.Values) else []
    for i in generated:
        name = listed[i]
        if dialect == "duckdb":
            raise ProgrammingError(describe(statement, f"cannot insert into generated column {name!r}"))
        if not rows or not all(_is_default(row.expressions[i]) for row in rows):
            raise ProgrammingError(describe(statement, f"cannot insert a non-DEFAULT value into generated column {name!r}"))
    for row in rows:
        row.set("expressions", [v for i, v in enumerate(row.expressions) if i not in generated])
    return [c for i, c in enumerate(listed) if i not in generated]


ROW = "tq_row"


def _requalified(expression: exp.Expression, table: TableDef, qualifier: str, dialect: str) -> exp.Expression:
    """`expression` with each column reference naming `qualifier`'s column of that name."""
    def swap(node: exp.Expression) -> exp.Expression:
        return column(table.named(node, dialect), qualifier) if isinstance(node, exp.Column) else node
    return expression.transform(swap)


def _physical_row(table: TableDef, values: dict[str, exp.Expression], source: exp.Select, dialect: str,
                  once: Callable[[exp.Select], exp.Select] | None = None, carried: tuple[str, ...] = ()) -> exp.Select:
    """`source` projecting one row of the table's physical columns, from `values` for
    every column but the generated ones; those are computed from the row's final values
    (a level up, so each value, a nextval() default or a random() included, is computed
    once), typed as their columns as the engine would store them. `once` keeps one row
    per target row (UPDATE ... FROM), where the target's alias is still in scope.
    `carried`: named outputs `source` already projects, kept in front of the row."""
    # `source` is the caller's to give: built for this row and never read again.
    if not table.generated_columns:
        row = source.select(*[values[c] for c in table.physical_columns], copy=False)
        return once(row) if once is not None else row
    inner = source.select(*[exp.alias_(values[c], quoted(c)) for c in table.physical_columns if c in values], copy=False)
    if once is not None:
        inner = once(inner)
    projections: list[exp.Expression] = [column(n, ROW) for n in carried]
    for name in table.physical_columns:
        col = table.column(name) if name in table.user_columns else None
        if col is None or col.generated is None:
            projections.append(column(name, ROW))
            continue
        computed = _requalified(generated_expression(col, dialect), table, ROW, dialect)
        try:
            kind = data_type(col.type_sql, dialect)
        except Exception:
            kind = None
        projections.append(computed if kind is None or kind.is_type(*exp.DataType.TEXT_TYPES) else exp.cast(computed, kind))
    return exp.select(*projections).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=quoted(ROW))))


def _defaults_filled(rows: list[exp.Tuple], table: TableDef, listed: list[str], dialect: str, statement: str) -> None:
    """Replaces each DEFAULT in `rows` by what it stands for in its column."""
    for row in rows:
        for value, name in zip(list(row.expressions), listed):
            if _is_default(value):
                value.replace(_default_value(table, name, dialect, statement, "INSERT INTO"))


def _key_value(values: dict[str, exp.Expression], name: str, statement: str) -> exp.Expression:
    """A key column's value for the packed key, which repeats it: a value computed by a
    function (a nextval() default) would be computed twice, and could differ."""
    value = values[name]
    if not isinstance(value, exp.Column) and value.find(exp.Func) is not None:
        raise NotSupportedError(describe(statement, f"key column {name!r} left to its default {value.sql()} is not supported here; give the key's value in the INSERT"))
    return value


def own_with(tree: exp.Insert | exp.Update | exp.Delete, statement: str) -> None:
    """A write's own WITH (`WITH w AS (...) INSERT/UPDATE/DELETE ...`), which the rewriters
    below, building new statements from the write's parts, would otherwise drop: the
    CTEs would then be read as the tables of their names (a tique table's snapshot).

    An INSERT's WITH is visible in its source query only (its target is always a table),
    so it moves onto that query (in place), which means the same. An UPDATE's or DELETE's
    WITH is visible in FROM/USING, WHERE and SET alike: refused."""
    with_ = tree.args.get("with_") or tree.args.get("with")
    if not isinstance(with_, exp.With):
        return
    source = tree.expression if isinstance(tree, exp.Insert) else None
    if isinstance(source, exp.Query) and not (source.args.get("with_") or source.args.get("with")):
        tree.set("with_" if "with_" in tree.args else "with", None)
        source.set("with_" if "with_" in type(source).arg_types else "with", with_)
        return
    kind = tree.key.upper()
    raise NotSupportedError(describe(statement, f"WITH before {kind} of a tique table is not supported; put the query in a subquery of the {kind}"
                                     if kind != "INSERT" else "WITH before INSERT of a tique table is supported only with INSERT ... SELECT whose query has no WITH of its own; move the CTEs into the query"))


def rewrite_insert(tree: exp.Insert, table: TableDef, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("conflict", "returning", "overwrite", "alternative", "by_name", "partition", "where"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"INSERT with {unsupported.upper().replace('_', ' ')} is not supported on tique tables"))
    target = tree.this
    if isinstance(target, exp.Schema):
        listed = [written_name(table, c, dialect) for c in target.expressions]
    elif tree.expression is None and tree.args.get("default"):
        listed = []  # DEFAULT VALUES
    else:
        listed = list(_positional_columns(table, dialect))
    unknown = [c for c in listed if c not in table.user_columns]
    if unknown:
        raise ProgrammingError(describe(statement, f"table {table.name} has no column {unknown[0]!r}"))
    source = tree.expression
    written_keys = None
    repeat = None
    if isinstance(source, exp.Values):
        for row in source.expressions:
            if len(row.expressions) != len(listed):
                raise ProgrammingError(describe(statement, f"INSERT has {len(row.expressions)} values for {len(listed)} columns"))
    listed = _without_generated(table, listed, source, dialect, statement)
    width = len(listed)
    if isinstance(source, exp.Values):
        rows = list(source.expressions)
        _defaults_filled(rows, table, listed, dialect, statement)
        written_keys = written_key_sources(table, listed, rows, dialect)
        # Rows of one shape: rewrite the first, repeat its marked text when compiling. Not
        # when a row's text holds the mark character: marked text cannot carry that row.
        shift = row_width(rows) if not any(holds_mark(r) for r in rows) else None
        if shift is not None:
            repeat, rows = (len(rows), shift), rows[:1]
        typed = [exp.Tuple(expressions=[_typed(v, table, c, dialect) for v, c in zip(r.expressions, listed)]) for r in rows]
        derived: exp.Expression = exp.Values(expressions=typed, alias=exp.TableAlias(this=quoted(NEW), columns=[quoted(c) for c in listed]))
        if repeat is None:
            derived = replace_tables(derived, catalog, formulation, key_hash, dialect=dialect)
    elif isinstance(source, exp.Query):
        query = replace_tables(source.copy(), catalog, formulation, key_hash, dialect=dialect)
        if isinstance(query, exp.Select) and len(query.expressions) == width:
            query.set("expressions", [_typed(v, table, c, dialect) for v, c in zip(query.expressions, listed)])
        derived = exp.Subquery(this=query, alias=exp.TableAlias(this=quoted(NEW), columns=[quoted(c) for c in listed]))
    elif source is None and tree.args.get("default"):
        # DEFAULT VALUES: one row of defaults, drawn from a row of nothing.
        derived = exp.Subquery(this=exp.select(exp.alias_(exp.Literal.number(1), quoted("tq_one"))), alias=exp.TableAlias(this=quoted(NEW)))
    elif source is None:
        raise NotSupportedError(describe(statement, "INSERT without values is not supported on tique tables"))
    else:
        raise NotSupportedError(describe(statement, f"INSERT from {source.key.upper()} is not supported on tique tables"))
    values: dict[str, exp.Expression] = {}
    for col in table.columns:
        if col.generated is not None:
            continue
        if col.name in listed:
            values[col.name] = column(col.name, NEW)
        elif col.default is not None:
            values[col.name] = col.default.copy()
        else:
            values[col.name] = exp.Null()
    if table.hidden_rowid:
        values[ROWID] = _rowid_default(table)
    if table.packed:
        values[PACKED] = packed_key(table, [_key_value(values, k, statement) for k in table.key])
    select = _physical_row(table, values, exp.select().from_(derived), dialect).select(*metadata("tq_seq_write", False), copy=False)
    return WritePlan(table, (cache_insert(table, select),), not table.hidden_rowid, written_keys, repeat)


def _target_source(tree: exp.Update | exp.Delete, table: TableDef, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash,
                   dialect: str, fence: bool = False) -> tuple[exp.Select, str]:
    """The target's rows the statement writes, read at the snapshot and joined with its
    sources, with its alias. `fence`: the WHERE conjuncts that read only the target (all
    of them without sources; with sources, those whose columns all name the target's
    alias or that read no column) filter the target's snapshot inside a derived table
    read through a LIMIT no table reaches (see rewrite_update)."""
    ref = tree.this
    alias = alias_of(ref, dialect)  # generated references quote it, so fold it as the engine would
    if formulation is Formulation.AUTO:
        formulation = formulation_for(table, tree.args.get("where"), ref)
    point = pinned_key(table, tree.args.get("where"), ref) if formulation is Formulation.RANK else None
    snap: exp.Expression
    if formulation is Formulation.STORAGE and not _sources(tree) and flat_storage(table, tree, dialect):
        snap = storage_table(table, exp.TableAlias(this=quoted(alias)))  # the storage table itself (tique/rewrite/storage_reads.py)
    else:
        snap = facts.other_snapshot(exp.Subquery(this=snapshot(table, formulation, key_hash, physical=True, point=point, dialect=dialect),
                                                   alias=exp.TableAlias(this=quoted(alias))))
    where = tree.args.get("where")
    if fence and where is not None:
        conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
        inside = conjuncts if not _sources(tree) else [c for c in conjuncts if _reads_only(c, alias, dialect)]
        if inside:
            rest = [c for c in conjuncts if not any(c is i for i in inside)]
            where = exp.Where(this=exp.and_(*[c.copy() for c in rest])) if rest else None
            filtered = (exp.select(*[column(c, alias) for c in table.physical_columns]).from_(snap)
                        .where(replace_tables(exp.and_(*[c.copy() for c in inside]), catalog, formulation, key_hash, dialect=dialect), copy=False)
                        .limit(exp.Literal.number(NO_LIMIT), copy=False))
            snap = exp.Subquery(this=filtered, alias=exp.TableAlias(this=quoted(alias)))
    select = exp.select().from_(snap)
    for source in _sources(tree):
        source = source.copy()
        # A source's own joins (`FROM s1, s2 JOIN s3 ON ...`) hang on its first table:
        # they follow it as written, each side read at the snapshot.
        attached = source.args.get("joins") or []
        source.set("joins", None)
        select = select.join(replace_tables(source, catalog, formulation, key_hash, dialect=dialect), join_type="cross", copy=False)
        for join in attached:
            select.append("joins", replace_tables(join, catalog, formulation, key_hash, dialect=dialect))
    if where is not None:
        select = select.where(replace_tables(where.this.copy(), catalog, formulation, key_hash, dialect=dialect), copy=False)
    return select, alias


def _reads_only(conjunct: exp.Expression, alias: str, dialect: str) -> bool:
    """Whether every column `conjunct` reads is qualified by `alias` (as alias_of gives it;
    none read counts)."""
    return all(c.table and qualifier_of(c, dialect) == alias for c in conjunct.find_all(exp.Column))


def _sources(tree: exp.Update | exp.Delete) -> list[exp.Expression]:
    """The FROM items of an UPDATE ... FROM, or the USING items of a DELETE ... USING."""
    if isinstance(tree, exp.Delete):
        return list(tree.args.get("using") or [])
    # sqlglot names UPDATE's FROM clause "from_" from version 28 on, "from" before it.
    from_clause = tree.args.get("from_") or tree.args.get("from")
    if from_clause is None:
        return []
    return [from_clause.this, *(j.this for j in from_clause.args.get("joins") or [])]


def _once_per_row(select: exp.Select, table: TableDef, alias: str) -> exp.Select:
    """`select`, writing each target row once however many source rows match it.

    Joined with UPDATE ... FROM or DELETE ... USING sources, the target row appears once
    per matching combination of source rows; natively the row is updated (with values
    from an arbitrary one of them) or deleted once. Versions are numbered per row (its
    key, or hidden row id) and only the first is kept."""
    inner = select  # the caller's to give, built for this
    # Named outputs keep their names (a level above may read them by name).
    names = [e.alias if isinstance(e, exp.Alias) else f"tq_c{i}" for i, e in enumerate(inner.expressions)]
    inner.set("expressions", [exp.alias_(e, quoted(n)) for e, n in zip(inner.expressions, names)])
    number = exp.Window(this=exp.RowNumber(), partition_by=[column(k, alias) for k in table.match_key])
    inner.select(exp.alias_(number, quoted("tq_match")), copy=False)
    return (exp.select(*[column(n, "tq_once") for n in names])
            .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=quoted("tq_once"))))
            .where(exp.EQ(this=column("tq_match", "tq_once"), expression=exp.Literal.number(1)), copy=False))


def rewrite_update(tree: exp.Update, table: TableDef, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("returning", "order", "limit"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"UPDATE with {unsupported.upper()} is not supported on tique tables"))
    assignments: dict[str, exp.Expression] = {}
    hoisted: list[exp.Subquery] = []  # MonetDB: the values' uncorrelated scalar subqueries (tique/rewrite/monetdb_case.py)
    for assignment in tree.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise NotSupportedError(describe(statement, f"assignment {assignment.sql(dialect)!r} is not supported; use SET column = expression"))
        name = written_name(table, assignment.this, dialect)
        if name not in table.user_columns:
            raise ProgrammingError(describe(statement, f"table {table.name} has no column {name!r}"))
        value = assignment.expression
        if table.column(name).generated is not None:
            # PostgreSQL takes SET b = DEFAULT for a generated column (it is recomputed anyway).
            if dialect == "postgres" and _is_default(value):
                continue
            raise ProgrammingError(describe(statement, f"cannot update generated column {name!r}"))
        if _is_default(value):
            assignments[name] = _default_value(table, name, dialect, statement, "UPDATE")
            continue
        value = value.copy()
        if dialect == "monetdb":
            value = hoist_scalars(value, catalog, hoisted)  # its CASEs' conditions are null-safe already (passes.PREPARE)
        assignments[name] = _typed(replace_tables(value, catalog, formulation, key_hash, dialect=dialect), table, name, dialect, text_parameters=True)
    # MonetDB (11.45) answers a query whose WHERE it folds to FALSE (`c BETWEEN NULL AND -2`,
    # `c = NULL`) with one row of NULLs when a CASE of its select list holds a correlated
    # subquery: it replaces the filtered relation, which the decorrelated subquery shares,
    # by a row of NULLs and loses the filter (`SELECT CASE WHEN x.c1 > 0 THEN x.c2 ELSE
    # (SELECT COUNT(*) FROM u AS s WHERE s.c0 = x.c2) END FROM u AS x WHERE FALSE`, natively
    # too). The UPDATE's read of its new rows would then write that row. Filtered behind a
    # fence, the target's relation is no longer one the optimizer folds.
    fence = dialect == "monetdb" and any(a.expression.find(exp.Subquery) is not None for a in tree.expressions)
    source, alias = _target_source(tree, table, catalog, formulation, key_hash, dialect, fence=fence)
    if hoisted:
        scalars = replace_tables(scalars_table(hoisted), catalog, formulation, key_hash, dialect=dialect)
        source = source.join(scalars, join_type="cross", copy=False)
    moves_key = any(k in assignments for k in table.key)
    if moves_key and dialect != "monetdb":
        _same_rows_twice(tree, dialect, statement)
    new_values = {c: assignments.get(c, column(c, alias)) if c not in (ROWID, PACKED) else column(c, alias)
                  for c in table.physical_columns if c not in {g.name for g in table.generated_columns}}
    if table.packed and moves_key:
        new_values[PACKED] = packed_key(table, [assignments.get(k, column(k, alias)) for k in table.key])
    once: Callable[[exp.Select], exp.Select] | None = (lambda select: _once_per_row(select, table, alias)) if _sources(tree) else None
    if dialect == "monetdb":
        return WritePlan(table, (_one_read_per_target(table, new_values, source, alias, moves_key, once, dialect),),
                         moves_key and not table.hidden_rowid, assigned=frozenset(assignments))
    inserts: list[exp.Expression] = []
    if moves_key:
        tombstones = source.copy().select(*[column(c, alias) for c in table.physical_columns], *metadata("tq_seq_tomb", True), copy=False)
        inserts.append(cache_insert(table, once(tombstones) if once else tombstones))
    row = _physical_row(table, new_values, source, dialect, once)
    inserts.append(cache_insert(table, row.select(*metadata("tq_seq_write", False), copy=False)))
    return WritePlan(table, tuple(inserts), moves_key and not table.hidden_rowid, assigned=frozenset(assignments))


OLD = "tq_old_"
# Functions whose value differs from one call to the next.
_VOLATILE = {"RANDOM", "NEXTVAL", "SETSEED", "CLOCK_TIMESTAMP", "TIMEOFDAY", "RANDOM_UUID", "UUIDV4", "UUIDV7"}


def _same_rows_twice(tree: exp.Update, dialect: str, statement: str) -> None:
    """Refuses an UPDATE moving the key whose choice of rows calls a volatile function:
    on DuckDB and PostgreSQL its tombstones and its new versions are two reads of the
    rows it updates (rewrite_update), which would choose different rows (`WHERE random()
    < 0.5`: some old rows left beside their new versions, some rows lost). The values it
    assigns are computed once per row, by the read of the new versions, so they may call
    anything. A LIMIT, OFFSET, FETCH or sample there chooses rows the same way: which
    rows it keeps is the engine's choice (a parallel scan's order, ties in an ORDER BY),
    which two reads may make differently."""
    chooses = [tree.args.get("where"), *_sources(tree)]
    for part in chooses:
        for node in part.find_all(exp.Limit, exp.Offset, exp.Fetch, exp.TableSample) if part is not None else ():
            raise NotSupportedError(describe(statement, f"UPDATE of a primary key whose WHERE or FROM keeps some rows with "
                                                        f"{node.key.upper()} is not supported on tique tables; choose the rows "
                                                        "first (SELECT their keys), then update those keys"))
        for node in part.find_all(exp.Func) if part is not None else ():
            name = node.name.upper() if isinstance(node, exp.Anonymous) else node.sql_name()
            if isinstance(node, (exp.Rand, exp.Uuid)) or name in _VOLATILE:
                raise NotSupportedError(describe(statement, f"UPDATE of a primary key whose WHERE or FROM calls {node.sql(dialect)} is not "
                                                            "supported on tique tables; choose the rows first (SELECT their keys), then update those keys"))


def _identity(table: TableDef) -> tuple[int, ...]:
    """Where the columns naming a target row (TableDef.match_key) sit in a cache row."""
    return tuple(table.physical_columns.index(k) for k in table.match_key)


def _one_read_per_target(table: TableDef, new_values: dict[str, exp.Expression], source: exp.Select, alias: str,
                         moves_key: bool, once: Callable[[exp.Select], exp.Select] | None, dialect: str) -> exp.Insert:
    """An UPDATE's cache insert on MonetDB: one query reading, per target row, its
    tombstone beside its new version when the key moves (its new version alone
    otherwise), which the backend runs as a read, then an insert (facts.TargetRows).

    MonetDB (11.45) answers some WHEREs with each target row several times, rows the
    WHERE excludes among them (`WHERE 71 IN (SELECT 0 FROM t AS a) AND NOT 0 IN (SELECT
    15 FROM t AS b)` keeps every row of t, once per row of b; the same with the NOT IN
    correlated to the target), and answers one WHERE differently depending on what the
    query projects. Natively its UPDATE then writes
    each row read once, in place, and counts every row read; moving a key, it deletes
    the rows read and inserts their new versions, one per row read, so a row read twice
    violates the PRIMARY KEY. Through tique, two versions of a row with one sequence
    number would both be its newest (the table shows the row twice), and a tombstone
    read apart from the new versions could miss a row whose new version was read (the
    old row stays beside the new one) or the reverse (the row is lost). Read once, the
    statement is whole whatever MonetDB answers, and answers as MonetDB's own: each
    target row written once in place (the backend keeps the first row read for it), the
    rows read counted; a key moved for a row read twice inserts its new key twice, which
    the key check refuses. UPDATE ... FROM keeps one row per target row in the query
    already (_once_per_row), so it counts each target row once, as PostgreSQL does. A
    DELETE reads once already and is kept to one tombstone per row the same way
    (rewrite_delete). DuckDB and PostgreSQL answer a WHERE the same in every query; only
    a volatile function makes two reads differ there (_same_rows_twice)."""
    width = len(table.physical_columns) + 3
    if not moves_key:
        row = _physical_row(table, new_values, source, dialect, once).select(*metadata("tq_seq_write", False), copy=False)
        return facts.target_rows(cache_insert(table, row), facts.TargetRows(_identity(table), width))
    # The old row's columns, named, travel through whatever levels _physical_row adds.
    carried = tuple(f"{OLD}{i}" for i in range(len(table.physical_columns)))
    source = source.select(*[exp.alias_(column(c, alias), quoted(n)) for c, n in zip(table.physical_columns, carried)], copy=False)
    row = _physical_row(table, new_values, source, dialect, once, carried)
    old, new = row.expressions[:len(carried)], row.expressions[len(carried):]
    row.set("expressions", [*old, *metadata("tq_seq_tomb", True), *new, *metadata("tq_seq_write", False)])
    return facts.target_rows(cache_insert(table, row), facts.TargetRows(None, width))


def rewrite_delete(tree: exp.Delete, table: TableDef, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("returning", "order", "limit"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"DELETE with {unsupported.upper()} is not supported on tique tables"))
    source, alias = _target_source(tree, table, catalog, formulation, key_hash, dialect)
    select = source.select(*[column(c, alias) for c in table.physical_columns], *metadata("tq_seq_write", True), copy=False)
    if _sources(tree):
        select = _once_per_row(select, table, alias)
    insert = cache_insert(table, select)
    if dialect == "monetdb":  # one tombstone per row, however often MonetDB reads it (see _one_read_per_target)
        facts.target_rows(insert, facts.TargetRows(_identity(table), len(table.physical_columns) + 3))
    return WritePlan(table, (insert,), False, assigned=frozenset())

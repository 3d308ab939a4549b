"""Writes: INSERT, UPDATE and DELETE on a tique table become INSERTs into its cache.

Each write statement owns two statement sequence numbers: `tq_seq_tomb` for the
tombstones of keys it moves away from and `tq_seq_write` for the versions it writes.
Reads inside the statement see the transaction's own writes before it (`tq_seq_limit`).
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from tique.catalog import PACKED, ROWID, TableDef, normalize
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.rewrite.reads import Lookup, replace_tables
from tique.rewrite.snapshot import Formulation, formulation_for, pinned_key, snapshot
from tique.rewrite.templates import KeyHash, column, packed_key, quoted

NEW = "tq_new"


@dataclass(frozen=True)
class WritePlan:
    """The cache inserts of one write, which of them yields the rowcount, and its checks."""

    table: TableDef
    inserts: tuple[exp.Expression, ...]
    rowcount_index: int
    validation: exp.Expression | None
    undo: exp.Expression


def _param(name: str, type_: str = "BIGINT") -> exp.Expression:
    return exp.cast(exp.Placeholder(this=name), type_)


def _metadata(seq_param: str, deleted: bool) -> list[exp.Expression]:
    return [_param("tq_txid"), _param(seq_param, "INTEGER"), exp.Boolean(this=deleted)]


def _cache_insert(table: TableDef, source: exp.Select) -> exp.Insert:
    columns = [quoted(c) for c in table.physical_columns] + [quoted("tq_txid"), quoted("tq_seq"), quoted("tq_deleted")]
    target = exp.Schema(this=exp.Table(this=quoted(table.cache)), expressions=columns)
    return exp.Insert(this=target, expression=source)


def _rowid_default(table: TableDef) -> exp.Expression:
    return exp.Anonymous(this="nextval", expressions=[exp.Literal.string(table.rowid_sequence)])


def _undo(table: TableDef) -> exp.Expression:
    return exp.delete(exp.Table(this=quoted(table.cache))).where(
        exp.and_(
            exp.EQ(this=column("tq_txid"), expression=_param("tq_txid")),
            exp.In(this=column("tq_seq"), expressions=[_param("tq_seq_tomb", "INTEGER"), _param("tq_seq_write", "INTEGER")]),
        )
    )


def _written_rows(table: TableDef, alias: str) -> exp.Select:
    return (
        exp.select("*")
        .from_(exp.Table(this=quoted(table.cache), alias=exp.TableAlias(this=quoted(alias))))
        .where(exp.and_(
            exp.EQ(this=column("tq_txid", alias), expression=_param("tq_txid")),
            exp.EQ(this=column("tq_seq", alias), expression=_param("tq_seq_write", "INTEGER")),
        ))
    )


def _count(query: exp.Select) -> exp.Subquery:
    return exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=quoted("tq_counted")))))


def _is_bound_value(node: exp.Expression) -> bool:
    """A parameter or a literal, possibly cast: a key value known before the statement runs."""
    while isinstance(node, (exp.Cast, exp.Alias, exp.Neg, exp.Paren)):
        node = node.this
    return isinstance(node, (exp.Placeholder, exp.Literal))


def _written_key_filter(table: TableDef, side: str, keys: list[list[exp.Expression]], storage: bool) -> exp.Expression | None:
    """A filter keeping `side`'s rows whose key is one of `keys` (each in key order),
    applied before anything is ranked; the semi-join beside it keeps the check exact.
    None where the semi-join alone does better: a packed table's storage, where MonetDB
    would compare every row's 128-bit packed key once per listed value (ten passes over
    4.8M rows for an order's lines), while the semi-join makes one."""
    if table.packed:
        if storage:
            return None
        packed = [packed_key(table, k) for k in keys]
        target = column(PACKED, side)
        return exp.EQ(this=target, expression=packed[0]) if len(packed) == 1 else exp.In(this=target, expressions=packed)
    if len(table.key) == 1:
        values = [k[0].copy() for k in keys]
        target = column(table.key[0], side)
        return exp.EQ(this=target, expression=values[0]) if len(values) == 1 else exp.In(this=target, expressions=values)
    rows = [exp.and_(*[exp.EQ(this=column(name, side), expression=v.copy()) for name, v in zip(table.key, k)]) for k in keys]
    return exp.or_(*rows) if len(rows) > 1 else rows[0]


def _known_keys(table: TableDef, listed: list[str], rows: list[exp.Tuple], dialect: str) -> list[list[exp.Expression]] | None:
    """Each VALUES row's key values in key order, typed as the cache will hold them, when
    all of them are parameters or literals; otherwise None."""
    if table.hidden_rowid or not all(k in listed for k in table.key):
        return None
    keyed: list[list[exp.Expression]] = []
    for row in rows:
        values = []
        for name in table.key:
            value = row.expressions[listed.index(name)]
            if not _is_bound_value(value):
                return None
            if isinstance(value, exp.Placeholder):
                # Left bare only in a text column (see _typed); a comparison needs its type
                # fixed, or PostgreSQL may deduce two types for one parameter.
                try:
                    kind = exp.DataType.build(table.column(name).type_sql, dialect=dialect, udt=True)
                except Exception:  # a type sqlglot cannot read: no filter, the semi-join alone
                    return None
                if not kind.is_type(*exp.DataType.TEXT_TYPES):
                    return None
                value = exp.cast(value.copy(), exp.DataType.build("TEXT"))
            values.append(value)
        keyed.append(values)
    return keyed


def validation(table: TableDef, key_hash: KeyHash, written_keys: list[list[exp.Expression]] | None = None) -> exp.Expression | None:
    """One query counting (duplicate keys written, keys already present) for a statement
    that writes new keys. NOT NULL needs no query: the cache columns carry it.

    `written_keys`, when the statement's key values are all known up front (INSERT ...
    VALUES of parameters and literals), are those values row by row in key order: each
    branch is then also filtered by them directly, which an engine evaluates far more
    cheaply than the semi-join against the cache that keeps the check exact."""
    if table.hidden_rowid:
        return None
    grouped = (_written_rows(table, "n").select(exp.Literal.number(1), append=False)
               .where(exp.not_(column("tq_deleted", "n")))
               .group_by(*[column(k, "n") for k in table.key])
               .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1))))
    duplicates = _count(grouped)
    before = snapshot(table, Formulation.RANK, key_hash, physical=True)
    for p in before.find_all(exp.Placeholder):
        if p.this == "tq_seq_limit":  # the snapshot just before this statement's new versions
            p.set("this", "tq_seq_write")
    # Only the written keys' versions are ranked: without this semi-join in each branch the
    # engine would rank the whole table, as the key it looks up comes from a correlated
    # reference that no optimizer pushes below a window.
    for ref in list(before.find_all(exp.Table)):
        if ref.name in (table.storage, table.cache):
            branch = ref.find_ancestor(exp.Select)
            assert branch is not None
            side = ref.alias_or_name
            written = _written_rows(table, "w").select(exp.Literal.number(1), append=False).where(
                exp.and_(*[exp.EQ(this=column(k, "w"), expression=column(k, side)) for k in table.match_key]))
            known = _written_key_filter(table, side, written_keys, storage=ref.name == table.storage) if written_keys else None
            if known is not None:
                branch.where(known, copy=False)
            branch.where(exp.Exists(this=written), copy=False)
    present = exp.Exists(this=exp.select(exp.Literal.number(1))
                         .from_(exp.Subquery(this=before, alias=exp.TableAlias(this=quoted("s"))))
                         .where(exp.and_(*[exp.EQ(this=column(k, "s"), expression=column(k, "n")) for k in table.key])))
    existing = _count(_written_rows(table, "n").select(exp.Literal.number(1), append=False)
                      .where(exp.not_(column("tq_deleted", "n"))).where(present))
    return exp.select(exp.alias_(duplicates, "duplicate_keys"), exp.alias_(existing, "existing_keys"))


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
        return value
    try:
        kind = exp.DataType.build(table.column(name).type_sql, dialect=dialect, udt=True)
    except Exception:  # a type sqlglot cannot read: leave the value to the engine
        return value
    if kind.is_type(*exp.DataType.TEXT_TYPES):
        if isinstance(bare, exp.Placeholder) and text_parameters:
            # Fixes the parameter's type as text where it could otherwise be read two ways.
            cast = exp.cast(bare.copy(), exp.DataType.build("TEXT"))
            return exp.alias_(cast, value.alias) if isinstance(value, exp.Alias) else cast
        return value
    cast = exp.cast(bare.copy(), kind)
    return exp.alias_(cast, value.alias) if isinstance(value, exp.Alias) else cast


def rewrite_insert(tree: exp.Insert, table: TableDef, lookup: Lookup, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("conflict", "returning", "overwrite", "alternative", "by_name", "partition", "where"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"INSERT with {unsupported.upper().replace('_', ' ')} is not supported on tique tables"))
    target = tree.this
    if isinstance(target, exp.Schema):
        listed = [normalize(c.name) for c in target.expressions]
    else:
        listed = list(table.user_columns)
    unknown = [c for c in listed if c not in table.user_columns]
    if unknown:
        raise ProgrammingError(describe(statement, f"table {table.name} has no column {unknown[0]!r}"))
    source = tree.expression
    width = len(listed)
    written_keys: list[list[exp.Expression]] | None = None
    if isinstance(source, exp.Values):
        for row in source.expressions:
            if len(row.expressions) != width:
                raise ProgrammingError(describe(statement, f"INSERT has {len(row.expressions)} values for {width} columns"))
        rows = [exp.Tuple(expressions=[_typed(v, table, c, dialect) for v, c in zip(r.expressions, listed)]) for r in source.expressions]
        written_keys = _known_keys(table, listed, rows, dialect)
        derived: exp.Expression = exp.Values(expressions=rows, alias=exp.TableAlias(this=quoted(NEW), columns=[quoted(c) for c in listed]))
        derived = replace_tables(derived, lookup, formulation, key_hash)
    elif isinstance(source, exp.Query):
        query = replace_tables(source.copy(), lookup, formulation, key_hash)
        if isinstance(query, exp.Select) and len(query.expressions) == width:
            query.set("expressions", [_typed(v, table, c, dialect) for v, c in zip(query.expressions, listed)])
        derived = exp.Subquery(this=query, alias=exp.TableAlias(this=quoted(NEW), columns=[quoted(c) for c in listed]))
    elif source is None:
        raise NotSupportedError(describe(statement, "INSERT ... DEFAULT VALUES is not supported on tique tables"))
    else:
        raise NotSupportedError(describe(statement, f"INSERT from {source.key.upper()} is not supported on tique tables"))
    projections: list[exp.Expression] = []
    for col in table.columns:
        if col.name in listed:
            projections.append(column(col.name, NEW))
        elif col.default is not None:
            projections.append(col.default.copy())
        else:
            projections.append(exp.Null())
    if table.hidden_rowid:
        projections.append(_rowid_default(table))
    if table.packed:
        projections.append(packed_key(table, [column(k, NEW) for k in table.key]))
    select = exp.select(*projections, *_metadata("tq_seq_write", False)).from_(derived)
    return WritePlan(table, (_cache_insert(table, select),), 0, validation(table, key_hash, written_keys), _undo(table))


def _target_source(tree: exp.Update | exp.Delete, table: TableDef, lookup: Lookup, formulation: Formulation, key_hash: KeyHash) -> tuple[exp.Select, str]:
    ref = tree.this
    alias = normalize(ref.alias_or_name)  # generated references quote it, so fold it as the engine would
    if formulation is Formulation.AUTO:
        formulation = formulation_for(table, tree.args.get("where"), ref.alias_or_name)
    point = pinned_key(table, tree.args.get("where"), ref.alias_or_name) if formulation is Formulation.RANK else None
    snap = exp.Subquery(this=snapshot(table, formulation, key_hash, physical=True, point=point), alias=exp.TableAlias(this=quoted(alias)))
    select = exp.select().from_(snap)
    extra = []
    # sqlglot names UPDATE's FROM clause "from_" from version 28 on, "from" before it.
    from_clause = (tree.args.get("from_") or tree.args.get("from")) if isinstance(tree, exp.Update) else None
    if from_clause is not None:
        extra.append(from_clause.this)
        extra.extend(j.this for j in from_clause.args.get("joins") or [])
    if isinstance(tree, exp.Delete) and tree.args.get("using"):
        extra.extend(tree.args["using"])
    for source in extra:
        select = select.join(replace_tables(source.copy(), lookup, formulation, key_hash), join_type="cross")
    where = tree.args.get("where")
    if where is not None:
        select = select.where(replace_tables(where.this.copy(), lookup, formulation, key_hash))
    return select, alias


def rewrite_update(tree: exp.Update, table: TableDef, lookup: Lookup, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("returning", "order", "limit"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"UPDATE with {unsupported.upper()} is not supported on tique tables"))
    assignments: dict[str, exp.Expression] = {}
    for assignment in tree.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise NotSupportedError(describe(statement, f"assignment {assignment.sql(dialect)!r} is not supported; use SET column = expression"))
        name = normalize(assignment.this.name)
        if name not in table.user_columns:
            raise ProgrammingError(describe(statement, f"table {table.name} has no column {name!r}"))
        assignments[name] = _typed(replace_tables(assignment.expression.copy(), lookup, formulation, key_hash), table, name, dialect, text_parameters=True)
    source, alias = _target_source(tree, table, lookup, formulation, key_hash)
    moves_key = any(k in assignments for k in table.key)
    new_values = [assignments.get(c, column(c, alias)) if c not in (ROWID, PACKED) else column(c, alias) for c in table.physical_columns]
    if table.packed and moves_key:
        new_values[-1] = packed_key(table, [assignments.get(k, column(k, alias)) for k in table.key])
    inserts: list[exp.Expression] = []
    if moves_key:
        tombstones = source.copy().select(*[column(c, alias) for c in table.physical_columns], *_metadata("tq_seq_tomb", True))
        inserts.append(_cache_insert(table, tombstones))
    inserts.append(_cache_insert(table, source.select(*new_values, *_metadata("tq_seq_write", False))))
    return WritePlan(table, tuple(inserts), 0, validation(table, key_hash) if moves_key else None, _undo(table))


def rewrite_delete(tree: exp.Delete, table: TableDef, lookup: Lookup, formulation: Formulation, key_hash: KeyHash, dialect: str, statement: str) -> WritePlan:
    for unsupported in ("returning", "order", "limit"):
        if tree.args.get(unsupported):
            raise NotSupportedError(describe(statement, f"DELETE with {unsupported.upper()} is not supported on tique tables"))
    source, alias = _target_source(tree, table, lookup, formulation, key_hash)
    select = source.select(*[column(c, alias) for c in table.physical_columns], *_metadata("tq_seq_write", True))
    return WritePlan(table, (_cache_insert(table, select),), 0, None, _undo(table))

"""Snapshot subqueries: what a tique table reads as inside one transaction."""
from __future__ import annotations

from enum import Enum

from sqlglot import exp

from tique.catalog import PACKED, TableDef
from tique.rewrite.templates import KeyHash, column, packed_key, quoted, table_template


class Formulation(str, Enum):
    RANK = "rank"  # rank() window: point and key lookups
    SCAN = "scan"  # anti-join/union: scans and analytics
    AUTO = "auto"  # picked per table reference from the query's filters
    # The storage table alone: only for a statement touching keys that no transaction has
    # versions of in the cache (tique/cache_state.py), where it is the snapshot.
    STORAGE = "storage"


def snapshot(table: TableDef, formulation: Formulation, key_hash: KeyHash, *, physical: bool = False,
             point: list[exp.Expression] | None = None, only: tuple[str, ...] | None = None,
             key_values: dict[str, exp.Expression] | None = None, dialect: str | None = None) -> exp.Query:
    """The snapshot of `table` as a query. `physical` also projects the hidden row id and
    the packed key. `point`, the key values a point access pins (packed tables only),
    filters storage and cache to that key's packed value before anything is ranked: the
    statement's own filter on the key columns cannot pass a window partitioned by the
    packed key, so without this the engine would rank the whole table. `only`, the user
    columns a read uses (in table order), narrows what every level carries to those and
    the key: engines bind and optimize each carried column at every level, per statement.
    `key_values`, what each key column equals (a lateral read: columns of the tables
    before it), filters storage and cache by their key columns before anything is
    ranked, so that each is read through its key index; a filter on the whole key keeps
    whole partitions of the window, so the ranking is unchanged. `dialect` picks the
    engine's own form of a template where it has one."""
    if formulation is Formulation.AUTO:
        raise ValueError("choose a concrete formulation before building a snapshot")
    columns = table.physical_columns if physical else table.user_columns
    if formulation is Formulation.STORAGE:
        return exp.select(*[exp.column(quoted(c)) for c in (only or columns)]).from_(exp.Table(this=quoted(table.storage)))
    carried = None
    if only is not None and not physical:
        columns = only
        carried = tuple(c for c in table.physical_columns if c in only or c in table.match_key)
    # MonetDB ranks the cache versions of the visible transactions only (its template says why).
    rank = "monetdb/snapshot_rank.sql" if dialect == "monetdb" else "common/snapshot_rank.sql"
    scan = {"monetdb": "monetdb/snapshot_scan.sql", "duckdb": "duckdb/snapshot_scan.sql"}.get(dialect or "", "common/snapshot_scan.sql")
    name = rank if formulation is Formulation.RANK else scan
    (query,) = table_template(name, table, columns, key_hash, carried)
    assert isinstance(query, exp.Query)
    if key_values is not None:
        for ref in list(query.find_all(exp.Table)):
            if ref.name in (table.storage, table.cache):
                branch = ref.find_ancestor(exp.Select)
                assert branch is not None
                side = ref.alias_or_name
                branch.where(exp.and_(*[exp.EQ(this=column(k, side), expression=key_values[k].copy()) for k in table.key]), copy=False)
        _newest_version(query)
    if point is not None and table.packed:
        for ref in list(query.find_all(exp.Table)):
            if ref.name in (table.storage, table.cache):
                branch = ref.find_ancestor(exp.Select)
                assert branch is not None
                # Storage too is filtered by the packed key, never by equality on every key
                # column: MonetDB (11.45 here; upstream issue 7783, still in Dec2025) answers
                # that through the PRIMARY KEY's hash index and keeps rows that committed
                # deletes removed, which a scan (tq_pk) drops. Checkpoint step 1 deletes a
                # key's storage row, step 2 appends its new version (beside the deleted row
                # while any transaction begun before the delete runs), step 3 purges the
                # cache: such a filter then finds both storage rows, which rank equal, so a
                # point read sees two rows of one key and an UPDATE writes two versions that
                # step 2 can never move (storage's PRIMARY KEY), while step 1 goes on
                # deleting: TPC-C's district storage emptied. A deleted key comes back the
                # same way. Nor is the key columns' form faster: in `tique bench packed` (1M
                # rows, medians of 600-1000 per run) packed point reads beat the 3-column
                # table's 1.43-1.73x this way, 1.01-1.02x by the key columns, 0.92-1.12x with
                # the last of them as a BETWEEN (correct: that avoids the index).
                # tests/test_packed_checkpoint_race.py pins the mechanism.
                branch.where(exp.EQ(this=column(PACKED, ref.alias_or_name), expression=packed_key(table, point)), copy=False)
    return query


def _newest_version(query: exp.Query) -> None:
    """A rank snapshot filtered to one key becomes its newest version, `ORDER BY tq_ord
    DESC, tq_seq DESC LIMIT 1`, instead of `rank() = 1`: a lateral read runs once per row
    before it, and PostgreSQL's window over the probe's rows (an Append, a Sort and a
    WindowAgg per row) cost more than the two index probes under it (Stock-Level:
    2.7 ms against 4.6 ms for 215 probes). The result is the same because one key's
    versions never tie on (tq_ord, tq_seq): its storage row is unique (primary key) and
    ranks 0, each committed transaction's versions by that transaction's own commit
    timestamp, the reading transaction's own above all of those, and one transaction's
    versions of the key by statement sequence (a statement writes a key once, and its
    tombstone of a key it moved away from ranks below its version: tique/rewrite/writes.py)."""
    window = query.find(exp.Window)
    assert window is not None and isinstance(window.parent, exp.Alias)
    ranked = window.parent.parent
    assert isinstance(ranked, exp.Select)
    order = window.args["order"]
    ranked.set("expressions", [e for e in ranked.expressions if e is not window.parent])
    ranked.set("order", order.copy())
    ranked.set("limit", exp.Limit(expression=exp.Literal.number(1)))
    outer = query if isinstance(query, exp.Select) else None
    assert outer is not None and outer.args.get("where") is not None
    kept = [c for c in outer.args["where"].this.flatten() if not any(col.name == "tq_rank" for col in c.find_all(exp.Column))]
    outer.set("where", exp.Where(this=exp.and_(*kept)))


def _is_value(node: exp.Expression) -> bool:
    """A bound parameter or a number: what a packed key can be computed from in SQL."""
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Placeholder) or (isinstance(node, exp.Literal) and not node.is_string)


def _same_qualifier(qualifier: exp.Identifier, name: exp.Identifier) -> bool:
    """Whether a column's qualifier surely names the FROM item `name` names, on every
    engine: the same spelling, quoted alike or all lower case (DuckDB would also take
    "MixedT" for MixedT, PostgreSQL would not: such a pair is left unpinned)."""
    return qualifier.name == name.name and (bool(qualifier.quoted) == bool(name.quoted) or name.name == name.name.lower())


def _names_key_column(column: exp.Column, key: str, table: TableDef) -> bool:
    """Whether `column` surely names key column `key` of `table` on every engine: a quoted
    name exactly, an unquoted one folded to lower case (as PostgreSQL and MonetDB fold it),
    or as written where no two columns of the table differ only by case (DuckDB's unquoted
    MixedCase; on the other engines that name is then no column, an error either way)."""
    identifier = column.this
    if not isinstance(identifier, exp.Identifier):
        return False
    if identifier.quoted:
        return identifier.name == key
    if identifier.name.lower() == key:
        return True
    return identifier.name == key and len({c.lower() for c in table.user_columns}) == len(table.user_columns)


def _equalities(where: exp.Expression | None, ref: exp.Table, table: TableDef) -> dict[str, exp.Expression]:
    """Key columns of `table`, read through `ref`, that the WHERE clause pins to a single
    value by a top-level equality, with the value each is pinned to."""
    pinned: dict[str, exp.Expression] = {}
    if where is None:
        return pinned
    alias = ref.args.get("alias")
    name = alias.this if isinstance(alias, exp.TableAlias) and alias.this is not None else ref.this
    if not isinstance(name, exp.Identifier):
        return pinned
    condition = where.this if isinstance(where, exp.Where) else where
    for conjunct in condition.flatten() if isinstance(condition, exp.And) else [condition]:
        if not isinstance(conjunct, exp.EQ):
            continue
        for side, other in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            if not isinstance(side, exp.Column) or other.find(exp.Column) or side.args.get("db"):
                continue
            qualifier = side.args.get("table")
            if qualifier is not None and not (isinstance(qualifier, exp.Identifier) and _same_qualifier(qualifier, name)):
                continue
            for k in table.key:
                if _names_key_column(side, k, table):
                    pinned.setdefault(k, other)
    return pinned


def formulation_for(table: TableDef, where: exp.Expression | None, ref: exp.Table) -> Formulation:
    """rank() when `where` pins the table's whole key (a point access), otherwise scan."""
    return Formulation.RANK if set(table.key) <= set(_equalities(where, ref, table)) else Formulation.SCAN


def pinned_key(table: TableDef, where: exp.Expression | None, ref: exp.Table) -> list[exp.Expression] | None:
    """The values `where` pins every key column of a packed table to, in key order; None
    unless each is a parameter or a number. The statement keeps its own filter, so the
    packed filter only has to keep every row that one does, which an exact packing of
    the same values does."""
    if not table.packed:
        return None
    pinned = _equalities(where, ref, table)
    values = [pinned.get(k) for k in table.key]
    if any(v is None or not _is_value(v) for v in values):
        return None
    return [v for v in values if v is not None]


def _enclosing_where(reference: exp.Table) -> tuple[exp.Expression | None, bool]:
    select = reference.find_ancestor(exp.Select)
    return (select.args.get("where"), True) if select is not None else (None, False)


def choose_formulation(table: TableDef, reference: exp.Table) -> Formulation:
    """The formulation for a table read inside a SELECT, from that SELECT's WHERE."""
    where, found = _enclosing_where(reference)
    if not found:
        return Formulation.SCAN
    return formulation_for(table, where, reference)


def point_of(table: TableDef, reference: exp.Table) -> list[exp.Expression] | None:
    """The pinned key of a packed table read inside a SELECT, from that SELECT's WHERE."""
    where, _ = _enclosing_where(reference)
    return pinned_key(table, where, reference)

"""Which keys of a table a statement can touch, as values bound per call (whole keys, or
the leading key columns the keys touched share): the rows a read can see and the
versions a write appends (see tique/cache_state.py, whose
key-level state lets a read of a key no transaction has versions of go to storage).

A key is a tuple of Python ints, one per key column, and only integer key columns are
tracked: the values an engine compares equal are then exactly the ints Python compares
equal (a string or a decimal bound to an integer column would be cast by the engine, so
it is never taken for a key here).
"""
from __future__ import annotations

from typing import Any, Hashable, Union

from sqlglot import exp

from tique.catalog import CatalogSnapshot, TableDef, key_bits
from tique.rewrite.params import USER_PREFIX, normalize_placeholders
from tique.rewrite.reads import referenced_tables
from tique.rewrite.snapshot import _equalities
from tique.rewrite.templates import data_type

Key = tuple[int, ...]
# Where one key column's value comes from: a parameter's number, or a literal's value.
Source = Union[int, tuple[int]]
KeySources = tuple[Source, ...]


def _source(node: exp.Expression) -> Source | None:
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if isinstance(inner, exp.Placeholder) and not negative:
        name = str(inner.this)
        if name.startswith(USER_PREFIX) and name[len(USER_PREFIX):].isdigit():
            return int(name[len(USER_PREFIX):])
        return None
    if isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit():
        return (-int(inner.this) if negative else int(inner.this),)
    return None


def _pinned(table: TableDef, where: exp.Expression | None, ref: exp.Table) -> KeySources | None:
    """The sources of the values `where` pins the leading key columns to by top-level
    equalities, in key order, as far as they go: a prefix of every key the rows it keeps
    have; None when it pins not even the first."""
    pinned = _equalities(where, ref, table)
    sources = []
    for k in table.key:
        source = _source(pinned[k]) if k in pinned else None
        if source is None:
            break
        sources.append(source)
    return tuple(sources) or None


def tracks_keys(table: TableDef, dialect: str) -> bool:
    return bool(table.key) and not table.hidden_rowid and key_bits(table, dialect) is not None


def bind(sources: KeySources, params: tuple | list) -> Key | None:
    """The key `sources` name for one call; None unless every value is a plain int."""
    values = []
    for source in sources:
        value = source[0] if isinstance(source, tuple) else params[source - 1] if source <= len(params) else None
        if type(value) is not int:
            return None
        values.append(value)
    return tuple(values)


def read_points(tree: exp.Expression, catalog: CatalogSnapshot, dialect: str) -> dict[str, KeySources]:
    """Tables of a read (as parsed, before any rewrite) that it references once, from a
    SELECT reading that table alone whose WHERE pins the table's leading key columns to
    values: only rows of keys so beginning can reach the result, whichever versions."""
    references = referenced_tables(tree, catalog)
    counts: dict[str, int] = {}
    for _, table in references:
        counts[table.name] = counts.get(table.name, 0) + 1
    points: dict[str, KeySources] = {}
    for ref, table in references:
        if counts[table.name] != 1 or not tracks_keys(table, dialect):
            continue
        select = ref.parent.parent if isinstance(ref.parent, exp.From) else None
        # Alone in its FROM: an unqualified column in the WHERE is then one of its own.
        if not isinstance(select, exp.Select) or select.args.get("joins") or select.args.get("laterals"):
            continue
        sources = _pinned(table, select.args.get("where"), ref)
        if sources is not None:
            points[table.name] = sources
    return points


def write_points(tree: exp.Expression, table: TableDef, dialect: str) -> tuple[KeySources, ...] | None:
    """The keys a write (as parsed) appends versions of, one entry per row it can write;
    None when they cannot be told from the text (then every key of the table counts as
    written)."""
    if not tracks_keys(table, dialect) or tree.args.get("with") or tree.args.get("with_"):
        return None
    if isinstance(tree, exp.Insert):
        return _insert_points(tree, table, dialect)
    if isinstance(tree, (exp.Update, exp.Delete)):
        if tree.args.get("from") or tree.args.get("from_") or tree.args.get("joins") or tree.args.get("using"):
            return None  # a column of another table could pass for one of the target's
        if isinstance(tree, exp.Update):
            assigned = {table.named(a.this, dialect) for a in tree.expressions if isinstance(a, exp.EQ) and isinstance(a.this, exp.Column)}
            if len(assigned) != len(tree.expressions) or assigned & set(table.key):
                return None  # moves a row to another key
        target = tree.this
        if not isinstance(target, exp.Table):
            return None
        sources = _pinned(table, tree.args.get("where"), target)
        return None if sources is None else (sources,)
    return None


def _insert_points(tree: exp.Insert, table: TableDef, dialect: str) -> tuple[KeySources, ...] | None:
    if tree.args.get("conflict") or not isinstance(tree.expression, exp.Values):
        return None
    listed = ([table.named(c, dialect) for c in tree.this.expressions] if isinstance(tree.this, exp.Schema)
              else list(table.user_columns))
    if any(k not in listed for k in table.key):
        return None
    positions = [listed.index(k) for k in table.key]
    rows = []
    for row in tree.expression.expressions:
        values = row.expressions if isinstance(row, exp.Tuple) else [row]
        if len(values) != len(listed):
            return None
        sources = tuple(_source(values[p]) for p in positions)
        if any(s is None for s in sources):
            return None
        rows.append(sources)
    return tuple(rows)  # type: ignore[arg-type]


_UNKNOWN = object()


def written_keys(memo: Any, statement: str, table: TableDef, catalog: CatalogSnapshot, dialect: str,
                 params: tuple | list) -> tuple[list[Key] | None, bool]:
    """The keys of `table` that the write `statement` appends versions of with `params`
    (None when not known), and whether its target is the only tique table it names (so
    that, when its keys have no versions in the cache, it can read them from storage). What the text says is worked out once per text (in `memo`)."""
    memo_key = ("written keys", statement, table)
    found = memo.get(memo_key)
    if found is None:
        from tique.planner import parse_one  # the planner imports the rewriters

        try:
            tree = parse_one(statement, dialect)
            normalize_placeholders(tree)
            sources = write_points(tree, table, dialect)
            alone = _reads_target_only(tree, catalog)
        except Exception:
            sources, alone = None, False
        found = (_UNKNOWN if sources is None else sources, alone)
        memo.put(memo_key, found)
    sources, alone = found
    if sources is _UNKNOWN:
        return None, False
    keys = [bind(s, params) for s in sources]
    return (None, False) if any(k is None for k in keys) else (keys, alone)  # type: ignore[return-value]


def _reads_target_only(tree: exp.Expression, catalog: CatalogSnapshot) -> bool:
    """Whether the write's only tique table reference is its target: a subquery reading
    the same table would read all of it, not just the keys written."""
    if isinstance(tree, exp.Insert):
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    elif isinstance(tree, (exp.Update, exp.Delete)):
        target = tree.this
    else:
        return False
    return all(ref is target for ref, _ in referenced_tables(tree, catalog))


def read_keys(memo: Any, statement: Hashable, source: exp.Expression, catalog: CatalogSnapshot, dialect: str,
              params: tuple | list) -> dict[str, Key]:
    """For each table the read pins to one key (read_points), that key with `params`;
    `statement` names the plan (the key it is shared under), whose points are kept."""
    memo_key = ("read keys", statement)
    points = memo.get(memo_key)
    if points is None:
        points = read_points(source, catalog, dialect)
        memo.put(memo_key, points)
    found = {}
    for name, sources in points.items():
        key = bind(sources, params)
        if key is not None:
            found[name] = key
    return found


def storage_key_query(table: TableDef) -> exp.Select:
    """The keys of `table`'s storage among those storage_key_values binds: storage joined
    to the keys, unnested from one list per key column. Where the keys have no versions in
    the cache, what storage holds of them is what is present. One text per table whatever
    the number of keys, so a new row count is never compiled again (a list of markers
    would be), and exact: a range of the values written would fetch every stored key
    between two far-apart ones. Lists bind as one value each on DuckDB, the only engine
    whose writers all share one process (the cache-state precondition of this check)."""
    written = exp.select(*[
        exp.alias_(exp.Unnest(expressions=[exp.cast(
            exp.Placeholder(this=f"tq_k{i}"),
            exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[data_type(table.column(name).type_sql)], nested=True))]),
            f"tq_k{i}")
        for i, name in enumerate(table.key)])
    on = exp.and_(*[exp.EQ(this=exp.column(quote(name), table="tq_stored"), expression=exp.column(f"tq_k{i}", table="tq_written"))
                    for i, name in enumerate(table.key)])
    return (exp.select(*[exp.column(quote(k), table="tq_stored") for k in table.key])
            .from_(exp.alias_(exp.Table(this=quote(table.storage)), "tq_stored", table=True))
            .join(exp.alias_(exp.Subquery(this=written), "tq_written", table=True), on=on))


def storage_key_values(table: TableDef, keys: list[Key]) -> dict[str, Any]:
    """storage_key_query's values: one list per key column, the keys' values in order."""
    return {f"tq_k{i}": [k[i] for k in keys] for i in range(len(table.key))}


def quote(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)

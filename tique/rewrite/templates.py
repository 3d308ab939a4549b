"""Loads the SQL templates in sql/ and expands their markers for one table.

Markers: `storage_table` and `cache_table` name the physical tables; `TQ_COLUMNS(a)`
expands to the columns the template projects (qualified by `a` when given);
`TQ_ALL_COLUMNS(a)` to every physical column, hidden row id and packed key included;
`TQ_KEY(a)` to the columns the versions of one row share (the packed key where there is
one); `TQ_KEY_MATCH(a, b)` to equality of the two sides' keys; `TQ_KEY_HASH(a)` to the
engine's write-set hash of the key. `:tq_*` placeholders are per-transaction values.
A table named after a file of `sql/fragments/` (`FROM stable_versions AS v`) stands for
that file's query, so templates share a subquery instead of repeating it.
"""
from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Callable

import sqlglot
from sqlglot import exp

from tique.catalog import TableDef
from tique.rewrite.faithful import drop_implicit_null_order

TEMPLATE_DIALECT = "duckdb"
KeyHash = Callable[[str, list[exp.Expression]], exp.Expression]


def sql_dir() -> Path:
    """Installed wheels carry sql/ inside the package; a source checkout has it beside tique/."""
    packaged = resources.files("tique") / "sql"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "sql"


@functools.cache
def template_text(name: str) -> str:
    return (sql_dir() / name).read_text()


def _inline_fragments(tree: exp.Expression) -> None:
    """Each table of `tree` named after a fragment file becomes that query, keeping the alias."""
    fragments = sql_dir() / "fragments"
    for table in list(tree.find_all(exp.Table)):
        if table.db or not (fragments / f"{table.name}.sql").is_file():
            continue
        (query,) = _parsed(f"fragments/{table.name}.sql")
        table.replace(exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier(table.alias_or_name))))


@functools.cache
def _parsed(name: str) -> tuple[exp.Expression, ...]:
    trees = tuple(t for t in sqlglot.parse(template_text(name), read=TEMPLATE_DIALECT) if t is not None)
    for tree in trees:
        _inline_fragments(tree)
        forget_positions(tree)
        for node in tree.walk():  # the comments document the files; they would only bloat every statement
            node.comments = None
        drop_implicit_null_order(tree)  # templates write no null order (they sort by keys never NULL)
    return trees


def forget_positions(tree: exp.Expression) -> exp.Expression:
    """Drops the source positions the parser records on identifiers and literals (their
    `meta`): nothing after parsing reads them, and copying a tree deep-copies each one,
    which made them most of the cost of every copy of a snapshot."""
    for node in tree.walk():
        if node._meta is not None:
            node._meta = None
    return tree


def template(name: str) -> list[exp.Expression]:
    return [t.copy() for t in _parsed(name)]


@functools.lru_cache(maxsize=256)
def data_type(type_sql: str, dialect: str | None = None) -> exp.DataType:
    """A type parsed once (sqlglot parses a type's text on every build); cast with it,
    as exp.cast copies it. Unreadable types come back as user-defined ones."""
    return exp.DataType.build(type_sql, dialect=dialect, udt=True)


def quoted(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def column(name: str, qualifier: str | None = None) -> exp.Column:
    if not isinstance(name, str) or not isinstance(qualifier, (str, type(None))):
        return exp.Column(this=quoted(name), table=quoted(qualifier) if qualifier else None)
    # The identifiers built directly (as exp.to_identifier builds them, quoted): templates make thousands.
    return exp.Column(this=exp.Identifier(this=name, quoted=True), table=exp.Identifier(this=qualifier, quoted=True) if qualifier else None)


def _qualifier(call: exp.Anonymous, i: int = 0) -> str | None:
    args = call.expressions
    return args[i].name if len(args) > i else None


def key_match(table: TableDef, left: str, right: str) -> exp.Expression:
    return exp.and_(*[exp.EQ(this=column(k, left), expression=column(k, right)) for k in table.match_key])


def packed_key(table: TableDef, values: list[exp.Expression]) -> exp.Expression:
    """The packed key of one row from its key values, in key order: the first value
    signed, each next one shifted to non-negative and appended below it, so the packing
    is exact and fits 128 bits (see catalog.with_packed_key)."""
    bits = table.packed_bits
    assert len(values) == len(bits)
    wide = data_type("INT128")
    packed: exp.Expression = exp.cast(values[0].copy(), wide)
    for value, width in zip(values[1:], bits[1:]):
        shifted = exp.Paren(this=exp.Add(this=exp.cast(value.copy(), wide), expression=exp.Literal.number(2 ** (width - 1))))
        packed = exp.Add(this=exp.Mul(this=exp.Paren(this=packed), expression=exp.cast(exp.Literal.number(2 ** width), wide)), expression=shifted)
    return packed


_COLUMN_LISTS = ("TQ_COLUMNS", "TQ_ALL_COLUMNS")


def expand(tree: exp.Expression, table: TableDef, columns: tuple[str, ...], key_hash: KeyHash,
           carried: tuple[str, ...] | None = None) -> exp.Expression:
    """Expands every marker of a parsed template for `table`, projecting `columns`.
    `carried`, when given, is what `TQ_ALL_COLUMNS` stands for instead of every physical
    column (a snapshot read that needs only some columns)."""
    return expand_columns(expand_table(tree, table, key_hash), table, columns, carried)


def _splice(tree: exp.Expression, markers: tuple[str, ...], items_for: Callable[[str, exp.Anonymous], list]) -> None:
    """Replaces each of `markers` standing in a list of `tree` by the items it stands for."""
    # The lists holding a marker, found from the markers (one search) rather than by
    # looking through every list of every node.
    lists: dict[tuple[int, str], tuple[exp.Expression, str]] = {}
    for call in tree.find_all(exp.Anonymous):
        holder, key = call.parent, call.arg_key
        if holder is not None and key is not None and call.name.upper() in markers and isinstance(holder.args.get(key), list):
            lists.setdefault((id(holder), key), (holder, key))
    for node, key in lists.values():
        out = []
        for item in node.args[key]:
            if isinstance(item, exp.Anonymous) and item.name.upper() in markers:
                out.extend(items_for(item.name.upper(), item))
            else:
                out.append(item)
        node.set(key, out)


def expand_table(tree: exp.Expression, table: TableDef, key_hash: KeyHash) -> exp.Expression:
    """Expands the markers that depend on the table alone: its physical tables' names,
    TQ_KEY, TQ_KEY_MATCH and TQ_KEY_HASH. The column lists stay (expand_columns)."""
    names = {"storage_table": table.storage, "cache_table": table.cache}
    for t in tree.find_all(exp.Table):
        if t.name in names:
            t.set("this", quoted(names[t.name]))
    for col in tree.find_all(exp.Column):
        if col.table in names:
            col.set("table", quoted(names[col.table]))
    _splice(tree, ("TQ_KEY",), lambda _, item: [column(k, _qualifier(item)) for k in table.match_key])
    for call in list(tree.find_all(exp.Anonymous)):
        upper = call.name.upper()
        if upper == "TQ_KEY_MATCH":
            left, right = _qualifier(call, 0), _qualifier(call, 1)
            right = names.get(right, right)
            call.replace(exp.paren(key_match(table, left, right)) if len(table.match_key) > 1 else key_match(table, left, right))
        elif upper == "TQ_KEY_HASH":
            call.replace(key_hash(table.name, [column(k, _qualifier(call)) for k in table.match_key]))
    return tree


def expand_columns(tree: exp.Expression, table: TableDef, columns: tuple[str, ...],
                   carried: tuple[str, ...] | None = None) -> exp.Expression:
    """Expands TQ_COLUMNS to `columns` and TQ_ALL_COLUMNS to `carried` (every physical
    column when None), each qualified by the marker's argument when it has one."""
    lists = {"TQ_COLUMNS": columns, "TQ_ALL_COLUMNS": table.physical_columns if carried is None else carried}
    _splice(tree, _COLUMN_LISTS, lambda marker, item: [column(c, _qualifier(item)) for c in lists[marker]])
    return tree


def table_template(name: str, table: TableDef, columns: tuple[str, ...], key_hash: KeyHash,
                   carried: tuple[str, ...] | None = None) -> list[exp.Expression]:
    """The template `name` expanded for `table` (see expand), projecting `columns`: a copy
    of the table's expansion with its column lists filled in. The lists are reached by
    the paths found once per table (_column_lists), not by a walk of each copy, and the
    copy is the only one: statements over a table project many different columns, so a
    cache per projection (copy in, copy out) costs more than it saves."""
    lists = {"TQ_COLUMNS": columns, "TQ_ALL_COLUMNS": table.physical_columns if carried is None else carried}
    found = []
    for tree, holders in zip(_table_expanded(name, table, key_hash), _column_lists(name, table, key_hash)):
        tree = tree.copy()
        for path, key in holders:
            node = tree
            for step, index in path:
                node = node.args[step] if index is None else node.args[step][index]
            out = []
            for item in node.args[key]:
                upper = item.name.upper() if isinstance(item, exp.Anonymous) else None
                if upper in lists:
                    out.extend(column(c, _qualifier(item)) for c in lists[upper])
                else:
                    out.append(item)
            node.set(key, out)
        found.append(tree)
    return found


TreePath = tuple[tuple[str, "int | None"], ...]  # (arg, index in it when a list) from the root


@functools.lru_cache(maxsize=256)
def _column_lists(name: str, table: TableDef, key_hash: KeyHash) -> tuple[tuple[tuple[TreePath, str], ...], ...]:
    """For each tree of _table_expanded, where its column-list markers stand: the path to
    each node holding a list with one and that list's arg, deepest first (filling a list
    never moves what lies above it)."""
    found = []
    for tree in _table_expanded(name, table, key_hash):
        holders: dict[tuple[int, str], tuple[TreePath, str]] = {}
        for call in tree.find_all(exp.Anonymous):  # breadth first: shallowest first
            holder, key = call.parent, call.arg_key
            if holder is not None and key is not None and call.name.upper() in _COLUMN_LISTS and isinstance(holder.args.get(key), list):
                holders.setdefault((id(holder), key), (_path(tree, holder), key))
        found.append(tuple(reversed(holders.values())))
    return tuple(found)


def _path(root: exp.Expression, node: exp.Expression) -> TreePath:
    steps: list[tuple[str, int | None]] = []
    while node is not root:
        parent = node.parent
        assert parent is not None and node.arg_key is not None
        value = parent.args[node.arg_key]
        steps.append((node.arg_key, next(i for i, v in enumerate(value) if v is node) if isinstance(value, list) else None))
        node = parent
    return tuple(reversed(steps))


@functools.lru_cache(maxsize=256)
def _table_expanded(name: str, table: TableDef, key_hash: KeyHash) -> tuple[exp.Expression, ...]:
    """The template expanded for `table` but for its column lists, once per table: the
    statements over one table project many different columns, and each projection then
    costs a copy and one walk instead of expanding the whole template again."""
    return tuple(expand_table(t, table, key_hash) for t in template(name))

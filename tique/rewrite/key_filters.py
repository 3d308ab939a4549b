"""Key filters: the conditions of a query on a tique table's key columns alone, which its
scan snapshot can apply to storage and cache before it picks each key's version.

A snapshot picks, per key, the newest visible version; every version of a key has the
same key values. A condition on key columns alone is therefore true or not for a whole
key partition at once, so filtering storage and cache by it keeps or drops whole
partitions and leaves the version chosen for every key it keeps unchanged: the snapshot
filtered equals the snapshot, filtered. A condition on any other column is not: a newer
version that fails it must still hide an older one that passes it, so it never moves.

The query keeps its own condition; the copy only lets the engine read storage and cache
through their key indexes (TPC-C Stock-Level: `ol_o_id >= ? AND ol_o_id < ?` with the
district pinned, which PostgreSQL does not carry into the anti-join's cache side by
itself, so it hashed every cached line of the district per call).

A condition moves only where that is meaning-preserving for the query around it:
- from the WHERE clause of the SELECT reading the table, when the table's rows are not
  null-extended there (it is in FROM, an inner join or a RIGHT join's own side, and no
  RIGHT or FULL join follows);
- from the ON clause of the table's own inner or LEFT join.
It must be deterministic and unable to fail on a row the query never sees (the snapshot
evaluates it on versions the transaction does not see): comparisons, BETWEEN, IN lists,
IS [NOT] NULL, AND, OR and NOT over key columns and the statement's parameters and
constants; no function, arithmetic, cast or subquery. Columns bind as the engine binds
them: qualified by the table's alias, or unqualified where no join merges columns (USING,
NATURAL), in which case a name of the table's key column binds to it (or is ambiguous,
which the engine reports on the query as written)."""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import TableDef
from tique.rewrite.snapshot import _names_key_column, _same_qualifier
from tique.rewrite.templates import column

# The nodes a moved condition may hold: the connectives, the predicates, and the leaves.
_CONNECTIVES = (exp.And, exp.Or, exp.Not, exp.Paren)
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In, exp.Is)
_VALUES = (exp.Placeholder, exp.Literal, exp.Null, exp.Boolean)
# Joins that neither null-extend nor pick rows otherwise than by their ON condition.
_PLAIN_KINDS = ("", "INNER", "CROSS", "OUTER")


def _key_column(node: exp.Column, name: exp.Identifier, table: TableDef, unqualified: bool) -> str | None:
    """The key column of `table` that `node` names through the reference named `name`."""
    if node.args.get("db") or node.args.get("catalog"):
        return None
    qualifier = node.args.get("table")
    if qualifier is None and not unqualified:
        return None
    if qualifier is not None and not (isinstance(qualifier, exp.Identifier) and _same_qualifier(qualifier, name)):
        return None
    return next((k for k in table.key if _names_key_column(node, k, table)), None)


def _movable(condition: exp.Expression, name: exp.Identifier, table: TableDef, unqualified: bool) -> exp.Expression | None:
    """`condition` over the bare key column names, or None where it may not move."""
    if not isinstance(condition, _CONNECTIVES + _PREDICATES):
        return None
    found = False
    for node in condition.walk():
        if isinstance(node, exp.Column):
            if _key_column(node, name, table, unqualified) is None:
                return None
            found = True
        elif isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                return None
        elif isinstance(node, exp.Neg):
            if not isinstance(node.this, (exp.Literal, exp.Placeholder)):
                return None
        elif not isinstance(node, _CONNECTIVES + _PREDICATES + _VALUES + (exp.Identifier,)):
            return None
    if not found:
        return None
    for node in condition.find_all(exp.Is):
        if not isinstance(node.expression, exp.Null):
            return None  # IS TRUE / IS DISTINCT FROM: spelled differently per engine; left in place

    def bare(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            key = _key_column(node, name, table, unqualified)
            assert key is not None
            return column(key)
        return node

    return condition.copy().transform(bare, copy=False)


def _conjuncts(condition: exp.Expression | None) -> list[exp.Expression]:
    if condition is None:
        return []
    if isinstance(condition, exp.Where) or (isinstance(condition, exp.Paren) and isinstance(condition.this, exp.And)):
        return _conjuncts(condition.this)
    if isinstance(condition, exp.And):
        return [c for part in (condition.this, condition.expression) for c in _conjuncts(part)]
    return [condition]


def key_filters(table: TableDef, ref: exp.Table) -> list[exp.Expression]:
    """The conditions of the query on `ref`'s key columns alone (see the module's
    docstring), each over the bare key column names, to be qualified by the snapshot."""
    if any(ref.args.get(arg) for arg in ("joins", "laterals", "pivots", "sample")):
        return []
    alias = ref.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return []  # the alias renames its columns by position
    name = alias.this if isinstance(alias, exp.TableAlias) and alias.this is not None else ref.this
    if not isinstance(name, exp.Identifier):
        return []
    holder = ref.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select) or select.args.get("laterals"):
        return []  # LATERAL VIEW [OUTER]: may null-extend what it follows
    joins: list[exp.Join] = select.args.get("joins") or []
    if any((j.kind or "").upper() not in _PLAIN_KINDS for j in joins):
        return []  # ASOF, SEMI, ANTI, POSITIONAL, ...: not a plain join
    unqualified = not any(j.args.get("using") or j.args.get("method") for j in joins)
    conditions: list[exp.Expression] = []
    position = next((i for i, j in enumerate(joins) if j is holder), -1)  # by identity: equal joins compare equal
    side = (holder.side or "").upper() if isinstance(holder, exp.Join) else ""
    later_null_extending = any((j.side or "").upper() in ("RIGHT", "FULL") for j in joins[position + 1:])
    if side in ("", "RIGHT") and not later_null_extending:
        conditions += _conjuncts(select.args.get("where"))
    if isinstance(holder, exp.Join) and side in ("", "LEFT"):
        conditions += _conjuncts(holder.args.get("on"))
    return [moved for c in conditions if (moved := _movable(c, name, table, unqualified)) is not None]


def apply_key_filters(query: exp.Query, table: TableDef, filters: list[exp.Expression]) -> None:
    """Adds `filters` to every SELECT of `query` (a snapshot of `table`) that reads its
    storage or cache table, over that SELECT's own alias of it."""
    for ref in list(query.find_all(exp.Table)):
        if ref.name not in (table.storage, table.cache):
            continue
        branch = ref.find_ancestor(exp.Select)
        assert branch is not None
        side = ref.alias_or_name

        def qualified(node: exp.Expression) -> exp.Expression:
            return column(node.name, side) if isinstance(node, exp.Column) else node

        branch.where(exp.and_(*[f.copy().transform(qualified, copy=False) for f in filters]), copy=False)


def pins_key_prefix(table: TableDef, ref: exp.Table) -> bool:
    """Whether the key filters of `ref` pin its table's leading two key columns (its whole
    key, if shorter) to values by equality: its scan snapshot then reads one small range
    of the storage and cache key indexes (a district's customers, an order's lines), an
    OLTP read whose plan hardly depends on the values, not an analytical scan."""
    pinned: set[str] = set()
    for condition in key_filters(table, ref):
        if isinstance(condition, exp.EQ):
            for side, other in ((condition.this, condition.expression), (condition.expression, condition.this)):
                if isinstance(side, exp.Column) and isinstance(other, (exp.Placeholder, exp.Parameter, exp.Literal)):
                    pinned.add(side.name)
    return set(table.key[:2]) <= pinned

"""MonetDB snapshots without the reader's own versions, for a statement of a transaction
that has not yet written the tables it reads.

MonetDB's snapshot templates (sql/monetdb/snapshot_rank.sql, snapshot_scan.sql) join
each cache with the visible transactions: the committed ones at or below the snapshot,
and the reader itself (one more row, sql/fragments/visible_transactions.sql), whose
versions of earlier statements only it keeps (`c.tq_txid <> :tq_txid OR c.tq_seq <
:tq_seq_limit`). MonetDB's cost for a point read is per plan operator, not per row, and
the reader's row and that condition make the optimizer read the cache twice (a branch
per side of the union), with a cross product and the appends that join them: about a
third of a point read's server CPU (tests/test_own_versions.py holds what must not change).

Invariant: a transaction that has appended no version to a table's cache in an earlier
statement (Transaction.own_versions) has no version there that the reader's row and that
condition keep: its versions of this statement carry tq_seq >= tq_seq_limit, which the
condition drops, and no committed outcome at or below its snapshot names its txid (its
outcome is written at its commit, after every statement it runs). So, for such tables,
joining the committed transactions alone, without the condition, reads the same rows.
The same holds one level down: a key's snapshot row depends on that key's versions only
(the rank window partitions by key, the scan's anti-join matches by key), so a statement
that reads one key of a table (the table named once, its key pinned: point_keys) needs
no own branch for it while the transaction has written other keys of it only, all known.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from sqlglot import exp

Key = tuple[int, ...]  # a key, or a prefix of one (tique/rewrite/point_keys.py)


def _placeholder(node: exp.Expression, name: str) -> bool:
    """`CAST(:name AS ...)` or `:name`."""
    inner = node.this if isinstance(node, exp.Cast) else node
    return isinstance(inner, exp.Placeholder) and inner.this == name


def _own_branch(union: exp.Union) -> bool:
    """The reader's own row of the visible transactions: `SELECT CAST(:tq_txid AS BIGINT), ...`."""
    own = union.expression
    return (isinstance(own, exp.Select) and own.args.get("from_", own.args.get("from")) is None
            and bool(own.expressions) and _placeholder(own.expressions[0].unalias(), "tq_txid"))


def _own_condition(node: exp.Or) -> bool:
    """`c.tq_txid <> :tq_txid OR c.tq_seq < :tq_seq_limit`."""
    left, right = node.this, node.expression
    return (isinstance(left, exp.NEQ) and isinstance(left.this, exp.Column) and left.this.name == "tq_txid"
            and _placeholder(left.expression, "tq_txid")
            and isinstance(right, exp.LT) and isinstance(right.this, exp.Column) and right.this.name == "tq_seq"
            and _placeholder(right.expression, "tq_seq_limit"))


def _cache_of(node: exp.Expression) -> str | None:
    """The table the SELECT around `node` reads FROM (the cache its join belongs to)."""
    select = node.find_ancestor(exp.Select)
    source = select.args.get("from_", select.args.get("from")) if select is not None else None
    table = source.this if source is not None else None
    return table.name if isinstance(table, exp.Table) else None


def _drop_conjunct(node: exp.Expression) -> None:
    """Removes the condition `node` (or its parentheses) from the WHERE it is a conjunct of."""
    target = node.parent if isinstance(node.parent, exp.Paren) else node
    parent = target.parent
    if isinstance(parent, exp.Where):
        parent.pop()
    elif isinstance(parent, exp.And):
        other = parent.expression if parent.this is target else parent.this
        parent.replace(other)
    else:
        target.replace(exp.true())


def without_own_versions(tree: exp.Expression) -> frozenset[str]:
    """Drops, in place, the reader's own row from every visible-transactions join of
    `tree` and the condition on its own versions; returns the caches so read, whose
    tables the transaction must not have written in an earlier statement (module
    docstring). Trees without MonetDB snapshots are left as they are."""
    caches: set[str] = set()
    for union in list(tree.find_all(exp.Union)):
        if _own_branch(union):
            cache = _cache_of(union)
            if cache is None:
                continue
            union.replace(union.this)
            caches.add(cache)
    for condition in list(tree.find_all(exp.Or)):
        if _own_condition(condition):
            cache = _cache_of(condition)
            if cache is None:
                continue
            _drop_conjunct(condition)
            caches.add(cache)
    return frozenset(caches)


def _overlap(a: Key, b: Key) -> bool:
    """Two keys or prefixes overlap when one begins the other."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def unaffected(own: Mapping[str, "set[Key] | None"], caches: Iterable[str], points: Mapping[str, Iterable[Key]]) -> bool:
    """Whether a statement reading `caches` without own versions reads what it would with
    them, for a transaction that wrote `own` (cache -> keys written, None: not known):
    each cache is unwritten, or the statement reads only the keys `points` gives for it
    (cache -> keys or prefixes) and the transaction wrote none of those."""
    for cache in caches:
        if cache not in own:
            continue
        written, read = own[cache], points.get(cache)
        if written is None or read is None:
            return False
        if any(_overlap(r, w) for r in read for w in written):
            return False
    return True


def note_written(own: "dict[str, set[Key] | None]", cache: str, keys: "Iterable[Key] | None") -> None:
    """The transaction is about to append versions of `keys` (None: of keys not known) to `cache`."""
    if keys is None:
        own[cache] = None
        return
    written = own.setdefault(cache, set())
    if written is not None:
        written.update(keys)

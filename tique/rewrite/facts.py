"""What the rewriter knows about the trees it makes, recorded on their nodes.

A backend that compiles a plan reads these facts instead of rediscovering them from the
tree's shape or the SQL text. They live in sqlglot's `meta` of the node they describe,
which copies of the tree keep, and never reach the generated SQL.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterator

from sqlglot import exp

# On an INSERT of tique's own (into a cache, a storage table or a tq_ log) whose rows
# come from a query that reads tables: MonetDB aborts such an insert when others append
# to what it reads, so its backend runs the query, then inserts the rows (monetdb.py).
_INTERNAL_INSERT_OF_QUERY = "tq_internal_insert_of_query"
# On the subquery that stands for a tique table's snapshot (reads.replace_tables): the
# name of the table's storage table.
_SNAPSHOT_OF = "tq_snapshot_of"
# On a projection of a storage table that stands for a table whose cache holds nothing
# (storage_reads.read_storage): the storage table's name.
_STORAGE_READ = "tq_storage_read"
# On the other snapshot subqueries, which no storage swap applies to: the one an UPDATE or
# DELETE reads its target from (writes._target_source), and a lateral read's.
_OTHER_SNAPSHOT = "tq_other_snapshot"
# On the expression that computes an ungrouped MIN as the reverse of a MAX (MonetDB,
# rewrite/monetdb_min.py), whether the MIN was DISTINCT; on the MIN's argument inside it,
# a mark: MonetDB's native column names follow the MIN as written.
_REVERSED_MIN = "tq_reversed_min"
_MIN_ARGUMENT = "tq_min_argument"


def internal_insert(insert: exp.Insert) -> exp.Insert:
    """Records that `insert` is tique's own, and whether its rows come from a query
    reading tables (not from VALUES or bare expressions); returns it."""
    source = insert.expression
    if source is not None and source.find(exp.Table) is not None:
        insert.meta[_INTERNAL_INSERT_OF_QUERY] = True
    return insert


def is_internal_insert_of_query(tree: exp.Expression) -> bool:
    return isinstance(tree, exp.Insert) and bool(tree.meta.get(_INTERNAL_INSERT_OF_QUERY))


# On an UPDATE's or DELETE's cache insert that MonetDB's backend runs as a read, then an
# insert (see TargetRows).
_TARGET_ROWS = "tq_target_rows"


@dataclass(frozen=True)
class TargetRows:
    """What a row read by an UPDATE's or DELETE's cache insert stands for: one target row,
    holding the cache rows to insert for it side by side, each `width` columns wide (a
    tombstone and a new version when the UPDATE moves the key; one row otherwise).
    `identity`: where the values naming the target row (its key, packed key or hidden row
    id) sit in a row read; a second row read for a target row already read is dropped.
    None: every row read is inserted, so that the key check sees a key written twice
    (see tique/rewrite/writes.py, _one_read_per_target)."""
    identity: tuple[int, ...] | None
    width: int

    def rows(self, read: list) -> tuple[list[tuple], int]:
        """The cache rows to insert for the rows `read`, and the statement's row count,
        which counts the rows read, as MonetDB's own UPDATE and DELETE do."""
        rows: list[tuple] = []
        seen: set[tuple] = set()
        for row in read:
            if self.identity is not None:
                name = tuple(row[i] for i in self.identity)
                if name in seen:
                    continue
                seen.add(name)
            rows.extend(tuple(row[start:start + self.width]) for start in range(0, len(row), self.width))
        return rows, len(read)


def target_rows(insert: exp.Insert, rows: TargetRows) -> exp.Insert:
    """Records what each row `insert`'s query reads stands for (TargetRows); returns it."""
    insert.meta[_TARGET_ROWS] = rows
    return insert


def target_rows_of(tree: exp.Expression) -> TargetRows | None:
    return tree.meta.get(_TARGET_ROWS) if isinstance(tree, exp.Insert) and tree._meta else None


def snapshot(subquery: exp.Subquery, storage: str) -> exp.Subquery:
    """Records that `subquery` is the snapshot of the table stored in `storage`; returns it."""
    subquery.meta[_SNAPSHOT_OF] = storage
    return subquery


def snapshot_of(node: exp.Expression) -> str | None:
    """The storage table of the table whose snapshot `node` is; None for other nodes."""
    return node.meta.get(_SNAPSHOT_OF) if isinstance(node, exp.Subquery) and node._meta else None


def storage_read(subquery: exp.Subquery, storage: str) -> exp.Subquery:
    """Records that `subquery` reads the table stored in `storage` from storage alone (a
    projection of it: tique/rewrite/storage_reads.py), which no snapshot pass touches but
    which stands for the table as a snapshot does where the native shape of the query
    matters (MonetDB's column labels); returns it."""
    subquery.meta[_STORAGE_READ] = storage
    return subquery


def storage_read_of(node: exp.Expression) -> str | None:
    """The storage table a storage_read subquery reads; None for other nodes."""
    return node.meta.get(_STORAGE_READ) if isinstance(node, exp.Subquery) and node._meta else None



def other_snapshot(subquery: exp.Subquery) -> exp.Subquery:
    """Records that `subquery` is a snapshot that no storage swap applies to (see
    _OTHER_SNAPSHOT); returns it."""
    subquery.meta[_OTHER_SNAPSHOT] = True
    return subquery


def find_outside_snapshots(tree: exp.Expression, *types: type) -> Iterator[exp.Expression]:
    """`tree.find_all(*types)`, in its order, but not looking inside snapshot subqueries
    (a snapshot itself is still found). They are most of a rewritten statement, and none
    holds what the callers look for: a snapshot is the rewriter's template for its table,
    filtered by key values that are columns, parameters and numbers, and fenced by
    comparisons copied from the statement, so it holds no other snapshot, no star, no
    VALUES and no derived table with joins hanging on it."""
    queue = deque((tree,))
    while queue:
        node = queue.popleft()
        if isinstance(node, types):
            yield node
        if node._meta and isinstance(node, exp.Subquery) and (_SNAPSHOT_OF in node._meta or _OTHER_SNAPSHOT in node._meta):
            continue
        queue.extend(node.iter_expressions())
def reversed_min(node: exp.Expression, argument: exp.Expression, distinct: bool) -> exp.Expression:
    """Records that `node` computes MIN([DISTINCT] `argument`), `argument` being the node
    inside it; returns `node`."""
    node.meta[_REVERSED_MIN] = distinct
    argument.meta[_MIN_ARGUMENT] = True
    return node


def is_reversed_min(node: exp.Expression) -> bool:
    return bool(node._meta) and _REVERSED_MIN in node.meta


def min_as_written(node: exp.Expression) -> exp.Min | None:
    """The MIN that `node` computes (a copy, over its argument as it now stands); None for
    other nodes."""
    if not is_reversed_min(node):
        return None
    argument = next((n for n in node.bfs() if n is not node and n._meta and n.meta.get(_MIN_ARGUMENT)), None)
    if argument is None:
        return None
    shown = argument.copy()
    return exp.Min(this=exp.Distinct(expressions=[shown]) if node.meta[_REVERSED_MIN] else shown)

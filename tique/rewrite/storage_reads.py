"""Reads of tables whose caches hold nothing go to their storage tables directly.

With an empty cache a table's snapshot is its storage table (see tique/cache_state.py
for when a cache is known to be empty), so a reference to it becomes a plain projection
of the storage table's user columns: the engine plans a scan or an index catalog instead
of a union, a join to the outcome log and a window.
"""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot, ROWID
from tique.rewrite import facts
from tique.rewrite.reads import carry_attached, referenced_tables
from tique.rewrite.templates import quoted


def read_storage(tree: exp.Expression, catalog: CatalogSnapshot, clean: frozenset[str]) -> exp.Expression:
    """`tree` with each reference to a tique table named in `clean` replaced by
    `(SELECT its user columns FROM its storage table) AS alias`."""
    for ref, table in referenced_tables(tree, catalog):
        if table.name not in clean:
            continue
        alias = ref.args.get("alias") or exp.TableAlias(this=exp.to_identifier(ref.name))
        columns = table.user_columns
        if table.hidden_rowid and any(c.name == ROWID for c in tree.find_all(exp.Column)):
            columns += (ROWID,)  # read as `rowid` (tique/rewrite/rowid.py)
        projection = exp.select(*[exp.column(quoted(c)) for c in columns]).from_(exp.Table(this=quoted(table.storage)))
        subquery = facts.storage_read(exp.Subquery(this=projection, alias=alias.copy()), table.storage)
        carry_attached(ref, subquery)
        if ref is tree:
            return subquery
        ref.replace(subquery)
    return tree

"""Reads: every tique table in a statement becomes its snapshot subquery."""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from tique.catalog import TableDef, normalize
from tique.rewrite.snapshot import Formulation, choose_formulation, snapshot
from tique.rewrite.templates import KeyHash

Lookup = Callable[[str], "TableDef | None"]


def _cte_names(tree: exp.Expression) -> set[str]:
    return {normalize(cte.alias) for cte in tree.find_all(exp.CTE)}


def referenced_tables(tree: exp.Expression, lookup: Lookup) -> list[tuple[exp.Table, TableDef]]:
    """The table references in `tree` that name tique tables (not CTEs, not other schemas)."""
    ctes = _cte_names(tree)
    found = []
    for ref in tree.find_all(exp.Table):
        if ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
            continue
        name = normalize(ref.name)
        if name in ctes:
            continue
        table = lookup(name)
        if table is not None:
            found.append((ref, table))
    return found


def replace_tables(tree: exp.Expression, lookup: Lookup, formulation: Formulation, key_hash: KeyHash, *, physical: bool = False) -> exp.Expression:
    """Swaps each tique table reference for `(snapshot) AS alias`, keeping the application's alias."""
    for ref, table in referenced_tables(tree, lookup):
        chosen = choose_formulation(table, ref) if formulation is Formulation.AUTO else formulation
        alias = ref.args.get("alias") or exp.TableAlias(this=exp.to_identifier(ref.name))
        subquery = exp.Subquery(this=snapshot(table, chosen, key_hash, physical=physical), alias=alias.copy())
        ref.replace(subquery)
    return tree

"""Reads: every tique table in a statement becomes its snapshot subquery."""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from tique.catalog import TableDef, normalize
from tique.rewrite.snapshot import Formulation, choose_formulation, point_of, snapshot
from tique.rewrite.templates import KeyHash

Lookup = Callable[[str], "TableDef | None"]


def _with_clause(node: exp.Expression) -> exp.With | None:
    found = node.args.get("with_") or node.args.get("with")  # "with_" from sqlglot 28 on
    return found if isinstance(found, exp.With) else None


def _names_cte_in_scope(ref: exp.Table) -> bool:
    """Whether `ref` names a CTE visible where it stands, by SQL scoping rules.

    A CTE is visible in the body of the query that owns its WITH and in the CTEs that
    follow it; in its own body only under WITH RECURSIVE. So `WITH t AS (SELECT * FROM t)`
    reads the table t, and a CTE inside a subquery shadows nothing outside it.
    """
    name = normalize(ref.name)
    child: exp.Expression = ref
    node = ref.parent
    while node is not None:
        visible: list[exp.Expression] = []
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            if node.args.get("recursive"):
                visible = ctes
            else:
                position = next((i for i, cte in enumerate(ctes) if cte is child), len(ctes))
                visible = ctes[:position]
        else:
            with_ = _with_clause(node)
            if with_ is not None and with_ is not child:
                visible = list(with_.expressions)
        if any(normalize(cte.alias) == name for cte in visible):
            return True
        child, node = node, node.parent
    return False


def referenced_tables(tree: exp.Expression, lookup: Lookup) -> list[tuple[exp.Table, TableDef]]:
    """The table references in `tree` that name tique tables (not CTEs in scope, not other schemas)."""
    found = []
    for ref in tree.find_all(exp.Table):
        if ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
            continue
        name = normalize(ref.name)
        if _names_cte_in_scope(ref):
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
        point = point_of(table, ref) if chosen is Formulation.RANK else None
        subquery = exp.Subquery(this=snapshot(table, chosen, key_hash, physical=physical, point=point), alias=alias.copy())
        if ref is tree:  # a bare table reference (UPDATE ... FROM t): the result is the subquery itself
            return subquery
        ref.replace(subquery)
    return tree

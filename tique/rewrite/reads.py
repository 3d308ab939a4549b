"""Reads: every tique table in a statement becomes its snapshot subquery."""
from __future__ import annotations

from sqlglot import exp

from tique.catalog import CatalogSnapshot, ROWID, TableDef, normalize
from tique.rewrite import facts
from tique.rewrite.lateral import lateral_key_values
from tique.rewrite.snapshot import Formulation, choose_formulation, point_of, snapshot
from tique.rewrite.templates import KeyHash


def _with_clause(node: exp.Expression) -> exp.With | None:
    found = node.args.get("with_") or node.args.get("with")  # "with_" from sqlglot 28 on
    return found if isinstance(found, exp.With) else None


def _names_cte_in_scope(ref: exp.Table) -> bool:
    """Whether `ref` names a CTE visible where it stands, by SQL scoping rules.

    A CTE is visible in the body of the query that owns its WITH and in the CTEs that
    follow it; in its own body only under WITH RECURSIVE. So `WITH t AS (SELECT * FROM t)`
    reads the table t, and a CTE inside a subquery shadows nothing outside it.

    The rule is sqlglot's (optimizer.scope: a CTE's scope sees the CTEs before it, and
    itself under RECURSIVE), but not its machinery: sqlglot's scopes are those of queries,
    so the tables of a DML statement (INSERT INTO t, UPDATE t ... FROM u, DELETE ... USING
    u) and an index's table stand in no scope (traverse_scope lists none of them), while
    the statement's WITH shadows them all the same.
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


def referenced_tables(tree: exp.Expression, catalog: CatalogSnapshot) -> list[tuple[exp.Table, TableDef]]:
    """The table references in `tree` that name tique tables (not CTEs in scope, not other schemas)."""
    found = []
    for ref in tree.find_all(exp.Table):
        if ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
            continue
        name = normalize(ref.name)
        if _names_cte_in_scope(ref):
            continue
        table = catalog.table(name)
        if table is not None:
            found.append((ref, table))
    return found


# Nodes that stand for columns they do not name: COLUMNS(...), PIVOT, DuckDB's #n.
_UNNAMED_COLUMNS = tuple(getattr(exp, n) for n in ("Columns", "Pivot", "PositionalColumn") if hasattr(exp, n))


def used_columns(table: TableDef, ref: exp.Table) -> tuple[str, ...] | None:
    """The columns of `table` the query reading it through `ref` can use, in table order;
    None when that cannot be told from the text (then the snapshot carries them all).

    Over-approximates: every column name the owning SELECT mentions anywhere (its
    subqueries included), whichever table it belongs to. An alias is visible only inside
    the SELECT whose FROM holds it, so nothing outside that SELECT can name its columns;
    only what expands to columns unnamed (a star, COLUMNS(), USING, NATURAL, PIVOT, a
    whole-row reference, a column list on the alias) defeats this.

    Not sqlglot's qualify_columns over the catalog's schema: it resolves a column to one
    table, and raises for columns the engine itself must report (unknown or ambiguous,
    in the engine's words, see Backend.translate); names are all this needs."""
    select = ref.parent.parent if isinstance(ref.parent, (exp.From, exp.Join)) else None
    alias = ref.args.get("alias")
    if not isinstance(select, exp.Select) or (alias is not None and alias.columns):
        return None
    whole_row = {normalize(ref.alias_or_name), normalize(ref.name)}
    names: set[str] = set()
    for node in select.walk():
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            return None
        if isinstance(node, _UNNAMED_COLUMNS) or (isinstance(node, exp.Join) and node.args.get("method")):
            return None
        if isinstance(node, exp.Join):
            names.update(normalize(i.name) for i in node.args.get("using") or [])
        elif isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star) or normalize(node.name) in whole_row:
                return None
            names.add(normalize(node.name))
    # The hidden row id, where the statement reads it as `rowid` (tique/rewrite/rowid.py).
    used = tuple(c for c in table.user_columns if c in names) + ((ROWID,) if table.hidden_rowid and ROWID in names else ())
    return used or table.user_columns[:1]  # a projection needs one column (SELECT COUNT(*), EXISTS)


# What a parser hangs on a table reference rather than on its SELECT: the joins of a
# parenthesised join, `(t JOIN u ON ...)`, are the first table's.
_ATTACHED = ("joins", "laterals", "pivots")


def carry_attached(ref: exp.Table, subquery: exp.Subquery) -> None:
    """Moves what hangs on `ref` to the subquery replacing it, which keeps it where it stood."""
    for arg in _ATTACHED:
        attached = ref.args.get(arg)
        if attached:
            subquery.set(arg, attached)


def lateral_read(table: TableDef, ref: exp.Table, catalog: CatalogSnapshot, formulation: Formulation, lateral: bool) -> dict[str, exp.Expression] | None:
    """The key values `ref` is read laterally by (tique/rewrite/lateral.py), or None.
    Only where the engine can use them (`lateral`) and the formulation is not forced to scans."""
    if not lateral or formulation is Formulation.SCAN:
        return None
    return lateral_key_values(table, ref, catalog)


def reads_by_scan(touched: list[tuple[exp.Table, TableDef]], catalog: CatalogSnapshot, formulation: Formulation, lateral: bool) -> bool:
    """Whether a read is analytic: some table is read by the scan formulation, and none
    laterally (a lateral read is a nested loop of point reads, which an analytic read's
    planning would forbid)."""
    if any(lateral_read(t, ref, catalog, formulation, lateral) is not None for ref, t in touched):
        return False
    return any((choose_formulation(t, ref) if formulation is Formulation.AUTO else formulation) is Formulation.SCAN
               for ref, t in touched)


def replace_tables(tree: exp.Expression, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash, *, physical: bool = False,
                   lateral: bool = False) -> exp.Expression:
    """Swaps each tique table reference for `(snapshot) AS alias`, keeping the application's
    alias; with `lateral`, a table whose key a join pins to the tables before it becomes
    `LATERAL (point snapshot) AS alias`."""
    # What each reference uses, and how it may be read, is read off the statement as
    # written, before any swap.
    found = [(ref, table, None if physical else used_columns(table, ref), lateral_read(table, ref, catalog, formulation, lateral))
             for ref, table in referenced_tables(tree, catalog)]
    for ref, table, only, key_values in found:
        chosen = choose_formulation(table, ref) if formulation is Formulation.AUTO else formulation
        alias = ref.args.get("alias") or exp.TableAlias(this=exp.to_identifier(ref.name))
        if key_values is not None:
            query = snapshot(table, Formulation.RANK, key_hash, physical=physical, only=only, key_values=key_values)
            ref.replace(exp.Lateral(this=exp.Subquery(this=query), alias=alias.copy()))
            continue
        point = point_of(table, ref) if chosen is Formulation.RANK else None
        subquery = exp.Subquery(this=snapshot(table, chosen, key_hash, physical=physical, point=point, only=only), alias=alias.copy())
        if chosen is not Formulation.STORAGE:  # that one is the storage table itself
            facts.snapshot(subquery, table.storage)
        carry_attached(ref, subquery)
        if ref is tree:  # a bare table reference (UPDATE ... FROM t): the result is the subquery itself
            return subquery
        ref.replace(subquery)
    return tree

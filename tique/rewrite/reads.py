"""Reads: every tique table in a statement becomes its snapshot subquery."""
from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import TRAVERSABLES, Scope, traverse_scope

from tique.catalog import CatalogSnapshot, ROWID, TableDef, normalize
from tique.rewrite import facts
from tique.rewrite.lateral import lateral_key_values
from tique.rewrite.snapshot import Formulation, choose_formulation, point_of, snapshot
from tique.rewrite.templates import KeyHash


def outermost_queries(tree: exp.Expression) -> list[exp.Expression]:
    """The scope roots of `tree`: itself when sqlglot scopes it (a query, a DML or DDL
    statement), else the queries in it that no other query in it encloses (a fragment:
    a WHERE, a join, a VALUES the write rewriters read)."""
    if isinstance(tree, TRAVERSABLES):
        return [tree]
    roots: list[exp.Expression] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in node.iter_expressions():
            if isinstance(child, exp.Query):
                roots.append(child)
            else:
                stack.append(child)
    return roots


def _recursive_ctes(scope: Scope) -> set[str]:
    """The names a WITH RECURSIVE around `scope` makes visible in each of its CTEs: all
    of them, as in PostgreSQL (sqlglot's scopes see only the earlier ones, and the CTE
    itself when its body is a UNION)."""
    names: set[str] = set()
    while scope is not None:
        cte = scope.expression.parent
        if isinstance(cte, exp.CTE) and isinstance(cte.parent, exp.With) and cte.parent.args.get("recursive"):
            names.update(normalize(c.alias) for c in cte.parent.expressions)
        scope = scope.parent
    return names


def cte_references(tree: exp.Expression) -> set[int]:
    """The ids of the table references in `tree` that name a CTE visible where they stand.

    sqlglot's scopes decide (optimizer.scope: a scope sees the CTEs of the scopes around
    it; a CTE the ones before it, and itself when recursive), names compared as tique
    normalizes them. sqlglot puts the relations of a DML statement's FROM/USING in scopes
    of their own that see its WITH; one rule is added on top: its target (INSERT INTO t,
    UPDATE t, DELETE FROM t) stands in no scope, and names a CTE when the statement's own
    WITH has one of that name."""
    found: set[int] = set()
    for root in outermost_queries(tree):
        for scope in traverse_scope(root):
            visible = {normalize(name) for name in scope.cte_sources} | _recursive_ctes(scope)
            if not visible:
                continue
            tables = scope.tables + ([scope.expression] if isinstance(scope.expression, exp.Table) else [])
            found.update(id(t) for t in tables if not t.args.get("db") and normalize(t.name) in visible)
        if isinstance(root, (exp.Insert, exp.Update, exp.Delete)):
            with_ = root.args.get("with_") or root.args.get("with")
            target = root.this.this if isinstance(root.this, exp.Schema) else root.this
            if isinstance(with_, exp.With) and isinstance(target, exp.Table) and normalize(target.name) in {normalize(c.alias) for c in with_.expressions}:
                found.add(id(target))
    return found


def referenced_tables(tree: exp.Expression, catalog: CatalogSnapshot) -> list[tuple[exp.Table, TableDef]]:
    """The table references in `tree` that name tique tables (not CTEs in scope, not other schemas)."""
    found = []
    named = False  # whether `tree` declares any CTE: scopes are built only then
    for ref in tree.find_all(exp.Table, exp.CTE):  # one walk
        if isinstance(ref, exp.CTE):
            named = True
            continue
        if ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
            continue
        table = catalog.table(normalize(ref.name))
        if table is not None:
            found.append((ref, table))
    if not named or not found:
        return found  # the trees planned are whole statements, or copies of parts: no CTE around them
    ctes = cte_references(tree)
    return [(ref, table) for ref, table in found if id(ref) not in ctes]


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

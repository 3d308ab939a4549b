"""Reads: every tique table in a statement becomes its snapshot subquery."""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.scope import TRAVERSABLES, Scope, traverse_scope

from tique.catalog import CatalogSnapshot, ColumnSchema, ROWID, TableDef, alias_key, normalize
from tique.rewrite import facts
from tique.rewrite.key_filters import apply_key_filters, key_filters as conditions_on_key, pins_key_prefix
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


def _cte_key(cte: exp.CTE, dialect: str) -> str:
    """A CTE's name as the engine compares it with a table reference's (alias_key)."""
    alias = cte.args.get("alias")
    identifier = alias.this if isinstance(alias, exp.TableAlias) else None
    return alias_key(identifier, dialect) if isinstance(identifier, exp.Identifier) else normalize(cte.alias)


def _table_key(table: exp.Table, dialect: str) -> str:
    return alias_key(table.this, dialect) if isinstance(table.this, exp.Identifier) else normalize(table.name)


def _recursive_ctes(scope: Scope, dialect: str) -> set[str]:
    """The names a WITH RECURSIVE around `scope` makes visible in each of its CTEs: all
    of them, as in PostgreSQL (sqlglot's scopes see only the earlier ones, and the CTE
    itself when its body is a UNION)."""
    names: set[str] = set()
    while scope is not None:
        cte = scope.expression.parent
        if isinstance(cte, exp.CTE) and isinstance(cte.parent, exp.With) and cte.parent.args.get("recursive"):
            names.update(_cte_key(c, dialect) for c in cte.parent.expressions)
        scope = scope.parent
    return names


def cte_references(tree: exp.Expression, dialect: str = "") -> set[int]:
    """The ids of the table references in `tree` that name a CTE visible where they stand.

    sqlglot's scopes decide (optimizer.scope: a scope sees the CTEs of the scopes around
    it; a CTE the ones before it, and itself when recursive), names compared as the
    engine compares them (alias_key: a CTE "X" is no table x on PostgreSQL). sqlglot puts the relations of a DML statement's FROM/USING in scopes
    of their own that see its WITH; one rule is added on top: its target (INSERT INTO t,
    UPDATE t, DELETE FROM t) stands in no scope, and names a CTE when the statement's own
    WITH has one of that name."""
    found: set[int] = set()
    # sqlglot names a scope's CTEs by their names as written; tique compares their keys.
    keys = {cte.alias: _cte_key(cte, dialect) for cte in tree.find_all(exp.CTE)}
    for root in outermost_queries(tree):
        for scope in traverse_scope(root):
            visible = {keys.get(name, normalize(name)) for name in scope.cte_sources} | _recursive_ctes(scope, dialect)
            if not visible:
                continue
            tables = scope.tables + ([scope.expression] if isinstance(scope.expression, exp.Table) else [])
            found.update(id(t) for t in tables if not t.args.get("db") and _table_key(t, dialect) in visible)
        if isinstance(root, (exp.Insert, exp.Update, exp.Delete)):
            with_ = root.args.get("with_") or root.args.get("with")
            target = root.this.this if isinstance(root.this, exp.Schema) else root.this
            if isinstance(with_, exp.With) and isinstance(target, exp.Table) and _table_key(target, dialect) in {_cte_key(c, dialect) for c in with_.expressions}:
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
        table = catalog.table_of(ref)
        if table is not None:
            found.append((ref, table))
    if not named or not found:
        return found  # the trees planned are whole statements, or copies of parts: no CTE around them
    ctes = cte_references(tree, catalog.dialect)
    return [(ref, table) for ref, table in found if id(ref) not in ctes]


# Nodes that stand for columns they do not name: COLUMNS(...), PIVOT, DuckDB's #n.
_UNNAMED_COLUMNS = tuple(getattr(exp, n) for n in ("Columns", "Pivot", "PositionalColumn") if hasattr(exp, n))


def _owning_select(ref: exp.Table) -> exp.Select | None:
    """The SELECT whose FROM or JOIN holds `ref`: the only place its alias is visible."""
    select = ref.parent.parent if isinstance(ref.parent, (exp.From, exp.Join)) else None
    return select if isinstance(select, exp.Select) else None


def _names_no_columns(ref: exp.Table) -> bool:
    """Whether `ref` is read otherwise than by column names: a column list on its alias
    renames them by position, and a DML statement's own sources stand in no SELECT."""
    alias = ref.args.get("alias")
    return _owning_select(ref) is None or (alias is not None and bool(alias.columns))


def names_columns_implicitly(ref: exp.Table) -> bool:
    """Whether the SELECT reading `ref` may use columns of it that no column reference
    names (see used_columns): a whole-row reference, COLUMNS(), NATURAL, PIVOT, #n, a
    column list on the alias, or a read from outside a SELECT's FROM."""
    if _names_no_columns(ref):
        return True
    select = _owning_select(ref)
    assert select is not None
    whole_row = {normalize(ref.alias_or_name), normalize(ref.name)}
    return any(_unnamed(node) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier) and normalize(node.name) in whole_row)
               for node in select.walk())


def _unnamed(node: exp.Expression) -> bool:
    """A node that stands for columns it does not name: COLUMNS(...), PIVOT, DuckDB's #n, NATURAL."""
    return isinstance(node, _UNNAMED_COLUMNS) or (isinstance(node, exp.Join) and bool(node.args.get("method")))


def used_columns(tree: exp.Expression, refs: list[tuple[exp.Table, TableDef]], catalog: CatalogSnapshot,
                 dialect: str) -> dict[int, tuple[str, ...] | None]:
    """For each of `refs` (tique table references in `tree`, by id), the columns of its
    table the statement can use through it, in table order; None when that cannot be
    told (then the snapshot carries them all).

    The columns are resolved by sqlglot's optimizer on a copy of each query (the tree
    itself is not changed): identifiers normalized as the dialect does
    (normalize_identifiers), every column qualified with the source it binds to
    (qualify_columns, over the catalog's ColumnSchema), and each qualifier looked up
    in the scopes around the column (optimizer.scope), innermost first, as the engine
    binds it. A column sqlglot leaves unqualified (the tables of other engines' schemas
    are not known here: a native table, a qualifier from outside a fragment; or a name
    two tables have, which the engine must still see to report it ambiguous) counts
    for every reference whose table has a column of its name; a star counts as all
    columns of the references it covers. A name no table has is left to the engine to
    report in its own words (Backend.translate), as natively.

    What names columns without naming them defeats this for the query it stands in:
    COLUMNS(), NATURAL, PIVOT, #n, a whole-row reference (a column named like the
    table or its alias), a column list on the alias."""
    found: dict[int, tuple[str, ...] | None] = {}
    wanted = {id(ref): table for ref, table in refs if not _names_no_columns(ref)}
    found.update((id(ref), None) for ref, _ in refs if id(ref) not in wanted)
    if not wanted:
        return found
    schema = catalog.column_schema(dialect)
    for root in outermost_queries(tree):
        # One walk: the root's tables, whether it is more than one scope, what it names.
        tables, columns, nested, unnamed, star = [], [], False, False, False
        for node in root.walk():
            if isinstance(node, exp.Table):
                tables.append(node)
            elif isinstance(node, exp.Column):
                if isinstance(node.this, exp.Identifier):
                    columns.append(node.this)
            elif isinstance(node, exp.Join):
                columns.extend(i for i in node.args.get("using") or [] if isinstance(i, exp.Identifier))
            elif isinstance(node, exp.Star):
                star = star or not isinstance(node.parent, exp.Count)
            elif node is not root and isinstance(node, _NESTED_SOURCES):
                nested = True
            unnamed = unnamed or _unnamed(node)
        mine = [t for t in tables if id(t) in wanted]
        if not mine:
            continue
        mentioned = {normalize(i.name) for i in columns}
        plain = [t for t in mine if not unnamed and normalize(t.alias_or_name) not in mentioned and normalize(t.name) not in mentioned]
        found.update((id(t), None) for t in mine if t not in plain)
        if not plain:
            continue
        spelled = _normalized(columns, dialect)  # once per query, not once per table
        named = {id(t): _names_of(spelled, wanted[id(t)], schema) for t in plain}
        if len(tables) == 1 and not nested:
            # One scope reading one table: every column binds to it or to nothing, as
            # qualify_columns would find, without copying the query to qualify it.
            names: dict[int, set[str] | None] = {id(t): None if star else named[id(t)] for t in plain}
            pairs = {id(t): t for t in plain}
        elif not star and not _shared(list(named.values())):
            # No column name two tique tables of the query have, and no star: a name of a
            # table's column binds to that table or to a source whose columns the snapshot
            # need not carry (another engine table, a derived table, an alias), so
            # carrying it is never wrong, and binding would narrow nothing the engine reads.
            names, pairs = named, {id(t): t for t in plain}
        else:
            copy = root.copy()
            # A copy's nodes come in the same order as the original's.
            pairs = {id(o): c for o, c in zip(tables, copy.find_all(exp.Table)) if any(o is t for t in plain)}
            names = _resolved_names(copy, {id(c): wanted[o] for o, c in pairs.items()}, schema, dialect)
        for original, copied in pairs.items():
            table = wanted[original]
            used = names.get(id(copied))
            if used is None:
                found[original] = None
                continue
            # A projection needs one column (SELECT COUNT(*), EXISTS).
            found[original] = tuple(c for c in table.user_columns if c in used) + ((ROWID,) if table.hidden_rowid and ROWID in used else ()) \
                or table.user_columns[:1]
    return found


# What makes a query more than one scope over its FROM tables: subqueries, derived
# tables, CTEs, set operations (all queries), table functions and laterals.
_NESTED_SOURCES = (exp.Query, exp.UDTF, exp.Lateral)


def _shared(sets: list[set[str]]) -> bool:
    """Whether some name is in two of `sets`."""
    seen: set[str] = set()
    for each in sets:
        if seen & each:
            return True
        seen |= each
    return False


def _normalized(names: list[exp.Identifier], dialect: str) -> set[str]:
    """`names` (of columns, and of USING), each normalized as the dialect does."""
    engine = Dialect.get_or_raise(dialect)
    return {engine.normalize_identifier(i.copy()).name for i in names}


def _names_of(names: set[str], table: TableDef, schema: ColumnSchema) -> set[str]:
    """The catalog names of `table`'s columns among `names`, normalized as the dialect does."""
    known = schema.names.get(table.name, {})
    return {known[name] for name in names if name in known}


def _resolved_names(root: exp.Expression, tables: dict[int, TableDef], schema: ColumnSchema, dialect: str) -> dict[int, set[str] | None]:
    """The catalog names of the columns each table reference of `tables` (by id, in
    `root`, a copy this changes) is read by, or None where every column may be."""
    try:
        # Partial qualification: a qualified name its table lacks stays for the engine to report.
        qualify_columns(normalize_identifiers(root, dialect=dialect), schema.schema, expand_alias_refs=True, expand_stars=False,
                        allow_partial_qualification=True)
    except OptimizeError:
        return {}  # sqlglot cannot resolve some name (a native table's column in a correlated subquery): all columns
    owners = {id(ref) for ref in root.find_all(exp.Table) if id(ref) in tables}
    used: dict[int, set[str] | None] = {i: set() for i in tables}

    def use(ref_id: int, name: str) -> None:
        found = used[ref_id]
        catalog_name = schema.names.get(tables[ref_id].name, {}).get(name)
        if found is not None and catalog_name is not None:
            found.add(catalog_name)

    for scope in traverse_scope(root):
        for col in scope.columns:
            owner = _source(scope, col.table) if col.table else None
            if owner is not None and id(owner) in owners:
                use(id(owner), col.name)
        # A star reads every column of the tables it covers: t.* its table, * all of its SELECT's.
        covered = [_source(scope, star.table) for star in scope.stars if isinstance(star, exp.Column)]
        if isinstance(scope.expression, exp.Select) and any(isinstance(e, exp.Star) for e in scope.expression.expressions):
            covered.extend(node for node, _ in scope.selected_sources.values())
        for node in covered:
            if node is not None and id(node) in owners:
                used[id(node)] = None
    # What sqlglot leaves unqualified it could not bind (scope.columns leaves some out,
    # those in HAVING among them): it may be any table's.
    for col in root.find_all(exp.Column):
        if not col.table and isinstance(col.this, exp.Identifier):
            for ref_id in tables:
                use(ref_id, col.name)
    return used


def _source(scope: Scope | None, name: str) -> exp.Expression | None:
    """What a column qualified by `name` in `scope` binds to: the source of that name in
    the innermost scope around it that has one (a correlated subquery reads outward)."""
    while scope is not None:
        found = scope.selected_sources.get(name)
        if found is not None:
            return found[0]
        scope = scope.parent
    return None


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


def scans(touched: list[tuple[exp.Table, TableDef]], formulation: Formulation, lateral: bool) -> bool:
    """Whether a read that reads no table laterally (reads_laterally: a nested loop of
    point reads, which an analytic read's planning would forbid) is analytic: some table
    is read by the scan formulation. Where the engine reads laterally (PostgreSQL, whose generic
    plans serve point reads), a scan whose key filters pin a prefix of the key
    (key_filters.pins_key_prefix) is no analytical scan either: planned afresh without
    nested loops on every call, TPC-C Order-Status' three reads spent 0.4-0.5 ms each
    planning for 0.04-0.4 ms of execution, which their generic plans match."""
    return any((choose_formulation(t, ref) if formulation is Formulation.AUTO else formulation) is Formulation.SCAN
               and not (lateral and pins_key_prefix(t, ref)) for ref, t in touched)


def reads_laterally(touched: list[tuple[exp.Table, TableDef]], catalog: CatalogSnapshot, formulation: Formulation, lateral: bool) -> bool:
    """Whether some table of a read is read laterally: once per row of a narrow side,
    through its key indexes (Backend.execute's `probing`)."""
    return any(lateral_read(t, ref, catalog, formulation, lateral) is not None for ref, t in touched)


def replace_tables(tree: exp.Expression, catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash, *, dialect: str | None = None,
                   physical: bool = False, lateral: bool = False, key_filters: bool = False) -> exp.Expression:
    """Swaps each tique table reference for `(snapshot) AS alias`, keeping the application's
    alias; with `lateral`, a table whose key a join pins to the tables before it becomes
    `LATERAL (point snapshot) AS alias`. A snapshot carries the columns the statement
    uses (used_columns, resolved in `dialect`); with `physical`, all of them and the
    hidden ones. With `key_filters`, a scan snapshot also applies the query's conditions
    on the table's key columns alone to its storage and cache (tique/rewrite/key_filters.py)."""
    # What each reference uses, and how it may be read, is read off the statement as
    # written, before any swap.
    refs = referenced_tables(tree, catalog)
    assert physical or dialect is not None, "a read's columns are resolved in its dialect"
    used = {} if physical or dialect is None else used_columns(tree, refs, catalog, dialect)
    found = [(ref, table, used.get(id(ref)), lateral_read(table, ref, catalog, formulation, lateral),
              conditions_on_key(table, ref) if key_filters else []) for ref, table in refs]
    for ref, table, only, key_values, on_key in found:
        chosen = choose_formulation(table, ref) if formulation is Formulation.AUTO else formulation
        alias = ref.args.get("alias") or exp.TableAlias(this=ref.this.copy())  # as written: "MixedT" stays itself
        if key_values is not None:
            query = snapshot(table, Formulation.RANK, key_hash, physical=physical, only=only, key_values=key_values, dialect=dialect)
            ref.replace(exp.Lateral(this=facts.other_snapshot(exp.Subquery(this=query)), alias=alias.copy()))
            continue
        point = point_of(table, ref) if chosen is Formulation.RANK else None
        query = snapshot(table, chosen, key_hash, physical=physical, point=point, only=only, dialect=dialect)
        if on_key and chosen is Formulation.SCAN:
            apply_key_filters(query, table, on_key)
        subquery = exp.Subquery(this=query, alias=alias.copy())
        if chosen is not Formulation.STORAGE:  # that one is the storage table itself
            facts.snapshot(subquery, table.storage)
        carry_attached(ref, subquery)
        if ref is tree:  # a bare table reference (UPDATE ... FROM t): the result is the subquery itself
            return subquery
        ref.replace(subquery)
    return tree

"""The rewrite of a statement as ordered passes, in the manner of sqlglot's transforms.

Each pass is a function of (tree, context) -> tree: it reads nothing but the tree and the
context (the catalog snapshot and the options, see PassContext), and returns the tree it
made (a pass may change the tree it is given in place and return it). The lists below say
in one place which passes run, in which order:

- PREPARE, on every statement the planner rewrites (after parsing, numbering the
  parameter markers and the DDL cases): the statement as tique reads it, its views
  expanded, its tique tables aliased as written, its unaliased output columns named as
  the engine names them (DuckDB), DuckDB's rowid exposed, refused if the engine would
  reject it (or answer it wrongly), (where the engine reads laterally) an inner join's
  narrow side put before the table it pins, and on MonetDB each MIN without GROUP BY
  computed as the reverse of a MAX;
- READ, on a read of tique tables after PREPARE: its tables become their snapshots, and
  on MonetDB a scan snapshot beside other relations in an inner join is fenced;
- QUERY_OF_DDL, on the query of a CREATE VIEW (to check it once) or of a CREATE TABLE
  ... AS SELECT: its views expanded, its tables aliased as written, MonetDB's
  ungrouped MINs reversed, and its tables read through their snapshots (never laterally);
- STORAGE_READ, on a read as PREPARE left it, for the variant that reads the tables in
  `clean` from storage directly (tique/cache_state.py): those tables become projections
  of their storage, the others their snapshots.

A write to a tique table takes PREPARE, then its rewriter (tique/rewrite/writes.py),
which reads the tables of its subqueries and sources through replace_tables itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from tique.catalog import CatalogSnapshot, normalize
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.column_names import name_columns_as_native
from tique.rewrite.lateral import narrow_side_first
from tique.rewrite.monetdb_case import null_safe_conditions
from tique.rewrite.monetdb_min import reverse_ungrouped_min
from tique.rewrite.reads import cte_references, referenced_tables, replace_tables
from tique.rewrite.rowid import expose_rowid as _expose_rowid
from tique.rewrite.snapshot import Formulation
from tique.rewrite.storage_reads import read_storage
from tique.rewrite.templates import KeyHash
from tique.rewrite.union_fence import fence_joined_snapshots

MAX_VIEW_DEPTH = 32
_STATEMENTS = (exp.Query, exp.Insert, exp.Update, exp.Delete)


@dataclass(frozen=True)
class PassContext:
    """What a pass may read besides the tree: all of it fixed before planning starts."""
    catalog: CatalogSnapshot
    dialect: str
    formulation: Formulation
    key_hash: KeyHash
    statement: str  # the application's text, for errors in its terms
    lateral: bool = False  # the engine reads a join-pinned table laterally (Backend.lateral_point_reads)
    clean: frozenset[str] = frozenset()  # STORAGE_READ: the tables read from storage directly


Pass = Callable[[exp.Expression, PassContext], exp.Expression]


def run(passes: tuple[Pass, ...], tree: exp.Expression, context: PassContext) -> exp.Expression:
    for each in passes:
        tree = each(tree, context)
    return tree


def _write_target(tree: exp.Expression) -> exp.Expression | None:
    if isinstance(tree, exp.Insert):
        return tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    return tree.this if isinstance(tree, (exp.Update, exp.Delete)) else None


def expand_views(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Each reference to a tique view becomes its query as a subquery under the reference's
    alias (or the view's name), so the statement reads the view's tables through its own
    snapshot. Views over views expand level by level."""
    if not isinstance(tree, _STATEMENTS):
        return tree
    target = _write_target(tree)
    for _ in range(MAX_VIEW_DEPTH):
        expanded = False
        nodes = list(tree.find_all(exp.Table, exp.CTE))  # one walk
        ctes: set[int] | None = None if any(isinstance(n, exp.CTE) for n in nodes) else set()
        for ref in nodes:
            if isinstance(ref, exp.CTE) or ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
                continue
            view = context.catalog.object(context.catalog.resolve(ref.this))
            if getattr(view, "kind", None) != "view":
                continue
            if ctes is None:
                ctes = cte_references(tree, context.dialect)  # of the tree as this round found it
            if id(ref) in ctes:
                continue
            if ref is target:
                raise NotSupportedError(describe(context.statement, f"writing through view {view.name!r} is not supported; write its tables"))
            alias = ref.args.get("alias")
            name = alias.this.copy() if alias is not None and alias.this else ref.this.copy()
            columns = [c.copy() for c in alias.columns] if alias is not None and alias.columns else [exp.to_identifier(c, quoted=True) for c in view.columns]
            ref.replace(exp.Subquery(this=view.query.copy(), alias=exp.TableAlias(this=name, columns=columns)))
            expanded = True
        if not expanded:
            return tree
    raise ProgrammingError(describe(context.statement, f"views nest more than {MAX_VIEW_DEPTH} deep (a view that reads itself?)"))


def alias_as_written(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Gives each unaliased tique table reference its own name, exactly as written, as alias.

    The snapshot subquery replacing a reference carries its alias; spelling it as the
    application did (quoted or not) keeps names like "order" valid SQL. An INSERT's
    target is no reference and stays as it is.
    """
    if not isinstance(tree, _STATEMENTS):
        return tree
    target = tree.this.this if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema) else tree.this
    for ref, _ in referenced_tables(tree, context.catalog):
        if ref.args.get("alias") or (isinstance(tree, exp.Insert) and ref is target):
            continue
        ref.set("alias", exp.TableAlias(this=ref.this.copy()))
    return tree


def name_output_columns_as_native(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Each unaliased output column the engine names after its text gets that name as
    alias, so the rewrite does not rename it (tique/column_names.py; DuckDB only)."""
    name_columns_as_native(tree, context.statement, context.dialect)
    return tree


def expose_rowid(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """DuckDB's rowid of a tique table reads its hidden row id (tique/rewrite/rowid.py);
    the other engines have no rowid pseudo-column."""
    if context.dialect == "duckdb" and isinstance(tree, _STATEMENTS):
        _expose_rowid(tree, context.catalog, context.statement)
    return tree


def refuse_engine_rejects(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Syntax sqlglot reads in the engine's dialect but the engine rejects, where the
    generated SQL would mean something else: DuckDB has no SELECT ... INTO (sqlglot turns
    it into CREATE TABLE ... AS). (MonetDB's missing DELETE ... USING is left to tique,
    which gives it PostgreSQL's meaning on tique tables.)"""
    if context.dialect == "duckdb" and any(s.args.get("into") for s in tree.find_all(exp.Select)):
        raise ProgrammingError(describe(context.statement, 'syntax error at or near "INTO": DuckDB has no SELECT ... INTO; use CREATE TABLE ... AS SELECT'))
    if context.dialect == "monetdb" and any(_null_test_of_exists_in_condition(node) for node in tree.find_all(exp.Is)):
        # MonetDB (11.45) filters `EXISTS (...) IS NULL` (or IS NOT NULL, or of a predicate
        # holding an EXISTS) in a condition as if it read NOT EXISTS (EXISTS): `WHERE
        # EXISTS (SELECT 1 FROM s WHERE s.c = t.c) IS NULL` keeps the rows no s matches,
        # though EXISTS is never NULL; a CASE around it goes as wrong. An UPDATE ... FROM
        # of that shape then writes rows it must not (case seed 9494028503).
        raise NotSupportedError(describe(context.statement, "IS [NOT] NULL of a condition holding EXISTS, in a WHERE, ON or HAVING, "
                                                            "is not supported on MonetDB, which evaluates it wrongly; EXISTS is never NULL"))
    if context.dialect == "monetdb" and any(_groups_padded_columns_beside_a_joined_subquery(s) for s in tree.find_all(exp.Select)):
        # MonetDB (11.45) answers `SELECT a.x FROM b LEFT JOIN a ON a.y IN (SELECT c FROM b)
        # GROUP BY a.y, a.x` with no result set at all, natively too, whatever the rows;
        # natively an empty table on the preserved side hides it, but tique's tables are
        # never empty underneath (case seed 31003093219).
        raise NotSupportedError(describe(context.statement, "GROUP BY two or more columns of the NULL-padded side of an outer join "
                                                            "whose ON condition holds a subquery is not supported on MonetDB, "
                                                            "which answers it with no result set"))
    return tree


def _groups_padded_columns_beside_a_joined_subquery(select: exp.Select) -> bool:
    """Whether `select` has an outer join whose ON holds a subquery and groups by two or
    more columns of sources an outer join pads with NULLs (an unqualified column counts:
    it may be one of them)."""
    group, joins, source = select.args.get("group"), select.args.get("joins") or [], select.args.get("from_")
    if group is None or source is None or not joins:
        return False
    sides = [(j.side or "").upper() for j in joins]
    if not any(s in ("LEFT", "RIGHT", "FULL") and j.args.get("on") is not None and j.args["on"].find(exp.Select) is not None
               for j, s in zip(joins, sides)):
        return False
    sources = [source.this, *(j.this for j in joins)]
    padded = {normalize(s.alias_or_name) for i, s in enumerate(sources)
              if (i > 0 and sides[i - 1] in ("LEFT", "FULL")) or any(side in ("RIGHT", "FULL") for side in sides[i:])}
    return sum(1 for e in group.expressions if isinstance(e, exp.Column) and (not e.table or normalize(e.table) in padded)) >= 2


def _null_test_of_exists_in_condition(node: exp.Is) -> bool:
    return (isinstance(node.expression, exp.Null) and node.this.find(exp.Exists) is not None
            and node.find_ancestor(exp.Where, exp.Having, exp.Join) is not None)


def reverse_min_on_monetdb(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """MonetDB: a MIN without GROUP BY becomes the reverse of a MAX, which MonetDB answers
    right over every row order (tique/rewrite/monetdb_min.py)."""
    if context.dialect == "monetdb" and isinstance(tree, _STATEMENTS):
        return reverse_ungrouped_min(tree, context.catalog, context.statement, context.dialect)
    return tree


def null_safe_case_conditions_on_monetdb(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """MonetDB: each WHEN condition of a searched CASE holding a subquery becomes
    COALESCE(condition, FALSE), the same branch for every row, which MonetDB then chooses
    right where the condition is NULL (tique/rewrite/monetdb_case.py)."""
    if context.dialect == "monetdb" and isinstance(tree, _STATEMENTS):
        return null_safe_conditions(tree)
    return tree


def narrow_side_first_for_lateral(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Where the engine reads join-pinned tables laterally: an inner join written with the
    pinned tique table first and its narrow partner second is read in the other order,
    so the pinned table comes after its partner and is read through its key index
    (tique/rewrite/lateral.py, narrow_side_first)."""
    if context.lateral and isinstance(tree, _STATEMENTS):
        for select in list(tree.find_all(exp.Select)):
            narrow_side_first(select, context.catalog)
    return tree


def replace_tables_with_snapshots(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Each tique table reference becomes its snapshot subquery (tique/rewrite/reads.py),
    read laterally where a join pins its key and the engine takes that (tique/rewrite/lateral.py),
    a scan snapshot filtered by the query's conditions on its key (tique/rewrite/key_filters.py).
    Not on MonetDB: an equality on every key column of its storage is answered through the
    primary key's hash index, which keeps rows committed deletes removed (snapshot.py,
    `point`); a forced scan snapshot would pass it such a filter."""
    return replace_tables(tree, context.catalog, context.formulation, context.key_hash, dialect=context.dialect, lateral=context.lateral,
                          key_filters=context.dialect != "monetdb")


def fence_snapshots_in_joins(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """MonetDB: a scan snapshot joined with other relations is read through a LIMIT no
    table reaches, which keeps MonetDB from pushing the join into its union
    (tique/rewrite/union_fence.py)."""
    return fence_joined_snapshots(tree, context.catalog) if context.dialect == "monetdb" else tree


def read_clean_tables_from_storage(tree: exp.Expression, context: PassContext) -> exp.Expression:
    """Each reference to a table in `context.clean` becomes a projection of its storage
    table (tique/rewrite/storage_reads.py)."""
    return read_storage(tree, context.catalog, context.clean, context.dialect)


PREPARE: tuple[Pass, ...] = (expand_views, alias_as_written, name_output_columns_as_native, expose_rowid, refuse_engine_rejects,
                              narrow_side_first_for_lateral, reverse_min_on_monetdb, null_safe_case_conditions_on_monetdb)
READ: tuple[Pass, ...] = (replace_tables_with_snapshots, fence_snapshots_in_joins)
STORAGE_READ: tuple[Pass, ...] = (read_clean_tables_from_storage, replace_tables_with_snapshots, fence_snapshots_in_joins)
QUERY_OF_DDL: tuple[Pass, ...] = (expand_views, alias_as_written, reverse_min_on_monetdb, null_safe_case_conditions_on_monetdb,
                                   replace_tables_with_snapshots)

"""Locking reads (SELECT ... FOR UPDATE and kin), as each engine takes them.

DuckDB and MonetDB have no locking reads and reject the clause as a syntax error, so
tique does too. On PostgreSQL, whose repeatable read aborts a transaction that writes a
row another transaction locked or wrote after its snapshot, FOR UPDATE and FOR NO KEY
UPDATE are taken optimistically: each row read is written back unchanged as a version
of the transaction, which puts its key in the write-set (hashed like every written key),
so of the locker and a concurrent writer of the row, the one that commits second loses
certification. FOR SHARE and FOR KEY SHARE, which block writers but not other sharers,
are taken as read-set entries (tique/read_sets.py) certified at commit against writes
only, at every isolation level: the transaction aborts if a transaction that committed
after its start wrote a row it read so (its key, where the statement pins the table to
one key, else any row of the table); two sharers never conflict, having written nothing.
NOWAIT and SKIP LOCKED mean nothing where no row is ever locked.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from tique.catalog import CatalogSnapshot, TableDef, alias_key, alias_of, normalize
from tique.errors import NotSupportedError, ProgrammingError, describe
from tique.rewrite.reads import referenced_tables, replace_tables
from tique.rewrite.snapshot import Formulation, snapshot
from tique.rewrite.templates import KeyHash, column, quoted
from tique.rewrite.writes import WritePlan, cache_insert, metadata

if TYPE_CHECKING:
    from tique.read_sets import ReadShape

# What each engine without locking reads answers to the clause, in its own words.
_SYNTAX_ERRORS = {
    "duckdb": 'syntax error at or near "FOR": DuckDB has no locking reads (FOR UPDATE / FOR SHARE)',
    "monetdb": 'syntax error in: "... for": MonetDB has no locking reads (FOR UPDATE / FOR SHARE)',
}


def locking_clauses(tree: exp.Expression) -> list[exp.Lock]:
    return list(tree.find_all(exp.Lock))


def refuse_unsupported_locks(tree: exp.Expression, dialect: str, touches_tique: bool, statement: str) -> list[exp.Lock]:
    """The statement's top-level locking clauses, to be taken as writes (FOR UPDATE, FOR NO
    KEY UPDATE) or read-set entries (FOR SHARE, FOR KEY SHARE); raises for every locking
    clause this engine, or tique on it, does not take."""
    locks = locking_clauses(tree)
    if not locks:
        return []
    if dialect in _SYNTAX_ERRORS:
        raise ProgrammingError(describe(statement, _SYNTAX_ERRORS[dialect]))
    if not touches_tique:
        return []  # the engine locks its own tables itself
    for lock in locks:
        shown = _clause(lock)
        wait = lock.args.get("wait")
        if wait is True:
            raise NotSupportedError(describe(statement, f"{shown} NOWAIT on tique tables is not supported: tique never waits for a row lock "
                                                        "(a conflict surfaces as SerializationFailure at commit); drop NOWAIT"))
        if wait is not None:
            raise NotSupportedError(describe(statement, f"{shown} SKIP LOCKED on tique tables is not supported: tique locks no row, so none "
                                                        "could be skipped; drop SKIP LOCKED and retry the transaction on SerializationFailure"))
        if isinstance(tree, exp.SetOperation) and lock.parent is tree:
            raise NotSupportedError(describe(statement, f"{shown} is not allowed with UNION/INTERSECT/EXCEPT"))
        if lock.parent is not tree or not isinstance(tree, exp.Select):
            raise NotSupportedError(describe(statement, f"{shown} inside a subquery, a CTE or a set operation (UNION ...) is not supported on tique tables; put it on a plain outer SELECT"))
    return locks


def _clause(lock: exp.Lock) -> str:
    key = lock.args.get("key")
    if lock.args.get("update"):
        return "FOR NO KEY UPDATE" if key else "FOR UPDATE"
    return "FOR KEY SHARE" if key else "FOR SHARE"


def _locked_references(tree: exp.Select, locks: list[exp.Lock], catalog: CatalogSnapshot, statement: str) -> list[tuple[exp.Table, TableDef]]:
    """The tique table references whose rows the clauses lock: those named by OF, or
    every table of the FROM clause (as PostgreSQL does)."""
    if tree.args.get("distinct") or tree.args.get("group") or tree.args.get("having") or any(
            isinstance(node, (exp.AggFunc, exp.Window)) for projection in tree.expressions for node in projection.walk()):
        # PostgreSQL: FOR UPDATE is not allowed with DISTINCT, GROUP BY, HAVING, aggregates or window functions.
        raise NotSupportedError(describe(statement, "FOR UPDATE is not allowed with DISTINCT, GROUP BY, HAVING, aggregate or window functions"))
    from_ = tree.args.get("from_") or tree.args.get("from")
    items: list[exp.Expression] = [from_.this] if from_ is not None else []
    joins: list[exp.Join] = list(tree.args.get("joins") or [])
    for item in list(items):
        joins.extend(item.args.get("joins") or [])
    items.extend(j.this for j in joins)
    by_alias = {alias_of(i, catalog.dialect): i for i in items}
    named = [alias_key(t.this, catalog.dialect) if isinstance(t.this, exp.Identifier) else normalize(t.name) for lock in locks for t in lock.expressions]
    if any(not lock.expressions for lock in locks):
        chosen = items
    else:
        unknown = [n for n in named if n not in by_alias]
        if unknown:
            raise ProgrammingError(describe(statement, f'relation "{unknown[0]}" in FOR UPDATE clause not found in FROM clause'))
        chosen = [by_alias[n] for n in dict.fromkeys(named)]
    tique = dict((id(ref), table) for ref, table in referenced_tables(tree, catalog))
    locked = []
    for item in chosen:
        if not isinstance(item, exp.Table) or id(item) not in tique:
            raise NotSupportedError(describe(statement, f"FOR UPDATE of {item.alias_or_name or 'a subquery'} is not supported together with tique tables: "
                                                        "tique locks tique tables only; name them with FOR UPDATE OF"))
        join = item.parent if isinstance(item.parent, exp.Join) else None
        nullable = (join is not None and join.side in ("LEFT", "FULL")) or any(
            j.side in ("RIGHT", "FULL") for j in joins if join is None or joins.index(j) > joins.index(join))
        if nullable:
            raise NotSupportedError(describe(statement, "FOR UPDATE cannot be applied to the nullable side of an outer join"))
        locked.append((item, tique[id(item)]))
    return locked


def lock_writes(tree: exp.Select, locks: list[exp.Lock], catalog: CatalogSnapshot, formulation: Formulation, key_hash: KeyHash,
                statement: str) -> list[WritePlan]:
    """For each locked table, a write of the rows the statement reads, unchanged: the
    versions that put their keys in the transaction's write-set."""
    writes = []
    for ref, table in _locked_references(tree, locks, catalog, statement):
        alias = ref.alias_or_name
        # The keys of the rows read: the statement, with its projection replaced by the
        # locked table's row identity, and nothing that only orders or trims what it
        # returns (locking every row the filter passes only ever locks more).
        read = tree.copy()
        for arg in ("order", "limit", "offset", "locks"):
            read.set(arg, None)
        names = [f"tq_k{i}" for i in range(len(table.match_key))]
        read.set("expressions", [exp.alias_(column(k, alias), quoted(n)) for k, n in zip(table.match_key, names)])
        read = replace_tables(read, catalog, formulation, key_hash, physical=True)
        chosen = Formulation.SCAN if formulation is Formulation.AUTO else formulation
        rows = exp.Subquery(this=snapshot(table, chosen, key_hash, physical=True), alias=exp.TableAlias(this=quoted("tq_locked")))
        was_read = exp.Exists(this=exp.select(exp.Literal.number(1))
                              .from_(exp.Subquery(this=read, alias=exp.TableAlias(this=quoted("tq_read"))))
                              .where(exp.and_(*[exp.EQ(this=column(n, "tq_read"), expression=column(k, "tq_locked"))
                                                for k, n in zip(table.match_key, names)])))
        select = (exp.select(*[column(c, "tq_locked") for c in table.physical_columns], *metadata("tq_seq_write", False))
                  .from_(rows).where(was_read))
        writes.append(WritePlan(table, (cache_insert(table, select),), False))
    return writes


def share_shape(tree: exp.Select, locks: list[exp.Lock], catalog: CatalogSnapshot, dialect: str, statement: str) -> ReadShape:
    """What FOR SHARE / FOR KEY SHARE clauses protect: of each table they lock, the key the
    statement pins it to, else the whole table."""
    from tique.read_sets import ReadShape, query_shape

    locked = {table.name for _, table in _locked_references(tree, locks, catalog, statement)}
    read = query_shape(without_locks(tree), catalog, dialect)
    points = tuple((name, sources) for name, sources in read.points if name in locked)
    return ReadShape(frozenset(locked - {name for name, _ in points}), points)


def without_locks(tree: exp.Select) -> exp.Select:
    """The statement as the engine reads it once its locks are taken as writes."""
    tree = tree.copy()
    tree.set("locks", None)
    return tree

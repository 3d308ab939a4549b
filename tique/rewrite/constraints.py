"""UNIQUE and CHECK constraints of tique tables, enforced by the validating read.

The engine tables carry neither: a cache holds several versions of a row (and
tombstones), so an engine UNIQUE index would see old versions collide with new ones,
and MonetDB has no CHECK at all. Instead the query that checks a write's primary keys
(writes.validation) also counts, per constraint, the rows the statement wrote that
violate it, reading them back by transaction and statement sequence number as it does.
A table without these constraints gets no extra work.

UNIQUE is judged on the transaction's snapshot plus its own writes up to and including
the statement (the SQL standard's end-of-statement check: a swap within one UPDATE
passes); concurrent transactions are kept apart by the unique values each writes,
hashed into its write-set (see write_set_parts), so of two that write the same value
only the first to commit does.
"""
from __future__ import annotations

import re

from sqlglot import exp

from tique.catalog import Check, TableDef, Unique
from tique.rewrite.snapshot import Formulation, snapshot
from tique.rewrite.templates import KeyHash, column, key_match, quoted

# The snapshot after the statement: this transaction's writes up to and including it.
AFTER = "tq_seq_after"


def _bigint(name: str) -> exp.Expression:
    return exp.cast(exp.Placeholder(this=name), exp.DataType.build("BIGINT"))


def _written_live(table: TableDef, alias: str) -> exp.Select:
    """The live (non-tombstone) versions the statement wrote."""
    return (exp.select(exp.Literal.number(1))
            .from_(exp.Table(this=quoted(table.cache), alias=exp.TableAlias(this=quoted(alias))))
            .where(exp.and_(
                exp.EQ(this=column("tq_txid", alias), expression=_bigint("tq_txid")),
                exp.EQ(this=column("tq_seq", alias), expression=exp.cast(exp.Placeholder(this="tq_seq_write"), exp.DataType.build("INTEGER"))),
                exp.not_(column("tq_deleted", alias)))))


def _count(query: exp.Select) -> exp.Subquery:
    return exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=quoted("tq_counted")))))


def _same_values(columns: tuple[str, ...], left: str, right: str) -> exp.Expression:
    """Equal in every column: a NULL in any makes it unknown, so NULLs never collide."""
    return exp.and_(*[exp.EQ(this=column(c, left), expression=column(c, right)) for c in columns])


def check_violations(table: TableDef, check: Check, dialect: str) -> exp.Expression:
    """How many rows the statement wrote make the CHECK false (unknown passes, as natively)."""
    condition = check.expression(dialect)
    for col in condition.find_all(exp.Column):
        col.set("table", quoted("tq_row"))
    return _count(_written_live(table, "tq_row").where(exp.not_(exp.paren(condition))))


def unique_violations(table: TableDef, unique: Unique, key_hash: KeyHash) -> exp.Expression:
    """How many of the unique values the statement wrote more than one row holds in the
    snapshot after the statement. Only the versions of rows that hold, or held, one of
    those values are ranked: filtering by the unique columns before ranking would miss a
    newer version of a row that moved away from the value."""
    columns = unique.columns

    def holds_written(side: str) -> exp.Exists:
        return exp.Exists(this=_written_live(table, "tq_w").where(_same_values(columns, "tq_w", side)))

    candidates = exp.union(
        exp.select(*[column(k, "tq_x") for k in table.match_key]).from_(exp.Table(this=quoted(table.storage), alias=exp.TableAlias(this=quoted("tq_x")))).where(holds_written("tq_x")),
        exp.select(*[column(k, "tq_x") for k in table.match_key]).from_(exp.Table(this=quoted(table.cache), alias=exp.TableAlias(this=quoted("tq_x")))).where(holds_written("tq_x")),
        distinct=False)
    after = snapshot(table, Formulation.RANK, key_hash, physical=True)
    for p in after.find_all(exp.Placeholder):
        if p.this == "tq_seq_limit":
            p.set("this", AFTER)
    for ref in list(after.find_all(exp.Table)):
        if ref.name in (table.storage, table.cache):
            branch = ref.find_ancestor(exp.Select)
            assert branch is not None
            touched = exp.select(exp.Literal.number(1)).from_(exp.Subquery(this=candidates.copy(), alias=exp.TableAlias(this=quoted("tq_candidates")))).where(
                key_match(table, "tq_candidates", ref.alias_or_name))
            branch.where(exp.Exists(this=touched), copy=False)
    repeated = (exp.select(exp.Literal.number(1))
                .from_(exp.Subquery(this=after, alias=exp.TableAlias(this=quoted("tq_after"))))
                .where(holds_written("tq_after"))
                .group_by(*[column(c, "tq_after") for c in columns])
                .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1))))
    return _count(repeated)


def constraint_checks(table: TableDef, assigned: frozenset[str] | None, key_hash: KeyHash, dialect: str) -> list[tuple[str, str, exp.Expression]]:
    """(CHECK or UNIQUE, what a violation means, a count of violations) for each constraint a write may
    break: every one for an INSERT (`assigned` None), those over an assigned column for
    an UPDATE, none for a DELETE (empty `assigned`)."""
    found: list[tuple[str, str, exp.Expression]] = []
    for check in table.checks:
        condition = check.expression(dialect)
        uses = {c.name for c in condition.find_all(exp.Column)}
        if assigned is None or uses & assigned:
            found.append(("CHECK", f'new row for {table.name} violates check constraint "{check.name}": CHECK ({_as_written(condition, dialect)})',
                          check_violations(table, check, dialect)))
    for unique in table.uniques:
        if assigned is None or set(unique.columns) & assigned:
            listed = ", ".join(unique.columns)
            found.append(("UNIQUE", f'duplicate value violates unique constraint "{unique.name}" of {table.name}: a value of ({listed}) would repeat',
                          unique_violations(table, unique, key_hash)))
    return found


def _as_written(condition: exp.Expression, dialect: str) -> str:
    """The CHECK expression for a message: plain column names unquoted, as users write them."""
    shown = condition.copy()
    for identifier in shown.find_all(exp.Identifier):
        if re.fullmatch(r"[a-z_][a-z0-9_]*", identifier.name):
            identifier.set("quoted", False)
    return shown.sql(dialect)


def unique_hash_name(table: TableDef, unique: Unique) -> str:
    """What a unique value is hashed with in write-sets: its table and columns, so it
    never meets a primary key's hash on purpose (a hash collision costs only a false conflict)."""
    return f"{table.name}({','.join(unique.columns)})"


def write_set_parts(table: TableDef, key_hash: KeyHash) -> list[exp.Select]:
    """The hashed unique values of the transaction's live versions in `table`, one query
    per UNIQUE constraint, for its write-set (rows with a NULL in them collide with none)."""
    parts = []
    for unique in table.uniques:
        condition = exp.and_(
            exp.EQ(this=column("tq_txid", "c"), expression=_bigint("tq_txid")),
            exp.not_(column("tq_deleted", "c")),
            *[exp.Not(this=exp.Is(this=column(u, "c"), expression=exp.Null())) for u in unique.columns])
        hashed = key_hash(unique_hash_name(table, unique), [column(u, "c") for u in unique.columns])
        parts.append(exp.select(exp.alias_(_bigint("tq_txid"), "txid"), exp.alias_(_bigint("tq_cts"), "cts"), exp.alias_(hashed, "key_hash"))
                     .distinct().from_(exp.Table(this=quoted(table.cache), alias=exp.TableAlias(this=quoted("c")))).where(condition))
    return parts

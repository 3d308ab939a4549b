"""Read-sets of SERIALIZABLE transactions, and their certification.

SERIALIZABLE is write-snapshot isolation (Yabandeh and Ferro, "A critique of snapshot
isolation", EuroSys 2012): a transaction reads its snapshot as at SNAPSHOT, and a writer
commits only if no transaction that committed between its start and its commit wrote
anything it read. Read-only transactions are never checked: every snapshot tique hands
out is a prefix of the commit order (tique/oracle/base.py), so a reader at start
timestamp S serializes right after the transaction that committed at S.

What a transaction read, at two grains:
- point reads (a statement that reads a table once, alone in its FROM, with every key
  column pinned to a value: tique/rewrite/point_keys.py) record the key, hashed with
  the write-sets' own hash (Backend.key_hash, the one function both use);
- everything else records the whole table (a scan, a join, a predicate). Writers log
  nothing extra for it: a table's versions stay in its cache until the checkpointer's
  stable timestamp passes them, and that is never above a running transaction's start,
  so "a transaction that committed after my start wrote table T" is a join of the
  write-sets with T's cache. A SNAPSHOT writer therefore pays nothing for this level.

The keys are collected in the client while the transaction runs (a reader that never
writes pays nothing either) and, when it commits a write, logged in tq_read_sets with
INSERT ... VALUES (appends only, as MonetDB needs) in the engine transaction that
carries its writes and write-set. Certification then joins them against the write-sets
(sql/common/certify_reads.sql, sql/common/certify_scan.sql); the order it must follow
is the invariant in tique/transaction.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from sqlglot import exp

from tique.backends.base import Backend, PlanCache
from tique.catalog import CatalogSnapshot, TableDef, key_bits
from tique.rewrite.params import Compiled
from tique.rewrite.point_keys import Key, KeySources, bind, read_points, write_points
from tique.rewrite.reads import referenced_tables
from tique.rewrite.templates import data_type, packed_key, table_template, template

# Beyond this many point reads of one table a transaction records the table instead:
# the certification stays one short statement whatever the transaction read.
POINTS_PER_TABLE = 256
_ROWS_PER_INSERT = 500


@dataclass(frozen=True)
class ReadShape:
    """What one statement reads, as planned: tables it scans, and tables it reads one key
    of, with where each key value comes from (a parameter or a literal)."""
    scans: frozenset[str] = frozenset()
    points: tuple[tuple[str, KeySources], ...] = ()

    def scans_only(self) -> "ReadShape":
        return ReadShape(self.scans | {name for name, _ in self.points})


NOTHING = ReadShape()


def _whole_key(points: dict[str, KeySources], catalog: CatalogSnapshot) -> dict[str, KeySources]:
    found = {}
    for name, sources in points.items():
        table = catalog.table(name)
        if table is not None and len(sources) == len(table.key):
            found[name] = sources
    return found


def query_shape(tree: exp.Expression, catalog: CatalogSnapshot, dialect: str) -> ReadShape:
    """A read's shape (views already expanded): pinned to a whole key, or scanned."""
    names = {t.name for _, t in referenced_tables(tree, catalog)}
    points = _whole_key(read_points(tree, catalog, dialect), catalog)
    return ReadShape(frozenset(names - points.keys()), tuple(sorted(points.items())))


def write_shape(tree: exp.Expression, table: TableDef, catalog: CatalogSnapshot, dialect: str) -> ReadShape:
    """What a write reads besides the keys it writes (which its write-set certifies):
    every other table it names, scanned; its target's rows, by key when the WHERE pins a
    whole key (a key it finds absent writes nothing, so the read is recorded), else
    scanned. A plain INSERT reads none of its target (its keys are written)."""
    target = tree.this.this if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema) else tree.this
    scans = {t.name for ref, t in referenced_tables(tree, catalog) if ref is not target}
    points: tuple[tuple[str, KeySources], ...] = ()
    if isinstance(tree, exp.Insert):
        if tree.args.get("conflict"):
            scans.add(table.name)  # ON CONFLICT reads whether each key is there
    else:
        pinned = write_points(tree, table, dialect)
        if pinned is not None and len(pinned) == 1 and len(pinned[0]) == len(table.key):
            points = ((table.name, pinned[0]),)
        else:
            scans.add(table.name)
    return ReadShape(frozenset(scans), points)


@dataclass
class ReadSet:
    """What one transaction has read so far: at SERIALIZABLE all its reads; its FOR SHARE reads at any level."""
    scans: set[str] = field(default_factory=set)
    points: dict[str, set[Key]] = field(default_factory=dict)

    def note(self, shape: ReadShape, params: tuple | list) -> None:
        self.scans.update(shape.scans)
        for name, sources in shape.points:
            if name in self.scans:
                continue
            key = bind(sources, params)
            keys = self.points.setdefault(name, set())
            if key is None or len(keys) >= POINTS_PER_TABLE:
                self.scans.add(name)
            else:
                keys.add(key)

    def merge(self, other: "ReadSet") -> "ReadSet":
        merged = ReadSet(self.scans | other.scans, {name: set(keys) for name, keys in self.points.items()})
        for name, keys in other.points.items():
            merged.points.setdefault(name, set()).update(keys)
        return merged

    def keyed(self) -> list[tuple[str, Key]]:
        """The point reads of tables not also scanned, in a stable order."""
        return sorted((name, key) for name, keys in self.points.items() if name not in self.scans for key in keys)

    def __bool__(self) -> bool:
        return bool(self.scans) or any(self.points.values())


def storable(table: TableDef, key: Key, dialect: str) -> bool:
    """Whether `key` fits the table's integer key columns. A point read of one that does
    not finds nothing and no write can ever write it, so it needs no certification (and
    its values could not be cast to the columns' types to be hashed)."""
    bits = key_bits(table, dialect)
    return bits is not None and all(-(2 ** (b - 1)) < v < 2 ** (b - 1) for v, b in zip(key, bits))


class ReadSetStatements:
    """Compiled read-set SQL for one backend: the log insert per shape of entries, the
    certification per set of scanned tables."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._compiled = PlanCache(1024)  # bounded: entry shapes vary with what transactions read

    def log(self, entries: list[tuple[TableDef, Key]], context: dict[str, int], taken_in_request: bool) -> list[tuple[str, list]]:
        """INSERT ... VALUES statements logging the hashed keys, as (sql, values)."""
        statements = []
        for first in range(0, len(entries), _ROWS_PER_INSERT):
            chunk = entries[first:first + _ROWS_PER_INSERT]
            shape = ("log", tuple(t.name for t, _ in chunk), taken_in_request)
            compiled = self._compiled.get(shape)
            if compiled is None:
                compiled = self._log_insert([t for t, _ in chunk], taken_in_request)
                self._compiled.put(shape, compiled)
            bound = dict(context)
            for i, (_, key) in enumerate(chunk):
                for j, value in enumerate(key):
                    bound[f"tq_r{i}_{j}"] = value
            statements.append((compiled.sql, compiled.values((), bound)))
        return statements

    def _log_insert(self, tables: list[TableDef], taken_in_request: bool) -> Compiled:
        rows = []
        cts: exp.Expression = exp.cast(exp.Placeholder(this="tq_cts"), "BIGINT")
        if taken_in_request:
            taken = self.backend.taken_commit_timestamp()
            assert taken is not None
            cts = taken
        for i, table in enumerate(tables):
            # Typed as the key columns, so the engine hashes the same value the write-set
            # hashes from the cache's columns.
            values = [exp.cast(exp.Placeholder(this=f"tq_r{i}_{j}"), data_type(table.column(k).type_sql))
                      for j, k in enumerate(table.key)]
            hashed = values if not table.packed else [packed_key(table, values)]
            rows.append(exp.Tuple(expressions=[exp.cast(exp.Placeholder(this="tq_txid"), "BIGINT"), cts.copy(),
                                               self.backend.key_hash(table.name, hashed)]))
        insert = exp.insert(exp.Values(expressions=rows), "tq_read_sets", columns=["txid", "cts", "key_hash"])
        return self.backend.compile(insert)

    def certify(self, scanned: list[TableDef]) -> Compiled:
        """One row if a transaction that committed (or is committing) between our start
        and our commit timestamp wrote a key we read or a table we scanned."""
        key = ("certify", tuple(sorted(t.name for t in scanned)))
        compiled = self._compiled.get(key)
        if compiled is None:
            (query,) = template("common/certify_reads.sql")
            for table in sorted(scanned, key=lambda t: t.name):
                (scan,) = table_template("common/certify_scan.sql", table, table.physical_columns, self.backend.key_hash)
                query = exp.union(query, scan, distinct=False)
            wrapped = exp.select("1").from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("tq_conflicts")))).limit(1)
            compiled = self.backend.compile(wrapped)
            self._compiled.put(key, compiled)
        return compiled


"""The logical schema of tique tables, parsed from the CREATE TABLE text kept in the database.

Other clients learn a table's shape from the `tq_tables` catalog row, never from
process memory, so every connection sees the same definition.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from tique.errors import NotSupportedError, ProgrammingError, describe

ROWID = "tq_rowid"
PACKED = "tq_pk"  # one 128-bit integer packing a multi-column integer key
METADATA_COLUMNS = ("tq_txid", "tq_seq", "tq_deleted")


@dataclass(frozen=True)
class Column:
    name: str
    type_sql: str
    not_null: bool = False
    default: exp.Expression | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TableDef:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    hidden_rowid: bool
    # Physical only: the widths of the key columns when the engine also stores the key
    # packed into PACKED, the one column snapshots then partition and match by (see with_packed_key).
    packed_bits: tuple[int, ...] = ()

    @property
    def packed(self) -> bool:
        return bool(self.packed_bits)

    @property
    def storage(self) -> str:
        return f"{self.name}_storage"

    @property
    def cache(self) -> str:
        return f"{self.name}_cache"

    @property
    def rowid_sequence(self) -> str:
        return f"{self.name}_rowid_seq"

    @property
    def user_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def physical_columns(self) -> tuple[str, ...]:
        """User columns plus the hidden row id and the packed key, when the table has them."""
        return self.user_columns + ((ROWID,) if self.hidden_rowid else ()) + ((PACKED,) if self.packed else ())

    @property
    def match_key(self) -> tuple[str, ...]:
        """The columns versions of one row share: what snapshots partition and match by."""
        return (PACKED,) if self.packed else self.key

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


_INTEGER_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                 exp.DataType.Type.BIGINT: 64}


def key_bits(table: TableDef, dialect: str) -> tuple[int, ...] | None:
    """The width of each key column when all are integers, else None."""
    widths = []
    for name in table.key:
        try:
            kind = exp.DataType.build(table.column(name).type_sql, dialect=dialect)
        except Exception:
            return None
        if kind.this not in _INTEGER_BITS:
            return None
        widths.append(_INTEGER_BITS[kind.this])
    return tuple(widths)


def with_packed_key(table: TableDef, dialect: str) -> TableDef:
    """Marks a table whose multi-column integer key fits one 128-bit integer (paper §3.2.5:
    MonetDB filters and ranks by one column far faster than by several low-cardinality
    ones). The packing is exact, so two keys never share a packed value. Up to 128 bits
    fit because MonetDB (the engine that packs) keeps each integer type's minimum for NULL,
    so the packed value never reaches HUGEINT's minimum, which is its NULL too."""
    bits = key_bits(table, dialect) if len(table.key) > 1 and not table.hidden_rowid else None
    if bits is None or sum(bits) > 128:
        return table
    return TableDef(table.name, table.columns, table.key, table.hidden_rowid, packed_bits=bits)


def normalize(name: str) -> str:
    return name.lower()


def table_def_from_create(create: exp.Create, dialect: str, statement: str) -> TableDef:
    """Reads columns, NOT NULL, DEFAULT and single- or multi-column primary keys."""
    schema = create.this
    if not isinstance(schema, exp.Schema) or not isinstance(schema.this, exp.Table):
        raise NotSupportedError(describe(statement, "CREATE TABLE ... AS SELECT is not supported for tique tables; create the table, then INSERT ... SELECT"))
    name = normalize(schema.this.name)
    columns: list[Column] = []
    key: list[str] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            col_name = normalize(item.name)
            if col_name.startswith("tq_"):
                raise ProgrammingError(describe(statement, f"column name {col_name!r} uses the prefix tq_, which tique reserves"))
            not_null = False
            default = None
            for constraint in item.args.get("constraints") or []:
                kind = constraint.kind
                if isinstance(kind, exp.PrimaryKeyColumnConstraint):
                    key.append(col_name)
                    not_null = True
                elif isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
                    not_null = True
                elif isinstance(kind, exp.DefaultColumnConstraint):
                    default = kind.this
            kind_sql = item.args["kind"].sql(dialect) if item.args.get("kind") else "VARCHAR"
            columns.append(Column(col_name, kind_sql, not_null, default))
        elif isinstance(item, exp.PrimaryKey):
            for part in item.expressions:
                key.append(normalize(part.name if not isinstance(part, exp.Ordered) else part.this.name))
        elif isinstance(item, (exp.Constraint,)) and any(isinstance(e, exp.PrimaryKey) for e in item.expressions):
            for pk in item.expressions:
                if isinstance(pk, exp.PrimaryKey):
                    key.extend(normalize(p.name) for p in pk.expressions)
        else:
            raise NotSupportedError(describe(statement, f"table constraint {item.sql(dialect)!r} is not supported on tique tables"))
    if not columns:
        raise ProgrammingError(describe(statement, "a table needs at least one column"))
    names = {c.name for c in columns}
    for k in key:
        if k not in names:
            raise ProgrammingError(describe(statement, f"primary key column {k!r} is not a column of {name}"))
    columns = [Column(c.name, c.type_sql, c.not_null or c.name in key, c.default) for c in columns]
    hidden = not key
    return TableDef(name, tuple(columns), tuple(key) if key else (ROWID,), hidden)


def parse_catalog_row(ddl: str, dialect: str) -> TableDef:
    create = sqlglot.parse_one(ddl, read=dialect)
    assert isinstance(create, exp.Create)
    return table_def_from_create(create, dialect, ddl)


def canonical_ddl(table: TableDef, dialect: str) -> str:
    """The CREATE TABLE text stored in the catalog: what the application asked for."""
    defs = []
    for c in table.columns:
        constraints = []
        if c.not_null:
            constraints.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
        if c.default is not None:
            constraints.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=c.default.copy())))
        defs.append(exp.ColumnDef(this=exp.to_identifier(c.name, quoted=True), kind=exp.DataType.build(c.type_sql, dialect=dialect), constraints=constraints))
    if not table.hidden_rowid:
        defs.append(exp.PrimaryKey(expressions=[exp.to_identifier(k, quoted=True) for k in table.key]))
    # Quoted, so names that are reserved words (a column "order") parse back in every dialect.
    create = exp.Create(this=exp.Schema(this=exp.Table(this=exp.to_identifier(table.name, quoted=True)), expressions=defs), kind="TABLE")
    return create.sql(dialect)

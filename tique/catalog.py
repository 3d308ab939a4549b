"""The logical schema of tique tables, parsed from the CREATE TABLE text kept in the database.

Other clients learn a table's shape from the `tq_tables` catalog row, never from
process memory, so every connection sees the same definition.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Hashable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.schema import MappingSchema

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
    # COLLATE as written, in the engine's dialect (NOCASE, "C"): the physical columns carry
    # it, so every comparison, grouping and ordering of the column is the engine's own.
    collation: str | None = None
    # A generated column's expression over the row's other columns, in the engine's
    # dialect: tique computes it on every write, so it is never written directly.
    generated: str | None = None


@dataclass(frozen=True)
class Unique:
    """A UNIQUE constraint: no two rows of a snapshot share non-NULL values of `columns`."""
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Check:
    """A CHECK constraint: `sql` (the expression, in the table's dialect) is not false
    for any row. Kept as text, so a TableDef stays hashable and comparable."""
    name: str
    sql: str

    def expression(self, dialect: str) -> exp.Expression:
        return sqlglot.parse_one(self.sql, read=dialect)


@dataclass(frozen=True)
class TableDef:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    hidden_rowid: bool
    # Physical only: the widths of the key columns when the engine also stores the key
    # packed into PACKED, the one column snapshots then partition and match by (see with_packed_key).
    packed_bits: tuple[int, ...] = ()
    uniques: tuple[Unique, ...] = ()
    checks: tuple[Check, ...] = ()

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

    @property
    def generated_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.generated is not None)

    @property
    def writable_columns(self) -> tuple[str, ...]:
        """The columns a statement may write: every user column but the generated ones."""
        return tuple(c.name for c in self.columns if c.generated is None)

    def named(self, node: exp.Expression, dialect: str) -> str:
        """The name of the column a statement's reference `node` (a Column or an
        Identifier) names, as the engine resolves it (see written_name)."""
        return written_name(self, node, dialect)

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
        kind = _type_kind(table.column(name).type_sql, dialect)
        if kind not in _INTEGER_BITS:
            return None
        widths.append(_INTEGER_BITS[kind])
    return tuple(widths)


@functools.lru_cache(maxsize=1024)
def _type_kind(type_sql: str, dialect: str) -> exp.DataType.Type | None:
    """The kind of a column type, parsed once per text (planning asks per table read); None if unreadable."""
    try:
        return exp.DataType.build(type_sql, dialect=dialect).this
    except Exception:
        return None


def with_packed_key(table: TableDef, dialect: str) -> TableDef:
    """Marks a table whose multi-column integer key fits one 128-bit integer (paper §3.2.5:
    MonetDB filters and ranks by one column far faster than by several low-cardinality
    ones). The packing is exact, so two keys never share a packed value. Up to 128 bits
    fit because MonetDB (the engine that packs) keeps each integer type's minimum for NULL,
    so the packed value never reaches HUGEINT's minimum, which is its NULL too."""
    bits = key_bits(table, dialect) if len(table.key) > 1 and not table.hidden_rowid else None
    if bits is None or sum(bits) > 128:
        return table
    return replace(table, packed_bits=bits)


def normalize(name: str) -> str:
    return name.lower()


def declared_name(identifier: exp.Expression, dialect: str) -> str:
    """The name an engine gives a table, view, index or column declared as `identifier`:
    DuckDB keeps it as written (and compares names without case); PostgreSQL and MonetDB
    fold an unquoted name to lower case and keep a quoted one as written."""
    while isinstance(identifier, (exp.Ordered, exp.Column)):
        identifier = identifier.this
    name = identifier.name
    if dialect == "duckdb" or (isinstance(identifier, exp.Identifier) and identifier.args.get("quoted")):
        return name
    return normalize(name)


def same_name(a: str, b: str, dialect: str) -> bool:
    """Whether two names, each as its engine names it (declared_name), name one object:
    DuckDB compares names without case, PostgreSQL and MonetDB exactly."""
    return a.lower() == b.lower() if dialect == "duckdb" else a == b


def alias_key(identifier: exp.Expression, dialect: str) -> str:
    """What a table reference's name or alias, or a column's qualifier, is compared by,
    as the engine compares them: DuckDB's folded to lower case, PostgreSQL's and MonetDB's
    as declared_name names them ("MixedT" and mixedt qualify two tables)."""
    name = declared_name(identifier, dialect)
    return name.lower() if dialect == "duckdb" else name


def alias_of(ref: exp.Expression, dialect: str) -> str:
    """alias_key of the name a FROM item is referred to by: its alias, else its own name."""
    alias = ref.args.get("alias")
    identifier = alias.this if isinstance(alias, exp.TableAlias) and alias.this is not None else ref.this
    return alias_key(identifier, dialect) if isinstance(identifier, exp.Identifier) else normalize(ref.alias_or_name)


def qualifier_of(column: exp.Column, dialect: str) -> str:
    """alias_key of a column's qualifier; "" when it has none."""
    qualifier = column.args.get("table")
    return alias_key(qualifier, dialect) if isinstance(qualifier, exp.Identifier) else ""


def written_name(table: TableDef, node: exp.Expression, dialect: str) -> str:
    """The column of `table` a statement's column reference `node` (a Column or an
    Identifier) names, as the engine resolves it: DuckDB without case, PostgreSQL and
    MonetDB by the name folded as declared_name folds it (a quoted name exactly). A name
    of no column comes back as the engine names it, for the caller to report."""
    identifier = node.this if isinstance(node, exp.Column) else node
    return _declared((c.name for c in table.columns), identifier, dialect)


def _declared(names: Any, identifier: exp.Expression | str, dialect: str) -> str:
    """The declared column among `names` that a reference `identifier` names (or a name
    the engine already gave, a string), as the engine resolves it; the name itself when none."""
    name = identifier if isinstance(identifier, str) else declared_name(identifier, dialect)
    return next((n for n in names if same_name(n, name, dialect)), name)


def generated_expression(col: Column, dialect: str) -> exp.Expression:
    """A generated column's expression, as a tree of its own."""
    assert col.generated is not None
    return _parsed_expression(col.generated, dialect).copy()


@functools.lru_cache(maxsize=256)
def _parsed_expression(text: str, dialect: str) -> exp.Expression:
    return sqlglot.parse_one(text, read=dialect)


# Column constraints the constraint checks own (CHECK, UNIQUE, REFERENCES): read elsewhere.
_CHECKED_ELSEWHERE = (exp.CheckColumnConstraint, exp.UniqueColumnConstraint, exp.Reference)
_SERIAL_TYPES = (exp.DataType.Type.SERIAL, exp.DataType.Type.BIGSERIAL, exp.DataType.Type.SMALLSERIAL)


def _sequence_advice(dialect: str, column: str) -> str:
    """How to number rows on a tique table: a sequence the column's default draws from."""
    draw = "NEXT VALUE FOR s" if dialect == "monetdb" else "nextval('s')"
    return f"create a sequence (CREATE SEQUENCE s) and declare the column {column} ... DEFAULT {draw}"


@dataclass
class _ColumnProperties:
    not_null: bool = False
    primary_key: bool = False
    default: exp.Expression | None = None
    collation: str | None = None
    generated: str | None = None


def _column_properties(item: exp.ColumnDef, name: str, dialect: str, statement: str) -> _ColumnProperties:
    """Every property a column definition declares, each kept with its meaning or refused:
    a dropped property (a collation, a generated expression) would silently change answers."""
    found = _ColumnProperties()
    kind = item.args.get("kind")
    if isinstance(kind, exp.DataType) and kind.this in _SERIAL_TYPES:
        raise NotSupportedError(describe(statement, f"{kind.sql(dialect)} column {name!r} is not supported on tique tables; {_sequence_advice(dialect, name)}"))
    for constraint in item.args.get("constraints") or []:
        prop = constraint.kind
        if isinstance(prop, exp.PrimaryKeyColumnConstraint):
            found.primary_key = found.not_null = True
        elif isinstance(prop, exp.NotNullColumnConstraint):
            found.not_null = found.not_null or not prop.args.get("allow_null")
        elif isinstance(prop, exp.DefaultColumnConstraint):
            found.default = prop.this
        elif isinstance(prop, exp.CollateColumnConstraint):
            if dialect == "monetdb":
                raise NotSupportedError(describe(statement, f"MonetDB has no column collations: declare column {name!r} without COLLATE"))
            found.collation = prop.this.sql(dialect)
        elif isinstance(prop, exp.ComputedColumnConstraint) or (isinstance(prop, exp.GeneratedAsIdentityColumnConstraint) and prop.args.get("expression") is not None):
            found.generated = _generated(prop, name, dialect, statement)
        elif isinstance(prop, (exp.GeneratedAsIdentityColumnConstraint, exp.AutoIncrementColumnConstraint)):
            raise NotSupportedError(describe(statement, f"identity column {name!r} ({prop.sql(dialect)}) is not supported on tique tables; {_sequence_advice(dialect, name)}"))
        elif isinstance(prop, _CHECKED_ELSEWHERE):
            continue
        else:
            spelled = constraint.sql(dialect) or prop.key.upper()
            raise NotSupportedError(describe(statement, f"column property {spelled!r} of column {name!r} is not supported on tique tables"))
    if found.generated is not None and found.default is not None:
        raise ProgrammingError(describe(statement, f"column {name!r} cannot have both a DEFAULT and a generated expression"))
    return found


def _generated(prop: exp.Expression, name: str, dialect: str, statement: str) -> str:
    """The expression of a generated column, where the engine has generated columns of
    that kind: DuckDB's are VIRTUAL, PostgreSQL's STORED (tique stores both, computed on
    every write; a deterministic expression reads the same either way), MonetDB has none."""
    # sqlglot's PostgreSQL reads `GENERATED ALWAYS AS (...) STORED` as a computed column
    # without saying it is persisted; VIRTUAL (tique's parser) says it is not.
    persisted = prop.args.get("persisted")
    stored = bool(persisted) or (dialect == "postgres" and isinstance(prop, exp.ComputedColumnConstraint) and persisted is None)
    if dialect == "monetdb":
        raise NotSupportedError(describe(statement, f"MonetDB has no generated columns: compute column {name!r} in the INSERT and UPDATE statements, or in a view"))
    if dialect == "duckdb" and stored:
        raise NotSupportedError(describe(statement, f"DuckDB cannot create a STORED generated column ({name!r}); declare it VIRTUAL"))
    if dialect == "postgres" and not stored:
        raise NotSupportedError(describe(statement, f"PostgreSQL generated columns are STORED: declare column {name!r} GENERATED ALWAYS AS (...) STORED"))
    expression = prop.args.get("expression") if isinstance(prop, exp.GeneratedAsIdentityColumnConstraint) else prop.this
    return expression.unnest().sql(dialect)


def check_column_properties(columns: list[Column], key: list[str], dialect: str, statement: str) -> None:
    """What a column's properties require of the table as a whole."""
    names = {c.name for c in columns}
    for col in columns:
        if col.generated is None:
            continue
        if col.name in key:
            raise NotSupportedError(describe(statement, f"generated column {col.name!r} in the primary key is not supported on tique tables; key the table by the columns it is computed from"))
        for ref in _parsed_expression(col.generated, dialect).find_all(exp.Column):
            used = _declared(names, ref, dialect)
            if used not in names:
                raise ProgrammingError(describe(statement, f"generated column {col.name!r} refers to {used!r}, which is not a column of the table"))
            if next(c for c in columns if c.name == used).generated is not None:
                raise NotSupportedError(describe(statement, f"generated column {col.name!r} refers to generated column {used!r}; spell out its expression instead"))
    if dialect == "duckdb":
        # DuckDB's key index compares bytes while its queries compare by the collation, so
        # no snapshot or write-set can be both (a NOCASE key holds 'ABC' and 'abc' at once).
        for col in columns:
            if col.collation is not None and col.name in key:
                raise NotSupportedError(describe(statement, f"a primary key column with a collation ({col.name!r} COLLATE {col.collation}) is not supported on tique tables on DuckDB; declare the key column without COLLATE and collate where it is compared (... WHERE {col.name} COLLATE {col.collation} = ?)"))


def _declared_type(item: exp.ColumnDef, name: str, props: _ColumnProperties, dialect: str, statement: str) -> str:
    """The column's type as declared. Every engine wants one, except DuckDB for a generated
    column, whose type it infers from the expression; tique does not, so it asks for it."""
    kind = item.args.get("kind")
    if kind is not None:
        return kind.sql(dialect)
    if props.generated is not None:
        raise NotSupportedError(describe(statement, f"generated column {name!r} without a type is not supported on tique tables; declare its type ({name} <type> AS (...))"))
    raise ProgrammingError(describe(statement, f"column {name!r} must have a type"))


def table_def_from_create(create: exp.Create, dialect: str, statement: str, schema_names: frozenset[str] = frozenset()) -> TableDef:
    """Reads columns with their properties (see _column_properties), single- or
    multi-column primary keys, UNIQUE and CHECK constraints. Every other constraint is
    refused: none is dropped silently. `schema_names`: the names a UNIQUE constraint's
    name must not repeat (see constraint_names_in_schema)."""
    schema = create.this
    if not isinstance(schema, exp.Schema) or not isinstance(schema.this, exp.Table):
        raise NotSupportedError(describe(statement, "CREATE TABLE ... AS SELECT is not supported for tique tables; create the table, then INSERT ... SELECT"))
    name = declared_name(schema.this.this, dialect)
    columns: list[Column] = []
    key: list[str] = []
    # (name the application gave or None, what it constrains), in declaration order
    uniques: list[tuple[str | None, tuple[str, ...]]] = []
    checks: list[tuple[str | None, str | None, exp.Expression]] = []  # (name, its column, expression)
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            col_name = declared_name(item.this, dialect)
            if col_name.lower().startswith("tq_"):
                raise ProgrammingError(describe(statement, f"column name {col_name!r} uses the prefix tq_, which tique reserves"))
            props = _column_properties(item, col_name, dialect, statement)
            if props.primary_key:
                key.append(col_name)
            for constraint in item.args.get("constraints") or []:
                kind = constraint.kind
                given = _given_name(constraint, dialect)
                if isinstance(kind, exp.UniqueColumnConstraint):
                    uniques.append((given, _unique_columns(kind, (col_name,), dialect, statement)))
                elif isinstance(kind, exp.CheckColumnConstraint):
                    checks.append((given, col_name, kind.this))
                elif isinstance(kind, exp.Reference):
                    raise _foreign_key_refused(statement)
            kind_sql = _declared_type(item, col_name, props, dialect, statement)
            columns.append(Column(col_name, kind_sql, props.not_null, props.default, props.collation, props.generated))
            continue
        given = _given_name(item, dialect) if isinstance(item, exp.Constraint) else None
        parts = item.expressions if isinstance(item, exp.Constraint) else [item]
        for part in parts:
            if isinstance(part, exp.PrimaryKey):
                key.extend(declared_name(p, dialect) for p in part.expressions)
            elif isinstance(part, exp.UniqueColumnConstraint):
                uniques.append((given, _unique_columns(part, (), dialect, statement)))
            elif isinstance(part, exp.CheckColumnConstraint):
                checks.append((given, None, part.this))
            elif isinstance(part, (exp.ForeignKey, exp.Reference)):
                raise _foreign_key_refused(statement)
            else:
                raise NotSupportedError(describe(statement, f"table constraint {item.sql(dialect)!r} is not supported on tique tables"))
    if not columns:
        raise ProgrammingError(describe(statement, "a table needs at least one column"))
    names = {c.name for c in columns}
    # Constraint column lists name columns as the engine resolves them: "Id" and id are
    # two columns on PostgreSQL and MonetDB, one on DuckDB.
    key = [_declared(names, k, dialect) for k in key]
    uniques = [(given, tuple(_declared(names, c, dialect) for c in cols)) for given, cols in uniques]
    for k in key:
        if k not in names:
            raise ProgrammingError(describe(statement, f"primary key column {k!r} is not a column of {name}"))
    check_column_properties(columns, key, dialect, statement)
    columns = [replace(c, not_null=c.not_null or c.name in key) for c in columns]
    hidden = not key
    for _, unique_columns in uniques:
        for c in unique_columns:
            if c not in names:
                raise ProgrammingError(describe(statement, f"UNIQUE names {c!r}, which is not a column of {name}"))
    normalized_checks = [(given, column_name, _check_expression(expression, name, names, dialect, statement))
                         for given, column_name, expression in checks]
    # PostgreSQL names an unnamed CHECK after its column when it reads exactly one, wherever written.
    check_columns = [tuple(dict.fromkeys(c.name for c in normalized.find_all(exp.Column))) for _, _, normalized in normalized_checks]
    check_names, named_uniques = _constraint_names(
        name, [(given, columns if len(columns) == 1 else ()) for (given, _, _), columns in zip(normalized_checks, check_columns)],
        uniques, tuple(key), schema_names, dialect, statement)
    # A primary key already makes any superset of its columns unique.
    unique_defs = [Unique(constraint_name, unique_columns) for constraint_name, unique_columns in named_uniques
                   if not (key and set(key) <= set(unique_columns))]
    check_defs = [Check(constraint_name, normalized.sql(dialect)) for constraint_name, (_, _, normalized) in zip(check_names, normalized_checks)]
    return TableDef(name, tuple(columns), tuple(key) if key else (ROWID,), hidden,
                    uniques=tuple(unique_defs), checks=tuple(check_defs))


def _foreign_key_refused(statement: str) -> NotSupportedError:
    return NotSupportedError(describe(statement, "FOREIGN KEY constraints are not supported on tique tables (tique cannot "
                                                 "enforce them, and never drops a constraint silently); declare the table "
                                                 "without REFERENCES and, in each transaction that writes a child row, read "
                                                 "its parent row and write it (UPDATE parent SET c = c WHERE key = ?), so that "
                                                 "a concurrent delete of the parent conflicts with it"))


def _unique_columns(constraint: exp.UniqueColumnConstraint, own: tuple[str, ...], dialect: str, statement: str) -> tuple[str, ...]:
    """The columns a UNIQUE constraint covers: its list, or the column it is declared on."""
    if constraint.args.get("nulls"):
        raise NotSupportedError(describe(statement, "UNIQUE NULLS NOT DISTINCT is not supported on tique tables; declare the columns NOT NULL instead"))
    include = constraint.args.get("include")
    if constraint.args.get("index_type") or (include is not None and any(v for k, v in include.args.items() if k != "with_storage")):
        raise NotSupportedError(describe(statement, f"{constraint.sql(dialect)!r}: index options of a UNIQUE constraint are not supported on tique tables"))
    listed = constraint.this
    if isinstance(listed, exp.Schema):
        return tuple(declared_name(c, dialect) for c in listed.expressions)
    if listed is not None:
        return (declared_name(listed, dialect),)
    return own


def _given_name(constraint: exp.Expression, dialect: str) -> str | None:
    """The name a CONSTRAINT clause gives, as the engine names it (declared_name), or None."""
    identifier = constraint.args.get("this")
    return declared_name(identifier, dialect) if isinstance(identifier, exp.Identifier) and identifier.name else None


def _constraint_names(table: str, checks: list[tuple[str | None, tuple[str, ...]]], uniques: list[tuple[str | None, tuple[str, ...]]],
                      key: tuple[str, ...], schema_names: frozenset[str], dialect: str,
                      statement: str) -> tuple[list[str], list[tuple[str, tuple[str, ...]]]]:
    """The names of the CHECK constraints, and the UNIQUE constraints with their names, given
    or chosen as the engine chooses them; the engine's error where a given name repeats one
    it already holds. PostgreSQL names the CHECKs first, then the primary key (t_pkey) and
    the UNIQUEs, each in declaration order: a CHECK's name is unique in its table, a
    UNIQUE's (its index's) in the schema; an unnamed one gets t_a_check / t_a_key, numbered
    past names taken; a UNIQUE over the very columns of an earlier one (or of the key) is
    that one, which takes its name if it had none. MonetDB names an unnamed UNIQUE
    t_a_unique, and a UNIQUE's name is unique in the schema (it has no CHECK of its own:
    tique's are named as PostgreSQL's). DuckDB shows no names and rejects no repeated one.
    Names compare as the engine compares them (same_name)."""
    taken: list[str] = []

    def held(candidate: str, among: list[str] | frozenset[str]) -> bool:
        return any(same_name(candidate, n, dialect) for n in among)

    def chosen(columns: tuple[str, ...], suffix: str) -> str:
        base = "_".join((table, *columns, suffix))
        found, n = base, 0
        while held(found, taken) or (suffix != "check" and held(found, schema_names)):
            n += 1
            found = f"{base}{n}"
        return found

    check_names = []
    for given, columns in checks:
        if given is not None and dialect != "duckdb" and held(given, taken):
            raise ProgrammingError(describe(statement, f'check constraint "{given}" already exists'))
        check_names.append(given or chosen(columns, "check"))
        taken.append(check_names[-1])
    checks_taken = list(taken) if dialect == "postgres" else []
    taken = checks_taken + [table] if dialect == "postgres" else []  # the table is a relation too
    if dialect == "postgres":
        merged: list[list[Any]] = [[None, key]] if key else []  # the key's index comes first
        for given, columns in uniques:
            prior = next((m for m in merged if m[1] == columns), None)
            if prior is None:
                merged.append([given, columns])
            elif prior[0] is None:
                prior[0] = given
        if key:
            taken.append(merged.pop(0)[0] or chosen((), "pkey"))
        uniques = [(given, columns) for given, columns in merged]
    named = []
    for given, columns in uniques:
        if given is not None and dialect != "duckdb":
            if held(given, checks_taken):
                raise ProgrammingError(describe(statement, f'constraint "{given}" for relation "{table}" already exists'))
            if held(given, taken) or held(given, schema_names):
                raise ProgrammingError(describe(statement, f'relation "{given}" already exists' if dialect == "postgres"
                                                else f"CONSTRAINT UNIQUE: key '{given}' already exists"))
        named.append((given or chosen(columns, "unique" if dialect == "monetdb" else "key"), columns))
        taken.append(named[-1][0])
    return check_names, named


def constraint_names_in_schema(catalog: "CatalogSnapshot", dialect: str, creating: str) -> frozenset[str]:
    """The names a UNIQUE constraint's name in the new table `creating` must not repeat, as
    the engine keeps them: on PostgreSQL every relation's (tables, views, indexes, the
    primary keys' t_pkey and the UNIQUEs' indexes), on MonetDB the other UNIQUEs'; none on
    DuckDB, which shows no names. A table named `creating` is left out: creating it again
    fails (or IF NOT EXISTS does nothing) before any constraint is named."""
    if dialect == "duckdb":
        return frozenset()
    others = [t for n, t in catalog.tables.items() if not same_name(n, creating, dialect)]
    names = {u.name for t in others for u in t.uniques}
    if dialect == "postgres":
        names.update(t.name for t in others)
        names.update(catalog.objects)
        names.update(f"{t.name}_pkey" for t in others if not t.hidden_rowid)
    return frozenset(names)


def _check_expression(expression: exp.Expression, table: str, names: set[str], dialect: str, statement: str) -> exp.Expression:
    """The CHECK expression with each column quoted as stored (lower case, unqualified), so
    it reads the same wherever tique evaluates it. Subqueries are refused, as natively."""
    normalized = expression.copy()
    if normalized.find(exp.Placeholder) is not None:
        raise ProgrammingError(describe(statement, "a CHECK constraint cannot hold a parameter marker"))
    if normalized.find(exp.Query) is not None or normalized.find(exp.AggFunc) is not None or normalized.find(exp.Window) is not None:
        raise NotSupportedError(describe(statement, f"CHECK ({expression.sql(dialect)}): a CHECK constraint may use only the row's own columns, no subquery, aggregate or window"))
    for col in list(normalized.find_all(exp.Column)):
        qualifier = declared_name(col.args["table"], dialect) if col.table else None
        if not (qualifier is None or same_name(qualifier, table, dialect)) or col.args.get("db"):
            raise ProgrammingError(describe(statement, f"CHECK ({expression.sql(dialect)}) refers to {col.sql(dialect)}, which is not a column of {table}"))
        column_name = _declared(names, col, dialect)
        if column_name not in names:
            raise ProgrammingError(describe(statement, f"CHECK ({expression.sql(dialect)}) refers to {column_name!r}, which is not a column of {table}"))
        col.replace(exp.Column(this=exp.to_identifier(column_name, quoted=True)))
    return normalized


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
        if c.generated is not None:
            constraints.insert(0, exp.ColumnConstraint(kind=_generated_constraint(c.generated, dialect)))
        if c.collation is not None:
            constraints.append(exp.ColumnConstraint(kind=exp.CollateColumnConstraint(this=exp.var(c.collation))))
        defs.append(exp.ColumnDef(this=exp.to_identifier(c.name, quoted=True), kind=exp.DataType.build(c.type_sql, dialect=dialect, udt=True), constraints=constraints))
    if not table.hidden_rowid:
        defs.append(exp.PrimaryKey(expressions=[exp.to_identifier(k, quoted=True) for k in table.key]))
    for unique in table.uniques:
        listed = exp.Schema(expressions=[exp.to_identifier(c, quoted=True) for c in unique.columns])
        defs.append(exp.Constraint(this=exp.to_identifier(unique.name, quoted=True), expressions=[exp.UniqueColumnConstraint(this=listed)]))
    for check in table.checks:
        defs.append(exp.Constraint(this=exp.to_identifier(check.name, quoted=True),
                                   expressions=[exp.CheckColumnConstraint(this=check.expression(dialect))]))
    # Quoted, so names that are reserved words (a column "order") parse back in every dialect.
    create = exp.Create(this=exp.Schema(this=exp.Table(this=exp.to_identifier(table.name, quoted=True)), expressions=defs), kind="TABLE")
    return create.sql(dialect)


def _generated_constraint(expression_sql: str, dialect: str) -> exp.ComputedColumnConstraint:
    """A generated column as its engine spells it: sqlglot reads it back only right after
    the type (so it comes first), DuckDB's `AS (expr)` VIRTUAL, PostgreSQL's STORED."""
    expression = _parsed_expression(expression_sql, dialect).copy()
    if dialect == "postgres":
        return exp.ComputedColumnConstraint(this=expression, persisted=True)
    return exp.ComputedColumnConstraint(this=exp.paren(expression, copy=False), persisted=False)


@dataclass(frozen=True, eq=True)
class CatalogSnapshot:
    """The catalog as one planning sees it: the tique tables and the views and indexes over
    them, by normalized name, and the version they were read at. Immutable, so a plan is a
    function of (statement, dialect, snapshot, options): planning reads nothing else, and
    a schema change made after the snapshot was taken cannot reach a plan made from it
    (the connection takes a new snapshot when it learns of one)."""
    tables: Mapping[str, TableDef] = field(default_factory=lambda: MappingProxyType({}))
    objects: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # tique.ddl.View | Index
    version: Hashable = None
    # The engine's dialect: how a statement's names resolve to the names kept here.
    dialect: str = ""
    # column_schema's, per dialect: a function of the fields above, made on first use.
    _schemas: dict[str, "ColumnSchema"] = field(default_factory=dict, compare=False, repr=False)
    # DuckDB's names folded to lower case -> the names kept here, made on first use.
    _folded: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, tables: Mapping[str, TableDef], objects: Mapping[str, Any] | None = None, version: Hashable = None,
           dialect: str = "") -> "CatalogSnapshot":
        """A snapshot of copies of `tables` and `objects`: later changes to them stay out."""
        return cls(MappingProxyType(dict(tables)), MappingProxyType(dict(objects or {})), version, dialect)

    def resolve(self, identifier: exp.Expression) -> str:
        """The name kept here of the table, view or index a statement names by
        `identifier`, as the engine resolves it: PostgreSQL and MonetDB by the name folded
        as declared_name folds it ("MixedT" and mixedt are two tables), DuckDB without
        case (one table, kept as first spelled). A name of nothing comes back as declared."""
        name = declared_name(identifier, self.dialect)
        if self.dialect != "duckdb" or name in self.tables or name in self.objects:
            return name
        if not self._folded:
            self._folded.update((n.lower(), n) for n in (*self.tables, *self.objects))
        return self._folded.get(name.lower(), name)

    def table_of(self, ref: exp.Expression) -> TableDef | None:
        """The tique table a table reference names (unqualified: qualified ones never are), or None."""
        if not isinstance(ref, exp.Table) or ref.args.get("db") or ref.args.get("catalog") or not isinstance(ref.this, exp.Identifier):
            return None
        return self.tables.get(self.resolve(ref.this))

    def table(self, name: str) -> TableDef | None:
        """The tique table `name` (as kept here: see resolve), or None."""
        return self.tables.get(name)

    def object(self, name: str) -> Any:
        """The tique view or index `name` (as kept here: see resolve), or None."""
        return self.objects.get(name)

    def names(self, name: str) -> bool:
        """Whether `name` is a tique table, view or index of this snapshot."""
        return name in self.tables or name in self.objects

    def column_schema(self, dialect: str) -> "ColumnSchema":
        """The tique tables' columns as sqlglot's optimizer reads a schema (see ColumnSchema)."""
        found = self._schemas.get(dialect)
        if found is None:
            found = self._schemas[dialect] = ColumnSchema.of(self.tables.values(), dialect)
        return found


@dataclass(frozen=True)
class ColumnSchema:
    """The columns of tique tables as sqlglot's qualify_columns resolves names against them:
    `schema` holds each table's columns (the hidden row id too, which a statement reads as
    DuckDB's rowid) named as the dialect normalizes identifiers (DuckDB folds even quoted
    names; PostgreSQL and MonetDB keep quoted ones as written), so a tree normalized the
    same way (sqlglot's normalize_identifiers) resolves exactly as the engine would;
    `names` maps each such name back to the catalog's name of the column."""
    schema: MappingSchema
    names: Mapping[str, Mapping[str, str]]  # table -> normalized column name -> catalog name

    @classmethod
    def of(cls, tables: Any, dialect: str) -> "ColumnSchema":
        engine = Dialect.get_or_raise(dialect)
        names: dict[str, dict[str, str]] = {}
        tables = list(tables)
        for table in tables:
            columns = table.user_columns + ((ROWID,) if table.hidden_rowid else ())
            names[table.name] = {engine.normalize_identifier(exp.to_identifier(c, quoted=True)).name: c for c in columns}
        # Only names matter here: every column is typed UNKNOWN. Tables are named as the
        # dialect normalizes them too, as a normalized tree names them.
        mapping = {engine.normalize_identifier(exp.to_identifier(table.name, quoted=True)).name:
                   {column: "UNKNOWN" for column in names[table.name]} for table in tables}
        return cls(MappingSchema(mapping, dialect=dialect, normalize=False), MappingProxyType(names))

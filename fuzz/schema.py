"""Random schemas: tables with and without (single- and multi-column) primary keys,
NULLable and NOT NULL columns of every type family the generator understands, defaults,
and, behind flags, collations and CHECK/UNIQUE constraints."""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from sqlglot import exp

# Type name -> family. Expressions are generated per family: values of one family compare,
# unify in set operations and assign to each other on every engine.
TYPES: dict[str, str] = {
    "INTEGER": "num", "BIGINT": "num", "DOUBLE": "num", "DECIMAL(10, 2)": "num",
    "VARCHAR": "str", "BOOLEAN": "bool", "DATE": "date",
}
FAMILIES = ("num", "str", "bool", "date")
# A collation per engine, by what it does: names differ between engines.
COLLATIONS: dict[str, dict[str, str]] = {
    "binary": {"duckdb": "binary", "postgres": "C", "monetdb": "binary"},
    "nocase": {"duckdb": "nocase", "postgres": "C", "monetdb": "binary"},
}


@dataclass(frozen=True)
class SchemaOptions:
    """Generation of constructs other branches are implementing: off by default, so the
    default suite tests only what tique supports today."""
    collations: bool = False
    check_constraints: bool = False
    unique_constraints: bool = False
    max_tables: int = 3
    max_columns: int = 5


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool = False
    default: Any = None  # a Python value, or None for no DEFAULT
    collation: str | None = None

    @property
    def family(self) -> str:
        return TYPES[self.type]


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()  # primary key column names; () = no primary key
    checks: tuple[exp.Expression, ...] = ()
    uniques: tuple[tuple[str, ...], ...] = ()

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def without_column(self, name: str) -> "Table":
        return replace(self, columns=tuple(c for c in self.columns if c.name != name),
                       key=tuple(k for k in self.key if k != name),
                       uniques=tuple(u for u in self.uniques if name not in u),
                       checks=tuple(c for c in self.checks if name not in {col.name for col in c.find_all(exp.Column)}))


@dataclass(frozen=True)
class Schema:
    tables: tuple[Table, ...] = field(default_factory=tuple)

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)


def literal(value: Any) -> exp.Expression:
    """A SQL literal for a Python value, typed so that every engine reads it the same way."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, Decimal)):
        node: exp.Expression = exp.Literal.number(str(abs(value)))
        return exp.Neg(this=node) if value < 0 else node
    if isinstance(value, float):
        node = exp.Cast(this=exp.Literal.number(repr(abs(value))), to=exp.DataType.build("DOUBLE"))
        return exp.Neg(this=node) if value < 0 else node
    if isinstance(value, dt.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    return exp.Literal.string(str(value))


def random_value(rng: random.Random, family_or_type: str, *, nulls: bool = True) -> Any:
    """Small values with many duplicates, negatives and empty strings: where engines and
    rewrites disagree, if anywhere."""
    if nulls and rng.random() < 0.15:
        return None
    t = family_or_type
    if t in ("INTEGER", "BIGINT", "num"):
        return rng.choice([rng.randint(-5, 5), rng.randint(-100, 100), 0, 1])
    if t == "DOUBLE":
        return rng.choice([rng.randint(-40, 40) / 4, 0.0, -0.5, 1.5])
    if t == "DECIMAL(10, 2)":
        return Decimal(rng.randint(-2000, 2000)) / 100
    if t in ("VARCHAR", "str"):
        return rng.choice(["", "a", "b", "ab", "B", "abc", " x", "x ", "z%", "ba"])
    if t in ("BOOLEAN", "bool"):
        return rng.random() < 0.5
    if t in ("DATE", "date"):
        return dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-20, 20))
    raise ValueError(t)


def random_schema(rng: random.Random, options: SchemaOptions = SchemaOptions()) -> Schema:
    tables = []
    for t in range(rng.randint(1, options.max_tables)):
        ncols = rng.randint(2, options.max_columns)
        columns = []
        for c in range(ncols):
            type_ = rng.choice(list(TYPES))
            not_null = rng.random() < 0.3
            default = random_value(rng, type_, nulls=False) if rng.random() < 0.2 else None
            collation = None
            if options.collations and TYPES[type_] == "str" and rng.random() < 0.3:
                collation = rng.choice(list(COLLATIONS))
            columns.append(Column(f"c{c}", type_, not_null, default, collation))
        key: tuple[str, ...] = ()
        keyable = [c.name for c in columns if c.family != "bool" and c.type != "DOUBLE"]
        roll = rng.random()
        if keyable and roll < 0.4:
            key = (rng.choice(keyable),)
        elif len(keyable) >= 2 and roll < 0.65:
            key = tuple(sorted(rng.sample(keyable, 2)))
        checks: list[exp.Expression] = []
        if options.check_constraints:
            nums = [c for c in columns if c.family == "num"]
            if nums and rng.random() < 0.5:
                checks.append(exp.GT(this=exp.column(rng.choice(nums).name), expression=literal(-90)))
        uniques: list[tuple[str, ...]] = []
        if options.unique_constraints:
            candidates = [c.name for c in columns if c.name not in key and c.family != "bool"]
            if candidates and rng.random() < 0.5:
                uniques.append((rng.choice(candidates),))
        tables.append(Table(f"t{t}", tuple(columns), key, tuple(checks), tuple(uniques)))
    return Schema(tuple(tables))


def create_table(table: Table, engine: str = "duckdb") -> exp.Create:
    """CREATE TABLE as a sqlglot tree for `engine` (collation names differ); rendered by the caller."""
    defs: list[exp.Expression] = []
    for c in table.columns:
        constraints = []
        if c.not_null or c.name in table.key:
            constraints.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
        if c.default is not None:
            constraints.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=literal(c.default))))
        if c.collation:
            name = COLLATIONS[c.collation][engine]
            constraints.append(exp.ColumnConstraint(kind=exp.CollateColumnConstraint(this=exp.to_identifier(name, quoted=True))))
        defs.append(exp.ColumnDef(this=exp.to_identifier(c.name), kind=exp.DataType.build(c.type, dialect="duckdb"),
                                  constraints=constraints))
    if table.key:
        defs.append(exp.PrimaryKey(expressions=[exp.to_identifier(k) for k in table.key]))
    for u in table.uniques:
        defs.append(exp.UniqueColumnConstraint(this=exp.Schema(expressions=[exp.to_identifier(k) for k in u])))
    for check in table.checks:
        defs.append(exp.CheckColumnConstraint(this=check.copy()))
    return exp.Create(kind="TABLE", this=exp.Schema(this=exp.to_table(table.name), expressions=defs))

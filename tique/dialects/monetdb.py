"""MonetDB, as a small subclass of sqlglot's PostgreSQL dialect (the closest one:
double-quoted identifiers, TRUE/FALSE, LIMIT/OFFSET, `||`, CAST, window functions)."""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.postgres import Postgres


class MonetDB(Postgres):
    class Generator(Postgres.Generator):
        def anonymous_sql(self, expression: exp.Anonymous) -> str:
            # Sequences: MonetDB has no nextval('name'), only NEXT VALUE FOR name.
            if expression.name.lower() == "nextval" and len(expression.expressions) == 1:
                name = expression.expressions[0].name
                return f"NEXT VALUE FOR {self.sql(exp.to_identifier(name, quoted=True))}"
            return super().anonymous_sql(expression)

        def datatype_sql(self, expression: exp.DataType) -> str:
            # MonetDB's VARCHAR must have a length; an unbounded one is TEXT (CLOB).
            if expression.is_type(exp.DataType.Type.VARCHAR, exp.DataType.Type.NVARCHAR) and not expression.expressions:
                return "TEXT"
            if expression.is_type(exp.DataType.Type.VARBINARY):
                return "BLOB"
            return super().datatype_sql(expression)


Dialect.classes["monetdb"] = MonetDB

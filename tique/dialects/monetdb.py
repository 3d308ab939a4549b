"""MonetDB, as a small subclass of sqlglot's PostgreSQL dialect (the closest one:
double-quoted identifiers, TRUE/FALSE, LIMIT/OFFSET, `||`, CAST, window functions)."""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.postgres import Postgres


# MonetDB's keywords (its sys.keywords, 11.45). Many are reserved, so an identifier
# spelled like one (a column `blob`, `name`, `key`) is sent quoted. MonetDB folds
# unquoted names to lower case, so the quoted form is the lower-cased name.
KEYWORDS = frozenset("""
add admin after aggregate all alter always analyze and any asc asymmetric at atomic authorization auto_increment
before begin best between big bigint bigserial binary blob by cache call cascade case cast century chain char
character check client clob coalesce column comment commit committed constraint continue convert copy
corresponding create cross cube current current_date current_role current_schema current_time current_timestamp
current_timezone current_user cycle data date day deallocate debug dec decade decimal declare default delete
delimiters desc diagnostics distinct do double dow doy drop each effort else elseif encrypted end endian epoch
escape every except exclude exec execute exists explain external extract false first float following for foreign
from full function fwf generated global grant group grouping groups having hour hugeint identity if ilike imprints
in increment index inner insert int integer intersect interval into is isolation join key language large last
lateral left level like limit little loader local localtime localtimestamp match matched maxvalue mediumint merge
minute minvalue month name native natural new next no not now null nullif nulls numeric object of offset old on
only option options or order ordered others outer over partial partition password path plan position preceding
precision prep prepare preserve primary privileges procedure public quarter range read real records references
referencing release remote rename repeatable replace replica restart restrict return returns revoke right role
rollback rollup row rows sample savepoint schema second seed select sequence serial serializable server session
session_user set sets simple size smallint some split_part start statement stdin stdout storage string substring
symmetric table temp temporary text then ties time timestamp tinyint to trace transaction trigger true truncate
type unbounded uncommitted unencrypted union unique update user using value values varchar varying view week when
where while window with work write xmlagg xmlattributes xmlcomment xmlconcat xmldocument xmlelement xmlforest
xmlnamespaces xmlparse xmlpi xmlquery xmlschema xmltext xmlvalidate year zone
""".split()) - {
    # Niladic values, which sqlglot reads as column names: quoted, they would be columns.
    "current_date", "current_role", "current_schema", "current_time", "current_timestamp", "current_timezone",
    "current_user", "localtime", "localtimestamp", "session_user", "user",
}


class MonetDB(Postgres):
    class Parser(Postgres.Parser):
        # Sequences: NEXT VALUE FOR name (a column default, a value), as MonetDB spells nextval.
        NO_PAREN_FUNCTION_PARSERS = {**Postgres.Parser.NO_PAREN_FUNCTION_PARSERS, "NEXT": lambda self: self._parse_next_value_for()}
        # random() stays as written (MonetDB has none, and rejects it); rand() is MonetDB's.
        FUNCTIONS = {**Postgres.Parser.FUNCTIONS, "RANDOM": lambda args: exp.Anonymous(this="random", expressions=args)}

    class Generator(Postgres.Generator):
        SINGLE_STRING_INTERVAL = False  # INTERVAL '1' DAY: MonetDB rejects PostgreSQL's INTERVAL '1 DAY'
        # MonetDB's random number is rand() (an integer); it has no random().
        TRANSFORMS = {**Postgres.Generator.TRANSFORMS, exp.Rand: lambda self, e: self.func("RAND", e.this)}

        def identifier_sql(self, expression: exp.Identifier) -> str:
            if not expression.quoted and expression.name.lower() in KEYWORDS:
                return super().identifier_sql(exp.Identifier(this=expression.name.lower(), quoted=True))
            return super().identifier_sql(expression)

        def anonymous_sql(self, expression: exp.Anonymous) -> str:
            # Sequences: MonetDB has no nextval('name'), only NEXT VALUE FOR name.
            if expression.name.lower() == "nextval" and len(expression.expressions) == 1:
                name = expression.expressions[0].name
                if len(name) > 1 and name.startswith('"') and name.endswith('"'):  # a quoted name, as PostgreSQL reads one
                    name = name[1:-1].replace('""', '"')
                return f"NEXT VALUE FOR {self.sql(exp.to_identifier(name, quoted=True))}"
            return super().anonymous_sql(expression)

        def datatype_sql(self, expression: exp.DataType) -> str:
            # The kind compared directly: what is_type does for a bare kind, without building
            # a DataType per kind asked (every cast of every statement comes through here).
            kind = expression.this
            # MonetDB's VARCHAR must have a length; an unbounded one is TEXT (CLOB).
            if kind in (exp.DataType.Type.VARCHAR, exp.DataType.Type.NVARCHAR) and not expression.expressions:
                return "TEXT"
            if kind == exp.DataType.Type.VARBINARY:
                return "BLOB"
            if kind == exp.DataType.Type.INT128:
                return "HUGEINT"
            if kind == exp.DataType.Type.TINYINT:  # PostgreSQL has none; MonetDB does
                return "TINYINT"
            if kind == exp.DataType.Type.TIMETZ:
                # MonetDB's TIMETZ keeps microseconds, TIME WITH TIME ZONE whole seconds.
                digits = f"({self.expressions(expression, flat=True)})" if expression.expressions else ""
                return f"TIME{digits} WITH TIME ZONE"
            return super().datatype_sql(expression)


Dialect.classes["monetdb"] = MonetDB

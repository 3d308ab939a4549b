"""Parsing and generating SQL so that the text tique sends means what the application wrote.

sqlglot is a transpiler: its generator writes what it believes the target dialect means
by a tree, which is not always what the application's own text meant on its own engine.
Two ways it loses meaning for a statement read and written in one dialect:

- null ordering: the parser fills in the dialect's default null order when none is
  written and the generator leaves it out when it equals that default, so an explicit
  `NULLS LAST` vanishes and the session's `default_null_order` decides instead. Here an
  unwritten null order stays unwritten (`nulls_first` absent) and a written one is
  always written out;
- constructs the generator cannot render it reports "unsupported" and drops: here that
  raises (ErrorLevel.RAISE), and the planner refuses the statement (NotSupportedError).
"""
from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel
from sqlglot.generator import Generator
from sqlglot.parser import Parser
from sqlglot.tokens import TokenType

_NULL_ORDERS = ("FIRST", "LAST")


def _null_order_written(parser: Parser) -> bool:
    """Whether the Ordered the parser just read ended with NULLS FIRST or NULLS LAST."""
    at = parser._index
    if at < 2:
        return False
    nulls, which = parser._tokens[at - 2], parser._tokens[at - 1]
    return nulls.text.upper() == "NULLS" and which.text.upper() in _NULL_ORDERS


@functools.cache
def parser_class(dialect: str) -> type[Parser]:
    """The dialect's parser, minus `:name` placeholders (tique takes `?` and `$n` markers
    only, and a `:` that opens a name is an array slice with no lower bound, `arr[:n]`),
    keeping an unwritten null order unwritten."""
    base = Dialect.get_or_raise(dialect).parser_class
    placeholders = {k: v for k, v in base.PLACEHOLDER_PARSERS.items() if k != TokenType.COLON}

    def _parse_ordered(self: Parser, parse_method: Any = None) -> exp.Ordered | None:
        ordered = base._parse_ordered(self, parse_method)
        if isinstance(ordered, exp.Ordered) and not _null_order_written(self):
            ordered.set("nulls_first", None)
        return ordered

    def _parse_generated_as_identity(self: Parser) -> exp.Expression:
        """`GENERATED ALWAYS AS (expr)` followed by VIRTUAL or STORED (DuckDB's spelling,
        which sqlglot leaves unread: a syntax error) as the computed column it declares."""
        parsed = base._parse_generated_as_identity(self)
        expression = parsed.args.get("expression") if isinstance(parsed, exp.GeneratedAsIdentityColumnConstraint) else None
        if expression is not None and self._match_texts(("VIRTUAL", "STORED")):
            return exp.ComputedColumnConstraint(this=exp.paren(expression, copy=False), persisted=self._prev.text.upper() == "STORED")
        return parsed

    return type(f"Tique{base.__name__}", (base,), {"PLACEHOLDER_PARSERS": placeholders, "_parse_ordered": _parse_ordered,
                                                     "_parse_generated_as_identity": _parse_generated_as_identity})


def drop_implicit_null_order(tree: exp.Expression) -> exp.Expression:
    """For trees parsed by a plain sqlglot parser that hold no NULLS FIRST/LAST (tique's
    own templates): every ORDER BY then leaves null order to the engine, as written."""
    for ordered in tree.find_all(exp.Ordered):
        ordered.set("nulls_first", None)
    return tree


def _ordered_sql(self: Generator, expression: exp.Ordered) -> str:
    if expression.args.get("with_fill"):
        self.unsupported("ORDER BY ... WITH FILL")
    desc = expression.args.get("desc")
    text = self.sql(expression, "this") + (" DESC" if desc else " ASC" if desc is False else "")
    nulls_first = expression.args.get("nulls_first")
    if nulls_first is None:
        return text
    return text + (" NULLS FIRST" if nulls_first else " NULLS LAST")


def _window_nulls_sql(base: type[Generator], method: str) -> Any:
    """IGNORE/RESPECT NULLS of a function called as a window function (`last(x ORDER BY y
    IGNORE NULLS) OVER (...)`) written where the application wrote it, inside the call:
    DuckDB's generator takes any such function other than first_value & co. for an
    aggregate and drops the clause."""
    dialect_method = getattr(base, method)

    def render(self: Generator, expression: exp.Expression) -> str:
        if isinstance(expression.parent, exp.Window) and isinstance(expression.this, exp.Func):
            text = "IGNORE NULLS" if isinstance(expression, exp.IgnoreNulls) else "RESPECT NULLS"
            call = self.sql(expression, "this")
            if call.endswith(")"):
                return f"{call[:-1]} {text})"
        return dialect_method(self, expression)

    return render


@functools.cache
def generator_class(dialect: str) -> type[Generator]:
    base = Dialect.get_or_raise(dialect).generator_class
    members: dict[str, Any] = {"ordered_sql": _ordered_sql}
    if dialect == "duckdb":
        members["ignorenulls_sql"] = _window_nulls_sql(base, "ignorenulls_sql")
        members["respectnulls_sql"] = _window_nulls_sql(base, "respectnulls_sql")
    return type(f"Faithful{base.__name__}", (base,), members)


def generator(dialect: str, cls: type[Generator] | None = None) -> Generator:
    """A generator of `dialect` (or of `cls`, a subclass of generator_class(dialect)) that
    raises sqlglot's UnsupportedError instead of dropping what it cannot render."""
    return (cls or generator_class(dialect))(dialect=Dialect.get_or_raise(dialect), unsupported_level=ErrorLevel.RAISE)


def to_sql(tree: exp.Expression, dialect: str) -> str:
    """`tree` as faithful SQL of `dialect` (see generator)."""
    return generator(dialect).generate(tree.copy(), copy=False)

"""Bound parameters: the application's `?` markers and tique's per-transaction values.

Everything that varies between executions travels as a parameter, so each distinct
statement text is parsed and rewritten once and its SQL text never holds a value.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

USER_PREFIX = "tq_p"


def number_qmarks(sql: str, dialect: str) -> str:
    """Turns each `?` token (never one inside a string or comment) into `$n`, in text order."""
    tokens = sqlglot.tokenize(sql, read=dialect)
    pieces: list[str] = []
    last = 0
    n = 0
    for token in tokens:
        if token.token_type == TokenType.PLACEHOLDER and sql[token.start:token.end + 1] == "?":
            n += 1
            pieces.append(sql[last:token.start])
            pieces.append(f"${n}")
            last = token.end + 1
    pieces.append(sql[last:])
    return "".join(pieces)


def user_param(index: int) -> exp.Placeholder:
    return exp.Placeholder(this=f"{USER_PREFIX}{index}")


def normalize_placeholders(tree: exp.Expression) -> int:
    """Rewrites `$n` markers (of any dialect) to named placeholders; returns how many user parameters there are."""
    highest = 0
    for node in list(tree.find_all(exp.Placeholder, exp.Parameter)):
        raw = node.this
        text = raw.name if isinstance(raw, exp.Expression) else raw
        if text is None or not str(text).isdigit():
            if isinstance(node, exp.Placeholder) and text and str(text).startswith("tq_"):
                continue
            raise ValueError(f"unsupported parameter marker {node.sql()!r}; use ? (qmark) or $1 (numeric)")
        index = int(text)
        highest = max(highest, index)
        node.replace(user_param(index))
    return highest


@dataclass(frozen=True)
class Compiled:
    """One engine statement: its text with numbered markers, and what fills each marker."""

    sql: str
    names: tuple[str, ...]

    def values(self, user: tuple | list, context: dict[str, int]) -> list:
        out = []
        for name in self.names:
            if name.startswith(USER_PREFIX):
                out.append(user[int(name[len(USER_PREFIX):]) - 1])
            else:
                out.append(context[name])
        return out


def compile_statement(tree: exp.Expression, dialect: str, param_node) -> Compiled:
    """Renders a tree for an engine; `param_node(n)` builds the engine's n-th positional marker."""
    tree = tree.copy()
    names: list[str] = []
    for node in list(tree.find_all(exp.Placeholder)):
        name = node.this
        if name not in names:
            names.append(name)
        node.replace(param_node(names.index(name) + 1))
    return Compiled(tree.sql(dialect), tuple(names))

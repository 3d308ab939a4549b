"""Bound parameters: the application's `?` markers and tique's per-transaction values.

Everything that varies between executions travels as a parameter, so each distinct
statement text is parsed and rewritten once and its SQL text never holds a value.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from tique.rewrite import faithful

USER_PREFIX = "tq_p"


@dataclass(frozen=True)
class Marked:
    """The application's text with every parameter marker spelled `$n ` for the parser.

    sqlglot reads `$1,$2` as the start of a dollar-quoted string (tag `1,`) and `?::` as
    an operator, so each marker (`?` numbered in text order, or `$n` as written) is
    spelled `$n` followed by a space unless whitespace already follows it. `edits` maps
    positions in `sql` back to the application's own text, for error messages.
    """

    sql: str
    original: str
    edits: tuple[tuple[int, int, int, int], ...]  # (original start, end, parsed start, end) per marker

    def original_offset(self, offset: int) -> int:
        """The application's offset of `offset` in `sql`; inside a marker, the marker's start."""
        shift = 0
        for start, end, parsed_start, parsed_end in self.edits:
            if offset < parsed_start:
                break
            if offset < parsed_end:
                return start
            shift = end - parsed_end
        return offset + shift


_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def _skip_quoted(sql: str, i: int, quote: str, backslash: bool) -> int:
    """The index after the literal or quoted identifier starting at `i` (a doubled quote
    stays inside; so does a backslash-escaped one in E'' strings); len(sql) if unclosed."""
    j = i + 1
    while j < len(sql):
        if backslash and sql[j] == "\\":
            j += 2
            continue
        if sql[j] == quote:
            if j + 1 < len(sql) and sql[j + 1] == quote:
                j += 2
                continue
            return j + 1
        j += 1
    return len(sql)


def _skip_block_comment(sql: str, i: int) -> int:
    """The index after the (nested, as in PostgreSQL and DuckDB) comment opening at `i`."""
    depth, j = 0, i
    while j < len(sql):
        if sql.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif sql.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return len(sql)


def _dollar_quote_end(sql: str, i: int) -> int | None:
    """The index after a dollar-quoted string `$tag$...$tag$` opening at `i`, or None if none opens there.
    A tag is an identifier that does not start with a digit, so `$1` is always a marker."""
    j = i + 1
    while j < len(sql) and (sql[j].isalnum() or sql[j] == "_"):
        j += 1
    if j >= len(sql) or sql[j] != "$" or (j > i + 1 and sql[i + 1].isdigit()):
        return None
    close = sql.find(sql[i:j + 1], j + 1)
    return len(sql) if close < 0 else close + (j + 1 - i)


def marker_spans(sql: str) -> list[tuple[int, int, int]]:
    """(start, end, number) of each parameter marker outside literals, quoted identifiers
    and comments: `?` numbered 1, 2, ... in text order, `$n` as written."""
    spans: list[tuple[int, int, int]] = []
    qmarks = 0
    i = 0
    while i < len(sql):
        char = sql[i]
        after_word = i > 0 and sql[i - 1] in _IDENTIFIER_CHARS
        if char == "'":
            i = _skip_quoted(sql, i, "'", backslash=after_word and sql[i - 1] in "eE" and (i < 2 or sql[i - 2] not in _IDENTIFIER_CHARS))
        elif char == '"':
            i = _skip_quoted(sql, i, '"', backslash=False)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif char == "?":
            qmarks += 1
            spans.append((i, i + 1, qmarks))
            i += 1
        elif char == "$" and not after_word:
            digits = i + 1
            while digits < len(sql) and sql[digits].isdigit():
                digits += 1
            if digits > i + 1:
                spans.append((i, digits, int(sql[i + 1:digits])))
                i = digits
            else:
                i = _dollar_quote_end(sql, i) or i + 1
        else:
            i += 1
    return spans


def mark_parameters(sql: str) -> Marked:
    """The text the parser reads: every marker as `$n` and a space (see Marked)."""
    pieces: list[str] = []
    edits: list[tuple[int, int, int, int]] = []
    last = length = 0
    for start, end, number in marker_spans(sql):
        pieces.append(sql[last:start])
        length += start - last
        spelled = f"${number}" + ("" if end < len(sql) and sql[end].isspace() else " ")
        pieces.append(spelled)
        edits.append((start, end, length, length + len(spelled)))
        length += len(spelled)
        last = end
    pieces.append(sql[last:])
    if edits and not sql[-1:].isspace():
        # sqlglot's tokenizer fails on a text holding a `$n` marker that ends in an empty
        # string literal (`... = $1 OR c = ''`: "Error tokenizing"); a trailing line break,
        # which means nothing to SQL, keeps it reading such a statement
        pieces.append("\n")
    return Marked("".join(pieces), sql, tuple(edits))


def number_qmarks(sql: str, dialect: str | None = None) -> str:
    """Turns each `?` marker (never one inside a literal, quoted name or comment) into `$n`,
    in text order, for engines that read numbered markers natively."""
    pieces: list[str] = []
    last = 0
    for start, end, number in marker_spans(sql):
        if sql[start] == "?":
            pieces += [sql[last:start], f"${number}"]
            last = end
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

    def bind(self, user: tuple | list, context: dict[str, int]) -> tuple[str, list]:
        """The text to send with these parameters, and the values of its markers."""
        return self.sql, self.values(user, context)

    def values(self, user: tuple | list, context: dict[str, int]) -> list:
        return [user[source] if type(source) is int else context[source] for source in self._sources]

    @functools.cached_property
    def _sources(self) -> tuple[int | str, ...]:
        """Each marker's source, worked out once per statement: the index of an
        application parameter, or the name of a context value."""
        return tuple(int(name[len(USER_PREFIX):]) - 1 if name.startswith(USER_PREFIX) else name for name in self.names)


@dataclass(frozen=True)
class KeyCheck(Compiled):
    """A primary-key check whose text serves every INSERT ... VALUES into its table: the
    range of each integer key column's written values (tq_lo_i, tq_hi_i) is bound per
    call, from the application's values. `keys` holds each row's sources of those values
    (a parameter number, a literal's value in a 1-tuple, or None: known only to the
    engine); `ranges` each column's whole range, bound when a value is not a plain int
    (the engine casts it, so only the type's range is sure to hold it)."""

    keys: tuple[tuple[Any, ...], ...] = ()
    ranges: tuple[tuple[int, int], ...] = ()

    def values(self, user: tuple | list, context: dict[str, int]) -> list:
        bound = dict(context)
        for i, (low, high) in enumerate(self.ranges):
            found: list[int] | None = []
            for row in self.keys:
                source = row[i]
                value = user[source - 1] if type(source) is int else source[0] if source is not None else None
                if type(value) is not int:
                    found = None
                    break
                found.append(value)
            bound[f"tq_lo_{i}"] = max(min(found), low) if found else low
            bound[f"tq_hi_{i}"] = min(max(found), high) if found else high
        return super().values(user, bound)


# Rendering writes each named placeholder as MARK name MARK; the marks become the engine's
# markers afterwards, by text position. One rendering serves every engine's marker style,
# and no placeholder node has to be replaced (which would mean copying the whole tree).
# The mark is a control character Python does not count as whitespace: the generator strips
# its text, and a whitespace mark (such as \x1f) closing a statement that ends in a marker
# was stripped with it, which sent every such statement down the slow path.
MARK = "\x02"
MARKED = re.compile(MARK + r"([A-Za-z_][A-Za-z0-9_]*)" + MARK)


@functools.cache
def _marking_generator(dialect: str) -> type:
    """The dialect's generator, rendering placeholders as marks."""
    base = faithful.generator_class(dialect)

    def mark(self, node: exp.Placeholder) -> str:
        self.tq_marks += 1
        return f"{MARK}{node.this}{MARK}"

    transforms = {**base.TRANSFORMS, exp.Placeholder: mark}
    return type(f"Marking{base.__name__}", (base,), {"TRANSFORMS": transforms, "tq_marks": 0})


def holds_mark(tree: exp.Expression) -> bool:
    """Whether some text in `tree` (a name, a literal, a comment) holds the mark character."""
    # Its own walk (any order will do): each node's args are read once, for its texts and
    # its children, where tree.walk() would read them again to find the children.
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.comments and any(MARK in comment for comment in node.comments):
            return True
        for value in node.args.values():
            if type(value) is str:
                if MARK in value:
                    return True
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, exp.Expression))
            elif isinstance(value, exp.Expression):
                stack.append(value)
    return False


def render_marked(tree: exp.Expression, dialect: str, owned: bool = False) -> str:
    """`tree` as SQL of `dialect`, its placeholders as marks. The generator may rewrite
    the tree it renders (dialect transforms), so it renders a copy: one copy, where
    `Expression.sql` would make its own on top of any the caller made. A caller that
    hands the tree over (`owned`: it never reads the tree again) saves that copy, the
    larger half of rendering, unless the tree holds the mark character: then the slow
    path must still find the tree as it was."""
    generator = faithful.generator(dialect, _marking_generator(dialect))
    text = generator.generate(tree if owned and not holds_mark(tree) else tree.copy(), copy=False)
    if text.count(MARK) != 2 * (generator.tq_marks + text.count(ROWS.name)):
        # The application's own text held the mark character (in a string literal): mark
        # nothing then, and let the slow path replace the placeholder nodes instead.
        raise ValueError("mark character in statement text")
    return text


def dollar_markers(marked: str) -> Compiled:
    """Marks become `$n`, numbered by each name's first appearance (DuckDB, PostgreSQL)."""
    numbers: dict[str, int] = {}  # insertion-ordered; a dict, as a many-row insert has thousands of names

    def number(found: re.Match[str]) -> str:
        return f"${numbers.setdefault(found.group(1), len(numbers) + 1)}"

    return Compiled(MARKED.sub(number, marked), tuple(numbers))


def shift_user_params(marked: str, offset: int) -> str:
    """Renumbers the application's parameters in marked text by `offset` (a repeated VALUES row)."""
    return MARKED.sub(lambda m: f"{MARK}{USER_PREFIX}{int(m.group(1)[len(USER_PREFIX):]) + offset}{MARK}"
                       if m.group(1).startswith(USER_PREFIX) else m.group(0), marked)


def compile_statement(tree: exp.Expression, dialect: str, param_node, owned: bool = False) -> Compiled:
    """Renders a tree for an engine with `$n` markers; `param_node(n)` builds the engine's
    n-th positional marker where the text cannot be marked. `owned`: see render_marked."""
    try:
        return dollar_markers(render_marked(tree, dialect, owned))
    except ValueError:
        pass
    tree = tree.copy()
    names: list[str] = []
    for node in list(tree.find_all(exp.Placeholder)):
        name = node.this
        if name not in names:
            names.append(name)
        node.replace(param_node(names.index(name) + 1))
    return Compiled(faithful.to_sql(tree, dialect), tuple(names))


ROWS = exp.Var(this=f"{MARK}rows{MARK}")  # stands for the VALUES rows in a RowTemplate's head


@dataclass(frozen=True)
class RowTemplate:
    """An INSERT whose VALUES rows all have one shape, compiled once for any row count:
    marked text with ROWS where the rows go, one row's marked text, and how many of the
    application's parameters a row takes. `finish` turns marked text into the engine's."""

    head: str
    row: str
    width: int
    finish: Callable[[str], Compiled]

    def expand(self, rows: int) -> Compiled:
        body = ", ".join(shift_user_params(self.row, k * self.width) if k else self.row for k in range(rows))
        return self.finish(self.head.replace(ROWS.name, body, 1))

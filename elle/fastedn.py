"""A fast reader for the regular EDN of history lines, checked against edn_format.

edn_format (the reference parser) costs close to a millisecond a line, minutes
for a 100,000-transaction history.  History lines use a tiny subset of EDN:
maps, vectors, keywords, integers, nil and the odd string.  For that subset
we only need string operations that run in C: pad the brackets, split on
whitespace, join the tokens as JSON strings, and let the C JSON parser build
the nesting.  Integers come back as ints and nil as None; every other atom
comes back as a string that keeps its EDN spelling (":ok", "true"), and EDN
strings come back prefixed with '"', so keywords and strings stay distinct.
Anything outside the subset is reported as such and parsed by edn_format.
"""
from __future__ import annotations

import json
import re
from typing import Any

from elle.ops import OP_TYPES, Mop, Op

# Outside strings, a line on the fast path may only hold these characters.  Only
# tokens spelled exactly like EDN integers become numbers (_QUOTED_INT); any other
# token ("1_000", "+5", "1.5", a symbol) stays a string that the op builder refuses,
# sending the line to edn_format.
_SIMPLE = re.compile(r"[\[\]{}\s,:A-Za-z0-9_+\-?!.*<>=/]*")
_QUOTED_INT = re.compile(r'"(-?(?:0|[1-9][0-9]*))"')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_COMMON_ESCAPES = re.compile(r'(?:[^\\]|\\["\\ntr])*')
# Separates lines in a batch; '|' is outside _SIMPLE, so no line contains it.
_LINE_END = " | "
# Lines converted per JSON document: bounds the memory of the token lists.
CHUNK = 20_000


class NotSimple(Exception):
    """The text is outside the fast subset; parse it with edn_format."""


def _code_to_json(code: str) -> str:
    """String-free EDN -> a JSON fragment where every atom is a string token.

    A vector becomes a JSON array; a map becomes an array framed by "{" and "}"
    marker tokens, so a map closed by ']' (or a vector by '}') is caught later.
    """
    padded = code.replace("[", " [ ").replace("]", " ] ").replace("{", " { ").replace("}", " } ").replace(",", " ")
    tokens = padded.split()
    if not tokens:
        return ""
    text = '"' + '","'.join(tokens) + '"'
    text = text.replace('"["', "[").replace('"]"', "]").replace('"{"', '["{"').replace('"}"', '"}"]')
    text = text.replace("[,", "[").replace(",]", "]").replace('"nil"', "null")
    # Unquote integer tokens so the JSON parser builds the ints: splitting around
    # the digits and joining without separator drops exactly their quotes.
    return "".join(_QUOTED_INT.split(text))


def line_to_json(line: str) -> str:
    """One line as a JSON fragment, or NotSimple."""
    if '"' not in line:
        if not _SIMPLE.fullmatch(line):
            raise NotSimple(line)
        return _code_to_json(line)
    parts = _STRING.split(line)  # code, string body, code, ..., code
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            # The escapes EDN and JSON share mean the same in both, so the body can be
            # copied into a JSON string (after the '"' that marks it as a string).
            if not _COMMON_ESCAPES.fullmatch(part):
                raise NotSimple(line)
            out.append('"\\"' + part + '"')
        else:
            if not _SIMPLE.fullmatch(part):
                raise NotSimple(line)  # includes a stray (unterminated) quote
            fragment = _code_to_json(part)
            if fragment:
                out.append(fragment)
    # Join with commas, except just inside brackets (never touch the string bodies).
    text = out[0] if out else ""
    for piece in out[1:]:
        text += piece if text.endswith("[") or piece.startswith("]") else "," + piece
    return text


def parse_lines(lines: list[str]) -> list[Any | None]:
    """The token form of each line (None where the line is outside the subset)."""
    out: list[Any | None] = []
    for start in range(0, len(lines), CHUNK):
        out.extend(_parse_chunk(lines[start:start + CHUNK]))
    return out


def _parse_chunk(lines: list[str]) -> list[Any | None]:
    out: list[Any | None] = [None] * len(lines)
    batch = [i for i, line in enumerate(lines) if '"' not in line]
    forms = _parse_batch([lines[i] for i in batch]) if batch else []
    if forms is None:
        batch = []  # something irregular in the batch: take every line on its own
    for i, form in zip(batch, forms or ()):
        out[i] = form
    done = set(batch)
    for i, line in enumerate(lines):
        if i not in done:
            out[i] = _parse_one(line)
    return out


def _parse_batch(lines: list[str]) -> list[Any] | None:
    """All lines in one JSON document, separated by "|" tokens; None unless every
    line turns out to be exactly one form."""
    joined = "\n".join(lines)
    if not _SIMPLE.fullmatch(joined):
        return None
    try:
        parsed: list[Any] = json.loads("[" + _code_to_json(joined.replace("\n", _LINE_END)) + "]")
    except ValueError:
        return None
    n = len(lines)
    if len(parsed) != 2 * n - 1 or parsed[1::2].count("|") != n - 1:
        return None
    return parsed[0::2]


def _parse_one(line: str) -> Any | None:
    try:
        forms = json.loads("[" + line_to_json(line) + "]")
    except (NotSimple, ValueError):
        return None
    return forms[0] if len(forms) == 1 else None


def plain(form: Any) -> Any:
    """Token form -> plain Python (keywords as names, maps as dicts), or NotSimple."""
    if isinstance(form, list):
        if form and form[0] == "{":
            if form[-1] != "}" or len(form) % 2:
                raise NotSimple("malformed map")
            inner = form[1:-1]
            return {frozen(plain(k)): plain(v) for k, v in zip(inner[0::2], inner[1::2])}
        return [plain(x) for x in form]
    if form is None or type(form) is int:
        return form
    return _atom(form)


def frozen(x: Any) -> Any:
    """A plain value usable as a dict key (a vector key becomes a tuple)."""
    if isinstance(x, list):
        return tuple(frozen(e) for e in x)
    if isinstance(x, dict):
        return tuple((k, frozen(v)) for k, v in x.items())
    return x


def _atom(token: str) -> Any:
    head = token[:1]
    if head == ":" and len(token) > 1:
        return token[1:]
    if head == '"':
        return token[1:]
    if token == "true":
        return True
    if token == "false":
        return False
    raise NotSimple(token)  # a symbol, float, marker or other number syntax


def op_from_tokens(form: Any, position: int) -> Op | None:
    """An Op from the token form of a regular history line.

    This is the hot loop of reading a large history, so it handles the usual
    shape inline and raises NotSimple for anything else (the caller then
    parses the line with edn_format and builds the op the general way).
    """
    if type(form) is not list or not form or form[0] != "{" or form[-1] != "}" or len(form) % 2:
        raise NotSimple("not a map")
    m = dict(zip(form[1:-1:2], form[2:-1:2]))
    if len(m) * 2 + 2 != len(form):
        raise NotSimple("duplicate keys")
    process = m.get(":process")
    op_type = m.get(":type")
    f = m.get(":f", ":txn")
    value = m.get(":value")
    index = m.get(":index", position)
    time = m.get(":time", -1)
    if (type(process) is not int or type(op_type) is not str or op_type[:1] != ":" or op_type[1:] not in OP_TYPES
            or type(f) is not str or f[:1] != ":" or type(value) is not list
            or type(index) is not int or type(time) is not int):
        raise NotSimple("irregular op")  # e.g. :process :nemesis: the general path drops it
    mops: list[Mop] = []
    try:
        for mf, k, v in value:
            if type(k) is not int:
                k = _keyword(k)
            if mf == ":r":
                if v is None:
                    mops.append(("r", k, None))
                elif type(v) is list and not set(map(type, v)) - _INT_TYPE:
                    mops.append(("r", k, tuple(v)))
                else:
                    raise NotSimple("read result")
            elif mf == ":append":
                mops.append(("append", k, v if type(v) is int else _keyword(v)))
            else:
                raise NotSimple("micro-op")
    except (ValueError, TypeError):
        raise NotSimple("micro-op shape") from None
    error = m.get(":error")
    if error is not None:
        error = plain(error)
        if error is not None:
            error = str(error)
    return Op(op_type[1:], f[1:], tuple(mops), process, time, index, error)


_INT_TYPE = {int}


def _keyword(token: Any) -> str:
    if type(token) is str and token[:1] == ":" and len(token) > 1:
        return token[1:]
    raise NotSimple("expected an integer or keyword")

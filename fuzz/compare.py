"""When two outcomes say the same thing. Rows compare as multisets unless ORDER BY fixes
every position; floating-point values within a relative tolerance (a sum's last bits depend
on the order rows arrive in); values of different Python types differ (a driver returning
Decimal where the engine returns float is no drop-in), except where asked not to (TLP
recombines a COUNT with SUM, which PostgreSQL types differently)."""
from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Sequence

import sqlglot

from fuzz.engines import Outcome

REL_TOL = 1e-9


def _sort_key(value: Any, typed: bool) -> tuple:
    if value is None:
        return (0, "", "")
    if isinstance(value, float):
        if math.isnan(value):
            return (1, "num" if not typed else "float", "nan")
        return (1, "num" if not typed else "float", f"{value + 0.0:.6e}")  # -0.0 == 0.0
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        tag = "num" if not typed else type(value).__name__
        return (1, tag, f"{float(value):.6e}")
    return (2, type(value).__name__, repr(value))


def _row_key(row: Sequence[Any], typed: bool) -> tuple:
    return tuple(_sort_key(v, typed) for v in row)


def same_value(a: Any, b: Any, *, typed: bool = True) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if typed and type(a) is not type(b):
        return False
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool):
            return a == b
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return math.isclose(fa, fb, rel_tol=REL_TOL, abs_tol=1e-12)
    return bool(a == b)


def ordered_outermost(query: str) -> bool:
    """Whether the statement's own ORDER BY fixes its rows' order; an ORDER BY inside a window
    or a subquery does not (the engine may return those rows in any order)."""
    shape = query.replace("?", "NULL")  # sqlglot reads no `?::TYPE`; the markers do not matter here
    for dialect in ("duckdb", "postgres"):  # the queries are written for one engine or both
        try:
            return sqlglot.parse_one(shape, read=dialect).args.get("order") is not None
        except sqlglot.ParseError:
            continue
    raise AssertionError(f"unparsable test query: {query}")


def same_rows(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]], *, ordered: bool = False, typed: bool = True) -> bool:
    if len(a) != len(b):
        return False
    if not ordered:
        a = sorted(a, key=lambda r: _row_key(r, typed))
        b = sorted(b, key=lambda r: _row_key(r, typed))
    return all(len(x) == len(y) and all(same_value(u, v, typed=typed) for u, v in zip(x, y)) for x, y in zip(a, b))


def same_outcome(expected: Outcome, got: Outcome, *, ordered: bool = False, typed: bool = True, names: bool = True) -> bool:
    """Same kind, and for rows the same names and rows, for counts the same count. Two
    errors agree whatever their messages: tique's exceptions are its own classes."""
    if expected.kind != got.kind:
        return False
    if expected.kind == "rows":
        return (not names or expected.names == got.names) and same_rows(expected.rows, got.rows, ordered=ordered, typed=typed)
    if expected.kind == "count":
        return expected.count == got.count
    return True


def same_tables(a: dict[str, Outcome], b: dict[str, Outcome]) -> bool:
    return a.keys() == b.keys() and all(same_outcome(a[t], b[t]) for t in a)

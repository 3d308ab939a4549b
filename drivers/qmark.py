"""Native connections that take the same `?` parameters as tique, so a workload is
written once and runs unchanged on every system."""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Sequence

from tique.rewrite.params import number_qmarks

_DOLLAR = re.compile(r"\$(\d+)")


@functools.lru_cache(maxsize=4096)
def qmark_to_dollar(sql: str, dialect: str) -> str:
    return number_qmarks(sql, dialect)


@functools.lru_cache(maxsize=4096)
def qmark_to_format(sql: str, dialect: str) -> tuple[str, tuple[int, ...]]:
    """`?` -> `%s` for pyformat drivers, with a literal `%` doubled; returns the text and
    which parameter fills each marker."""
    numbered = number_qmarks(sql, dialect)
    order = tuple(int(m) - 1 for m in _DOLLAR.findall(numbered))
    return _DOLLAR.sub("%s", numbered.replace("%", "%%")), order


class CursorAdapter:
    """A DB-API cursor whose execute() translates `?` markers; everything else passes through."""

    def __init__(self, cursor: Any, translate: Callable[[str, Sequence[Any]], tuple[str, Sequence[Any] | None]]) -> None:
        self._cursor = cursor
        self._translate = translate

    def execute(self, sql: str, params: Sequence[Any] = ()) -> "CursorAdapter":
        text, values = self._translate(sql, params)
        if values is None:
            self._cursor.execute(text)
        else:
            self._cursor.execute(text, values)
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[Any]]) -> None:
        """The driver's own executemany (psycopg pipelines the rows), with `?` translated."""
        rows = list(seq_of_params)
        if not rows:
            return
        translated = [self._translate(sql, params) for params in rows]
        self._cursor.executemany(translated[0][0], [values for _, values in translated])

    def __iter__(self) -> Any:
        return iter(self._cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class ConnectionAdapter:
    """Wraps a native DB-API connection so its cursors take `?` parameters."""

    def __init__(self, conn: Any, translate: Callable[[str, Sequence[Any]], tuple[str, Sequence[Any] | None]]) -> None:
        self._conn = conn
        self._translate = translate

    def cursor(self) -> CursorAdapter:
        return CursorAdapter(self._conn.cursor(), self._translate)

    def __enter__(self) -> "ConnectionAdapter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

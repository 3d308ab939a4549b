"""PEP 249 cursor: holds one result at a time and delegates the work to its connection."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from tique.errors import Error, InterfaceError, NotSupportedError, ProgrammingError

# A plain or schema-qualified identifier: callproc names a function, never SQL text.
_PROCEDURE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")

if TYPE_CHECKING:
    from tique.connection import Connection

T = TypeVar("T")


class Cursor:
    def __init__(self, connection: "Connection") -> None:
        self._connection: Connection | None = connection
        self._result: Any = None
        self.description: tuple | None = None
        self.rowcount = -1
        self.arraysize = 1
        self.lastrowid = None
        self._statement = ""  # the application's text of the statement whose result is held

    @property
    def connection(self) -> "Connection":
        if self._connection is None:
            raise InterfaceError("cursor is closed")
        return self._connection

    def _check_open(self) -> "Connection":
        conn = self.connection
        if conn.closed:
            raise InterfaceError("connection is closed")
        return conn

    def execute(self, operation: str, parameters: Sequence[Any] | None = None) -> "Cursor":
        conn = self._check_open()
        if not isinstance(operation, str):
            raise ProgrammingError(f"statement must be a str, not {type(operation).__name__}")
        self._result, self.description, self.rowcount = None, None, -1
        self._statement = operation
        result, description, rowcount = conn._execute(operation, tuple(parameters) if parameters is not None else ())
        self._result, self.description, self.rowcount = result, description, rowcount
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> "Cursor":
        """Runs `operation` once per parameter row; a one-row INSERT ... VALUES into a tique
        table inserts the rows in batches, each one statement (Connection._execute_many).
        rowcount is the total of the rows' counts."""
        conn = self._check_open()
        if not isinstance(operation, str):
            raise ProgrammingError(f"statement must be a str, not {type(operation).__name__}")
        self._result, self.description, self.rowcount = None, None, -1
        self.rowcount = conn._execute_many(operation, [tuple(p) for p in seq_of_parameters])
        return self

    def _rows(self) -> Any:
        self._check_open()
        if self._result is None:
            raise ProgrammingError("no result set: the last statement returned no rows")
        return self._result

    def _fetch(self, fetch: Callable[[Any], T]) -> T:
        """Runs `fetch` on the engine's result. Engines stream results (DuckDB raises a
        conversion error only when the failing row is fetched), so fetching fails like
        executing: as tique's exception in the application's terms, and aborting the
        transaction as the engine does."""
        result = self._rows()
        try:
            return fetch(result)
        except Error:
            raise
        except Exception as error:
            raise self.connection._fetch_failed(error, self._statement) from error

    def fetchone(self) -> tuple | None:
        row = self._fetch(lambda result: result.fetchone())
        return tuple(row) if row is not None else None

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        count = self.arraysize if size is None else size
        return [tuple(r) for r in self._fetch(lambda result: result.fetchmany(count))]

    def fetchall(self) -> list[tuple]:
        return [tuple(r) for r in self._fetch(lambda result: result.fetchall())]

    def __iter__(self) -> Iterator[tuple]:
        while (row := self.fetchone()) is not None:
            yield row

    def callproc(self, procname: str, parameters: Sequence[Any] = ()) -> Sequence[Any]:
        """PEP 249: calls the database function `procname` with `parameters` bound (as
        `SELECT procname(?, ...)`), its result available through fetch*, and returns a
        copy of the parameters: the engines tique runs on have no output parameters, so
        none is replaced."""
        if not isinstance(procname, str) or not _PROCEDURE_NAME.match(procname):
            raise ProgrammingError(f"callproc: {procname!r} is not a function name (name or schema.name)")
        given = tuple(parameters)
        self.execute(f"SELECT {procname}({', '.join('?' * len(given))})", given)
        return list(given) if isinstance(parameters, list) else given

    def nextset(self) -> None:
        raise NotSupportedError("a tique statement has one result set")

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: int, column: int | None = None) -> None:
        pass

    def close(self) -> None:
        self._result = None
        self._connection = None

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

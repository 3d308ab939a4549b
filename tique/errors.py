"""PEP 249 exception hierarchy.

Every driver error is re-raised as one of these, so applications catch
`tique.OperationalError` whatever engine sits underneath.
"""
from __future__ import annotations


class Warning(Exception):  # noqa: A001 - the name is mandated by PEP 249
    pass


class Error(Exception):
    pass


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


class SerializationFailure(OperationalError):
    """The transaction lost write-set certification (first committer wins) and was rolled back."""


class InFailedTransaction(InternalError):
    """A statement of the transaction failed earlier, so the whole transaction was rolled
    back, as PostgreSQL, DuckDB and MonetDB do natively; statements raise this until
    rollback(), and commit() raises it (psycopg's InFailedSqlTransaction)."""


EXCEPTIONS = (
    Warning, Error, InterfaceError, DatabaseError, DataError, OperationalError,
    IntegrityError, InternalError, ProgrammingError, NotSupportedError,
)


def describe(statement: str, cause: str) -> str:
    """A message that names the statement and the cause, as every tique error does."""
    shown = " ".join(statement.split())
    if len(shown) > 300:
        shown = shown[:297] + "..."
    return f"{cause}\n  statement: {shown}"

"""Isolation levels, and the transaction-control statements that choose them.

A level is chosen per transaction, in three ways, the first that applies winning:
`SET TRANSACTION ISOLATION LEVEL ...` or `BEGIN / START TRANSACTION ISOLATION LEVEL ...`
(the current transaction only), the connection attribute `isolation_level`, and the
`tique.connect(..., isolation_level=...)` option it starts from. These statements are
tique's own: they are recognised here, before any engine sees them, so they work on every
engine, DuckDB included, whose grammar lacks some of them.

What runs today: SNAPSHOT (= REPEATABLE READ, the default), and READ COMMITTED (READ
UNCOMMITTED too, as PostgreSQL reads it): each statement reads the newest committed
snapshot, and writes certify first-committer-wins from the first write statement's
snapshot (the rule and its invariant: tique/transaction.py). SERIALIZABLE is write-snapshot
isolation: SNAPSHOT plus read-sets certified at commit, in commit-timestamp order
(tique/read_sets.py, tique/transaction.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tique.errors import ProgrammingError


class IsolationLevel(str, Enum):
    READ_COMMITTED = "READ COMMITTED"
    SNAPSHOT = "SNAPSHOT"  # PostgreSQL's and the standard's REPEATABLE READ, as tique runs it
    SERIALIZABLE = "SERIALIZABLE"


_NAMES = {
    "READ UNCOMMITTED": IsolationLevel.READ_COMMITTED,  # as PostgreSQL: the next stronger level
    "READ COMMITTED": IsolationLevel.READ_COMMITTED,
    "REPEATABLE READ": IsolationLevel.SNAPSHOT,
    "SNAPSHOT": IsolationLevel.SNAPSHOT,
    "SERIALIZABLE": IsolationLevel.SERIALIZABLE,
}


def parse_level(value: object) -> IsolationLevel:
    """A level from its SQL name in any case (`read committed`, `REPEATABLE READ`), with
    `-` or `_` for spaces (`read-committed`), or an IsolationLevel; refuses the rest."""
    if isinstance(value, IsolationLevel):
        return value
    if isinstance(value, str):
        found = _NAMES.get(" ".join(value.replace("-", " ").replace("_", " ").upper().split()))
        if found is not None:
            return found
    names = ", ".join(repr(n) for n in _NAMES)
    raise ProgrammingError(f"unknown isolation level {value!r}; the levels are {names}")


def supported(level: IsolationLevel) -> IsolationLevel:
    """`level` if tique can run it, else NotSupportedError saying what to do instead
    (every level runs today)."""
    return level


@dataclass(frozen=True)
class TransactionControl:
    """A recognised control statement. `action`: begin (BEGIN / START TRANSACTION),
    set_transaction (SET TRANSACTION: the current transaction), set_session (SET SESSION
    CHARACTERISTICS AS TRANSACTION: the connection's default, as the attribute)."""

    action: str
    level: IsolationLevel | None = None
    read_only: bool | None = None


_LEVELS = r"READ\s+UNCOMMITTED|READ\s+COMMITTED|REPEATABLE\s+READ|SNAPSHOT|SERIALIZABLE"
# One transaction mode, with what it says in named groups (for _EACH_MODE), and the same
# unnamed (a pattern may name a group only once, and the list repeats it).
_MODE = rf"(?:ISOLATION\s+LEVEL\s+(?P<level>{_LEVELS})|READ\s+(?P<access>ONLY|WRITE)|(?:NOT\s+)?DEFERRABLE)"
_ANY_MODE = rf"(?:ISOLATION\s+LEVEL\s+(?:{_LEVELS})|READ\s+(?:ONLY|WRITE)|(?:NOT\s+)?DEFERRABLE)"
_MODES = rf"(?P<modes>{_ANY_MODE}(?:\s*,?\s*{_ANY_MODE})*)"
_END = r"\s*;?\s*(?:--[^\n]*)?\s*$"
_STATEMENTS = (
    ("begin", re.compile(rf"^\s*(?:BEGIN(?:\s+(?:TRANSACTION|WORK))?|START\s+TRANSACTION)(?:\s+{_MODES})?{_END}", re.IGNORECASE)),
    ("set_transaction", re.compile(rf"^\s*SET\s+(?:LOCAL\s+)?TRANSACTION\s+{_MODES}{_END}", re.IGNORECASE)),
    ("set_session", re.compile(rf"^\s*SET\s+SESSION\s+CHARACTERISTICS\s+AS\s+TRANSACTION\s+{_MODES}{_END}", re.IGNORECASE)),
)
_EACH_MODE = re.compile(_MODE, re.IGNORECASE)


def control_statement(sql: str) -> TransactionControl | None:
    """The statement as transaction control with modes, or None for any other statement
    (a plain BEGIN is left to the parser, which knows it on every engine)."""
    for action, pattern in _STATEMENTS:
        found = pattern.match(sql)
        if found is None:
            continue
        if action == "begin" and not found.group("modes"):
            return None
        level: IsolationLevel | None = None
        read_only: bool | None = None
        for mode in _EACH_MODE.finditer(found.group("modes")):
            if mode.group("level"):
                if level is not None:
                    raise ProgrammingError(f"conflicting or repeated isolation levels in: {sql.strip()}")
                level = parse_level(mode.group("level"))
            elif mode.group("access"):
                if read_only is not None:
                    raise ProgrammingError(f"conflicting or repeated READ ONLY / READ WRITE in: {sql.strip()}")
                read_only = mode.group("access").upper() == "ONLY"
        return TransactionControl(action, level, read_only)
    return None

"""The operation record of a history (shared by the readers and the checker)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Mop = tuple[str, Any, Any]

OP_TYPES = frozenset({"invoke", "ok", "fail", "info"})


class HistoryError(ValueError):
    """The history cannot be analysed as written (malformed op, unpaired completion, ...)."""


@dataclass(frozen=True, slots=True)
class Op:
    type: str  # "invoke" | "ok" | "fail" | "info"
    f: str  # "txn"
    value: tuple[Mop, ...]  # ("append", k, v) or ("r", k, None | tuple[int, ...])
    process: int
    time: int  # ns
    index: int
    error: str | None = None

"""An Elle-style consistency checker for Jepsen list-append histories."""
from __future__ import annotations

from elle.checker import CheckResult, check, check_file
from elle.history import HistoryError, Op, format_op, read_history, write_history
from elle.models import MODELS

__all__ = [
    "CheckResult", "HistoryError", "MODELS", "Op",
    "check", "check_file", "format_op", "read_history", "write_history",
]

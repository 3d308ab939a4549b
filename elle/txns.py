"""Pairing a history's invocations with their completions into transactions."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elle.history import HistoryError, Mop, Op, format_op


class Txn:
    """One transaction: an invocation and its completion (None if it never completed).

    `type` is the completion's type ("ok", "fail", "info"); a transaction that
    never completed counts as "info", since it may or may not have committed.
    `mops` come from the completion when there is one (an :ok completion holds
    the values reads returned).  `node` is the transaction's vertex in the
    dependency graph, or -1 when it is not known to have committed.
    """

    __slots__ = ("id", "type", "process", "mops", "invoke", "complete", "invoke_pos", "complete_pos", "node")

    def __init__(self, tid: int, invoke: Op, complete: Op | None, invoke_pos: int, complete_pos: int) -> None:
        self.id = tid
        self.invoke = invoke
        self.complete = complete
        self.type = complete.type if complete is not None else "info"
        self.process = invoke.process
        self.mops: tuple[Mop, ...] = complete.value if complete is not None else invoke.value
        self.invoke_pos = invoke_pos
        self.complete_pos = complete_pos  # -1 when the transaction never completed
        self.node = -1

    @property
    def name(self) -> str:
        """Named after the history index of its completion, so a reader can find it in the file."""
        op = self.complete if self.complete is not None else self.invoke
        return f"T{op.index}"

    def edn(self) -> str:
        return format_op(self.complete if self.complete is not None else self.invoke)

    def __repr__(self) -> str:
        return f"<{self.name} {self.type} {self.mops!r}>"


def pair_transactions(ops: Sequence[Op]) -> list[Txn]:
    """Transactions in completion order (never-completed ones last, by invocation).

    A process runs one operation at a time, so each completion belongs to that
    process's outstanding invocation.
    """
    pending: dict[int, tuple[Op, int]] = {}
    txns: list[Txn] = []
    for pos, op in enumerate(ops):
        if op.type == "invoke":
            if op.process in pending:
                other = pending[op.process][0]
                raise HistoryError(
                    f"process {op.process} invoked op {op.index} while its op {other.index} was still outstanding"
                )
            pending[op.process] = (op, pos)
            continue
        started = pending.pop(op.process, None)
        if started is None:
            raise HistoryError(f"op {op.index} ({op.type}) completes nothing: process {op.process} had no invocation outstanding")
        txns.append(Txn(len(txns), started[0], op, started[1], pos))
    for invoke, pos in sorted(pending.values(), key=lambda p: p[1]):
        txns.append(Txn(len(txns), invoke, None, pos, -1))
    _validate(txns)
    return txns


def _validate(txns: list[Txn]) -> None:
    """Every appended value must be unique per key: the analysis names a write by its value."""
    appended: dict[Any, dict[Any, Txn]] = {}
    for t in txns:
        for f, k, v in t.mops:
            if f != "append":
                continue
            by_value = appended.get(k)
            if by_value is None:
                appended[k] = {v: t}
                continue
            other = by_value.get(v)
            if other is not None:
                where = "twice in the same transaction" if other is t else f"by both {other.name} and {t.name}"
                raise HistoryError(f"value {v!r} was appended to key {k!r} {where}; list-append needs unique values")
            by_value[v] = t

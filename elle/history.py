"""Jepsen-style histories of list-append transactions, and their EDN files.

A history file holds one EDN map per line, the format Jepsen and Elle read:

    {:type :invoke, :f :txn, :value [[:append 3 1] [:r 4 nil]], :process 0, :time 1234567, :index 0}

`edn_format` is the reference parser; lines in the regular subset we write go
through the much faster reader in `elle.fastedn` instead (see there).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import edn_format

from elle import fastedn
from elle.ops import OP_TYPES, HistoryError, Mop, Op

__all__ = ["HistoryError", "Mop", "Op", "format_op", "parse_op", "read_history", "write_history"]

# An :error that can be written as a keyword reads back as the same string.
_KEYWORD_SAFE = re.compile(r"[A-Za-z\-?!*<>=][A-Za-z0-9\-?!.*<>=/]*")


# ---------------------------------------------------------------- writing

def _edn_scalar(x: Any) -> str:
    if x is None:
        return "nil"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        # Keys read from keyword-keyed histories (Elle's :x, :y) go back out as keywords.
        return ":" + x
    raise TypeError(f"cannot write {x!r} as an EDN history value")


def _edn_error(s: str) -> str:
    if _KEYWORD_SAFE.fullmatch(s) and s not in ("nil", "true", "false"):
        return ":" + s
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return '"' + escaped + '"'


def _format_mop(mop: Mop) -> str:
    f, k, v = mop
    if f == "r" and v is not None:
        return f"[:r {_edn_scalar(k)} [{' '.join(map(_edn_scalar, v))}]]"
    return f"[:{f} {_edn_scalar(k)} {_edn_scalar(v)}]"


def format_op(op: Op) -> str:
    """One EDN line (without newline) for `op`, readable by Elle unchanged."""
    value = " ".join(map(_format_mop, op.value))
    line = f"{{:type :{op.type}, :f :{op.f}, :value [{value}], :process {op.process}, :time {op.time}, :index {op.index}"
    if op.error is not None:
        line += f", :error {_edn_error(op.error)}"
    return line + "}"


def write_history(ops: Iterable[Op], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(format_op(op) + "\n" for op in ops)


# ---------------------------------------------------------------- reading

def _plain_edn(x: Any) -> Any:
    """edn_format value -> plain Python: keywords as their names, maps as dicts, vectors as lists."""
    if isinstance(x, (edn_format.Keyword, edn_format.Symbol)):
        return x.name
    if isinstance(x, Mapping):
        return {fastedn.frozen(_plain_edn(k)): _plain_edn(v) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        raise HistoryError("sets are not valid in a list-append history")
    if isinstance(x, Sequence) and not isinstance(x, str):
        return [_plain_edn(e) for e in x]
    return x


def parse_line_reference(line: str) -> dict[str, Any]:
    """Parse one line with edn_format (the reference parser) into plain Python."""
    try:
        value = edn_format.loads(line)
    except Exception as exc:  # edn_format raises several unrelated types
        raise HistoryError(f"unparseable EDN line: {line[:200]!r}: {exc}") from exc
    plain = _plain_edn(value)
    if not isinstance(plain, dict):
        raise HistoryError(f"history line is not an EDN map: {line[:200]!r}")
    return plain


def parse_line_fast(line: str) -> dict[str, Any] | None:
    """Parse one line with the fast reader into the same plain form as
    `parse_line_reference`; None when the line is outside the fast subset."""
    form = fastedn.parse_lines([line])[0]
    if form is None:
        return None
    try:
        plain = fastedn.plain(form)
    except fastedn.NotSimple:
        return None
    return plain if isinstance(plain, dict) else None


def _element(x: Any, where: str) -> Any:
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise HistoryError(f"{where}: {x!r} is not an integer (or keyword) key or element")
    return x


def _mop(raw: Any, where: str) -> Mop:
    if not isinstance(raw, list) or len(raw) != 3:
        raise HistoryError(f"{where}: micro-op {raw!r} is not [f k v]")
    f, k, v = raw
    _element(k, where)
    if f == "r":
        if v is None:
            return ("r", k, None)
        if not isinstance(v, list):
            raise HistoryError(f"{where}: read {raw!r} returned {v!r}, not a list or nil")
        return ("r", k, tuple(_element(e, where) for e in v))
    if f == "append":
        return ("append", k, _element(v, where))
    raise HistoryError(f"{where}: micro-op {raw!r} is neither :append nor :r")


def op_from_map(m: dict[str, Any], position: int) -> Op | None:
    """An Op from a parsed history map; None for non-client ops (e.g. the nemesis)."""
    process = m.get("process")
    if not isinstance(process, int) or isinstance(process, bool):
        return None
    index = m.get("index", position)
    where = f"op {index}"
    op_type = m.get("type")
    if op_type not in OP_TYPES:
        raise HistoryError(f"{where}: :type {op_type!r} is not one of {sorted(OP_TYPES)}")
    raw_value = m.get("value")
    if raw_value is None:
        value: tuple[Mop, ...] = ()
    elif isinstance(raw_value, list):
        value = tuple(_mop(r, where) for r in raw_value)
    else:
        raise HistoryError(f"{where}: :value {raw_value!r} is not a transaction (vector of micro-ops)")
    time = m.get("time", -1)
    for name, x in (("time", time), ("index", index)):
        if isinstance(x, bool) or not isinstance(x, int):
            raise HistoryError(f"{where}: :{name} {x!r} is not an integer")
    error = m.get("error")
    return Op(
        type=op_type,
        f=str(m.get("f", "txn")),
        value=value,
        process=process,
        time=time,
        index=index,
        error=None if error is None else str(error),
    )


def _op(line: str, form: Any, position: int) -> Op | None:
    if form is not None:
        try:
            return fastedn.op_from_tokens(form, position)
        except fastedn.NotSimple:
            pass
    return op_from_map(parse_line_reference(line), position)


def parse_op(line: str, position: int = 0) -> Op | None:
    """Parse one history line; None for a non-client op."""
    return _op(line, fastedn.parse_lines([line])[0], position)


def read_history(path: str | Path) -> list[Op]:
    """Client ops of a history file, in file order.

    Ops whose :process is not an integer (nemesis events) are dropped, as Elle
    does; an op without :index gets its position among the file's ops.
    """
    with open(path, encoding="utf-8") as f:
        lines = [s for s in (raw.strip() for raw in f) if s and not s.startswith(";")]
    forms = fastedn.parse_lines(lines)
    ops: list[Op] = []
    for position, (line, form) in enumerate(zip(lines, forms)):
        op = _op(line, form, position)
        if op is not None:
            ops.append(op)
    return ops

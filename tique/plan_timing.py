"""What planning costs this process: every miss of a plan cache (tique/backends/base.py's
PlanCache), timed from the miss to the plan's store on the missing thread's CPU clock,
so that a fresh process's warm-up can be accounted statement by statement (`tique bench
tpcc` prints it). A shared machine inflates wall time several-fold; a thread's CPU time
is what the rewriting itself took.

A miss made while another is being made on the same thread (a statement's plan builds
its table's key check) is nested: its time is inside the outer one's, so totals add up
the outermost misses only. Keys say what was made (see `describe`): a statement's plan
is one per application text; anything else is a part shared by many texts (a table's key
check, its insert template), or something made per text at its first execution (the
keys a write names). A part whose key holds a count of rows would be made again for
every row count: `variants` counts the keys each family was made under.
"""
from __future__ import annotations

import sys
import threading
from collections import deque
import time
from dataclasses import dataclass
from enum import Enum
from types import FrameType
from typing import Any, Hashable


@dataclass(frozen=True)
class Miss:
    kind: str  # "plan": an application text's plan; otherwise the label of a shared part
    family: str  # the application text, or the table the part belongs to
    key: Hashable  # the whole cache key: two keys of one family are two variants of it
    cpu_s: float
    nested: bool  # made while an outer miss on the same thread was being made


def describe(key: Hashable) -> tuple[str, str]:
    """(kind, family) of a plan cache key. A plan's key is (sql, formulation, ...); a
    shared part's is (label, what it belongs to, ...): a table, a text, a plan's key or
    a compiled statement."""
    if not (isinstance(key, tuple) and len(key) > 1 and isinstance(key[0], str)):
        return type(key).__name__, ""
    head, second = key[0], key[1]
    if isinstance(second, Enum):
        return "plan", head
    if isinstance(second, tuple) and second and isinstance(second[0], str):
        return head, second[0]
    for attribute in ("name", "sql"):  # a TableDef; a Compiled
        value = getattr(second, attribute, None)
        if isinstance(value, str):
            return head, value
    return head, second if isinstance(second, str) else type(second).__name__


KEPT = 100_000


def _frame(depth: int) -> FrameType | None:
    """The frame `depth` calls above the caller (0: the caller's own); None above the top."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:  # called from near the top of the stack
        return None


class PlanTiming:
    """Misses of the plan caches of this process, in the order they were stored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        # The newest misses, bounded: a long-running process with ever-new texts keeps no
        # more than this many; `_recorded` counts them all, for mark/since.
        self.misses: deque[Miss] = deque(maxlen=KEPT)
        self._recorded = 0

    def _pending(self) -> dict[Hashable, tuple[float, str | None, FrameType | None]]:
        """This thread's misses being made, each with the frame that looked it up. A miss
        whose frame has returned was abandoned (planning failed, or the plan was not kept):
        it is dropped, so that it neither leaks nor makes later misses look nested."""
        pending = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = {}
        elif pending:
            live: set[int] = set()
            frame = _frame(2)
            while frame is not None:
                live.add(id(frame))
                frame = frame.f_back
            for key in [k for k, (_, _, f) in pending.items() if f is not None and id(f) not in live]:
                del pending[key]
        return pending

    def missed(self, key: Hashable, kind: str | None = None, depth: int = 2) -> None:
        """`key` was looked up and not found: its plan is about to be made on this thread,
        by the function `depth` frames up (2: the caller of the cache's get). `kind`: what
        the cache holds, where its keys do not tell (engine parses)."""
        pending = self._pending()
        try:
            pending.setdefault(key, (time.thread_time(), kind, _frame(depth)))
        except TypeError:  # an unhashable key is never stored either
            pass

    def stored(self, key: Hashable) -> None:
        """The plan of `key` is made: records the miss if this thread looked it up."""
        pending = self._pending()
        try:
            found = pending.pop(key, None)
        except TypeError:
            return
        if found is None:
            return
        began, kind, _ = found
        took = time.thread_time() - began
        kind, family = (kind, "") if kind is not None else describe(key)
        miss = Miss(kind, family, key, took, nested=bool(pending))
        with self._lock:
            self.misses.append(miss)
            self._recorded += 1

    def mark(self) -> int:
        """A position in the record: `since` it, the misses of what ran after."""
        with self._lock:
            return self._recorded

    def since(self, mark: int = 0) -> list[Miss]:
        """The misses recorded after `mark` (the newest KEPT of them)."""
        with self._lock:
            count = min(self._recorded - mark, len(self.misses))
            return list(self.misses)[len(self.misses) - count:] if count > 0 else []


TIMING = PlanTiming()


EXPANDED = "rows expanded"  # a multi-row INSERT's text for one row count: its one-row template repeated, not planned
ENGINE_PARSE = "engine parse"  # DuckDB's parse of an engine text, kept per text (native pays it on every call)
NOT_PLANNING = (EXPANDED, ENGINE_PARSE)
# Marker substitutions on a compiled engine text (PostgreSQL: values a folded begin left in
# the session, a READ COMMITTED statement's snapshot): tique's client CPU, so counted in
# the planning time, but made per engine text, so once per row count an expanded INSERT
# has; listed apart from the planned variants.
TEXT_PASSES = ("unbound", "at statement snapshot")


def summary(misses: list[Miss]) -> dict[str, Any]:
    """Per kind: how many parts were made, of how many families, and their CPU ms; the
    application texts planned, and the planning CPU ms per text (every outermost miss
    counted, so the parts a text's first execution makes are charged to the texts); the
    planned families made under more than one key (variants, e.g. one per row count,
    which should be none); and apart, the row counts each INSERT's template was expanded
    to (engine texts, but no planning)."""
    kinds: dict[str, dict[str, Any]] = {}
    families: dict[tuple[str, str], set[Hashable]] = {}
    for m in misses:
        entry = kinds.setdefault(m.kind, {"made": 0, "families": set(), "cpu_ms": 0.0})
        entry["made"] += 1
        entry["families"].add(m.family)
        if not m.nested:
            entry["cpu_ms"] += m.cpu_s * 1e3
        families.setdefault((m.kind, m.family), set()).add(m.key)
    texts = len(kinds.get("plan", {}).get("families", ()))
    total_ms = sum(m.cpu_s for m in misses if not m.nested and m.kind not in NOT_PLANNING) * 1e3
    variants = {f"{kind}: {family}"[:120]: len(keys) for (kind, family), keys in families.items()
                if kind not in ("plan", *NOT_PLANNING, *TEXT_PASSES) and len(keys) > 1}
    expanded = {family: len(keys) for (kind, family), keys in families.items() if kind == EXPANDED}
    passes = {kind: kinds[kind]["made"] for kind in TEXT_PASSES if kind in kinds}
    engine = kinds.get(ENGINE_PARSE, {})
    return {"texts": texts, "total_cpu_ms": total_ms, "cpu_ms_per_text": total_ms / texts if texts else 0.0,
            "misses": len(misses),
            "kinds": {k: {"made": v["made"], "families": len(v["families"]), "cpu_ms": v["cpu_ms"]} for k, v in kinds.items()},
            "variants": variants, "row_counts_expanded": expanded, "engine_text_passes": passes,
            "engine_texts_parsed": engine.get("made", 0), "engine_parse_cpu_ms": engine.get("cpu_ms", 0.0)}


def report(planning: dict[str, Any]) -> str:
    """The summary in two lines, as `tique bench tpcc` prints it."""
    variants = ", ".join(f"{name} x{n}" for name, n in planning["variants"].items()) or "none"
    expanded = ", ".join(f"{name} x{n}" for name, n in planning["row_counts_expanded"].items()) or "none"
    return (f"planning (cache misses, client CPU): {planning['texts']} statement texts, {planning['total_cpu_ms']:.0f} ms, "
            f"{planning['cpu_ms_per_text']:.1f} ms per text; {planning['misses']} parts made\n"
            f"planned variants of one family: {variants}; INSERT row counts expanded (text only): {expanded}"
            + (f"; marker passes over engine texts: {planning['engine_text_passes']}" if planning.get("engine_text_passes") else "")
            + (f"\nengine texts parsed (DuckDB's parser, kept per text): {planning['engine_texts_parsed']}, "
               f"{planning['engine_parse_cpu_ms']:.0f} ms" if planning.get("engine_texts_parsed") else ""))

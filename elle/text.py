"""Rendering keys, elements and list states the way an EDN history spells them."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Long reads are abbreviated in explanations; the JSON report keeps full values.
_HEAD = 2
_TAIL = 4


def edn(x: Any) -> str:
    if x is None:
        return "nil"
    if isinstance(x, str):
        return ":" + x
    return str(x)


def state(values: Sequence[Any] | None) -> str:
    """A list state, e.g. [1 2 3], abbreviated to [1 2 ... 7 8 9 10] when long."""
    if not values:
        return "[]"
    if len(values) <= _HEAD + _TAIL + 1:
        return "[" + " ".join(map(edn, values)) + "]"
    head = " ".join(map(edn, values[:_HEAD]))
    tail = " ".join(map(edn, values[-_TAIL:]))
    return f"[{head} ... {tail}] ({len(values)} elements)"


def ending(element: Any) -> str:
    """The version of a key whose last element is `element` (None: the initial, empty version)."""
    return "[]" if element is None else f"[... {edn(element)}]"

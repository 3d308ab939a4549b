"""Consistency models, the anomalies each proscribes, and the order cycles are classified in."""
from __future__ import annotations

from dataclasses import dataclass

from elle.graph import PROCESS, REALTIME

BASES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
SUFFIX = {0: "", PROCESS: "-process", REALTIME: "-realtime"}

# Anomalies that rule out every model here: the history is not even a coherent
# record of committed list states.
ALWAYS = frozenset({
    "internal", "future-read", "duplicate-elements", "incompatible-order", "garbage",
    "G1a", "G1b", "dirty-update",
})


def cycle_name(base: str, extra: int) -> str:
    return base + SUFFIX[extra]


def _variants(bases: tuple[str, ...], extra: int) -> frozenset[str]:
    return frozenset(cycle_name(b, extra) for b in bases)


_RC = frozenset({"G0", "G1c"})
_SI_BASES = ("G0", "G1c", "G-single", "G-nonadjacent")
_SI = _variants(_SI_BASES, 0) | {"lost-update"}


@dataclass(frozen=True)
class Model:
    name: str
    proscribed: frozenset[str]
    # Which extra ordering the model needs on top of data dependencies: 0, PROCESS or REALTIME.
    extra: int
    # Whether any proscribed cycle can contain an anti-dependency (rw) edge.
    anti: bool

    def cycle_classes(self) -> list[tuple[str, int]]:
        """(base, extra) pairs this model proscribes, most severe first: every data-only
        class before any class that needs a process or realtime edge."""
        out = []
        for extra in (0, PROCESS, REALTIME):
            for base in BASES:
                if cycle_name(base, extra) in self.proscribed:
                    out.append((base, extra))
        return out


MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        # As Jepsen Elle's (Adya's PL-2): a later read of a key in the same transaction may
        # see a newer committed state (a non-repeatable read), so `internal` is allowed.
        Model("read-committed", (ALWAYS - {"internal"}) | _RC, 0, anti=False),
        Model("snapshot-isolation", ALWAYS | _RC | _SI, 0, anti=True),
        Model("strong-session-snapshot-isolation", ALWAYS | _RC | _SI | _variants(_SI_BASES, PROCESS), PROCESS, anti=True),
        Model("strong-snapshot-isolation", ALWAYS | _RC | _SI | _variants(_SI_BASES, REALTIME), REALTIME, anti=True),
        Model("serializable", ALWAYS | _RC | _SI | _variants(BASES, 0), 0, anti=True),
        # Jepsen Elle: serializable and strong-session-snapshot-isolation, and no cycle of
        # data dependencies and process order (G1-process, G2-process).
        Model("strong-session-serializable", ALWAYS | _RC | _SI | _variants(BASES, 0) | _variants(BASES, PROCESS), PROCESS, anti=True),
        Model("strict-serializable", ALWAYS | _RC | _SI | _variants(BASES, 0) | _variants(BASES, REALTIME), REALTIME, anti=True),
    )
}


def model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown consistency model {name!r}; known models: {', '.join(MODELS)}") from None


# If a cycle of class A exists, one of class B does too, so once A is found in a
# component there is no need to look for B there (after Elle's implication graph:
# G0 is also a G1c cycle; a cycle without process/realtime edges trivially is a
# "-process" one; a process edge is also a realtime edge, processes being sequential).
_IMPLIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1c": ("G1c-process",),
    "G1c-process": ("G1c-realtime",),
    "G-single": ("G-nonadjacent", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent": ("G-nonadjacent-process",),
    "G-nonadjacent-process": ("G-nonadjacent-realtime",),
    "G2-item": ("G2-item-process",),
    "G2-item-process": ("G2-item-realtime",),
}


def implied(name: str) -> set[str]:
    """`name` and every cycle class its presence implies."""
    out = {name}
    todo = [name]
    while todo:
        for nxt in _IMPLIES.get(todo.pop(), ()):
            if nxt not in out:
                out.add(nxt)
                todo.append(nxt)
    return out

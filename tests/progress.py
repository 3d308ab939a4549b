"""Tests that need some work done count that work instead of assuming a fixed time is
enough: a busy machine may finish nothing in a few seconds. The bounds here are far
beyond any run that progresses at all, so only a hang reaches them."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

HANG_SECONDS = 600.0  # no healthy run, however loaded the machine, waits this long


def until_progress(attempt: Callable[[float], T], progressed: Callable[[T], bool], seconds: float,
                   bound: float = HANG_SECONDS) -> T:
    """Runs `attempt(seconds)`, doubling `seconds` until `progressed` holds of its result or
    the seconds asked for add up past `bound`; returns the last result for the caller to assert on."""
    spent = 0.0
    while True:
        result = attempt(seconds)
        spent += seconds
        if progressed(result) or spent + 2 * seconds > bound:
            return result
        seconds *= 2


def wait_for(condition: Callable[[], bool], bound: float = HANG_SECONDS, poll: float = 0.02) -> bool:
    """Polls `condition` until it holds; False only after `bound` seconds (a hang)."""
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True

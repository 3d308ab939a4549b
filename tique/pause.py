"""Debug pause points: a run stops at a chosen step until a test resumes it.

Invariant: the run sets `reached` once it is at the step, and runs no further statement
until `resume` is set. Neither side waits forever: the run gives up after `timeout`
seconds, and a test waits on `reached` with a bound of its own."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(kw_only=True)
class Pause:
    timeout: float = 60.0
    reached: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)

    def _held_until_resumed(self) -> bool:
        """Says the step is reached, then waits; False when nobody resumed in time."""
        self.reached.set()
        return self.resume.wait(self.timeout)

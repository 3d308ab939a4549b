"""One checkpoint round run in a thread of its own while a test holds it at a pause point."""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator

from tique.checkpoint import Checkpointer


@contextlib.contextmanager
def round_in_thread(checkpointer: Checkpointer, wait: float) -> Iterator[list[BaseException]]:
    """Starts one round of `checkpointer` in a thread and yields the list its failure lands
    in. The body must resume every pause point it waited at (in a finally); the thread is
    then joined, within `wait` seconds, and must have finished."""
    failures: list[BaseException] = []

    def once() -> None:
        try:
            checkpointer.run_once()
        except BaseException as error:  # surfaced by the test
            failures.append(error)

    thread = threading.Thread(target=once, name="paused-checkpoint")
    thread.start()
    try:
        yield failures
    finally:
        thread.join(wait)
    assert not thread.is_alive(), "the checkpoint did not finish after it was resumed"


def rounds_until(checkpointer: Checkpointer, stop: threading.Event, rounds: list[int],
                 errors: list[BaseException]) -> Callable[[], None]:
    """A thread body running rounds of `checkpointer` back to back until `stop` is set,
    counting them in rounds[0]; a round's failure lands in `errors` and ends the loop."""
    def loop() -> None:
        try:
            while not stop.is_set():
                checkpointer.run_once()
                rounds[0] += 1
                time.sleep(0.002)
        except BaseException as error:  # surfaced by the test's assertion
            errors.append(error)
    return loop


def start_with_writers(loop: Callable[[], None], writer: Callable[[int], None], writers: int = 2) -> list[threading.Thread]:
    """Starts the checkpoint `loop` and `writers` writer threads (writer(0), writer(1), ...)
    and returns them, for the test to stop and join."""
    threads = [threading.Thread(target=loop)] + [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    return threads


def beside_checkpoint_rounds(backend: object, clients: list[Callable[[], None]], wait: float) -> None:
    """Runs each of `clients` in a thread of its own while a checkpointer on `backend` runs
    rounds back to back, until every client has finished its (counted) work; then the
    rounds stop. Each thread must end within `wait` seconds, and a failure of any of them
    (a client's, or a round's) fails the test."""
    failures: list[BaseException] = []
    done = threading.Event()

    def rounds() -> None:
        checkpointer = Checkpointer(backend)  # type: ignore[arg-type]
        try:
            while not done.is_set():
                checkpointer.run_once()
        finally:
            checkpointer.close()

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                work()
            except BaseException as error:  # surfaced below
                failures.append(error)
        return body

    threads = [threading.Thread(target=guarded(work)) for work in clients]
    checkpointing = threading.Thread(target=guarded(rounds))
    checkpointing.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(wait)
    done.set()
    checkpointing.join(wait)
    assert not any(t.is_alive() for t in [*threads, checkpointing]), "a client or the checkpointer hung"
    assert not failures, failures

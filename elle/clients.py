"""The clients: each runs transactions one at a time on its own connection and
records them. Threads of this process, or child processes (for the kill fault) that
report each op over a pipe while this process keeps the history."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from elle.history import Mop
from elle.recorder import Recorder
from elle.sql_client import ListAppendClient
from elle.workload import ListAppendGenerator

CONNECT_PATIENCE = 60.0  # seconds a client keeps trying to (re)connect, e.g. across a restart
STALL_TIMEOUT = 120.0  # no op completed for this long: the run gives up rather than hang


def describe_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


# ---------------------------------------------------------------- one transaction

@dataclass
class Outcome:
    type: str  # ok | fail | info
    value: tuple[Mop, ...] | None
    error: str | None
    reconnect: bool


def execute(client: ListAppendClient, txn: tuple[Mop, ...], is_abort: Callable[[BaseException], bool],
            committing: Callable[[], None] | None = None) -> Outcome:
    try:
        value = client.apply(txn)
    except Exception as error:
        # Nothing was committed: roll back. After anything but a clean abort the connection
        # may be dead (a restarted server), so it is replaced.
        try:
            client.rollback()
            healthy = is_abort(error)
        except Exception:
            healthy = False
        return Outcome("fail", None, describe_error(error), not healthy)
    if committing is not None:
        committing()
    try:
        client.commit()
    except Exception as error:
        if is_abort(error):
            return Outcome("fail", None, describe_error(error), False)
        return Outcome("info", None, describe_error(error), True)
    return Outcome("ok", value, None, False)


def connect_client(connect: Callable[[], Any], stop: threading.Event | None = None,
                   patience: float = CONNECT_PATIENCE) -> ListAppendClient | None:
    """Connects, retrying while the server is unreachable (a restart); None if it stays so."""
    deadline = time.monotonic() + patience
    pause = 0.05
    while True:
        try:
            return ListAppendClient(connect())
        except Exception:
            if time.monotonic() > deadline or (stop is not None and stop.is_set()):
                return None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


class TxnSource:
    """Hands out the generator's transactions, one at a time, until the budget or the time runs out."""

    def __init__(self, generator: ListAppendGenerator, total: int, time_limit: float | None) -> None:
        self.generator = generator
        self.total = total
        self.issued = 0
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self._lock = threading.Lock()
        self.stopped = threading.Event()

    def take(self) -> tuple[Mop, ...] | None:
        with self._lock:
            if self.stopped.is_set() or self.issued >= self.total or (
                    self.deadline is not None and time.monotonic() > self.deadline):
                self.stopped.set()
                return None
            self.issued += 1
            return self.generator.next_txn()


# ---------------------------------------------------------------- clients as threads

def _thread_client(slot: int, clients: int, source: TxnSource, recorder: Recorder, connect: Callable[[], Any],
                   is_abort: Callable[[BaseException], bool], progress: Callable[[], None]) -> None:
    process = slot
    client: ListAppendClient | None = None
    try:
        while not source.stopped.is_set():
            if client is None:
                client = connect_client(connect, source.stopped)
                if client is None:
                    return
            txn = source.take()
            if txn is None:
                return
            recorder.invoke(process, txn)
            outcome = execute(client, txn, is_abort)
            recorder.complete(process, outcome.type, outcome.value, outcome.error)
            progress()
            if outcome.type == "info":
                process += clients  # a new session for what follows
            if outcome.reconnect:
                client.close()
                client = None
    finally:
        if client is not None:
            client.close()


def run_threads(clients: int, source: TxnSource, recorder: Recorder, connect: Callable[[], Any],
                is_abort: Callable[[BaseException], bool], progress: Callable[[], None], notes: list[str]) -> None:
    """`clients` threads, each with its own connection, until the source runs dry."""
    done = Counter()
    lock = threading.Lock()

    def tick() -> None:
        with lock:
            done["ops"] += 1
        progress()

    threads = [threading.Thread(target=_thread_client, name=f"elle-client-{slot}", daemon=True,
                                args=(slot, clients, source, recorder, connect, is_abort, tick))
               for slot in range(clients)]
    for thread in threads:
        thread.start()
    last, last_change = -1, time.monotonic()
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(timeout=0.2)
        with lock:
            now_done = done["ops"]
        if now_done != last:
            last, last_change = now_done, time.monotonic()
        elif time.monotonic() - last_change > STALL_TIMEOUT:
            source.stopped.set()
            notes.append(f"no transaction completed for {STALL_TIMEOUT:.0f}s: stopped waiting for stuck clients")
            break
    for thread in threads:
        thread.join(timeout=1.0)


# ---------------------------------------------------------------- clients as processes

def _child_main(system_name: str, url: str, options: dict[str, Any], pipe: Any) -> None:
    """A client process: connects, then runs each transaction it is sent and reports back."""
    from drivers import open_system

    system = open_system(system_name, url=url, **options)
    client: ListAppendClient | None = None
    try:
        while True:
            if client is None:
                client = connect_client(system.connect)
                if client is None:
                    pipe.send(("gone", "could not connect"))
                    return
                pipe.send(("ready",))
            txn = pipe.recv()
            if txn is None:
                return
            outcome = execute(client, txn, system.is_abort, lambda: pipe.send(("committing",)))
            pipe.send(("done", outcome.type, outcome.value, outcome.error))
            if outcome.reconnect:
                client.close()
                client = None
            else:
                pipe.send(("ready",))
    except (EOFError, BrokenPipeError):
        return  # the parent is gone
    finally:
        if client is not None:
            client.close()


@dataclass
class _Child:
    slot: int
    process: int  # the history's process number
    proc: Any
    pipe: Any
    state: str = "connecting"  # connecting | ready | running | committing | stopping
    killed: bool = False


_PRELOAD = ["tique", "drivers", "elle.clients", "psycopg", "pymonetdb", "sqlglot"]


def _context() -> Any:
    """forkserver: children fork from a clean, single-threaded server with the modules
    already imported, so a replacement starts in milliseconds and inherits no locks."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _send_quietly(pipe: Any, message: Any) -> bool:
    """Sends to a child that a kill timer may just have killed: its pipe then reports EOF
    on the next wait, and that path records the open op as indeterminate (:info)."""
    try:
        pipe.send(message)
        return True
    except (BrokenPipeError, OSError):
        return False


def run_processes(clients: int, source: TxnSource, recorder: Recorder, system: Any, child_options: dict[str, Any],
                  progress: Callable[[], None], events: Counter, notes: list[str],
                  kill_interval: float | None = None, seed: int = 0) -> None:
    """`clients` child processes on `system` (a drivers System), until the source runs dry;
    with `kill_interval`, one is SIGKILLed about that often (mean seconds) and replaced."""
    context = _context()
    url = system.engine.tique_url
    rnd = random.Random(seed)
    children: dict[int, _Child] = {}
    lock = threading.Lock()  # kills come from timer threads
    timers: list[threading.Timer] = []

    def spawn(slot: int, process: int) -> None:
        ours, theirs = context.Pipe()
        proc = context.Process(target=_child_main, args=(system.name, url, child_options, theirs), daemon=True)
        proc.start()
        theirs.close()  # so the pipe reports EOF once the child dies
        children[slot] = _Child(slot, process, proc, ours)

    def kill(child: _Child) -> None:
        with lock:
            if child.killed or child.proc.exitcode is not None or child.state not in ("running", "committing"):
                return
            child.killed = True
            state = child.state
            try:
                os.kill(child.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            events[f"kills while {state}"] += 1
        recorder.nemesis("kill", f"[{child.process} :{state}]")

    killing = kill_interval is not None
    mean_gap = kill_interval or 1.0
    kill_armed: str | None = None
    next_kill = time.monotonic() + rnd.expovariate(1.0 / mean_gap)

    def maybe_kill(child: _Child, event: str) -> None:
        nonlocal kill_armed, next_kill
        if not killing or kill_armed != event:
            return
        kill_armed = None
        next_kill = time.monotonic() + rnd.expovariate(1.0 / mean_gap)
        # Land inside the statements, or inside COMMIT's round trips.
        delay = rnd.uniform(0, 0.01) if event == "txn" else rnd.uniform(0, 0.003)
        timer = threading.Timer(delay, kill, (child,))
        timer.daemon = True
        timer.start()
        timers.append(timer)

    crashes = 0  # deaths we did not cause
    for slot in range(clients):
        spawn(slot, slot)
    last_change = time.monotonic()
    try:
        while children:
            if killing and kill_armed is None and time.monotonic() >= next_kill:
                kill_armed = rnd.choice(("txn", "commit"))
            ready = multiprocessing.connection.wait([c.pipe for c in children.values()], timeout=0.1)
            by_pipe = {id(c.pipe): c for c in children.values()}
            for pipe in ready:
                child = by_pipe[id(pipe)]
                try:
                    message = pipe.recv()
                except (EOFError, OSError):
                    # The child died (killed, or crashed): its open op is indeterminate.
                    child.proc.join(timeout=5)
                    if recorder.complete(child.process, "info", error=f"client process died (exit code {child.proc.exitcode})"):
                        progress()
                        last_change = time.monotonic()
                    pipe.close()
                    del children[child.slot]
                    if not child.killed and child.state != "stopping":
                        crashes += 1
                        if crashes > 2 * clients + 3:
                            source.stopped.set()
                            notes.append(f"client processes keep dying on their own (last exit code {child.proc.exitcode}): run stopped")
                    if child.state != "stopping" and not source.stopped.is_set():
                        spawn(child.slot, child.process + clients)
                        events["client processes replaced"] += 1
                    continue
                kind = message[0]
                if kind == "ready":
                    child.state = "ready"
                elif kind == "committing":
                    child.state = "committing"
                    maybe_kill(child, "commit")
                elif kind == "done":
                    _, type_, value, error = message
                    recorder.complete(child.process, type_, value, error)
                    progress()
                    last_change = time.monotonic()
                    child.state = "connecting"
                    if type_ == "info":
                        child.process += clients
                elif kind == "gone":
                    notes.append(f"client {child.slot}: {message[1]}")
                    child.state = "stopping"
            for child in list(children.values()):
                if child.state != "ready":
                    continue
                txn = source.take()
                if txn is None:
                    _send_quietly(child.pipe, None)
                    child.state = "stopping"
                    continue
                recorder.invoke(child.process, txn)
                child.state = "running"
                if _send_quietly(child.pipe, txn):
                    maybe_kill(child, "txn")
            for child in list(children.values()):
                if child.state == "stopping" and child.proc.exitcode is not None:
                    child.pipe.close()
                    del children[child.slot]
            if time.monotonic() - last_change > STALL_TIMEOUT:
                source.stopped.set()
                notes.append(f"no transaction completed for {STALL_TIMEOUT:.0f}s: killed the stuck client processes")
                break
    finally:
        for timer in timers:
            timer.cancel()
        for child in children.values():
            if child.proc.exitcode is None:
                child.proc.kill()
            child.proc.join(timeout=10)
            child.pipe.close()

"""`tique bench trace`: where one kind of transaction spends its time, step by step, with
native's statements beside tique's.

For a pair of systems (native-E, tique-E) each on its own fresh database, one client per
system runs a short warm mix (untraced), then N transactions of the chosen kind on the
same inputs, native's and tique's alternating so that the machine's load weighs on both
alike, each traced: every round trip its session sends is recorded with its purpose. The
purpose is two labels: the application statement (or commit) it belongs to, which this
module sets around each `execute`, and the protocol step inside it that tique names where
it sends it
(`tique.session.step`: begin, snapshot, write + validate, key check, take cts, write-set,
certify, outcome, publish, end, MonetDB's prepare and column naming). A statement's own
request is its `statement` step; held inserts that travel in front of a request are
counted on that request's step.

Per step, averaged over the traced transactions that committed:
- round trips and engine commits, as the session counts them (tique/session.py; native
  connections through drivers/counting.py), so the steps sum to the session's counters;
- engine ms: wall time waiting on the engine inside those round trips;
- client CPU ms: the client thread's CPU time outside round trips while the step was
  the innermost one (tique's rewriting and bookkeeping, the driver's Python). CPU inside
  a round trip (the driver's encoding, and for embedded DuckDB the engine itself) is
  recorded apart, as round_trip_cpu_ms, so engine ms + client CPU ms is the step's time.
"""
from __future__ import annotations

import random
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Sequence

from bench.results import Result, now, write
from tique.session import Counters

KINDS = ("new_order", "payment", "order_status", "delivery", "stock_level", "keys")
ENGINES = ("duckdb", "postgres", "monetdb")
WARM_OF_KIND = 3  # untraced transactions of the traced kind after the mix: their statements are planned (and prepared)
OUTSIDE = "(outside a statement)"
KEYS_ROWS = 10_000


@dataclass
class StepCost:
    round_trips: int = 0
    engine_commits: int = 0
    engine_ns: int = 0
    client_cpu_ns: int = 0  # outside round trips, while the step was innermost
    round_trip_cpu_ns: int = 0  # inside its round trips
    held: int = 0  # held inserts carried in front of its requests (MonetDB)

    def add(self, other: "StepCost") -> None:
        for name in asdict(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Tracer:
    """Records every round trip of one client thread's sessions under (statement, step).
    Set as `Counters.trace` on the connection's live counters (tique.session.Trace)."""

    def __init__(self) -> None:
        self._thread = threading.get_ident()
        self._stack: list[str] = []  # [statement, its body step, inner steps ...]
        self.steps: dict[tuple[str, str], StepCost] = {}
        self.calls: dict[str, int] = {}
        self._mark = time.thread_time_ns()

    def reset(self) -> None:
        self.steps, self.calls = {}, {}
        self._mark = time.thread_time_ns()

    def _cost(self) -> StepCost:
        key = (self._stack[0], self._stack[-1]) if self._stack else (OUTSIDE, OUTSIDE)
        found = self.steps.get(key)
        if found is None:
            found = self.steps[key] = StepCost()
        return found

    def _charge(self) -> None:
        """The client CPU since the last boundary goes to the step innermost until now."""
        at = time.thread_time_ns()
        self._cost().client_cpu_ns += at - self._mark
        self._mark = at

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        if threading.get_ident() != self._thread:
            yield
            return
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    @contextmanager
    def statement(self, name: str, body: str = "statement") -> Iterator[None]:
        """An application statement (or commit): its round trips outside any named step
        are its `body`."""
        self.calls[name] = self.calls.get(name, 0) + 1
        self._charge()
        self._stack += [name, body]
        try:
            yield
        finally:
            self._charge()
            del self._stack[-2:]

    def round_trip_began(self) -> None:
        if threading.get_ident() == self._thread:
            self._charge()

    def round_trip_ended(self, engine_ns: int, committed: int) -> None:
        if threading.get_ident() != self._thread:
            return
        at = time.thread_time_ns()
        cost = self._cost()
        cost.round_trips += 1
        cost.engine_commits += committed
        cost.engine_ns += engine_ns
        cost.round_trip_cpu_ns += at - self._mark
        self._mark = at

    def carried(self, held: int) -> None:
        if threading.get_ident() == self._thread:
            self._cost().held += held


@dataclass
class SystemTrace:
    """What the traced transactions of one system cost, summed (divide by `transactions`)."""
    system: str
    version: str = ""
    transactions: int = 0  # committed, traced: the averages' denominator
    rollbacks: int = 0
    aborts: int = 0
    errors: list[str] = field(default_factory=list)
    steps: dict[tuple[str, str], StepCost] = field(default_factory=dict)  # in order of first appearance
    calls: dict[str, int] = field(default_factory=dict)
    counted: Counters = field(default_factory=Counters)  # the session's own counters over the same transactions
    wall_ns: int = 0

    def add(self, tracer: Tracer, counted: Counters, wall_ns: int) -> None:
        self.transactions += 1
        for key, cost in tracer.steps.items():
            if key[0] == OUTSIDE and not cost.round_trips:
                continue  # the workload's own Python between statements: neither system's cost
            self.steps.setdefault(key, StepCost()).add(cost)
        for name, count in tracer.calls.items():
            self.calls[name] = self.calls.get(name, 0) + count
        self.counted = self.counted + counted
        self.wall_ns += wall_ns

    def traced_total(self) -> StepCost:
        total = StepCost()
        for cost in self.steps.values():
            total.add(cost)
        return total

    def per_transaction(self, cost: StepCost) -> dict[str, float]:
        n = max(1, self.transactions)
        return {"round_trips": cost.round_trips / n, "engine_commits": cost.engine_commits / n,
                "engine_ms": cost.engine_ns / n / 1e6, "client_cpu_ms": cost.client_cpu_ns / n / 1e6,
                "round_trip_cpu_ms": cost.round_trip_cpu_ns / n / 1e6, "held_inserts": cost.held / n}

    def as_dict(self) -> dict[str, Any]:
        n = max(1, self.transactions)
        total = self.traced_total()
        return {"system": self.system, "version": self.version, "transactions": self.transactions,
                "rollbacks": self.rollbacks, "aborts": self.aborts, "errors": self.errors,
                "wall_ms": self.wall_ns / n / 1e6,
                "steps": [{"statement": s, "step": st, **self.per_transaction(c)} for (s, st), c in self.steps.items()],
                "calls": {name: count / n for name, count in self.calls.items()},
                "total": self.per_transaction(total),
                # Exact sums over all traced transactions: the trace against the session's own counts.
                "sums": {"traced_round_trips": total.round_trips, "counted_round_trips": self.counted.round_trips,
                         "traced_engine_commits": total.engine_commits, "counted_engine_commits": self.counted.engine_commits,
                         "traced_engine_ns": total.engine_ns, "counted_engine_ns": self.counted.engine_ns}}


# -- statement names -------------------------------------------------------------------

def _statement_names() -> dict[str, str]:
    """SQL text -> the name of the constant that holds it (TPC-C's, and the keys transaction's)."""
    from bench import keys
    from bench.tpcc import transactions

    names: dict[str, str] = {keys.READ: "READ", keys.UPDATE: "UPDATE"}
    for name, value in vars(transactions).items():
        if not name.isupper() or name in ("KINDS", "MIX"):
            continue
        if isinstance(value, str):
            names[value] = name
        elif isinstance(value, tuple):
            names.update({v: name for v in value if isinstance(v, str)})
        elif isinstance(value, dict):
            names.update({v: name for v in value.values() if isinstance(v, str)})
    return names


# -- workloads ---------------------------------------------------------------------------

Execute = Callable[..., list[tuple]]  # execute(sql, params, many=False), as bench.tpcc.transactions.Execute


@dataclass
class Workload:
    """run(kind, execute, rng) runs one transaction's statements; `mix` chooses a kind for the warm-up."""
    run: Callable[[str, Execute, random.Random], Any]
    mix: Callable[[random.Random], str]
    user_rollback: type[BaseException]


def _tpcc_workload(system: Any, scale: Any, console: Any, warehouses: int = 1) -> Workload:
    from bench.tpcc.loader import load
    from bench.tpcc.rand import Constants
    from bench.tpcc.transactions import UserRollback, Workload as Tpcc

    loaded, _ = load(system, warehouses, scale, console=console)
    tpcc = Tpcc(loaded.warehouses, loaded.scale, Constants.for_run(loaded.c_last_load, random.Random(42)))
    return Workload(lambda kind, execute, rng: tpcc.run(kind, execute, rng), tpcc.choose, UserRollback)


class _NeverRaised(Exception):
    pass


def _keys_workload(system: Any) -> Workload:
    """bench/keys.py's transaction (read 2 random keys of a 10,000-row table, update both) on `system`."""
    from bench import keys

    system.execute_script(["DROP TABLE IF EXISTS kv", "CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)"])
    conn = system.connect()
    try:
        cur = conn.cursor()
        for first in range(1, KEYS_ROWS + 1, 1000):  # values bound, 1,000 rows a statement
            rows = list(range(first, min(first + 1000, KEYS_ROWS + 1)))
            cur.execute("INSERT INTO kv VALUES " + ", ".join(["(?, 0)"] * len(rows)), rows)
            conn.commit()
        if system.through_tique:
            from tique.checkpoint import checkpoint

            checkpoint(conn)  # the rows move to storage, as a loaded table's are
    finally:
        conn.close()

    def run(kind: str, execute: Execute, rng: random.Random) -> None:
        keys._transaction(lambda sql, params: execute(sql, params))(rng)

    return Workload(run, lambda rng: "keys", _NeverRaised)


# -- tracing one system ------------------------------------------------------------------

def _live_counters(conn: Any) -> Counters:
    """The connection's own counters object (not a copy): native connections keep it as
    counters_live, tique's on its session."""
    live = getattr(conn, "counters_live", None)
    return live if live is not None else conn._raw.counters


class TracedClient:
    """One system's client: a connection whose transactions run untraced (warm-up) or
    traced, each traced one added to the SystemTrace of its kind."""

    def __init__(self, system: Any, workloads: dict[str, Workload]) -> None:
        self.system = system
        self.workloads = workloads
        self.names = _statement_names()
        self.conn = system.connect()
        self.cursor = self.conn.cursor()
        self.tracer = Tracer()
        self.live = _live_counters(self.conn)
        self.errors: list[str] = []

    def execute(self, sql: str, params: Sequence[Any], many: bool = False) -> list[tuple]:
        with self.tracer.statement(self.names.get(sql, sql.split(None, 1)[0].upper())):
            if many:
                self.cursor.executemany(sql, params)
                return []
            self.cursor.execute(sql, params)
            return self.cursor.fetchall() if self.cursor.description else []

    def attempt(self, workload: Workload, kind: str, rng: random.Random) -> str:
        """One transaction: commit, rollback (a New-Order's by design), abort or error."""
        conn, tracer = self.conn, self.tracer
        try:
            workload.run(kind, self.execute, rng)
            with tracer.statement("COMMIT", "commit"):
                conn.commit()
            return "commit"
        except workload.user_rollback:
            with tracer.statement("ROLLBACK", "rollback"):
                conn.rollback()
            return "rollback"
        except Exception as error:  # noqa: BLE001 - classified and reported
            try:
                conn.rollback()
            except Exception:  # the failure already ended the transaction
                pass
            if self.system.is_abort(error):
                return "abort"
            self.errors.append(f"{type(error).__name__}: {error}"[:300])
            return "error"

    def warm(self, kind: str, seconds: float, seed: int) -> None:
        """The workload's mix for `seconds`, then WARM_OF_KIND transactions of `kind`, untraced."""
        workload = self.workloads[kind]
        rng = random.Random(seed + 1)
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            self.attempt(workload, workload.mix(rng), rng)
        for _ in range(WARM_OF_KIND):
            self.attempt(workload, kind, rng)

    def traced(self, kind: str, rng: random.Random, into: SystemTrace) -> None:
        tracer, live = self.tracer, self.live
        tracer.reset()
        before = live.copy()
        live.trace = tracer
        try:
            began = time.perf_counter_ns()
            status = self.attempt(self.workloads[kind], kind, rng)
            wall = time.perf_counter_ns() - began
        finally:
            live.trace = None
        if status == "commit":
            into.add(tracer, live.copy() - before, wall)
        elif status == "rollback":
            into.rollbacks += 1
        elif status == "abort":
            into.aborts += 1
        elif len(into.errors) < 5:
            into.errors.append(self.errors[-1])

    def close(self) -> None:
        self.conn.close()


# -- a pair ---------------------------------------------------------------------------------

def run(engine: str, kinds: Sequence[str], transactions: int = 50, warmup: float = 5.0, scale: Any = None,
        checkpoint_ms: int | None = 1000, urls: dict[str, str] | None = None, seed: int = 7,
        console: Any = None, warehouses: int = 1) -> Result:
    """native-`engine` and tique-`engine`, each on its own fresh database (or on `urls`),
    loaded once, traced for each of `kinds` in turn, their transactions alternating."""
    from bench.console import report_console

    from bench.tpcc.loader import FULL
    from drivers import system_for

    if engine not in ENGINES or not kinds or any(kind not in KINDS for kind in kinds):
        raise ValueError(f"engine is one of {', '.join(ENGINES)} and each kind one of {', '.join(KINDS)}")
    console = console or report_console()
    scale = scale or FULL
    urls = urls or {}
    result = Result("trace", f"native-{engine} vs tique-{engine}", "", {
        "engine": engine, "kinds": list(kinds), "transactions": transactions, "warmup_s": warmup, "warm_of_kind": WARM_OF_KIND,
        "warehouses": warehouses, "clients": 1, "scale": asdict(scale), "checkpoint_ms": checkpoint_ms, "seed": seed})
    traces: dict[str, list[SystemTrace]] = {}
    with ExitStack() as opened:
        clients = []
        for name in (f"native-{engine}", f"tique-{engine}"):
            system = opened.enter_context(system_for(name, None, urls.get(name), checkpoint_ms))
            tpcc = _tpcc_workload(system, scale, console, warehouses) if any(kind != "keys" for kind in kinds) else None
            keys = _keys_workload(system) if "keys" in kinds else None
            workloads = {kind: keys if kind == "keys" else tpcc for kind in kinds}
            clients.append(TracedClient(system, workloads))  # type: ignore[arg-type]
            opened.callback(clients[-1].close)
        result.engine_version = clients[0].system.engine.version()
        for kind in kinds:
            pair = traces[kind] = [SystemTrace(c.system.name, c.system.version()) for c in clients]
            for client in clients:
                client.warm(kind, warmup, seed)
            # Alternately, native's i-th transaction then tique's on the same inputs: the
            # machine's load (shared, often busy) weighs on both alike.
            rngs = [random.Random(seed) for _ in clients]
            for _ in range(transactions):
                for client, rng, into in zip(clients, rngs, pair):
                    client.traced(kind, rng, into)
    result.metrics = {"traces": [{"kind": kind, "systems": {t.system: t.as_dict() for t in pair},
                                  "extra": extra_time(*pair)} for kind, pair in traces.items()]}
    return result


OWN = "own request"  # extra_time's name for a statement's own work (its body, and for a write its write step)


def _own(statement: str, step_name: str) -> bool:
    """Whether tique's step is the statement's own work, the counterpart of native's whole
    statement: its request, its write, and for COMMIT the request holding the engine commit."""
    return step_name in ("statement", "commit", "rollback", "write", "write + validate") or (
        statement == "COMMIT" and "engine commit" in step_name)


def extra_time(native: SystemTrace, tique_trace: SystemTrace) -> list[dict[str, Any]]:
    """Where tique's time per transaction (engine ms + client CPU ms) goes beyond native's,
    largest first: each statement's own work against native's whole statement, and each
    protocol step of tique's (begin, key check, certify, publish, ...: no counterpart natively)."""
    def ms(trace: SystemTrace, cost: StepCost) -> float:
        return (cost.engine_ns + cost.client_cpu_ns) / max(1, trace.transactions) / 1e6

    def rt(trace: SystemTrace, cost: StepCost) -> float:
        return cost.round_trips / max(1, trace.transactions)

    theirs: dict[str, StepCost] = {}
    for (statement, _), cost in native.steps.items():
        theirs.setdefault(statement, StepCost()).add(cost)
    mine: dict[tuple[str, str], StepCost] = {}
    for (statement, step_name), cost in tique_trace.steps.items():
        mine.setdefault((statement, OWN if _own(statement, step_name) else step_name), StepCost()).add(cost)
    rows = []
    for (statement, step_name), cost in mine.items():
        native_cost = theirs.get(statement, StepCost()) if step_name == OWN else StepCost()
        rows.append({"statement": statement, "step": step_name, "tique_ms": ms(tique_trace, cost),
                     "native_ms": ms(native, native_cost), "extra_ms": ms(tique_trace, cost) - ms(native, native_cost),
                     "tique_round_trips": rt(tique_trace, cost), "native_round_trips": rt(native, native_cost)})
    return sorted(rows, key=lambda r: -r["extra_ms"])


# -- showing it -------------------------------------------------------------------------------

def show(result: Result, console: Any) -> None:
    for trace in result.metrics["traces"]:
        show_trace(trace, console)


def show_trace(m: dict[str, Any], console: Any) -> None:
    """One kind's breakdown: a row per statement (COMMIT last), under it its steps where
    it has more than its own request, then the totals and where tique's extra time goes."""
    from rich.table import Table

    systems = list(m["systems"].values())
    native, tq = systems
    kind = m["kind"]
    view = Table(title=f"{kind}: per committed transaction, {native['system']} ({native['transactions']}) vs "
                       f"{tq['system']} ({tq['transactions']}); ms = engine wait / client CPU outside round trips")
    view.add_column("statement / step", no_wrap=True)
    for s in (native, tq):
        short = s["system"].split("-")[0]
        for column in ("rt", "engine ms", "client ms"):
            view.add_column(f"{short}\n{column}", justify="right")

    def index(s: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
        found: dict[str, dict[str, dict[str, float]]] = {}
        for row in s["steps"]:
            found.setdefault(row["statement"], {})[row["step"]] = row
        return found

    steps = [index(native), index(tq)]
    statements = list(dict.fromkeys([*steps[0], *steps[1]]))
    statements.sort(key=lambda name: name in ("COMMIT", "ROLLBACK", OUTSIDE))  # stable: first appearance, ends last

    def cells(rows: list[dict[str, float]]) -> list[str]:
        if not rows:
            return ["", "", ""]
        return [f"{sum(r['round_trips'] for r in rows):.1f}", f"{sum(r['engine_ms'] for r in rows):.2f}",
                f"{sum(r['client_cpu_ms'] for r in rows):.2f}"]

    for statement in statements:
        calls = [s["calls"].get(statement) for s in (native, tq)]
        times = next((c for c in calls if c), None)
        label = statement if times is None or abs(times - 1) < 1e-9 else f"{statement} ×{times:.1f}"
        inner = list(dict.fromkeys([*steps[0].get(statement, {}), *steps[1].get(statement, {})]))
        detailed = len(inner) > 1 or bool(inner and inner[0] not in ("statement", "commit", "rollback"))
        held = sum(r.get("held_inserts", 0) for r in steps[1].get(statement, {}).values())
        if held and not detailed:
            label += f" (+{held:.1f} held inserts)"
        view.add_row(label, *cells(list(steps[0].get(statement, {}).values())), *cells(list(steps[1].get(statement, {}).values())),
                     style="bold")
        if not detailed:
            continue
        for name in inner:
            row = [steps[0].get(statement, {}).get(name), steps[1].get(statement, {}).get(name)]
            if all(r is None or (not r["round_trips"] and r["client_cpu_ms"] < 0.005) for r in row):
                continue  # a step that sent nothing and took no time (a BEGIN that waits for the first statement)
            held = (row[1] or {}).get("held_inserts", 0)
            shown = f"  {name}" + (f" (+{held:.1f} held inserts)" if held else "")
            view.add_row(shown, *cells([row[0]] if row[0] else []), *cells([row[1]] if row[1] else []))
    view.add_row("total", *(f"{s['total'][k]:.{p}f}" for s in (native, tq) for k, p in
                            (("round_trips", 1), ("engine_ms", 2), ("client_cpu_ms", 2))), style="bold")
    console.print(view)
    for s in (native, tq):
        sums = s["sums"]
        console.print(f"{s['system']}: wall {s['wall_ms']:.2f} ms, engine commits {s['total']['engine_commits']:.1f}, "
                      f"round-trip CPU {s['total']['round_trip_cpu_ms']:.2f} ms per transaction; traced round trips "
                      f"{sums['traced_round_trips']} of {sums['counted_round_trips']} counted by the session; "
                      f"{s['rollbacks']} rolled back, {s['aborts']} aborted, {len(s['errors'])} errors")
        for error in s["errors"]:
            console.print(f"  error: {error}")
    gap = tq["wall_ms"] - native["wall_ms"]
    top = [r for r in m["extra"] if r["extra_ms"] > 0][:6]
    console.print(f"tique - native: {gap:+.2f} ms wall per transaction; largest extra steps: "
                  + "; ".join(f"{r['statement']}/{r['step']} {r['extra_ms']:+.2f} ms ({r['tique_round_trips']:.1f} rt)" for r in top))


def benchmark(engine: str, kinds: Sequence[str], transactions: int, warmup: float, scale: Any, checkpoint_ms: int | None,
              urls: dict[str, str], out: str | None, console: Any = None, warehouses: int = 1) -> Result:
    from bench.console import report_console

    console = console or report_console()
    result = run(engine, kinds, transactions, warmup, scale, checkpoint_ms, urls, console=console, warehouses=warehouses)
    result.finished_at = now()
    if engine == "postgres":
        from drivers.postgres_engine import DURABILITY

        result.parameters["postgres_durable"] = DURABILITY["durable"]
    if out:
        write(result, out)
    show(result, console)
    return result

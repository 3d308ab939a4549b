"""The systems under test for the benchmarks and the consistency checks.

`native-<engine>` runs SQL on the engine's own transactions; `tique-<engine>` sends the
same SQL through tique. Both take `?` parameters, so a workload is written once.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from drivers.base import Engine, System, TableLoad, quote

ENGINES = ("duckdb", "postgres", "monetdb")
SYSTEMS = tuple(f"{flavour}-{engine}" for engine in ENGINES for flavour in ("native", "tique"))

__all__ = ["ENGINES", "SYSTEMS", "Engine", "System", "TableLoad", "open_engine", "open_system", "quote", "system_for"]


def open_engine(engine: str, url: str | None = None, workdir: str | Path | None = None) -> Engine:
    """A fresh database on `engine` (a server is started when none is given), or the one at `url`."""
    if engine == "duckdb":
        from drivers.duckdb_engine import DuckDBEngine

        return DuckDBEngine(url, workdir)
    if engine == "postgres":
        from drivers.postgres_engine import PostgresEngine

        return PostgresEngine(url)
    if engine == "monetdb":
        from drivers.monetdb_engine import MonetDBEngine

        return MonetDBEngine(url)
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def open_system(name: str, url: str | None = None, workdir: str | Path | None = None,
                engine: Engine | None = None, **tique_options: Any) -> System:
    """`name` is one of SYSTEMS. Pass `engine` to put several systems on one server."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose one of {', '.join(SYSTEMS)}")
    flavour, engine_name = name.split("-", 1)
    return System(engine or open_engine(engine_name, url, workdir), flavour == "tique", tique_options)


@contextlib.contextmanager
def system_for(name: str, system: System | None = None, url: str | None = None,
               checkpoint_ms: int | None = None) -> Iterator[System]:
    """`system` itself when given (its owner closes it); otherwise `name` opened on `url`
    or on a fresh database, closed afterwards (a fresh database is removed). A tique
    system opened here runs a background checkpointer every `checkpoint_ms`."""
    if system is not None:
        yield system
        return
    options: dict[str, Any] = {"checkpoint_interval_ms": checkpoint_ms} if name.startswith("tique-") and checkpoint_ms else {}
    opened = open_system(name, url=url, **options)
    try:
        yield opened
    finally:
        opened.close()

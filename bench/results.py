"""Result files shared by every benchmark: one JSON document per run (which system and
engine version, on what machine, with which parameters, what it measured, whether the
data stayed consistent, when), and a short table for the terminal."""
from __future__ import annotations

import datetime
import json
import os
import platform
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from tique.errors import redact

SCHEMA_VERSION = 1


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_info() -> dict[str, Any]:
    return {"platform": platform.platform(), "machine": platform.machine(), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "memory_bytes": _memory_bytes(), "python": platform.python_version(),
            "hostname": platform.node(), "load_average": _load_average()}


def _load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages when the run began: other work on the machine
    skews a measurement, and this says how much there was."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


@dataclass
class Result:
    """One run of one benchmark on one system."""

    benchmark: str
    system: str
    engine_version: str
    parameters: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    consistency: dict[str, Any] | None = None  # {"all_hold": bool, "conditions": [...]} where checked
    started_at: str = field(default_factory=now)
    finished_at: str | None = None
    machine: dict[str, Any] = field(default_factory=machine_info)

    def as_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "benchmark": self.benchmark, "system": self.system,
                "engine_version": self.engine_version, "machine": self.machine, "parameters": self.parameters,
                "metrics": self.metrics, "consistency": self.consistency, "started_at": self.started_at,
                "finished_at": self.finished_at}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and value != value:
        return None  # NaN is not JSON
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _no_nan(value: Any) -> Any:
    """JSON-ready: NaN as None, and no string (a recorded URL, an error) shows a password."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(v) for v in value]
    return value


def write(result: Result | dict[str, Any], path: str | Path) -> Path:
    """Writes the result as JSON (NaN as null); creates the directory."""
    document = result.as_dict() if isinstance(result, Result) else result
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_no_nan(document), indent=2, default=_plain) + "\n")
    return target


def finish(result: Result, out: str | Path | None, show: Any, console: Any) -> Result:
    """Stamps the end of a run, writes it to `out` when given, and shows its table."""
    result.finished_at = now()
    if "postgres" in result.system and "postgres_durable" not in result.parameters:
        from drivers.postgres_engine import DURABILITY

        result.parameters["postgres_durable"] = DURABILITY["durable"]  # fsync on (see --postgres-fast)
    if out:
        write(result, out)
    show(result, console)
    return result


def read(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], console: Any = None) -> None:
    """A short rich table on the terminal; numbers right-aligned."""
    from bench.console import report_console
    from rich.table import Table

    view = Table(title=title)
    for i, name in enumerate(columns):
        numeric = any(isinstance(r[i], (int, float)) for r in rows if i < len(r))
        view.add_column(name, justify="right" if numeric else "left")
    for row in rows:
        view.add_row(*(_cell(v) for v in row))
    (console or report_console()).print(view)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)

"""The `tique` command: the driver's own commands, and those of the parts beside it.

The driver's commands (checkpoint, recover, adopt, overhead) need only what `pip install
tique` installs. The benchmarks and the consistency checks live with their packages
(bench/cli.py, elle/cli.py), which add their commands through a `register(subparsers)`
function; they need more (`pip install 'tique[bench]'`), so this module imports them
only when it is there, and otherwise says which extra to install.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable, Iterable, Mapping

from tique.errors import redact


@dataclass(frozen=True)
class Part:
    """A package beside the driver that brings commands: `module` has `register(subparsers)`,
    which adds `commands` (name: one line of help); `extra` installs what it needs."""

    module: str
    commands: Mapping[str, str]
    extra: str


# The parts of this project. Adding one is one line; its package must also be listed in
# pyproject.toml's wheel packages. Other distributions add commands through the
# `tique.commands` entry points group instead (name: the command; value: "module:register [extra]").
PARTS: tuple[Part, ...] = (
    Part("bench.cli", {"demo": "concurrent bank transfers: tique vs native DuckDB, side by side",
                       "bench": "benchmarks: tique against native engines, printed side by side"}, "bench"),
    Part("elle.cli", {"elle": "Elle consistency checks: list-append histories, run and checked"}, "bench"),
    Part("fuzz.cli", {"fuzz": "differential fuzzing: random schemas, data and statements, natively and through tique"}, "all"),
)
ENTRY_POINTS = "tique.commands"


def _installed_parts() -> list[Part]:
    """PARTS, then the parts other distributions declare as entry points."""
    parts = list(PARTS)
    known = {c for p in parts for c in p.commands}
    try:
        found = metadata.entry_points(group=ENTRY_POINTS)
    except Exception:  # unreadable metadata must not take the driver's commands down
        found = ()
    for point in found:
        if point.name not in known:
            extra = point.extras[0] if point.extras else point.name
            parts.append(Part(point.module, {point.name: f"from {point.value}"}, extra))
            known.add(point.name)
    return parts


def _checkpoint(args: argparse.Namespace) -> int:
    import tique
    from tique.checkpoint import Checkpointer

    conn = tique.connect(args.url)
    checkpointer = Checkpointer(conn.backend)
    rounds = 0
    try:
        while True:
            r = checkpointer.run_once()
            rounds += 1
            print(f"checkpoint: stable={r.stable} tables={r.tables} moved={r.moved} purged={r.purged} in {r.seconds * 1000:.1f} ms", flush=True)
            if args.every is None or (args.rounds and rounds >= args.rounds):
                return 0
            time.sleep(args.every / 1000.0)
    except KeyboardInterrupt:
        return 0
    finally:
        checkpointer.close()
        conn.close()


def _recover(args: argparse.Namespace) -> int:
    import tique
    from tique.recovery import recover

    conn = tique.connect(args.url)
    ran = recover(conn.backend, conn._raw, list(conn.tables.values()), force=True, first_open=False)
    print("recovery: unfinished transactions aborted, oracle re-seeded" if ran else "recovery: nothing to do")
    conn.close()
    return 0


def _adopt(args: argparse.Namespace) -> int:
    import tique
    from tique.adopt import adopt

    conn = tique.connect(args.url)
    for name, rows in adopt(conn, args.tables).items():
        print(f"adopted {name}: {rows} rows")
    conn.close()
    return 0


def _overhead(args: argparse.Namespace) -> int:
    from tique.overhead import measure, report

    url = args.url or f"duckdb:///{tempfile.mkdtemp(prefix='tique-overhead-')}/overhead.db"
    print(report(measure(url, args.repeats)))
    return 0


def extra_for(module: str | None, default: str) -> str:
    """The extra of tique's distribution that installs `module` (psycopg: postgres), read
    from its metadata (not `all`, which names everything); `default` when it is one of
    them or none names the module (or tique runs from a checkout)."""
    top = (module or "").split(".")[0].lower()
    try:
        requirements = metadata.requires("tique") or []
    except metadata.PackageNotFoundError:
        return default
    extras = []
    for requirement in requirements:
        found = re.match(r"\s*([A-Za-z0-9._-]+)[^;]*;.*extra\s*==\s*[\"']([^\"']+)[\"']", requirement)
        if found and re.sub(r"[-.]", "_", found.group(1).lower()) == top and found.group(2) != "all":
            extras.append(found.group(2))
    return default if default in extras or not extras else extras[0]


def _not_installed(command: str, error: ModuleNotFoundError, part: Part) -> str:
    return f"tique {command}: needs {error.name or 'a module'}, which is not installed; pip install 'tique[{extra_for(error.name, part.extra)}]'"


def _missing(part: Part, error: ModuleNotFoundError) -> Callable[[argparse.Namespace], int]:
    def explain(args: argparse.Namespace) -> int:
        print(_not_installed(args.command, error, part), file=sys.stderr)
        return 2

    return explain


def _stand_in(sub: Any, part: Part, missing: str, func: Callable[[argparse.Namespace], int] | None) -> None:
    """The part's commands, by name only: it is not loaded (not asked for, or not installed)."""
    for command, help in part.commands.items():
        help += missing
        # No option prefix: every word after the command is the stand-in's to swallow.
        parser = sub.add_parser(command, help=help, add_help=False, prefix_chars="\0")
        parser.add_argument("rest", nargs=argparse.REMAINDER)
        if func is not None:
            parser.set_defaults(func=func)


def _register(sub: Any, part: Part) -> None:
    module = importlib.import_module(part.module)
    register = getattr(module, "register")
    register(sub)


def build_parser(load: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The `tique` command line, with the parts that bring the commands in `load` (all of
    them when None) loaded; the others' commands are listed by name. Help strings go
    through %-formatting: a literal % is %%."""
    wanted = None if load is None else set(load)
    parser = argparse.ArgumentParser(prog="tique", description="Transactions in the query engine.")
    sub = parser.add_subparsers(dest="command", required=True)

    cp = sub.add_parser("checkpoint", help="move stable versions to storage and purge the caches")
    cp.add_argument("url")
    cp.add_argument("--every", type=int, metavar="MS", help="repeat every MS milliseconds")
    cp.add_argument("--rounds", type=int, default=0, help="with --every: stop after this many rounds")
    cp.set_defaults(func=_checkpoint)

    rec = sub.add_parser("recover", help="abort unfinished transactions and re-seed the oracle (idempotent)")
    rec.add_argument("url")
    rec.set_defaults(func=_recover)

    ad = sub.add_parser("adopt", help="turn native tables into tique tables without losing a row")
    ad.add_argument("url")
    ad.add_argument("tables", nargs="+")
    ad.set_defaults(func=_adopt)

    ov = sub.add_parser("overhead", help="micro-benchmark: driver overhead per statement and round trips per transaction")
    ov.add_argument("--url", help="default: a temporary DuckDB database")
    ov.add_argument("--repeats", type=int, default=2000)
    ov.set_defaults(func=_overhead)

    for part in _installed_parts():
        if wanted is not None and not wanted.intersection(part.commands):
            _stand_in(sub, part, "", None)
            continue
        try:
            _register(sub, part)
        except ModuleNotFoundError as error:
            if not _absent(error):
                raise
            _stand_in(sub, part, f" (not installed: pip install 'tique[{extra_for(error.name, part.extra)}]')", _missing(part, error))
    return parser


def _absent(error: ModuleNotFoundError) -> bool:
    """Whether a failed import is of a package that is not installed at all (rich, numpy,
    psycopg, or the part's own package), which an extra brings, rather than a module
    missing from a package that is there (a broken install, or a bug)."""
    top = (error.name or "").split(".")[0]
    if not top:
        return False
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


def _command_of(argv: list[str]) -> str | None:
    """The command word of `argv` (options of `tique` itself come before it)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    args = build_parser(load=() if command is None else (command,)).parse_args(argv)
    try:
        return int(args.func(args))
    except Exception as error:  # one clear line for the terminal; tracebacks with TIQUE_DEBUG=1
        if os.environ.get("TIQUE_DEBUG"):
            raise
        part = next((p for p in _installed_parts() if args.command in p.commands), None)
        if isinstance(error, ModuleNotFoundError) and part is not None and _absent(error):
            # e.g. psycopg, first imported when a benchmark opens a PostgreSQL system
            print(_not_installed(args.command, error, part), file=sys.stderr)
        else:
            print(redact(f"tique {args.command}: {type(error).__name__}: {error}"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

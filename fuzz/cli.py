"""`tique fuzz`: differential fuzzing of tique against the native engines.

Prints, per engine, the statements generated and compared, the refused fraction (tique's
NotSupportedError), the statements skipped as undefined, and every difference with its
shrunk reproduction; exits 1 on any wrong result."""
from __future__ import annotations

import argparse
import logging
import shutil
import sys
from typing import Any

ENGINES = ("duckdb", "postgres", "monetdb")


def register(subparsers: Any) -> None:
    """Adds the `fuzz` command to a `tique` argparse subparsers object."""
    parser = subparsers.add_parser("fuzz", help="differential fuzzing: random schemas, data and statements, "
                                                "natively and through tique; wrong results shrunk to a script")
    parser.add_argument("--minutes", type=float, default=1.0, help="total running time, split between the engines")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=None,
                        help="default: duckdb and postgres, and monetdb when mserver5 is on PATH")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--statements", type=int, default=None, metavar="K",
                        help="per engine: stop after K statements (and still at --minutes)")
    parser.add_argument("--per-case", type=int, default=10, help="statements per case (one schema and its data)")
    parser.add_argument("--include-excluded", action="store_true",
                        help="also generate the classes fuzz/exclusions.py leaves out (known bugs)")
    parser.add_argument("--constraints", action="store_true", help="also CHECK and UNIQUE constraints in schemas")
    parser.add_argument("--collations", action="store_true", help="also column collations in schemas")
    parser.add_argument("--shrink-budget", type=int, default=300, help="re-runs the shrinker may spend per difference")
    parser.add_argument("--case", type=int, default=None, metavar="CASE_SEED",
                        help="replay the one case of this case seed (as a report names it), with the other options it ran with")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from fuzz.engines import bounded_waits
    from fuzz.exclusions import EXCLUSIONS
    from fuzz.runner import Config, fuzz_engine
    from fuzz.schema import SchemaOptions
    from fuzz.shrink import reproduction

    # psycopg logs each pipeline it closes after a failed statement; the comparison already
    # counts that failure, so the line is noise here
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    engines = args.engines or ["duckdb", "postgres"] + (["monetdb"] if shutil.which("mserver5") else [])
    options = SchemaOptions(collations=args.collations, check_constraints=args.constraints, unique_constraints=args.constraints)
    seconds = args.minutes * 60 / len(engines)
    config = Config(seed=args.seed, statements=args.statements, seconds=seconds, statements_per_case=args.per_case,
                    schema_options=options, include_excluded=args.include_excluded)
    wrong = 0
    for engine in engines:
        with _environment(engine) as env:
            if args.case is not None:
                wrong += _replay(env, config, args.case, args.shrink_budget)
                continue
            summary = fuzz_engine(env, config, progress=lambda line: print(line, flush=True))
            print(f"{engine}: {summary.cases} cases, {summary.statements} statements, {summary.compared} compared "
                  f"through tique (autocommit and transactions), {summary.refused} refused "
                  f"({summary.refused_fraction:.1%}), {summary.undefined} undefined (skipped), "
                  f"{sum(summary.departures.values())} compared with SQL's meaning where {engine} departs from it, "
                  f"{len(summary.failures)} wrong results; slowest case {summary.slowest_case[0]:.1f}s "
                  f"(seed {summary.slowest_case[1]})", flush=True)
            for name, count in sorted(summary.departures.items(), key=lambda kv: -kv[1]):
                print(f"  departure {count}x: {name} (fuzz/departures.py)")
            for reason, count in sorted(summary.refusal_reasons.items(), key=lambda kv: -kv[1])[:10]:
                print(f"  refused {count}x: {reason}")
            for case, difference in summary.failures:
                wrong += 1
                with bounded_waits():
                    _, text = reproduction(env, case, difference, budget=args.shrink_budget)
                print(text, flush=True)
    left_out = [e.name for e in EXCLUSIONS if not args.include_excluded or e.status == "engine"]
    if left_out:
        print("not generated (known bugs, fuzz/exclusions.py): " + ", ".join(left_out))
    print("wrong results: " + str(wrong))
    return 1 if wrong else 0


def _replay(env: Any, config: Any, seed: int, shrink_budget: int) -> int:
    """Runs the case of case seed `seed` as fuzz_engine makes it; prints each difference's
    reproduction (or that there is none) and returns how many wrong results it found."""
    from fuzz.runner import engine_features, random_case, run_case
    from fuzz.shrink import reproduction

    case = random_case(seed, config.statements_per_case, config.schema_options,
                       features=engine_features(env.engine, config.include_excluded), include_excluded=config.include_excluded,
                       engine=env.engine)
    report, ran = run_case(env, case)
    print(f"{env.engine}: case seed {seed}: {report.statements} statements, {report.compared} compared, "
          f"{report.refused} refused, {len(report.differences)} differences", flush=True)
    for refusal in report.refusals:
        print(f"  {refusal}")
    if not report.differences:
        return 0
    _, text = reproduction(env, ran, report.differences[0], budget=shrink_budget)
    print(text, flush=True)
    return 1


class _environment:
    """An Environment with the servers it needs, stopped on exit."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.servers: list[Any] = []

    def __enter__(self) -> Any:
        from fuzz.engines import Environment

        if self.engine == "postgres":
            from drivers.pg_cluster import ThrowawayCluster

            cluster = ThrowawayCluster()
            self.servers.append(cluster)
            self.env = Environment("postgres", pg_cluster=cluster)
        elif self.engine == "monetdb":
            from drivers.monetdb_server import MonetDBServer

            server = MonetDBServer()
            self.servers.append(server)
            self.env = Environment("monetdb", monetdb_url=server.url)
        else:
            self.env = Environment("duckdb")
        return self.env

    def __exit__(self, *exc: object) -> None:
        try:
            self.env.close()
        finally:
            for server in self.servers:
                server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="fuzz")
    register(parser.add_subparsers(dest="command", required=True))
    arguments = parser.parse_args(["fuzz", *sys.argv[1:]])
    sys.exit(arguments.func(arguments))

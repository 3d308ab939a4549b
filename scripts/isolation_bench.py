"""TPC-C at SNAPSHOT beside SERIALIZABLE, one load per system, levels alternating so that
drifts in the machine's load hit both: tique on each engine, and native PostgreSQL at its
REPEATABLE READ and SERIALIZABLE (SSI). Each point is `tique bench tpcc` run on the same
open system (bench/tpcc/run.py), one JSON result per point in OUT_DIR.

    python3 scripts/isolation_bench.py OUT_DIR [--systems ...] [--clients 1 4] [--duration 30] [--warmup 10]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.tpcc.run import benchmark
from drivers import open_system


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--systems", nargs="+", default=["tique-duckdb", "tique-postgres", "tique-monetdb", "native-postgres"])
    parser.add_argument("--levels", nargs="+", default=["snapshot", "serializable"])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    args = parser.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.systems:
        options = {"checkpoint_interval_ms": 1000} if name.startswith("tique-") else {}
        system = open_system(name, **options)
        try:
            for clients in args.clients:
                for level in args.levels:
                    result = benchmark(name, warehouses=1, clients=clients, duration=args.duration, warmup=args.warmup,
                                       system=system, isolation=level, progress=False,
                                       out=str(out / f"{name}-{level}-{clients}.json"))
                    m = result.metrics
                    print(json.dumps({"system": name, "level": result.parameters["isolation"], "clients": clients,
                                      "txn_per_s": round(m["txn_per_s"], 2), "tpmC": round(m["tpmC"], 1),
                                      "abort_rate": round(m["abort_rate"], 4), "priority_retries": m["priority_retries"],
                                      "consistent": (result.consistency or {}).get("all_hold")}), flush=True)
        finally:
            system.close()


if __name__ == "__main__":
    main()

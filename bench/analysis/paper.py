"""The TiQuE paper's published results (notebooks/paper/*.csv) as tidy rows of the
same shape as ours (data.py), with `source` "paper" and the paper's systems under our
names: native MonetDB is `native-monetdb`, TiQuE on MonetDB `tique-monetdb`, PostgreSQL
`native-postgres`. The paper's other systems (SingleStore, TiDB) stay in the files but
are left out here: we have nothing to set beside them."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from bench.analysis.data import Row, query_number

# In a checkout: notebooks/paper/. In an installed wheel, the same files are packaged as
# bench/analysis/paper_data/ (pyproject.toml's force-include).
PAPER_DIR = next((d for d in (Path(__file__).resolve().parents[2] / "notebooks" / "paper",
                              Path(__file__).resolve().parent / "paper_data") if d.is_dir()),
                 Path(__file__).resolve().parents[2] / "notebooks" / "paper")
WAREHOUSES = 512
LONGTX_SECONDS = 30.0  # each long-transaction run (paper 4.3.4)
SYSTEMS = {"monetdbsinglekey": "native-monetdb", "monetdb": "native-monetdb", "tique": "tique-monetdb",
           "postgres": "native-postgres"}
SETUP = "512 W, 32 vCPU"  # how every paper series is labelled


def _value(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(name: str, paper_dir: Path | None = None) -> list[Row]:
    """A paper CSV as dicts of numbers (and strings); a short row's missing columns are None."""
    with open((paper_dir or PAPER_DIR) / name, newline="") as f:
        return [{k: None if v is None or v == "" else _value(v) for k, v in row.items()} for row in csv.DictReader(f)]


def tpcc_rows(paper_dir: Path | None = None) -> list[Row]:
    """Figures 7 (oltp.csv, all 512 warehouses) and 8 (contention.csv, 32 clients)."""
    rows = []
    for name in ("oltp.csv", "contention.csv"):
        for r in read_csv(name, paper_dir):
            system = SYSTEMS.get(r["driver"])
            if system is None:
                continue
            warehouses = int(r["warehouses"])
            contention = int(r["contention"]) or warehouses  # 0: uncontended, as K = W
            rows.append({"source": "paper", "system": system, "warehouses": warehouses, "clients": int(r["clients"]),
                         "contention_run": name == "contention.csv", "contention": contention,
                         "throughput": float(r["throughput"]), "abort_rate": float(r["abort_rate"])})
    return rows


def chbench_rows(paper_dir: Path | None = None) -> list[Row]:
    """Figure 9: the mean of five sequential runs of each query."""
    return [{"source": "paper", "system": SYSTEMS[r["driver"]], "warehouses": WAREHOUSES,
             "query": f"Q{query_number(r['query'])}", "seconds": float(r["rt"]), "error": None}
            for r in read_csv("olap.csv", paper_dir) if r["driver"] in SYSTEMS]


HTAP_FILES = {"olap": "hybrid_olap_on_oltp.csv",  # figure 10a: 6 OLTP clients, OLAP clients vary
              "oltp": "hybrid_oltp_on_olap.csv",  # figure 10b: 6 OLAP clients, OLTP clients vary
              "both": "hybrid_oltp_and_olap.csv"}  # figure 11: n OLTP and n OLAP clients


def htap_rows(paper_dir: Path | None = None) -> list[Row]:
    """Figures 10 and 11, with `sweep` named as our HTAP runner names it (the kind of
    client that varies). The OLAP total is the time the 22 queries took, so it exists
    only where a run finished all 22 (figure 10a's three-minute runs did not)."""
    rows = []
    for sweep, name in HTAP_FILES.items():
        for r in read_csv(name, paper_dir):
            system = SYSTEMS.get(r["driver"])
            if system is None:
                continue
            oltp_clients, olap_clients = int(r["oltp_c"]), int(r["olap_c"])
            rows.append({"source": "paper", "system": system, "warehouses": int(r["wh"]), "sweep": sweep,
                         "oltp_clients": oltp_clients, "olap_clients": olap_clients,
                         "oltp_txs": float(r["oltp_txs"]) if oltp_clients else None, "oltp_abort_rate": None,
                         "olap_qps": float(r["olap_txs"]) if olap_clients else None,
                         "olap_total_s": float(r["olap_duration"]) if olap_clients and r["olap_count"] == 22 else None})
    return rows


def longtx_rows(paper_dir: Path | None = None) -> list[Row]:
    """Figure 12: 30-second runs on 10,000 rows, 10 and 1000 operations."""
    rows = []
    for r in read_csv("long_running.csv", paper_dir):
        system = SYSTEMS.get(r["engine"])
        if system is None:
            continue
        # A long transaction that never committed has no response time; the paper
        # reports one commit taking the whole run instead, which stays as reported.
        rows.append({"source": "paper", "system": system, "clients": int(r["clients"]),
                     "priority": bool(r["handleLongRunning"]), "seconds": LONGTX_SECONDS, "txs": float(r["txs"]),
                     "regular_txs": float(r["regularTxs"]), "long_txs": float(r["longTxs"]),
                     "long_commits": int(r["longCommits"]), "long_rt": float(r["longRt"]),
                     "long_rt_fraction": float(r["longRt"]) / LONGTX_SECONDS, "abort_rate": float(r["ar"]),
                     "long_abort_rate": float(r["longAr"]), "long_most_aborts": None})
    return rows

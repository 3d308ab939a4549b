"""Writes the analysis notebooks (01_tpcc.ipynb ... 05_long_transactions.ipynb) next to
this file. The notebooks are committed; rerun this after changing them here:

    python3 notebooks/make_notebooks.py

Each notebook reads the result files in $TIQUE_RESULTS (default results/), prints a
short table, draws the paper's figure(s) with bench.analysis and saves them as PNG next
to the results. The logic lives in bench/analysis/; the notebooks stay thin."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """\
from IPython.display import Image, display

from bench import analysis
from bench.analysis import paper, plots, series

results = analysis.results_dir()  # $TIQUE_RESULTS, else results/
found = analysis.load_results(results)
print(f"{len(found)} result(s) in {results.resolve()}")"""

OVERLAY = ("Solid lines are our runs; dashed lines (hollow markers) are the TiQuE paper's published "
           "results (512 warehouses, 32 vCPUs, `notebooks/paper/`). Our runs are at another scale on "
           "another machine, so the paper is overlaid only as scale-free quantities: ratios between "
           "systems measured together, a system relative to itself, and abort rates.")

NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "01_tpcc.ipynb": [
        ("md", "# TPC-C: throughput and abort rate vs clients (paper figure 7)\n\n"
               "Throughput counts all five transaction types per second, as the paper's py-tpcc does. "
               "The ratio panel sets tique over the native engine it runs on (paper: 3x native MonetDB "
               "at 1 client, 300-980x at 2-32) and PostgreSQL over tique on an analytical engine "
               "(paper: 1.0x at 1 client, 2.7x at 32).\n\n" + OVERLAY),
        ("code", SETUP),
        ("code", """\
rows = analysis.tpcc_rows(found)
clients_runs = sorted((r for r in rows if not r["contention_run"]),
                      key=lambda r: (r["system"], r["warehouses"], r["clients"]))
print(analysis.format_table(clients_runs, ["system", "warehouses", "clients", "throughput", "tpmC", "abort_rate",
                                           "new_order_p95_ms", "consistent"],
                            ["system", "W", "clients", "txn/s", "tpmC", "abort rate", "New-Order p95 ms",
                             "consistent"]))"""),
        ("code", """\
png = plots.save(plots.tpcc(rows + paper.tpcc_rows()), results / "tpcc.png")
display(Image(filename=str(png)))"""),
        ("code", """\
print(series.describe(series.tpcc_ratio_lines(rows + paper.tpcc_rows()), "clients", "throughput ratio"))"""),
    ],
    "02_contention.ipynb": [
        ("md", "# TPC-C under contention (paper figure 8)\n\n"
               "99% of the transactions go to K warehouses (1% to any). The paper ran 32 clients on "
               "K = 512 down to 1 of 512 warehouses; we compare at equal *clients per warehouse in use* "
               "(C / K), with throughput relative to the same system's uncontended run (K = W).\n\n" + OVERLAY),
        ("code", SETUP),
        ("code", """\
rows = analysis.tpcc_rows(found)
contention_runs = sorted((r for r in rows if r["contention_run"]),
                         key=lambda r: (r["system"], r["warehouses"], r["clients"], -r["contention"]))
print(analysis.format_table(contention_runs, ["system", "warehouses", "clients", "contention", "throughput",
                                              "abort_rate", "consistent"],
                            ["system", "W", "clients", "K", "txn/s", "abort rate", "consistent"]))"""),
        ("code", """\
png = plots.save(plots.contention(rows + paper.tpcc_rows()), results / "contention.png")
display(Image(filename=str(png)))"""),
        ("code", """\
lines = series.contention_lines(rows + paper.tpcc_rows(), "throughput", per_client_warehouse=True, relative=True)
print(series.describe(lines, "clients per warehouse", "throughput / uncontended"))"""),
    ],
    "03_chbench.ipynb": [
        ("md", "# CH-benCHmark per query (paper figure 9)\n\n"
               "Our bars are the median time of each query's repetitions after an OLTP run filled "
               "tique's caches. The ratio panels set each system over the native analytical engine "
               "(MonetDB when present, else DuckDB); the paper's are over native MonetDB (tique 1.22x "
               "in total, PostgreSQL 7.3x).\n\n" + OVERLAY),
        ("code", SETUP),
        ("code", """\
rows = analysis.chbench_rows(found)
totals = analysis.chbench_totals(rows)
print(analysis.format_table([{"system": system, "total_s": total} for (_, system), total in sorted(totals.items())],
                            ["system", "total_s"], ["system", "22-query total s"]))
failed = sorted({(r["system"], r["query"]) for r in rows if r["error"]})
if failed:
    print("failed:", ", ".join(f"{system} {query}" for system, query in failed))"""),
        ("code", """\
png = plots.save(plots.chbench(rows + paper.chbench_rows()), results / "chbench.png")
display(Image(filename=str(png)))"""),
        ("code", """\
for source, pair, ratio in series.chbench_total_ratios(rows + paper.chbench_rows()):
    print(f"{series.label(source, pair)}: {ratio:.2f}x")"""),
    ],
    "04_htap.ipynb": [
        ("md", "# HTAP (paper figures 1, 10 and 11)\n\n"
               "First the trade-off with the workloads run apart (figure 1): each system's best TPC-C "
               "throughput against its CH-benCHmark total, both relative to the native analytical engine. "
               "Then OLTP and OLAP clients at once: OLTP throughput as OLAP clients are added (paper: tique "
               "lost 5% with 1 and 27% with 6, PostgreSQL 49% and 72%), the OLAP 22-query time as OLTP "
               "clients are added, and both scaled together.\n\n" + OVERLAY),
        ("code", SETUP),
        ("code", """\
tpcc, ch = analysis.tpcc_rows(found), analysis.chbench_rows(found)
png = plots.save(plots.tradeoff(tpcc + paper.tpcc_rows(), ch + paper.chbench_rows()), results / "htap_tradeoff.png")
display(Image(filename=str(png)))"""),
        ("code", """\
rows = analysis.htap_rows(found)
print(analysis.format_table(sorted(rows, key=lambda r: (r["system"], r["oltp_clients"], r["olap_clients"])),
                            ["system", "warehouses", "oltp_clients", "olap_clients", "oltp_txs", "oltp_abort_rate",
                             "olap_qps", "olap_total_s"],
                            ["system", "W", "OLTP clients", "OLAP clients", "OLTP txn/s", "OLTP abort rate",
                             "OLAP queries/s", "22-query total s"]))"""),
        ("code", """\
png = plots.save(plots.htap(rows + paper.htap_rows()), results / "htap.png")
display(Image(filename=str(png)))"""),
        ("code", """\
print(series.describe(series.htap_sweep_lines(rows + paper.htap_rows(), "olap"), "OLAP clients",
                      "OLTP throughput / with 0 OLAP"))"""),
    ],
    "05_long_transactions.ipynb": [
        ("md", "# Long read-write transactions (paper figure 12)\n\n"
               "n-1 clients run short transactions and one runs transactions 100x longer; aborted "
               "transactions are retried. Without tique's priority mode the long transaction starves "
               "(the paper's took the whole 30 s run); with it, it aborts at most once, at a cost in "
               "overall throughput (paper: about 0.55x).\n\n" + OVERLAY),
        ("code", SETUP),
        ("code", """\
rows = analysis.longtx_rows(found)
print(analysis.format_table(sorted(rows, key=lambda r: (r["system"], r["priority"], r["clients"])),
                            ["system", "priority", "clients", "txs", "abort_rate", "long_commits", "long_rt",
                             "long_most_aborts"],
                            ["system", "priority", "clients", "txn/s", "abort rate", "long commits", "long rt s",
                             "most aborts of one long txn"]))"""),
        ("code", """\
png = plots.save(plots.longtx(rows + paper.longtx_rows()), results / "long_transactions.png")
display(Image(filename=str(png)))"""),
        ("code", """\
print(series.describe(series.longtx_lines(rows + paper.longtx_rows(), "txs", relative=True), "clients",
                      "throughput / tique without priority"))"""),
    ],
}


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    notebook = new_notebook(cells=[new_markdown_cell(text) if kind == "md" else new_code_cell(text)
                                   for kind, text in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        notebook = build(cells)
        for i, cell in enumerate(notebook.cells):
            cell["id"] = f"{name.split('_')[0]}-{i}"  # stable ids: regenerating changes nothing
        nbformat.validate(notebook)
        nbformat.write(notebook, HERE / name)


if __name__ == "__main__":
    main()

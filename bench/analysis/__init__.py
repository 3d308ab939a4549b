"""Analysis of benchmark result files: tidy rows (data.py), the paper's published
results in the same shape (paper.py), the figures' series (series.py, no matplotlib)
and the figures themselves (plots.py, matplotlib). The notebooks in notebooks/ are thin
wrappers over these."""
from __future__ import annotations

from bench.analysis import paper
from bench.analysis.data import (chbench_rows, chbench_totals, format_table, htap_rows, load_results, longtx_rows,
                                 results_dir, tpcc_rows)

__all__ = ["chbench_rows", "chbench_totals", "format_table", "htap_rows", "load_results", "longtx_rows", "paper",
           "results_dir", "tpcc_rows"]

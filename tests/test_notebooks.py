"""The analysis notebooks and their library (bench/analysis).

A small results set is made by really running the benchmarks at tiny scale on DuckDB,
natively and through tique (TPC-C over clients and under contention, CH-benCHmark, HTAP
points, long transactions), then every notebook is executed headless on it and must
draw its figures. The library's computations are checked on hand-made results and on
the paper's own published numbers, whose ratios the paper's text states."""
from __future__ import annotations

import io
import json
import math
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from bench.analysis import data, paper, plots, series
from bench.results import Result, write

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = {"01_tpcc.ipynb": ["tpcc.png"], "02_contention.ipynb": ["contention.png"],
             "03_chbench.ipynb": ["chbench.png"], "04_htap.ipynb": ["htap_tradeoff.png", "htap.png"],
             "05_long_transactions.ipynb": ["long_transactions.png"]}
SYSTEMS = ("native-duckdb", "tique-duckdb")
WAREHOUSES = 2
SECONDS = 1.5  # each measured TPC-C and long-transaction run
HTAP_SECONDS = 2.5  # each HTAP point


# -- a real results set ------------------------------------------------------------------

def _run_benchmarks(name: str, out: Path, workdir: Path) -> None:
    """Every producer once or twice on one tiny DuckDB database (loaded once, reused)."""
    from rich.console import Console

    from bench.chbench import htap, run as chbench
    from bench.tpcc import run as tpcc
    from bench.tpcc.loader import TINY
    from drivers import open_system

    quiet = Console(file=io.StringIO())
    common: dict[str, Any] = {"warehouses": WAREHOUSES, "scale": TINY, "progress": False, "console": quiet}
    system = open_system(name, workdir=workdir)
    try:
        for clients in (1, 2):
            tpcc.benchmark(name, clients=clients, duration=SECONDS, warmup=0.3, system=system,
                           out=str(out / f"tpcc-{name}-{clients}.json"), **common)
        # K = 1 of 2 warehouses; the uncontended 2-client run above is its K = W baseline.
        tpcc.benchmark(name, clients=2, duration=SECONDS, warmup=0.3, contention=1, system=system,
                       out=str(out / f"contention-{name}-1.json"), **common)
        chbench.benchmark(name, repetitions=1, oltp_seconds=0.5, system=system, out=str(out / f"chbench-{name}.json"),
                          **common)
        # (1 OLTP, 0 and 1 OLAP) and (0 OLTP, 1 OLAP): both sweeps and a scale-both point.
        htap.benchmark(name, oltp_clients=1, sweep="olap", counts=[0, 1], duration=HTAP_SECONDS, system=system,
                       out=str(out / f"htap-{name}-olap.json"), **common)
        htap.benchmark(name, oltp_clients=0, olap_clients=1, duration=HTAP_SECONDS, system=system,
                       out=str(out / f"htap-{name}-0-1.json"), **common)
    finally:
        system.close()


def _run_longtx(name: str, out: Path) -> None:
    """Through the command line, which writes the results file."""
    from tique.cli import main

    for clients in (2, 3):
        code = main(["bench", "longtx", "--system", name, "--clients", str(clients), "--duration", str(SECONDS),
                     "--rows", "50", "--regular-ops", "4", "--long-ops", "40", "--out",
                     str(out / f"longtx-{name}-{clients}.json")])
        assert code == 0


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two systems run side by side (one thread each, each on its own database), so
    the set takes about as long as its slower system."""
    out = tmp_path_factory.mktemp("results")
    scratch = tmp_path_factory.mktemp("databases")
    saved_tempdir = tempfile.tempdir
    tempfile.tempdir = str(scratch)  # the longtx command makes its database in the temp dir
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            _run_benchmarks(name, out, scratch / name)
            _run_longtx(name, out)
        except BaseException as error:  # re-raised below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(name,), name=f"results-{name}", daemon=True) for name in SYSTEMS]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
    finally:
        tempfile.tempdir = saved_tempdir
    assert not any(t.is_alive() for t in threads), "generating the results set took over four minutes"
    if errors:
        raise errors[0]
    return out


def test_the_results_set_covers_every_figure(results: Path) -> None:
    found = data.load_results(results)
    assert {r["benchmark"] for r in found} == {"tpcc", "chbench", "htap", "longtx"}
    tpcc = data.tpcc_rows(found)
    assert {(r["system"], r["clients"], r["contention"]) for r in tpcc} == {
        (s, c, k) for s in SYSTEMS for c, k in ((1, 2), (2, 2), (2, 1))}
    assert all(r["consistent"] for r in tpcc), [r for r in tpcc if not r["consistent"]]
    assert {(r["system"], r["query"]) for r in data.chbench_rows(found)} == {(s, f"Q{n}") for s in SYSTEMS
                                                                              for n in range(1, 23)}
    assert {(r["system"], r["oltp_clients"], r["olap_clients"]) for r in data.htap_rows(found)} == {
        (s, o, a) for s in SYSTEMS for o, a in ((1, 0), (1, 1), (0, 1))}
    longtx = data.longtx_rows(found)
    assert {(r["system"], r["clients"], r["priority"]) for r in longtx} == {
        ("native-duckdb", 2, False), ("native-duckdb", 3, False), ("tique-duckdb", 2, False),
        ("tique-duckdb", 3, False), ("tique-duckdb", 2, True), ("tique-duckdb", 3, True)}


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_notebook_runs_headless_and_draws(notebook: str, results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("TIQUE_RESULTS", str(results))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for png in NOTEBOOKS[notebook]:
        (results / png).unlink(missing_ok=True)
    nb = nbformat.read(NOTEBOOKS_DIR / notebook, as_version=4)
    # Raises CellExecutionError (naming the cell) when any cell fails.
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}).execute()
    for png in NOTEBOOKS[notebook]:
        drawn = results / png
        assert drawn.is_file() and drawn.stat().st_size > 1000, f"{notebook} did not draw {png}"
        assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    assert f"in {results.resolve()}" in printed  # it read $TIQUE_RESULTS
    for name in SYSTEMS:  # its table lists our runs, not only the paper's
        assert name in printed, f"{notebook} printed no row for {name}:\n{printed}"
    images = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if "image/png" in out.get("data", {})]
    assert len(images) == len(NOTEBOOKS[notebook])


def test_the_generator_writes_the_committed_notebooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS_DIR / "make_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    for name in NOTEBOOKS:
        assert (tmp_path / name).read_text() == (NOTEBOOKS_DIR / name).read_text(), (
            f"{name} differs from what notebooks/make_notebooks.py writes; rerun it")


# -- the library on hand-made results ---------------------------------------------------------

def _tpcc(system: str, clients: int, txn_per_s: float, abort_rate: float = 0.0, contention: int | None = None,
          warehouses: int = 4) -> dict[str, Any]:
    return Result("tpcc", system, "test", {"warehouses": warehouses, "clients": clients, "contention": contention},
                  {"txn_per_s": txn_per_s, "tpmC": txn_per_s * 27, "abort_rate": abort_rate,
                   "transactions": {"new_order": {"p95_ms": 3.0}}},
                  {"all_hold": True, "conditions": []}).as_dict()


def _longtx(system: str, clients: int, priority: bool, txs: float, long_rt: float | None) -> dict[str, Any]:
    return Result("longtx", system, "test", {"clients": clients, "duration": 10.0, "priority": priority},
                  {"txs": txs, "long_rt": long_rt, "abort_rate": 0.1, "long_commits": 0 if long_rt is None else 3,
                   "long_most_aborts": 1}).as_dict()


def test_load_results_reads_results_and_run_lists_and_skips_the_rest(tmp_path: Path) -> None:
    write(Result("tpcc", "tique-duckdb", "v", {"clients": 1}, {"txn_per_s": float("nan")}), tmp_path / "a.json")
    write({"benchmark": "longtx", "runs": [_longtx("tique-duckdb", 2, False, 5.0, None),
                                           _longtx("tique-duckdb", 2, True, 4.0, 1.0)]}, tmp_path / "sub" / "b.json")
    (tmp_path / "notes.json").write_text(json.dumps({"something": "else"}))
    # `tique bench compare` writes a summary beside the runs' own files: not a run.
    write({"benchmark": "compare", "systems": [{"system": "tique-duckdb"}], "table": []}, tmp_path / "compare.json")
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "tpcc.png").write_bytes(b"\x89PNG")
    found = data.load_results(tmp_path)
    assert [(r["benchmark"], r["_file"].rsplit("/", 1)[-1]) for r in found] == [
        ("tpcc", "a.json"), ("longtx", "b.json"), ("longtx", "b.json")]
    assert data.tpcc_rows(found)[0]["throughput"] is None  # NaN was written as null
    assert data.load_results(tmp_path / "missing") == []


def test_results_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIQUE_RESULTS", str(tmp_path / "mine"))
    assert data.results_dir() == tmp_path / "mine"
    monkeypatch.delenv("TIQUE_RESULTS")
    monkeypatch.chdir(tmp_path)
    assert data.results_dir() == Path("results")
    (tmp_path / "results").mkdir()
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert data.results_dir() == Path("..") / "results"


def test_tpcc_ratios_average_repeated_runs_and_pair_systems_at_equal_clients() -> None:
    rows = data.tpcc_rows([
        _tpcc("native-duckdb", 1, 10.0), _tpcc("native-duckdb", 1, 30.0), _tpcc("tique-duckdb", 1, 40.0),
        _tpcc("native-duckdb", 4, 5.0), _tpcc("tique-duckdb", 4, 50.0), _tpcc("tique-duckdb", 8, 60.0),
        _tpcc("native-postgres", 4, 100.0), _tpcc("tique-postgres", 4, 90.0),
        _tpcc("tique-duckdb", 4, 1.0, contention=1)])  # a contention run stays out of the clients figure
    lines = {line.label: line.points for line in series.tpcc_ratio_lines(rows)}
    assert lines == {"tique-duckdb ÷ native-duckdb": [(1, 2.0), (4, 10.0)],  # 40 / mean(10, 30); 8 has no native
                     "tique-postgres ÷ native-postgres": [(4, 0.9)],
                     "native-postgres ÷ tique-duckdb": [(4, 2.0)]}
    throughput = {line.label: line.points for line in series.tpcc_lines(rows, "throughput")}
    assert throughput["tique-duckdb"] == [(1, 40.0), (4, 50.0), (8, 60.0)]


def test_the_paper_overlay_reproduces_the_ratios_the_paper_states() -> None:
    """Section 4.3 and issue 5: tique 3x native MonetDB at 1 client and up to ~980x;
    PostgreSQL 1.0x tique at 1 client and 2.7x at 32; CH-benCHmark 1.22x native MonetDB;
    HTAP OLTP loss 5% and 27% for tique, 49% and 72% for PostgreSQL."""
    tpcc = {line.label: dict(line.points) for line in series.tpcc_ratio_lines(paper.tpcc_rows())}
    tique_vs_monetdb = tpcc["tique on MonetDB ÷ MonetDB (paper, 512 W, 32 vCPU)"]
    assert round(tique_vs_monetdb[1], 1) == 2.9
    assert 290 < min(tique_vs_monetdb[c] for c in (2, 4, 8, 16, 32)) and round(tique_vs_monetdb[32]) == 984
    pg_vs_tique = tpcc["PostgreSQL ÷ tique on MonetDB (paper, 512 W, 32 vCPU)"]
    assert round(pg_vs_tique[1], 1) == 1.0 and round(pg_vs_tique[32], 1) == 2.7

    totals = {(source, pair): ratio for source, pair, ratio in series.chbench_total_ratios(paper.chbench_rows())}
    assert round(totals[("paper", "tique on MonetDB ÷ MonetDB")], 2) == 1.22

    oltp = {line.label.split(" (")[0]: dict(line.points) for line in series.htap_sweep_lines(paper.htap_rows(), "olap")}
    assert [round(1 - oltp["tique on MonetDB"][n], 2) for n in (1, 6)] == [0.05, 0.27]
    assert [round(1 - oltp["PostgreSQL"][n], 2) for n in (1, 6)] == [0.49, 0.72]
    # Figure 10a's (6 OLTP, 6 OLAP) point is its own, not averaged with figure 10b's.
    assert oltp["tique on MonetDB"][6] == pytest.approx(193.02 / 264.43)


def test_contention_is_relative_to_the_uncontended_run_per_clients_per_warehouse() -> None:
    rows = data.tpcc_rows([_tpcc("tique-duckdb", 4, 40.0), _tpcc("tique-duckdb", 4, 20.0, 0.5, contention=2),
                           _tpcc("tique-duckdb", 4, 10.0, 0.8, contention=1), _tpcc("tique-duckdb", 1, 99.0)])
    (relative,) = series.contention_lines(rows, "throughput", per_client_warehouse=True, relative=True,
                                          sources=("ours",))
    assert relative.points == [(1.0, 1.0), (2.0, 0.5), (4.0, 0.25)]  # C/K for K = 4 (W), 2, 1
    (by_k,) = series.contention_lines(rows, "abort_rate", sources=("ours",))
    assert by_k.points == [(4, 0.0), (2, 0.5), (1, 0.8)]
    # The paper's K = 512 baseline is its contention run, not figure 7's 32-client run.
    paper_lines = {line.label.split(" (")[0]: line for line in
                   series.contention_lines(paper.tpcc_rows(), "throughput", relative=True, sources=("paper",))}
    assert paper_lines["tique on MonetDB"].y(1) == pytest.approx(60.79 / 533.49)


def test_chbench_totals_need_every_query_and_ratios_are_to_the_analytical_native() -> None:
    def run(system: str, seconds: dict[str, float | None]) -> dict[str, Any]:
        return Result("chbench", system, "v", {"warehouses": 1}, {"queries": {
            q: {"median_s": s, "error": None if s is not None else "boom"} for q, s in seconds.items()}}).as_dict()

    rows = data.chbench_rows([run("native-duckdb", {"Q1": 1.0, "Q2": 3.0}), run("tique-duckdb", {"Q1": 2.0, "Q2": 3.0}),
                              run("native-monetdb", {"Q1": 0.5, "Q2": 1.5}), run("native-postgres", {"Q1": 4.0, "Q2": 8.0}),
                              run("tique-monetdb", {"Q1": 1.0, "Q2": None})])
    assert data.chbench_totals(rows) == {("ours", "native-duckdb"): 4.0, ("ours", "tique-duckdb"): 5.0,
                                         ("ours", "native-monetdb"): 2.0, ("ours", "native-postgres"): 12.0}
    assert series.chbench_total_ratios(rows) == [("ours", "tique-duckdb ÷ native-duckdb", 1.25),
                                                 ("ours", "native-postgres ÷ native-monetdb", 6.0)]
    per_query = {line.label: line.points for line in series.chbench_ratio_lines(rows)}
    assert per_query["tique-monetdb ÷ native-monetdb"] == [(1, 2.0)]  # Q2 failed
    assert per_query["native-postgres ÷ native-monetdb"] == [(1, 8.0), (2, 8.0 / 1.5)]


def test_htap_pools_our_points_across_sweeps_and_scales_both_against_tique() -> None:
    def run(system: str, sweep: str | None, points: list[tuple[int, int, float | None, float | None]]) -> dict[str, Any]:
        return Result("htap", system, "v", {"warehouses": 1, "sweep": sweep}, {"points": [
            {"oltp_clients": o, "olap_clients": a, "oltp": {"txn_per_s": tx} if o else None,
             "olap": {"queries_per_s": 1.0, "total_median_s": total}} for o, a, tx, total in points]}).as_dict()

    rows = data.htap_rows([run("tique-duckdb", "olap", [(1, 0, 100.0, None), (1, 1, 80.0, 20.0)]),
                           run("tique-duckdb", None, [(0, 1, None, 10.0)]),
                           run("native-duckdb", "both", [(1, 1, 10.0, 5.0), (2, 2, 5.0, 8.0)])])
    assert rows[0]["olap_total_s"] is None  # no OLAP clients, no OLAP total
    oltp = {line.label: line.points for line in series.htap_sweep_lines(rows, "olap")}
    assert oltp == {"tique-duckdb": [(0, 1.0), (1, 0.8)]}
    olap = {line.label: line.points for line in series.htap_sweep_lines(rows, "oltp")}
    assert olap == {"tique-duckdb": [(0, 1.0), (1, 2.0)]}
    both = {line.label: (line.points, line.notes) for line in series.htap_both_lines(rows)}
    assert both == {"native-duckdb": ([(0.25, 0.125), (0.4, 0.0625)], ["1", "2"]),
                    "tique-duckdb": ([(1.0, 1.0)], ["1"])}


def test_long_transactions_relative_to_tique_without_priority() -> None:
    rows = data.longtx_rows([_longtx("tique-duckdb", 2, False, 100.0, None), _longtx("tique-duckdb", 2, True, 50.0, 2.0),
                             _longtx("native-duckdb", 2, False, 20.0, 1.0), _longtx("native-duckdb", 4, False, 1.0, 1.0)])
    relative = {line.label: line.points for line in series.longtx_lines(rows, "txs", relative=True)}
    assert relative == {"native-duckdb ÷ tique-duckdb": [(2, 0.2)], "tique-duckdb, priority ÷ tique-duckdb": [(2, 0.5)]}
    committed, never = series.longtx_rt_lines(rows)
    assert {line.label: line.points for line in committed} == {"native-duckdb": [(2, 0.1), (4, 0.1)],
                                                             "tique-duckdb, priority": [(2, 0.2)]}
    assert [(line.label, line.points) for line in never] == [("tique-duckdb: none committed", [(2, 1.0)])]


def test_figures_draw_ours_solid_and_the_paper_dashed(tmp_path: Path) -> None:
    rows = data.tpcc_rows([_tpcc("native-duckdb", 1, 10.0, 0.0), _tpcc("tique-duckdb", 1, 20.0, 0.1),
                           _tpcc("native-duckdb", 2, 12.0, 0.2), _tpcc("tique-duckdb", 2, 30.0, 0.1)])
    figure = plots.tpcc(rows + paper.tpcc_rows())
    ratio_axes = figure.axes[2]
    styles = {line.get_label(): line.get_linestyle() for line in ratio_axes.get_lines() if not line.get_label().startswith("_")}
    assert styles == {"tique-duckdb ÷ native-duckdb": "-",
                      "tique on MonetDB ÷ MonetDB (paper, 512 W, 32 vCPU)": "--",
                      "PostgreSQL ÷ tique on MonetDB (paper, 512 W, 32 vCPU)": "--"}
    png = plots.save(figure, tmp_path / "out" / "tpcc.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    # With no results of ours every figure still draws (the paper alone, or a note).
    for figure in (plots.contention([]), plots.chbench([]), plots.htap([]), plots.tradeoff([], []), plots.longtx([])):
        assert plots.save(figure, tmp_path / "empty.png").stat().st_size > 0


def test_format_table_aligns_and_shows_missing_values() -> None:
    text = data.format_table([{"system": "tique-duckdb", "x": 1234.5, "ok": True},
                              {"system": "native", "x": None, "ok": False}], ["system", "x", "ok"])
    assert text.splitlines() == ["system            x  ok", "------------  -----  ---",
                                 "tique-duckdb  1,234  yes", "native            -  no"]
    assert data.fmt(0.01234) == "0.0123" and data.fmt(math.nan) == "-" and data.fmt(3.14159) == "3.14"
